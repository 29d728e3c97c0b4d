"""Data page: good and bad uploads through the file uploaders; weights from files, CMS and edits."""
from __future__ import annotations

import numpy as np
import pytest
from app_helpers import SAMPLES, assert_clean, go, open_page

WIDE = (
    b"patient_id,prob_HCC18,label_HCC18,prob_HCC19,label_HCC19,prob_HCC85,label_HCC85\n"
    + b"".join(f"P{i:03d},{(i % 10) / 10},{i % 2},{(i % 7) / 7:.4f},{(i // 2) % 2},0.25,{int(i % 3 == 0)}\n".encode() for i in range(60))
)
BAD_PROB = WIDE.replace(b"P005,0.5,", b"P005,1.5,", 1)


def upload(at, key, name, data):
    at.file_uploader(key=key).set_value((name, data, "text/csv"))
    return at.run()


def test_good_wide_upload_replaces_the_dataset():
    at = open_page("data")
    upload(at, "upload_wide", "mine.csv", WIDE)
    assert_clean(at)
    ds = at.session_state["dataset"]
    assert ds.name == "mine.csv" and ds.n_patients == 60 and ds.codes == ["HCC18", "HCC19", "HCC85"]
    assert at.session_state["dataset_key"].startswith("upload:")
    assert any("Loaded mine.csv" in s.value for s in at.success)
    # the sample's new patients and weights had other codes: set aside, unit weights
    assert at.session_state["new_patients"] is None
    assert list(at.session_state["weights"]["weight"]) == [1.0, 1.0, 1.0]
    assert at.session_state["settings"]["burn_in"] < 60  # adapted to the short stream


def test_bad_upload_shows_the_problem_and_keeps_the_loaded_data():
    at = open_page("data")
    before = at.session_state["dataset"]
    key_before = at.session_state["dataset_key"]
    upload(at, "upload_wide", "broken.csv", BAD_PROB)
    assert not at.exception
    message = " ".join(e.value for e in at.error)
    assert "broken.csv" in message and "row 7" in message  # header is row 1, P005 is row 7
    assert at.session_state["dataset_key"] == key_before
    assert at.session_state["dataset"].n_patients == before.n_patients == 4000


def test_semicolon_file_is_rejected_with_the_delimiter_named():
    at = open_page("data")
    upload(at, "upload_wide", "semi.csv", WIDE.replace(b",", b";"))
    message = " ".join(e.value for e in at.error)
    assert "semi.csv" in message and "semicolon" in message
    assert at.session_state["dataset"].n_patients == 4000


def test_two_file_upload_joins_by_patient_id():
    at = open_page("data")
    at.radio(key="upload_mode").set_value("Probabilities + labels files").run()
    at.file_uploader(key="upload_probs").set_value(("hcc_probs.csv", (SAMPLES / "hcc_probs.csv").read_bytes(), "text/csv"))
    at.run()
    assert at.session_state["dataset"].n_patients == 4000  # waits for the labels file
    at.file_uploader(key="upload_labels").set_value(("hcc_labels.csv", (SAMPLES / "hcc_labels.csv").read_bytes(), "text/csv"))
    at.run()
    assert_clean(at)
    ds = at.session_state["dataset"]
    assert ds.name == "hcc_probs.csv + hcc_labels.csv" and ds.n_patients == 1000 and ds.n_codes == 35
    # same codes as the sample: the sample's weights and new patients are kept
    assert at.session_state["new_patients"] is not None
    assert at.session_state["weights_source"].startswith("sample file")


def test_new_patients_upload_good_and_bad():
    at = open_page("data")
    good = (SAMPLES / "hcc_new_patients.csv").read_bytes()
    lines = good.decode().splitlines()
    upload(at, "upload_new", "fresh.csv", ("\n".join(lines[:11]) + "\n").encode())
    assert_clean(at)
    assert len(at.session_state["new_patients"]) == 10
    header = lines[0].split(",")
    bad = (",".join(header[:-1]) + "\n" + "\n".join(",".join(l.split(",")[:-1]) for l in lines[1:5]) + "\n").encode()
    upload(at, "upload_new", "short.csv", bad)
    assert any("short.csv" in e.value for e in at.error)
    assert len(at.session_state["new_patients"]) == 10  # unchanged


def test_weights_from_cms_and_from_file_and_edits():
    at = open_page("data")
    at.selectbox(key="cms_model").set_value("V24")  # the sample uses V28 codes
    at.button(key="load_cms").click().run()
    assert any("V24" in e.value and "no risk factor" in e.value for e in at.error)
    assert at.session_state["weights_source"].startswith("sample file")
    at.selectbox(key="cms_model").set_value("V28")
    at.selectbox(key="cms_segment").set_value("CFA")
    at.button(key="load_cms").click().run()
    assert_clean(at)
    assert at.session_state["weights_source"] == "CMS-HCC V28 CFA"
    assert at.session_state["weights"].index.tolist() == at.session_state["dataset"].codes

    codes = at.session_state["dataset"].codes
    csv = "code,weight,description\n" + "".join(f"{c},{k + 1},d{k}\n" for k, c in enumerate(codes))
    upload(at, "upload_weights", "w.csv", csv.encode())
    assert_clean(at)
    np.testing.assert_array_equal(at.session_state["weights"]["weight"].to_numpy(), np.arange(1, len(codes) + 1))

    negative = csv.replace(f"{codes[0]},1,", f"{codes[0]},-1,")
    upload(at, "upload_weights", "neg.csv", negative.encode())
    assert any("neg.csv" in e.value for e in at.error)
    assert at.session_state["weights"]["weight"].iloc[0] == 1  # unchanged


def test_weight_edit_is_applied_and_survives_page_switch():
    at = open_page("data")
    first = at.session_state["weights"].index[0]
    # the edit state st.data_editor keeps for a keyed editor
    at.session_state["weights_editor"] = {"edited_rows": {0: {"weight": 9.5}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert_clean(at)
    assert at.session_state["weights"].loc[first, "weight"] == pytest.approx(9.5)
    assert at.session_state["weights_source"].endswith("(edited)")
    go(at, "value_cost")
    go(at, "data")
    assert at.session_state["weights"].loc[first, "weight"] == pytest.approx(9.5)
    # a new weights source starts from its own values
    at.button(key="load_sample").click().run()
    assert at.session_state["weights"].loc[first, "weight"] != pytest.approx(9.5)


def test_negative_weight_edit_is_refused():
    at = open_page("data")
    first = at.session_state["weights"].index[0]
    before = at.session_state["weights"].loc[first, "weight"]
    at.session_state["weights_editor"] = {"edited_rows": {0: {"weight": -2.0}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert any(">= 0" in e.value for e in at.error)
    assert at.session_state["weights"].loc[first, "weight"] == before
