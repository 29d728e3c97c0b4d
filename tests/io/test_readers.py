"""favmac.io.readers: the layouts (probabilities, labels, wide, new patients, weights) and their joins."""
from __future__ import annotations

import numpy as np
import pytest

from favmac.io import (
    Dataset,
    load_calibration,
    load_new_patients,
    read_labels,
    read_probabilities,
    read_weights,
    read_wide,
)
from io_helpers import LABELS, PROBS, WIDE, Upload, error


def test_probabilities_ids_stay_text():
    frame = read_probabilities(PROBS, name="p.csv")
    assert list(frame.index) == ["007", "008", "009"]
    assert frame.index.name == "patient_id"
    assert list(frame.columns) == ["HCC18", "HCC19"]
    assert all(dtype == np.float64 for dtype in frame.dtypes)
    assert frame.loc["007", "HCC19"] == 0.5


def test_labels_are_int8():
    frame = read_labels(b"patient_id,A,B\n1,1.0,0\n2,0,1\n", name="l.csv")
    assert all(dtype == np.int8 for dtype in frame.dtypes)
    assert frame.to_numpy().tolist() == [[1, 0], [0, 1]]


def test_two_files_join_by_id_with_shuffled_rows_and_columns():
    labels = b"patient_id,HCC19,HCC18\n009,1,1\n007,1,0\n008,0,1\n"
    data = load_calibration(PROBS, labels)
    assert isinstance(data, Dataset)
    assert data.codes == ["HCC18", "HCC19"]
    assert list(data.patient_ids) == ["007", "008", "009"]
    assert data.label_array().tolist() == [[0, 1], [1, 0], [1, 1]]
    assert data.label_array().dtype == np.int8
    assert data.prob_array().dtype == np.float64
    assert (data.n_patients, data.n_codes) == (3, 2)


def test_wide_file():
    data = load_calibration(WIDE, name="cohort")
    assert data.name == "cohort"
    assert data.codes == ["HCC18", "HCC19"]
    assert data.prob_array().tolist() == [[0.25, 0.5], [0.75, 0.0]]
    assert data.label_array().tolist() == [[0, 1], [1, 0]]


def test_wide_file_column_order_is_free():
    raw = b"label_B,patient_id,prob_A,prob_B,label_A\n1,x,0.1,0.9,0\n"
    data = read_wide(raw, name="w.csv")
    assert data.codes == ["A", "B"]
    assert data.label_array().tolist() == [[0, 1]]


def test_new_patients_reordered_to_codes():
    new = load_new_patients(b"patient_id,HCC19,HCC18\nN1,0.5,0.25\n", ["HCC18", "HCC19"], name="new.csv")
    assert list(new.columns) == ["HCC18", "HCC19"]
    assert new.loc["N1"].tolist() == [0.25, 0.5]


def test_new_patients_accepts_wide_file_and_ignores_labels():
    new = load_new_patients(WIDE, ["HCC18", "HCC19"], name="w.csv")
    assert new.to_numpy().tolist() == [[0.25, 0.5], [0.75, 0.0]]


def test_weights_follow_codes_and_keep_text_codes():
    raw = b"code,weight,description\n0,10,digit 0\n007,0.5,\nHCC19,1.25,heart\nEXTRA,3,ignored\n"
    weights = read_weights(raw, ["HCC19", "0", "007"], name="w.csv")
    assert list(weights.index) == ["HCC19", "0", "007"]
    assert weights["weight"].tolist() == [1.25, 10.0, 0.5]
    assert weights["description"].tolist() == ["heart", "digit 0", ""]
    all_rows = read_weights(raw, name="w.csv")
    assert len(all_rows) == 4


def test_weights_without_description_column():
    weights = read_weights(b"code,weight\nA,1\nB,0\n", ["A", "B"])
    assert weights["description"].tolist() == ["", ""]


def test_no_code_columns():
    err = error(read_probabilities, b"patient_id\n1\n", name="p.csv")
    assert "no code columns" in str(err)


