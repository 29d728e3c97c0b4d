"""The user's workspace in the store: a reload or a deep link (a fresh session) restores the uploaded
data, weights and settings instead of the bundled sample (issue 31, App; favmac.ui.workspace)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
from app_helpers import assert_clean, go, open_page

import favmac
from favmac.ui import workspace


def wide_csv(n=300, codes=("A", "B", "C"), seed=0) -> bytes:
    rng = np.random.RandomState(seed)
    p = rng.rand(n, len(codes)).round(3)
    y = (rng.rand(n, len(codes)) < p).astype(int)
    frame = pd.DataFrame({"patient_id": [f"p{i:04d}" for i in range(n)]})
    for k, code in enumerate(codes):
        frame[f"prob_{code}"] = p[:, k]
    for k, code in enumerate(codes):
        frame[f"label_{code}"] = y[:, k]
    return frame.to_csv(index=False).encode()


def new_csv(n=20, codes=("A", "B", "C"), seed=1) -> bytes:
    rng = np.random.RandomState(seed)
    frame = pd.DataFrame({"patient_id": [f"n{i:03d}" for i in range(n)]})
    for code in codes:
        frame[code] = rng.rand(n).round(3)
    return frame.to_csv(index=False).encode()


def data_line(at) -> str:
    return next(m.value for m in at.markdown if "Data:" in m.value)


def upload_cohort(name="cohort.csv"):
    at = open_page("data")
    at.file_uploader(key="upload_wide").set_value((name, wide_csv(), "text/csv")).run()
    assert_clean(at)
    assert at.session_state["dataset"].name == name
    return at


def test_a_fresh_session_restores_the_uploaded_data_weights_and_settings(own_store):
    at = upload_cohort()
    at.file_uploader(key="upload_new").set_value(("march.csv", new_csv(), "text/csv")).run()
    assert_clean(at)
    assert len(at.session_state["new_patients"]) == 20
    saved = favmac.open_store(own_store).workspace()
    doc = json.loads(saved.load(workspace.DOC)[0])
    assert doc["data"]["kind"] == "upload" and doc["data"]["probs_name"] == "cohort.csv"
    assert doc["new_patients"]["name"] == "march.csv"
    assert set(saved.names()) == {workspace.DOC, workspace.CALIBRATION, workspace.NEW_PATIENTS}

    # a reload: a fresh session on another page (a deep link) runs on the upload, not the sample
    fresh = open_page("online")
    assert_clean(fresh)
    ds = fresh.session_state["dataset"]
    assert ds.name == "cohort.csv" and ds.n_patients == 300 and ds.codes == ["A", "B", "C"]
    assert fresh.session_state["new_patients_name"] == "march.csv"
    assert "cohort.csv" in data_line(fresh) and "300 patients" in data_line(fresh)
    assert fresh.session_state["dataset_key"] == at.session_state["dataset_key"]


def test_settings_and_weights_changes_are_restored(own_store):
    at = upload_cohort()
    from favmac.ui import actions
    from favmac.ui.session import Session

    # the actions the pages call, on the page's own session state
    ss = Session(at.session_state)
    settings = {**ss.settings, "target": 0.75, "control": "violation", "delta": 0.2}
    assert actions.apply_settings(ss, settings)
    table = ss.weights.copy()
    table.loc["B", "weight"] = 2.5
    assert actions.apply_edited_weights(ss, table)

    fresh = open_page("value_cost")
    assert_clean(fresh)
    restored = Session(fresh.session_state)
    assert restored.settings["target"] == 0.75 and restored.settings["control"] == "violation"
    assert restored.weights.loc["B", "weight"] == 2.5
    assert restored.weights_source.endswith("(edited)")


def test_choosing_a_sample_again_is_what_a_reload_restores():
    at = upload_cohort()
    at.button(key="load_sample").click().run()
    assert_clean(at)
    fresh = open_page("home")
    assert fresh.session_state["dataset"].name == at.session_state["dataset"].name
    assert fresh.session_state["dataset"].name != "cohort.csv"


def test_without_a_saved_workspace_a_first_visit_gets_the_sample_and_saves_nothing(own_store):
    at = open_page("patients")
    assert_clean(at)
    assert at.session_state["dataset_key"].startswith("sample:hcc:")
    assert "HCC cohort" in data_line(at)
    assert favmac.open_store(own_store).workspace().names() == []


def test_an_unreachable_store_says_so_naming_the_url_and_the_pages_keep_working(tmp_path, monkeypatch):
    folder = tmp_path / "not-a-folder"
    folder.write_text("a file where the store's folder should be")
    url = f"sqlite:///{folder / 'store.sqlite'}"
    monkeypatch.setenv("FAVMAC_STORE", url)
    at = open_page("data")
    assert_clean(at)
    warnings = " ".join(w.value for w in at.warning)
    assert "Cannot open the store sqlite" in warnings and folder.name in warnings and "keep working" in warnings
    at.file_uploader(key="upload_wide").set_value(("cohort.csv", wide_csv(), "text/csv")).run()
    assert_clean(at)
    assert at.session_state["dataset"].name == "cohort.csv"  # the ad-hoc pages work on the session's data
    go(at, "online")
    assert_clean(at)


def test_the_two_file_layout_is_restored(own_store):
    wide = pd.read_csv(__import__("io").BytesIO(wide_csv(n=250, seed=4)))
    probs = wide[["patient_id"] + [c for c in wide if c.startswith("prob_")]].rename(columns=lambda c: c.replace("prob_", ""))
    labels = wide[["patient_id"] + [c for c in wide if c.startswith("label_")]].rename(columns=lambda c: c.replace("label_", ""))
    at = open_page("data")
    at.radio(key="upload_mode").set_value("Probabilities + labels files").run()
    at.file_uploader(key="upload_probs").set_value(("p.csv", probs.to_csv(index=False).encode(), "text/csv")).run()
    at.file_uploader(key="upload_labels").set_value(("y.csv", labels.to_csv(index=False).encode(), "text/csv")).run()
    assert_clean(at)
    assert at.session_state["dataset"].name == "p.csv + y.csv"
    fresh = open_page("export")
    assert_clean(fresh)
    ds = fresh.session_state["dataset"]
    assert ds.name == "p.csv + y.csv" and ds.n_patients == 250
    assert np.array_equal(ds.label_array(), labels[["A", "B", "C"]].to_numpy())
    assert fresh.session_state["dataset_key"] == at.session_state["dataset_key"]


def test_a_workspace_that_cannot_be_rebuilt_falls_back_to_the_sample_and_says_why(own_store):
    upload_cohort()
    space = favmac.open_store(own_store).workspace()
    space.save(workspace.CALIBRATION, b"patient_id,prob_A\np1,2.5\n", {"file_name": "cohort.csv"})  # now unreadable
    fresh = open_page("data")
    assert not fresh.exception
    assert fresh.session_state["dataset_key"].startswith("sample:")
    assert "could not be restored" in " ".join(w.value for w in fresh.warning)
