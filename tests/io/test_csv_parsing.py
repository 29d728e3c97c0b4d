"""favmac.io.csv_parsing: decoding, header, ids and cells; every error names the file, row/column and fix."""
from __future__ import annotations

import io
import pickle

import numpy as np
import pandas as pd
import pytest

from favmac.io import DataError, load_calibration, read_labels, read_probabilities
from favmac.io.csv_parsing import binary_kind, parse_csv
from io_helpers import LABELS, PROBS, Upload, error


def test_tolerates_bom_crlf_spaces_and_blank_lines():
    raw = "\ufeff patient_id , HCC18 ,HCC19 \r\n 007 ,0.25, 0.5\r\n\r\n008,0.75,0\r\n,,\r\n".encode("utf-8")
    frame = read_probabilities(raw, name="excel.csv")
    assert list(frame.columns) == ["HCC18", "HCC19"]
    assert list(frame.index) == ["007", "008"]
    assert frame.loc["007", "HCC19"] == 0.5


def test_tolerates_old_mac_line_endings_and_empty_trailing_column():
    frame = read_probabilities(b"patient_id,A,\r1,0.5,\r2,0.25,\r", name="mac.csv")
    assert frame.shape == (2, 1)


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


def test_code_with_semicolon():
    err = error(read_probabilities, b"patient_id,A;B,C\n1,0.5,0.2\n", name="p.csv")
    assert "'A;B'" in str(err) and "';'" in str(err)


def test_missing_file(tmp_path):
    err = error(read_probabilities, tmp_path / "nope.csv")
    assert "nope.csv" in str(err) and "does not exist" in str(err)


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


@pytest.mark.parametrize("reader, cell, shown", [
    (read_probabilities, "1.0000001", "probability 1.0000001 is outside [0, 1]"),
    (read_probabilities, "-0.0000001", "probability -1e-07 is outside [0, 1]"),
    (read_labels, "1.0000001", "label 1.0000001 is not 0 or 1"),
    (read_labels, "0.9999999", "label 0.9999999 is not 0 or 1"),
])
def test_out_of_range_value_is_shown_as_written_not_rounded(reader, cell, shown):
    # %g rounds to 6 digits: "probability 1 is outside [0, 1]" named a value that is inside
    err = error(reader, f"patient_id,A\n1,{cell}\n".encode(), name="p.csv")
    assert shown in str(err)


def test_weight_above_limit_is_shown_as_written():
    from favmac.io import read_weights
    err = error(read_weights, b"code,weight\nA,1000000.4\n", name="w.csv")
    assert "weight 1000000.4 is above the largest allowed weight 1,000,000" in str(err)


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


def test_data_error_attributes_and_pickle():
    err = DataError("bad.", file="f.csv", row=3, column="A", fix="Fix it.")
    assert str(err) == "f.csv, row 3, column A: bad. Fix it."
    assert isinstance(err, ValueError)
    again = pickle.loads(pickle.dumps(err))
    assert (again.file, again.row, again.column, str(again)) == ("f.csv", 3, "A", str(err))


# ----------------------------------------------------------------------------- binary and header-only files


BINARY_FILES = {
    "png": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00", "a PNG image"),
    "xlsx": (b"PK\x03\x04\x14\x00\x06\x00\x08\x00\x00\x00!\x00b\xee\x9dh^\x01", "an Excel workbook (.xlsx)"),
    "pdf": (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n", "a PDF document"),
    # Tabs in the first "line" and no NUL byte: once diagnosed as "separated by tabs".
    "tabs": (b"\x01\x02\t\x03\x04\t\x05\x06\n\x07\x08\t\x0e\x0f\n", "it looks binary"),
}


@pytest.mark.parametrize("kind", sorted(BINARY_FILES))
def test_binary_file_is_not_a_text_csv(kind):
    raw, looks = BINARY_FILES[kind]
    err = error(read_probabilities, raw, name=f"upload.{kind}")
    assert "upload." + kind in str(err)
    assert "not a text CSV file" in str(err) and looks in str(err)
    assert "separated by" not in str(err) and "CSV UTF-8" in err.fix


def test_random_bytes_are_not_a_text_csv():
    raw = np.random.default_rng(20230723).integers(0, 256, size=4096, dtype=np.uint8).tobytes()
    err = error(load_calibration, Upload("noise.csv", raw))
    assert "not a text CSV file (it looks binary)" in str(err) and "noise.csv" in str(err)


def test_parquet_where_only_csv_is_read():
    buffer = io.BytesIO()
    pd.DataFrame({"patient_id": ["a"], "A": [0.5]}).to_parquet(buffer)
    err = error(parse_csv, buffer.getvalue(), name="p.parquet")
    assert "not a text CSV file (it looks like a Parquet file)" in str(err)
    assert "load_calibration" in err.fix


def test_text_with_accents_and_a_stray_control_byte_is_still_text():
    raw = "patient_id,A\nJos\u00e9,0.5\n".encode("cp1252") + b"Zo\x0b\x1a,0.25\n"
    assert binary_kind(raw) is None
    assert read_probabilities(raw, name="p.csv").shape == (2, 1)


def test_utf16_csv_with_byte_order_mark_is_decoded():
    frame = read_probabilities("patient_id,A\n007,0.5\n".encode("utf-16"), name="u16.csv")
    assert list(frame.index) == ["007"] and frame.loc["007", "A"] == 0.5


@pytest.mark.parametrize("raw", [b"patient_id,A,B", b"patient_id,A,B\r\n\r\n", b"patient_id,A\n,\n , \n"])
def test_header_only_says_no_rows(raw):
    for reader in (read_probabilities, load_calibration):
        err = error(reader, Upload("head.csv", raw))
        assert "head.csv" in str(err) and "has a header row but no data rows" in str(err)
        assert "Add one row per patient" in err.fix


def test_a_utf8_file_with_one_stray_byte_is_refused_not_read_as_windows_1252():
    # the whole file fell back to Windows-1252: every other accented id changed silently ('Zoë' -> 'ZoÃ«')
    raw = "patient_id,A\nZo\u00eb,0.5\nAnna,0.1\n".encode("utf-8") + b"Jos\xe9,0.25\n"
    err = error(read_probabilities, raw, name="mixed.csv")
    assert err.row == 4 and "UTF-8" in str(err) and "0xE9" in str(err)
    assert list(read_probabilities("patient_id,A\nJos\u00e9,0.5\n".encode("cp1252"), name="w.csv").index) == ["Jos\u00e9"]
