"""The optional segment column of calibration and new-patient files (CSV and Parquet)."""
import io

import pandas as pd
import pytest

from favmac.io import DataError, load_calibration, load_new_patients, load_new_patients_segmented

WIDE = b"patient_id,prob_A,label_A,segment,prob_B,label_B\n1,0.5,1,north,0.2,0\n2,0.1,0,south ,0.9,1\n"


def test_wide_file_segment_column_becomes_groups():
    data = load_calibration(WIDE, name="w")
    assert data.codes == ["A", "B"] and data.groups.tolist() == ["north", "south"] and data.segment_column == "segment"
    plain = load_calibration(WIDE.replace(b",segment", b",region"), segment_column="region")
    assert plain.groups.tolist() == ["north", "south"]


def test_probabilities_file_with_segment_and_labels_pair():
    probs = b"patient_id,plan,A,B\n1,p1,0.5,0.2\n2,p2,0.1,0.9\n"
    labels = b"patient_id,B,A\n2,1,0\n1,0,1\n"
    data = load_calibration(probs, labels, segment_column="plan")
    assert data.groups.tolist() == ["p1", "p2"] and data.label_array().tolist() == [[1, 0], [0, 1]]
    no_segment = load_calibration(probs.replace(b"plan", b"segment"), labels)
    assert no_segment.groups.tolist() == ["p1", "p2"]
    assert load_calibration(b"patient_id,A\n1,0.5\n", b"patient_id,A\n1,1\n").groups is None


def test_parquet_segment_column():
    frame = pd.DataFrame({"patient_id": ["1", "2"], "prob_A": [0.5, 0.1], "label_A": [1, 0], "segment": [3, 4]})
    buffer = io.BytesIO()
    frame.to_parquet(buffer)
    data = load_calibration(buffer.getvalue(), name="p.parquet")
    assert data.groups.tolist() == ["3", "4"]


def test_segment_errors_name_file_row_and_column():
    with pytest.raises(DataError, match=r"row 3.*segment.*no segment label"):
        load_calibration(WIDE.replace(b"south ,", b","), name="w.csv")
    with pytest.raises(DataError, match="no column named 'region'"):
        load_calibration(WIDE, segment_column="region")


def test_new_patients_segments():
    new = b"patient_id,B,A,segment\n9,0.5,0.5,north\n"
    probs, groups = load_new_patients_segmented(new, ["A", "B"])
    assert list(probs.columns) == ["A", "B"] and groups.tolist() == ["north"]
    assert list(load_new_patients(new, ["A", "B"]).columns) == ["A", "B"]
    assert load_new_patients_segmented(b"patient_id,A,B\n9,0.1,0.2\n", ["A", "B"])[1] is None
    with pytest.raises(DataError, match="no column named 'plan'"):
        load_new_patients_segmented(new, ["A", "B"], segment_column="plan")


def test_wide_file_keeps_other_columns_as_candidate_segments():
    raw = b"patient_id,plan,prob_A,label_A,segment\n1,7,0.5,1,n\n2,gold,0.1,0,s\n"
    data = load_calibration(raw, keep_columns=True)
    assert data.segment_columns() == ["segment", "plan"]
    assert data.segments("plan").tolist() == ["7", "gold"] and data.segments("segment").tolist() == ["n", "s"]
    with pytest.raises(DataError, match="neither patient_id"):
        load_calibration(raw)
    with pytest.raises(DataError, match="no label in this column"):
        load_calibration(raw.replace(b",gold,", b",,"), keep_columns=True).segments("plan")
