"""Second hostile-input audit: files (encodings, label arrivals, groupings); tests/test_audit_io.py holds the first round."""
import numpy as np
import pandas as pd
import pytest

from favmac.io import DataError, load_calibration


def _wide(n=12, **columns):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"patient_id": [f"P{i:03d}" for i in range(n)]})
    for key, value in columns.items():
        frame[key] = value
    for code in ("A", "B"):
        frame[f"prob_{code}"] = rng.uniform(0, 1, n).round(3)
        frame[f"label_{code}"] = rng.integers(0, 2, n)
    return frame


def test_one_position_among_dates_is_the_row_named(tmp_path):
    """One stray position among date arrivals: the error named the first DATE (row 2) as the odd one."""
    days = pd.date_range("2025-01-01", periods=12).strftime("%Y-%m-%d")
    arrive = list(pd.date_range("2025-02-01", periods=12).strftime("%Y-%m-%d"))
    arrive[7] = "5"
    path = tmp_path / "arrivals.csv"
    _wide(predicted_at=days, arrive=arrive).to_csv(path, index=False)
    with pytest.raises(DataError) as err:
        load_calibration(path, label_available_column="arrive")
    text = str(err.value)
    assert "row 9" in text and "'5'" in text and "column arrive" in text


def test_one_date_among_positions_is_still_named(tmp_path):
    arrive = [str(i + 3) for i in range(12)]
    arrive[4] = "2025-02-01"
    path = tmp_path / "arrivals.csv"
    _wide(arrive=arrive).to_csv(path, index=False)
    with pytest.raises(DataError) as err:
        load_calibration(path, label_available_column="arrive")
    assert "row 6" in str(err.value) and "'2025-02-01'" in str(err.value)


def test_a_utf32_file_is_read_not_shown_as_nul_bytes(tmp_path):
    """A UTF-32 file (BOM FF FE 00 00) was taken for UTF-16: 'no patient_id column (found: '\\x00p\\x00a...')'."""
    frame = _wide()
    path = tmp_path / "utf32.csv"
    path.write_bytes(frame.to_csv(index=False).encode("utf-32"))
    data = load_calibration(path)
    assert data.n_patients == 12 and list(data.codes) == ["A", "B"]


def test_a_column_name_longer_than_the_csv_field_limit_is_refused_by_row(tmp_path):
    """A 200,000-character header cell was a _csv.Error traceback ('field larger than field limit')."""
    path = tmp_path / "long_header.csv"
    path.write_text("patient_id,prob_" + "x" * 200_000 + ",label_A\np1,0.5,1\n")
    with pytest.raises(DataError) as err:
        load_calibration(path)
    assert "long_header.csv, row 1" in str(err.value) and "header row" in str(err.value)
