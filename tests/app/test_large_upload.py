"""100,000 patients x 35 codes: upload, replay, playback and export work at this size, and the
heavy results are computed once and reused (no timed assertions: the step times are printed,
``-s`` shows them; scripts/bench_large_cohort.py measures speed as ratios)."""
from __future__ import annotations

import io
import time

import numpy as np
import pandas as pd
from app_helpers import SAMPLES, assert_clean, go, open_page, n_predicted

from favmac import io as fio

N_PATIENTS = 100_000


def big_wide_csv() -> bytes:
    """The HCC sample's patients resampled to 100,000 rows (wide layout, ~30 MB)."""
    ds = fio.load_calibration(SAMPLES / "hcc_calibration.csv")
    rows = np.random.RandomState(0).randint(0, ds.n_patients, N_PATIENTS)
    probs, labels = ds.prob_array()[rows], ds.label_array()[rows]
    columns = {"patient_id": [f"B{i:06d}" for i in range(N_PATIENTS)]}
    for k, code in enumerate(ds.codes):
        columns[f"prob_{code}"] = probs[:, k]
        columns[f"label_{code}"] = labels[:, k]
    buffer = io.StringIO()
    pd.DataFrame(columns).to_csv(buffer, index=False)
    return buffer.getvalue().encode()


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def test_hundred_thousand_patients():
    data = big_wide_csv()
    at = open_page("data")
    at.file_uploader(key="upload_wide").set_value(("big.csv", data, "text/csv"))
    figures = {"upload": timed(at.run)}
    assert_clean(at)
    assert at.session_state["dataset"].n_patients == N_PATIENTS

    figures["online"] = timed(lambda: go(at, "online"))  # the replay, once
    assert_clean(at)
    n_steps = n_predicted(at, N_PATIENTS)
    replayed = at.session_state["session"]
    # every playback tick afterwards only redraws (charts are downsampled): the replay is kept
    figures["to end"] = timed(lambda: at.button(key="to_end").click().run())
    assert at.session_state["session"] is replayed
    assert at.session_state["session"].position == n_steps
    for chart in at.get("plotly_chart"):
        assert len(chart.proto.spec) < 400_000  # at most ~2000 points per series

    figures["export"] = timed(lambda: go(at, "export"))
    assert_clean(at)
    assert at.session_state.get("exports") is None  # large data: built on click, not on the visit
    figures["export (button)"] = timed(lambda: at.button(key="prepare_exports").click().run())
    assert_clean(at)
    exports = at.session_state["exports"]
    assert exports["n_calibration"] == n_steps
    figures["export (again)"] = timed(lambda: go(at, "export"))
    assert at.session_state["exports"] is exports  # memoised, not rebuilt
    print("\n" + "\n".join(f"{name:16s} {seconds:6.2f} s" for name, seconds in figures.items()))
