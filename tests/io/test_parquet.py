"""favmac.io.parquet: Parquet input reads like the CSV it stands for, errors and all."""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from favmac.io import load_calibration, load_new_patients, read_labels, read_probabilities, read_table, read_weights, read_wide
from favmac.io.parquet import is_parquet
from io_helpers import Upload, error

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"


def parquet_bytes(frame: pd.DataFrame, index: bool = False) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=index)
    return buffer.getvalue()


def csv_bytes(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


def sample_frame(file: str) -> pd.DataFrame:
    return pd.read_csv(SAMPLES / file, dtype={"patient_id": str})


def assert_same_dataset(a, b):
    pd.testing.assert_frame_equal(a.probs, b.probs)
    pd.testing.assert_frame_equal(a.labels, b.labels)


# ----------------------------------------------------------------------------- round trips


def test_sample_wide_file_round_trips_through_parquet(tmp_path):
    expected = load_calibration(SAMPLES / "hcc_calibration.csv")
    path = tmp_path / "hcc_calibration.parquet"
    sample_frame("hcc_calibration.csv").to_parquet(path, index=False)
    from_path = load_calibration(path)
    assert_same_dataset(from_path, expected)
    assert from_path.name == "hcc_calibration"
    # Uploaded bytes: recognized by the name, and by the PAR1 signature without one.
    assert_same_dataset(load_calibration(Upload("cohort.parquet", path.read_bytes())), expected)
    assert_same_dataset(load_calibration(path.read_bytes()), expected)
    assert_same_dataset(read_wide(path), expected)


def test_sample_new_patients_and_pair_round_trip(tmp_path):
    codes = load_calibration(SAMPLES / "hcc_calibration.csv").codes
    expected = load_new_patients(SAMPLES / "hcc_new_patients.csv", codes)
    path = tmp_path / "new.pq"
    sample_frame("hcc_new_patients.csv").to_parquet(path, index=False)
    pd.testing.assert_frame_equal(load_new_patients(path, codes), expected)
    pd.testing.assert_frame_equal(
        load_new_patients(Upload("new.pq", path.read_bytes()), codes), expected,
    )
    pair = load_calibration(
        Upload("p.parquet", parquet_bytes(sample_frame("hcc_probs.csv"))), SAMPLES / "hcc_labels.csv",
    )
    assert_same_dataset(pair, load_calibration(SAMPLES / "hcc_probs.csv", SAMPLES / "hcc_labels.csv"))


def test_new_patients_from_a_wide_parquet_use_the_prob_columns():
    frame = sample_frame("hcc_calibration.csv")
    expected = load_calibration(SAMPLES / "hcc_calibration.csv")
    new = load_new_patients(Upload("w.parquet", parquet_bytes(frame)), expected.codes)
    pd.testing.assert_frame_equal(new, expected.probs)


def test_index_saved_by_pandas_and_integer_ids():
    frame = pd.DataFrame({"patient_id": ["007", "008"], "A": [0.25, 1.0]})
    with_index = parquet_bytes(frame.set_index("patient_id"), index=True)
    assert list(read_probabilities(with_index).index) == ["007", "008"]
    unnamed_index = parquet_bytes(frame.set_index(pd.Index([5, 9])), index=True)
    assert read_probabilities(unnamed_index).shape == (2, 1)
    numbers = parquet_bytes(pd.DataFrame({"patient_id": [7, 8], "A": [0.5, 0.0]}))
    assert list(read_probabilities(numbers).index) == ["7", "8"]
    labels = read_labels(parquet_bytes(pd.DataFrame({"patient_id": ["a"], "A": [1], "B": [0]})))
    assert labels.dtypes.tolist() == [np.int8, np.int8]


def test_weights_and_read_table_accept_parquet():
    raw = parquet_bytes(pd.DataFrame({"code": ["B", "A"], "weight": [2.0, 1.5], "description": ["b", None]}))
    weights = read_weights(Upload("w.parquet", raw), ["A", "B"])
    assert weights["weight"].tolist() == [1.5, 2.0] and weights["description"].tolist() == ["", "b"]
    table = read_table(parquet_bytes(pd.DataFrame({"patient_id": [1], "A": [0.5]})))
    assert table.to_dict("list") == {"patient_id": ["1"], "A": [0.5]}


def test_is_parquet():
    assert is_parquet(b"PAR1\x15\x04", "")
    assert is_parquet(b"", "x.parquet") and is_parquet(b"", "X.PQ")
    assert not is_parquet(b"patient_id,A\n", "x.csv")


# ----------------------------------------------------------------------------- the same errors as CSV


def wide(**columns):
    base = {"patient_id": ["a", "b", "c"], "prob_A": [0.1, 0.2, 0.3], "label_A": [0, 1, 0]}
    base.update(columns)
    return pd.DataFrame({k: v for k, v in base.items() if v is not None})


ERROR_CASES = {
    "nan": (wide(prob_A=[0.1, np.nan, 0.3]), "empty (or NaN)"),
    "inf": (wide(prob_A=[0.1, 0.2, np.inf]), "infinite"),
    "out of range": (wide(prob_A=[0.1, 1.5, 0.3]), "outside [0, 1]"),
    "label not 0/1": (wide(label_A=[0, 2, 1]), "label 2 is not 0 or 1"),
    "text cell": (wide(prob_A=["0.1", "abc", "0.3"]), "'abc' is not a number"),
    "boolean labels": (wide(label_A=[True, False, True]), "instead of TRUE/FALSE"),
    "duplicate ids": (wide(patient_id=["a", "b", "a"]), "'a' (rows 2, 4)"),
    "missing id": (wide(patient_id=["a", None, "c"]), "row 3 has no patient id"),
    "no id column": (wide(patient_id=None), "there is no 'patient_id' column"),
    "missing twin": (wide(label_A=None), "no matching label_A column"),
    "unknown column": (wide(score=[1, 2, 3]), "'score' is neither patient_id"),
    "semicolon code": (pd.DataFrame({"patient_id": ["a"], "prob_A;B": [0.1], "label_A;B": [1]}), "contains ';'"),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_parquet_errors_match_csv_errors(case):
    frame, expected = ERROR_CASES[case]
    # keep_columns=False: an unknown column is refused (by default it is kept as a candidate segment column)
    from_csv = error(load_calibration, Upload("data.csv", csv_bytes(frame)), keep_columns=False)
    from_parquet = error(load_calibration, Upload("data.parquet", parquet_bytes(frame)), keep_columns=False)
    assert expected in str(from_parquet)
    assert from_parquet.file == "data.parquet"
    assert (from_parquet.problem, from_parquet.row, from_parquet.column, from_parquet.fix) == (
        from_csv.problem, from_csv.row, from_csv.column, from_csv.fix,
    )


def test_new_patients_parquet_errors_match_csv():
    frame = pd.DataFrame({"patient_id": ["a", "b"], "A": [0.5, -0.25], "C": [0.1, 0.2]})
    for codes, expected in ((["A", "C"], "probability -0.25 is outside [0, 1]"), (["A", "B"], "missing from")):
        if codes[1] == "B":
            frame = frame.assign(A=[0.5, 0.25])
        from_csv = error(load_new_patients, Upload("new.csv", csv_bytes(frame)), codes)
        from_parquet = error(load_new_patients, Upload("new.parquet", parquet_bytes(frame)), codes)
        assert expected in str(from_parquet)
        assert (from_parquet.problem, from_parquet.row, from_parquet.column) == (
            from_csv.problem.replace("new.csv", "new.parquet"), from_csv.row, from_csv.column,
        )


def test_parquet_without_rows():
    err = error(load_calibration, Upload("empty.parquet", parquet_bytes(wide().iloc[:0])))
    assert "empty.parquet" in str(err) and "no data rows" in str(err)


def test_parquet_duplicate_column_names():
    table = pa.table([pa.array(["a"]), pa.array([0.5]), pa.array([0.25])], names=["patient_id", "A", "A"])
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    err = error(read_probabilities, Upload("dup.parquet", buffer.getvalue()))
    assert "'A' appears more than once (columns 2 and 3)" in str(err) and "cannot be read" not in str(err)
    assert (err.file, err.row) == ("dup.parquet", 1)


def test_truncated_or_misnamed_parquet():
    raw = parquet_bytes(wide())
    err = error(load_calibration, Upload("cut.parquet", raw[: len(raw) // 2]))
    assert "cut.parquet" in str(err) and "cannot be read as Parquet" in str(err) and "truncated" in err.fix
    err = error(load_calibration, Upload("text.parquet", csv_bytes(wide())))
    assert "cannot be read as Parquet" in str(err)
