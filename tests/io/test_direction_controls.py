"""Direction-control characters (U+202A-U+202E, U+2066-U+2069, U+200E/F, U+061C) in ids and code
names are refused when a file is read: they make an id display as another id (issue 21)."""
from __future__ import annotations

import pandas as pd
import pytest
from io_helpers import PROBS, WIDE, Upload, error

from favmac.io import load_calibration, load_new_patients, read_probabilities, read_wide

CONTROLS = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f", "\u061c"]
ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"]  # "P\u200b1" looks exactly like "P1"


@pytest.mark.parametrize("char", CONTROLS + ZERO_WIDTH)
def test_an_id_with_a_direction_control_is_refused_with_its_row(char):
    data = WIDE.replace(b"008,", f"0{char}08,".encode())
    err = error(read_wide, Upload("wide.csv", data))
    text = str(err)
    assert "wide.csv" in text and "row 3" in text and "patient_id" in text and f"U+{ord(char):04X}" in text
    assert "Remove the invisible direction-control characters" in text


@pytest.mark.parametrize("char", ["\u202e", "\u2067", "\u200b"])
def test_a_code_name_with_a_direction_control_is_refused(char):
    data = PROBS.replace(b"HCC19", f"HCC{char}19".encode())
    err = error(read_probabilities, Upload("probs.csv", data))
    assert "probs.csv" in str(err) and "code name" in str(err) and f"U+{ord(char):04X}" in str(err)


def test_new_patients_and_ordinary_unicode_ids():
    new = "patient_id,HCC18,HCC19\nN\u202e1,0.5,0.5\n".encode()
    assert "U+202E" in str(error(load_new_patients, Upload("new.csv", new), ["HCC18", "HCC19"]))
    # Arabic, Hebrew and accented ids without control characters are fine
    ok = "patient_id,prob_A,label_A\nمريض1,0.5,1\nחולה2,0.25,0\nJosé,0.1,0\n".encode()
    ds = load_calibration(Upload("ok.csv", ok))
    assert list(ds.patient_ids) == ["مريض1", "חולה2", "José"]


def test_parquet_ids_are_checked_too(tmp_path):
    path = tmp_path / "wide.parquet"
    pd.DataFrame({"patient_id": ["P1", "P\u20692"], "prob_A": [0.5, 0.25], "label_A": [1, 0]}).to_parquet(path)
    assert "U+2069" in str(error(read_wide, str(path)))


def test_zero_width_is_named_as_such_and_shown_as_a_marker():
    from favmac.ui.text import show_bidi

    data = WIDE.replace(b"008,", "0\u200b08,".encode())
    assert "invisible zero-width character U+200B" in str(error(read_wide, Upload("wide.csv", data)))
    assert show_bidi("Plan\u200bA") == "Plan[U+200B]A"  # a segment value shown to the auditor
