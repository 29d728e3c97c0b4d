"""The readers: mixed positions and dates, UTF-32 files, very long column names and very wide files (pandas and Dask).

Second hostile-input audit: files (encodings, label arrivals, groupings); tests/test_io_dates_and_empty_files.py holds the first round."""
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


def _very_wide_csv(path, n_codes=3000, n=6):
    """A wide file whose header row (about 75 KB) is longer than the old 64 KB header sample."""
    rng = np.random.default_rng(1)
    codes = [f"CODE{k:05d}" for k in range(n_codes)]
    rows = ["patient_id," + ",".join(f"prob_{c},label_{c}" for c in codes) + ",plan"]
    for i in range(n):
        p = rng.uniform(0, 1, n_codes).round(2)
        rows.append(f"p{i}," + ",".join(f"{a},{int(a > 0.5)}" for a in p) + ",P1")
    path.write_text("\n".join(rows) + "\n")
    return codes


def test_column_names_of_a_very_wide_file_read_the_whole_header(tmp_path):
    """column_names judged the header from the first 64 KB: the later columns (here the segment column
    'plan', which the app looks for) were silently missing."""
    from favmac.io import column_names

    path = tmp_path / "wide.csv"
    codes = _very_wide_csv(path)
    names = column_names(path)
    assert len(names) == 2 * len(codes) + 2 and names[-1] == "plan"


def test_the_dask_engine_reads_every_code_of_a_very_wide_file(tmp_path):
    """The Dask engine read the header from the first 64 KB and silently calibrated on the first ~2,600 of
    3,000 codes (a 50,000-column file: 2,621 of 25,000)."""
    from favmac.distributed.sources import checked_source

    path = tmp_path / "wide.csv"
    codes = _very_wide_csv(path)
    _, found = checked_source(str(path), labelled=True, segment="plan")
    assert list(found) == codes
