"""500,000 patients x 12 codes: every page draws its controls quickly; heavy work runs in the
background or on a button, with progress, and is kept across navigation (issue 11, large data).

Page times are printed (``-s`` shows them), never asserted: what is asserted is the structure that
keeps pages quick (the replay runs in a background job, Trade-offs and exports wait for a button).
"""
from __future__ import annotations

import io
import time

import numpy as np
import pandas as pd
import pytest
from app_helpers import assert_clean, go, open_page, n_predicted

from favmac.ui import jobs

N_PATIENTS, N_CODES = 500_000, 12

pytestmark = pytest.mark.slow


def half_million_parquet() -> bytes:
    """A synthetic wide file: calibrated probabilities (labels drawn from them), seed 0."""
    rng = np.random.RandomState(0)
    probs = rng.beta(0.4, 3.0, size=(N_PATIENTS, N_CODES)).round(4)
    labels = (rng.random_sample((N_PATIENTS, N_CODES)) < probs).astype(np.int8)
    columns = {"patient_id": [f"H{i:06d}" for i in range(N_PATIENTS)]}
    for k in range(N_CODES):
        columns[f"prob_C{k:02d}"] = probs[:, k]
        columns[f"label_C{k:02d}"] = labels[:, k]
    buffer = io.BytesIO()
    pd.DataFrame(columns).to_parquet(buffer, index=False)
    return buffer.getvalue()


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def test_half_million_patients_every_page_stays_responsive(monkeypatch):
    monkeypatch.setattr(jobs, "FOREGROUND_SECONDS", 0.2)
    data = half_million_parquet()
    at = open_page("data")
    at.file_uploader(key="upload_wide").set_value(("half_million.parquet", data, "application/octet-stream"))
    figures = {"Data (upload and parse)": timed(at.run)}
    assert_clean(at)
    assert at.session_state["dataset"].n_patients == N_PATIENTS

    for page in ("home", "data", "value_cost", "online", "tradeoffs", "patients", "export"):
        figures[page] = timed(lambda: go(at, page))
        assert not at.exception, (page, [e.value for e in at.exception])
    # the replay runs in the background, started by the first page that needed it
    job = at.session_state["jobs"]["online"]
    assert job.wait(300) and job.error is None
    assert at.session_state["tradeoffs"] is None  # never computed without the button

    figures["online (replay done)"] = timed(lambda: go(at, "online"))
    assert_clean(at)
    assert at.button(key="play") is not None
    figures["patients (replay done)"] = timed(lambda: go(at, "patients"))
    assert_clean(at)
    assert not at.get("selectbox") or "patient_select" not in [s.key for s in at.selectbox]
    at.text_input(key="patient_search").set_value("H499999").run()
    assert_clean(at)
    assert any("H499999" in c.value for c in at.caption)

    figures["export"] = timed(lambda: go(at, "export"))
    assert at.button(key="prepare_exports") is not None and at.session_state.get("exports") is None
    figures["export (button)"] = timed(lambda: at.button(key="prepare_exports").click().run())
    job = at.session_state["jobs"].get("exports")
    if job is not None:
        assert job.wait(300) and job.error is None
    go(at, "home")  # navigate away and back: the files are kept
    figures["export (files ready)"] = timed(lambda: go(at, "export"))
    assert_clean(at)
    assert at.session_state["exports"]["n_calibration"] == n_predicted(at, N_PATIENTS)
    print("\n" + "\n".join(f"{name:28s} {seconds:6.2f} s" for name, seconds in figures.items()))
