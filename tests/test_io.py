"""favmac.io: every validation error names the file, the row/column and the problem."""
from __future__ import annotations

import io
import pickle

import numpy as np
import pandas as pd
import pytest

from favmac.io import (
    CMS_MODELS,
    CMS_SEGMENTS,
    DataError,
    Dataset,
    check_universe,
    cms_hcc_weights,
    load_calibration,
    load_new_patients,
    read_labels,
    read_probabilities,
    read_weights,
    read_wide,
    to_safe_csv,
)

PROBS = b"patient_id,HCC18,HCC19\n007,0.25,0.5\n008,0.75,0\n009,1,0.125\n"
LABELS = b"patient_id,HCC18,HCC19\n007,0,1\n008,1,0\n009,1,1\n"
WIDE = b"patient_id,prob_HCC18,label_HCC18,prob_HCC19,label_HCC19\n007,0.25,0,0.5,1\n008,0.75,1,0,0\n"


def error(func, *args, **kwargs) -> DataError:
    with pytest.raises(DataError) as info:
        func(*args, **kwargs)
    return info.value


class Upload:
    """Stands in for Streamlit's UploadedFile: a name and getvalue()."""

    def __init__(self, name, data):
        self.name = name
        self._data = data

    def getvalue(self):
        return self._data


# ----------------------------------------------------------------------------- happy paths


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


def test_tolerates_bom_crlf_spaces_and_blank_lines():
    raw = "\ufeff patient_id , HCC18 ,HCC19 \r\n 007 ,0.25, 0.5\r\n\r\n008,0.75,0\r\n,,\r\n".encode("utf-8")
    frame = read_probabilities(raw, name="excel.csv")
    assert list(frame.columns) == ["HCC18", "HCC19"]
    assert list(frame.index) == ["007", "008"]
    assert frame.loc["007", "HCC19"] == 0.5


def test_tolerates_old_mac_line_endings_and_empty_trailing_column():
    frame = read_probabilities(b"patient_id,A,\r1,0.5,\r2,0.25,\r", name="mac.csv")
    assert frame.shape == (2, 1)


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


def test_sources_path_bytes_upload_and_filelike(tmp_path):
    path = tmp_path / "probs.csv"
    path.write_bytes(PROBS)
    expected = read_probabilities(PROBS)
    for source in (path, str(path), Upload("probs.csv", PROBS), io.BytesIO(PROBS)):
        pd.testing.assert_frame_equal(read_probabilities(source), expected)
    data = load_calibration(path, Upload("labels.csv", LABELS))
    assert data.name == "probs"


def test_pure_same_bytes_same_frame():
    pd.testing.assert_frame_equal(read_probabilities(PROBS), read_probabilities(PROBS))


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


# ----------------------------------------------------------------------------- structural errors


def test_empty_file_zero_bytes():
    err = error(read_probabilities, b"", name="empty.csv")
    assert err.file == "empty.csv"
    assert "empty.csv" in str(err) and "empty" in str(err)


def test_empty_file_header_only():
    err = error(read_probabilities, b"patient_id,A,B\n", name="head.csv")
    assert "head.csv" in str(err) and "no data rows" in str(err)


@pytest.mark.parametrize(
    "sep, word",
    [(";", "semicolons (;)"), ("\t", "tabs"), ("|", "vertical bars (|)")],
)
def test_wrong_delimiter_is_named(sep, word):
    raw = f"patient_id{sep}A{sep}B\n1{sep}0.5{sep}0.25\n".encode()
    err = error(read_probabilities, raw, name="euro.csv")
    assert err.row == 1
    assert word in str(err)
    assert "euro.csv" in str(err) and "comma" in str(err)


def test_missing_patient_id_column():
    err = error(read_probabilities, b"id,A\n1,0.5\n", name="p.csv")
    assert "'patient_id'" in str(err) and "p.csv" in str(err) and err.row == 1
    assert "Rename the column 'id' to patient_id" in str(err)


def test_missing_patient_id_column_without_a_guess():
    err = error(read_probabilities, b"foo,A\n1,0.5\n", name="p.csv")
    assert "found: 'foo', 'A'" in str(err)


