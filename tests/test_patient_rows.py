"""Refusals about one patient name its file row (as favmac.io counts rows: the header is row 1) and
its group value, not a 0-based array index (issue 21's clear errors)."""
from __future__ import annotations

import numpy as np
import pytest

from favmac import io as fio
from favmac.arrivals import check_arrivals
from favmac.runspec import RunSpec, SettingsError, check_against_data
from favmac.segments import check_group_labels, check_groupings, patient_row


def wide_csv(bands, blank_after=None) -> bytes:
    lines = ["patient_id,plan,band,prob_A,label_A,prob_B,label_B"]
    for i, band in enumerate(bands):
        lines.append(f"p{i},{'xy'[i % 2]},{band},0.5,1,0.25,0")
        if blank_after is not None and i == blank_after:
            lines.append("")  # a blank line: skipped, yet it still counts as a row of the file
    return ("\n".join(lines) + "\n").encode()


def test_rows_are_the_files_rows():
    ds = fio.load_calibration(wide_csv(["a"] * 6, blank_after=1), name="cal", segment_column=["plan", "band"])
    assert ds.rows.tolist() == [2, 3, 5, 6, 7, 8]  # header row 1; the blank line is row 4
    pair = fio.load_calibration(b"patient_id,A\np0,0.5\n\np1,0.25\n", b"patient_id,A\np1,1\np0,0\n")
    assert pair.rows.tolist() == [2, 4]  # the probabilities file's rows (labels are matched by id)


def test_one_patient_group_names_its_file_row_and_value():
    bands = ["a", "a", "a", "a", "90+", "a"]
    ds = fio.load_calibration(wide_csv(bands, blank_after=1), name="cal", segment_column=["plan", "band"])
    with pytest.raises(ValueError, match=r"groups\[1\] \(band\): group '90\+' has a single patient \(the patient at row 7\)"):
        check_groupings(ds.groupings, ds.n_patients, rows=ds.rows)
    spec = RunSpec(targets=(0.5,), segment=("plan", "band"))
    with pytest.raises(SettingsError, match=r"segment \('plan', 'band'\) cannot be used on the loaded data \(cal\): .*"
                                            r"group '90\+' has a single patient \(the patient at row 7\)") as err:
        check_against_data(spec, ds)
    assert "0-based" not in str(err.value) and "patient 4" not in str(err.value)
    check_against_data(spec.replace(segment="band"), ds)  # one grouping: a one-patient group is allowed (docs/method.md)


def test_arrays_without_a_file_name_the_row_of_a_file_with_a_header_and_the_index():
    assert patient_row(0) == "row 2 (the header is row 1; array index 0)"
    with pytest.raises(ValueError, match=r"the patient at row 4 \(the header is row 1; array index 2\) has no group label"):
        check_group_labels(["a", "b", None, "a"], 4)
    with pytest.raises(ValueError, match=r"the patient at row 12 has no group label"):
        check_group_labels(np.array(["a", "b", " ", "a"]), 4, rows=[2, 3, 12, 13])
    with pytest.raises(ValueError, match=r"the patient at row 4 \(the header is row 1; array index 2\) gets its labels at "
                                         r"position 1, before its own position 2"):
        check_arrivals([0, 1, 1, 3], 4)
    with pytest.raises(ValueError, match=r"the patient at row 9 has arrival 1\.5"):
        check_arrivals([0.0, 1.0, 1.5], 3, rows=[2, 5, 9])


def test_a_missing_label_in_a_kept_column_names_its_row():
    ds = fio.load_calibration(wide_csv(["a", "a", "", "a"]), name="cal", keep_columns=True)
    with pytest.raises(fio.DataError, match=r"cal, row 4, column band: patient 'p2' has no label in this column"):
        ds.segments("band")