def test_ids_in_one_file_only():
    labels = b"patient_id,HCC18,HCC19\n007,0,1\n010,1,0\n011,1,1\n012,0,0\n"
    err = error(load_calibration, Upload("probs.csv", PROBS), Upload("labels.csv", labels))
    message = str(err)
    assert "2 patient ids in probs.csv are not in labels.csv (e.g. '008', '009')" in message
    assert "3 patient ids in labels.csv are not in probs.csv (e.g. '010', '011', '012')" in message
    assert err.column == "patient_id"


def test_ids_mismatch_lists_only_a_few():
    n = 20
    probs = "patient_id,A\n" + "".join(f"p{i},0.5\n" for i in range(n))
    labels = "patient_id,A\n" + "".join(f"q{i},1\n" for i in range(n))
    err = error(load_calibration, Upload("p.csv", probs.encode()), Upload("l.csv", labels.encode()))
    assert "20 patient ids in p.csv" in str(err) and "and 15 more" in str(err)


def test_codes_differ_between_files():
    labels = b"patient_id,HCC18,HCC99\n007,0,1\n008,1,0\n009,1,1\n"
    err = error(load_calibration, Upload("probs.csv", PROBS), Upload("labels.csv", labels))
    assert "1 code in probs.csv is missing from labels.csv: HCC19" in str(err)
    assert "labels.csv has 1 unknown code not in probs.csv: HCC99" in str(err)


def test_wide_prob_without_label():
    raw = b"patient_id,prob_A,label_A,prob_B\n1,0.5,1,0.2\n"
    err = error(read_wide, raw, name="w.csv")
    assert err.column == "prob_B" and "no matching label_B" in str(err)


def test_wide_label_without_prob():
    raw = b"patient_id,prob_A,label_A,label_B\n1,0.5,1,0\n"
    err = error(read_wide, raw, name="w.csv")
    assert err.column == "label_B" and "no matching prob_B" in str(err)


def test_wide_unknown_column():
    raw = b"patient_id,prob_A,label_A,age\n1,0.5,1,70\n"
    err = error(read_wide, raw, name="w.csv")
    assert err.column == "age" and "neither patient_id nor prob_<code> / label_<code>" in str(err)


def test_single_probabilities_file_as_calibration():
    err = error(load_calibration, Upload("p.csv", PROBS))
    assert "holds no labels" in str(err) and "separate labels file" in str(err)


def test_wide_cells_checked_like_the_other_layouts():
    err = error(read_wide, b"patient_id,prob_A,label_A\n1,0.5,1\n2,0.5,3\n", name="w.csv")
    assert (err.row, err.column) == (3, "label_A") and "label 3" in str(err)
    err = error(read_wide, b"patient_id,prob_A,label_A\n1,1.5,1\n", name="w.csv")
    assert (err.row, err.column) == (2, "prob_A") and "outside [0, 1]" in str(err)


def test_wide_file_given_as_probabilities_or_labels():
    err = error(read_probabilities, WIDE, name="w.csv")
    assert "wide file" in str(err)
    err = error(load_calibration, Upload("w.csv", WIDE), Upload("l.csv", LABELS))
    assert "wide file" in str(err)


def test_new_patients_missing_and_unknown_codes():
    err = error(load_new_patients, b"patient_id,HCC18,HCC77\nN1,0.5,0.2\n", ["HCC18", "HCC19"], name="new.csv")
    assert "1 code in the calibration data is missing from new.csv: HCC19" in str(err)
    assert "new.csv has 1 unknown code not in the calibration data: HCC77" in str(err)


def test_weights_missing_for_codes():
    err = error(read_weights, b"code,weight\nA,1\n", ["A", "B", "C"], name="w.csv")
    assert "w.csv" in str(err) and "2 codes in the data have no weight: B, C" in str(err)