def test_blank_ids_listed_with_rows():
    err = error(read_probabilities, b"patient_id,A\n1,0.5\n,0.25\n3,0.1\n  ,0.2\n", name="p.csv")
    assert err.column == "patient_id" and err.row == 3
    assert "2 rows have no patient id (rows 3, 5)" in str(err)


def test_single_blank_id():
    err = error(read_probabilities, b"patient_id,A\n1,0.5\n,0.25\n", name="p.csv")
    assert "row 3 has no patient id" in str(err)


def test_duplicate_ids_listed_with_rows():
    raw = b"patient_id,A\n007,0.5\n7,0.3\n007,0.1\nX,0.2\nX,0.2\n"
    err = error(read_probabilities, raw, name="p.csv")
    assert err.row == 2 and err.column == "patient_id"
    assert "2 patient ids appear more than once" in str(err)
    assert "'007' (rows 2, 4)" in str(err) and "'X' (rows 5, 6)" in str(err)


def test_duplicate_column_names():
    err = error(read_probabilities, b"patient_id,A, A \n1,0.5,0.2\n", name="p.csv")
    assert "'A' appears more than once (columns 2 and 3)" in str(err)


def test_values_under_an_unnamed_column():
    err = error(read_probabilities, b"patient_id,A,\n1,0.5,0.2\n", name="p.csv")
    assert err.row == 2 and err.column == "3" and "no name" in str(err)


def test_row_with_extra_cells_decimal_comma():
    err = error(read_probabilities, b"patient_id,A,B\n1,0.5,0.2\n2,0,5,0.2\n", name="p.csv")
    assert err.row == 3
    assert "4 cells but the header has 3 columns" in str(err)
    err = error(read_probabilities, b"patient_id,A,B\n1,0,5,0.2\n", name="p.csv")
    assert err.row == 2


def test_no_code_columns():
    err = error(read_probabilities, b"patient_id\n1\n", name="p.csv")
    assert "no code columns" in str(err)


def test_code_with_semicolon():
    err = error(read_probabilities, b"patient_id,A;B,C\n1,0.5,0.2\n", name="p.csv")
    assert "'A;B'" in str(err) and "';'" in str(err)


def test_missing_file(tmp_path):
    err = error(read_probabilities, tmp_path / "nope.csv")
    assert "nope.csv" in str(err) and "does not exist" in str(err)


# ----------------------------------------------------------------------------- cell errors


def test_non_numeric_cell_names_row_column_and_text():
    raw = b"patient_id,A,B\n1,0.5,0.2\n2,0.5,abc\n3,x,0.1\n"
    err = error(read_probabilities, raw, name="p.csv")
    assert (err.row, err.column) == (3, "B")
    assert "p.csv, row 3, column B: 'abc' is not a number (2 cells" in str(err)


def test_empty_cell_is_nan():
    err = error(read_probabilities, b"patient_id,A,B\n1,0.5,0.2\n2,,0.2\n", name="p.csv")
    assert (err.row, err.column) == (3, "A")
    assert "empty (or NaN)" in str(err)


def test_literal_nan():
    err = error(read_probabilities, b"patient_id,A,B\n1,0.5,NaN\n", name="p.csv")
    assert (err.row, err.column) == (2, "B") and "NaN" in str(err)


@pytest.mark.parametrize("text", ["inf", "-inf", "Infinity"])
def test_infinite(text):
    err = error(read_probabilities, f"patient_id,A,B\n1,0.5,0.2\n2,0.1,{text}\n".encode(), name="p.csv")
    assert (err.row, err.column) == (3, "B") and "infinite" in str(err)


@pytest.mark.parametrize("value", ["1.5", "-0.01", "45"])
def test_probability_out_of_range(value):
    raw = f"patient_id,A,B\n1,0.5,0.2\n2,0.1,{value}\n".encode()
    err = error(read_probabilities, raw, name="p.csv")
    assert (err.row, err.column) == (3, "B")
    assert f"probability {float(value):g} is outside [0, 1]" in str(err)
    assert "percentages" in str(err)