def test_weights_negative():
    err = error(read_weights, b"code,weight\nA,1\nB,-0.5\n", ["A", "B"], name="w.csv")
    assert (err.row, err.column) == (3, "weight") and "weight -0.5 is negative" in str(err)


def test_weights_missing_value():
    err = error(read_weights, b"code,weight\nA,1\nB,\n", ["A", "B"], name="w.csv")
    assert (err.row, err.column) == (3, "weight") and "empty" in str(err)


def test_weights_non_numeric():
    err = error(read_weights, b"code,weight\nA,one\n", ["A"], name="w.csv")
    assert (err.row, err.column) == (2, "weight") and "'one' is not a number" in str(err)


def test_weights_infinite():
    err = error(read_weights, b"code,weight\nA,inf\n", ["A"], name="w.csv")
    assert "infinite" in str(err)


def test_weights_bad_row_reported_at_its_file_row_even_when_reordered():
    err = error(read_weights, b"code,weight\nA,1\nB,2\nC,-1\n", ["C", "A"], name="w.csv")
    assert err.row == 4


def test_weights_missing_columns():
    err = error(read_weights, b"hcc,factor\nA,1\n", ["A"], name="w.csv")
    assert "no 'code', 'weight' column" in str(err)


def test_weights_duplicate_code():
    err = error(read_weights, b"code,weight\nA,1\nA,2\n", ["A"], name="w.csv")
    assert "'A'" in str(err) and "more than once" in str(err) and err.row == 2


def test_weights_blank_code():
    err = error(read_weights, b"code,weight\nA,1\n,2\n", ["A"], name="w.csv")
    assert err.row == 3 and "no code" in str(err)




@pytest.mark.parametrize("code", ["segment", "cms_cell", "known_codes", "known_A", "patient_id"])
def test_wide_code_named_like_a_reserved_column_is_refused(code):
    # a wide file's prob_segment / label_segment made a code 'segment' that no probabilities-layout file can
    # hold (there a 'segment' column is the segments): the new patients were then refused as "missing segment"
    raw = f"patient_id,prob_A,label_A,prob_{code},label_{code}\nx,0.1,0,0.5,1\ny,0.2,1,0.4,0\n".encode()
    err = error(read_wide, raw, name="w.csv")
    assert (err.file, err.row, err.column) == ("w.csv", 1, f"prob_{code}")
    assert f"'{code}'" in str(err) and "reserved" in str(err) and "Rename" in str(err)


def test_wide_new_patients_code_named_like_a_reserved_column_is_refused():
    err = error(load_new_patients, b"patient_id,prob_A,prob_segment\nx,0.1,0.5\n", ["A", "segment"], name="n.csv")
    assert (err.row, err.column) == (1, "prob_segment") and "reserved" in str(err)


@pytest.mark.parametrize("raw, reader", [
    (b"patient_id,HCC18,hcc18\nx,0.1,0.2\n", read_probabilities),
    (b"patient_id,prob_HCC18,label_HCC18,prob_Hcc18,label_Hcc18\nx,0.1,0,0.2,1\n", read_wide),
])
def test_codes_differing_only_in_case_are_refused(raw, reader):
    # 'HCC18' and 'hcc18' were two codes (each with its own weight and calibration): a duplicated column
    err = error(reader, raw, name="c.csv")
    assert err.row == 1 and "HCC18" in str(err) and "differ only in upper/lower case" in str(err)


def test_weights_code_with_a_direction_control_is_named_as_such():
    # was "1 code in the data has no weight: A", with the row that holds 'A\u202e' unnamed
    err = error(read_weights, "code,weight\nA\u202e,1\nB,2\n".encode(), ["A", "B"], name="w.csv")
    assert (err.row, err.column) == (2, "code") and "U+202E" in str(err)


def test_weights_code_in_another_case_is_pointed_out():
    err = error(read_weights, b"code,weight\nhcc18,1\nHCC19,2\n", ["HCC18", "HCC19"], name="w.csv")
    assert "HCC18" in str(err) and "'hcc18'" in str(err) and "case" in str(err)