def test_counts_all_offending_cells():
    err = error(read_probabilities, b"patient_id,A,B\n1,2,3\n2,0.5,4\n", name="p.csv")
    assert (err.row, err.column) == (2, "A") and "3 cells in this file have this problem" in str(err)


def test_labels_not_zero_one():
    err = error(read_labels, b"patient_id,A,B\n1,0,1\n2,2,0\n", name="l.csv")
    assert (err.row, err.column) == (3, "A")
    assert "l.csv" in str(err) and "label 2 is not 0 or 1" in str(err)


def test_labels_fractional():
    err = error(read_labels, b"patient_id,A\n1,0.5\n", name="l.csv")
    assert "label 0.5 is not 0 or 1" in str(err)


def test_labels_true_false_gets_specific_fix():
    err = error(read_labels, b"patient_id,A\n1,TRUE\n2,FALSE\n", name="l.csv")
    assert err.row == 2 and "instead of TRUE/FALSE" in str(err)


# ----------------------------------------------------------------------------- two-file and wide errors


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


# ----------------------------------------------------------------------------- weights errors


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


# ----------------------------------------------------------------------------- universes, CMS, output


def test_check_universe():
    assert check_universe(35, "ratio") == "ratio"
    assert check_universe(14, "full") == "full"
    err = error(check_universe, 35, "full")
    assert "at most 14 codes" in str(err) and "35 codes" in str(err) and "'ratio'" in str(err)
    err = error(check_universe, 3, "biggest")
    assert "unknown universe 'biggest'" in str(err)


def test_cms_hcc_weights_v28_cna():
    weights = cms_hcc_weights("V28", "CNA", ["HCC18", "hcc226", "37"])
    assert list(weights.index) == ["HCC18", "hcc226", "37"]
    assert weights.loc["HCC18", "weight"] == pytest.approx(2.341)
    assert weights.loc["37", "description"] == "Diabetes with Chronic Complications"
    assert (weights["weight"] >= 0).all()


def test_cms_hcc_weights_all_codes_every_model_and_segment():
    for model in CMS_MODELS:
        for segment in CMS_SEGMENTS:
            if segment == "NE":
                continue
            table = cms_hcc_weights(model, segment)
            assert len(table) > 50
            assert all(code.startswith("HCC") for code in table.index)
            assert (table["description"] != "").mean() > 0.9


def test_cms_hcc_weights_errors():
    err = error(cms_hcc_weights, "V28", "CNA", ["HCC18", "HCC999", "FOO"])
    assert "HCC999, FOO" in str(err) and "CMS-HCC Model V28" in str(err)
    assert "segment" in str(error(cms_hcc_weights, "V28", "XYZ"))
    assert "V21" in str(error(cms_hcc_weights, "V21", "CNA"))
    assert "demographics only" in str(error(cms_hcc_weights, "V28", "NE"))


def test_to_safe_csv_neutralizes_formulas_but_not_numbers():
    frame = pd.DataFrame(
        {
            "patient_id": ["=cmd|' /C calc'!A0", "+1", "-2", "@SUM(A1)", "\tx", "\ry", "ok"],
            "value": [-0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        }
    )
    text = to_safe_csv(frame).decode()
    back = pd.read_csv(io.StringIO(text), dtype={"patient_id": str}, keep_default_na=False)
    assert back["patient_id"].tolist() == ["'=cmd|' /C calc'!A0", "'+1", "'-2", "'@SUM(A1)", "'\tx", "'\ny", "ok"]
    assert back["value"].tolist()[0] == -0.5
    assert ",-0.5\n" in text


def test_to_safe_csv_writes_named_index():
    frame = read_probabilities(PROBS)
    text = to_safe_csv(frame).decode()
    assert text.startswith("patient_id,HCC18,HCC19\n007,")


def test_data_error_attributes_and_pickle():
    err = DataError("bad.", file="f.csv", row=3, column="A", fix="Fix it.")
    assert str(err) == "f.csv, row 3, column A: bad. Fix it."
    assert isinstance(err, ValueError)
    again = pickle.loads(pickle.dumps(err))
    assert (again.file, again.row, again.column, str(again)) == ("f.csv", 3, "A", str(err))
