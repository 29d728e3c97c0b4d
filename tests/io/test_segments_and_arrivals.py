"""Several segment columns and the label-arrival column (positions or dates) of calibration files."""
import pytest

from favmac.io import DataError, load_calibration

WIDE = (b"patient_id,prob_A,label_A,plan,band,arrived,prob_B,label_B\n"
        b"1,0.5,1,p1,old,2,0.2,0\n2,0.1,0,p2,young,1,0.9,1\n3,0.1,0,p2,young,7,0.9,1\n")


def test_several_segment_columns_become_groupings_in_order():
    data = load_calibration(WIDE, segment_column=["band", "plan"], label_available_column="arrived")
    assert list(data.groupings) == ["band", "plan"] and data.segment_column == "band"
    assert data.groups.tolist() == ["old", "young", "young"] and data.groupings["plan"].tolist() == ["p1", "p2", "p2"]
    assert data.label_available_at.tolist() == [2, 1, 7] and data.codes == ["A", "B"]


def test_probabilities_and_labels_pair_with_groupings_and_arrivals():
    probs = b"patient_id,plan,band,arrived,A\n1,p1,o,0,0.5\n2,p2,y,3,0.1\n"
    labels = b"patient_id,A,arrived\n2,0,3\n1,1,0\n"
    data = load_calibration(probs, labels, segment_column=["plan", "band"], label_available_column="arrived")
    assert data.groupings["band"].tolist() == ["o", "y"] and data.label_available_at.tolist() == [0, 3]
    assert data.label_array().tolist() == [[1], [0]]


def test_date_arrivals_are_placed_against_the_prediction_dates():
    raw = (b"patient_id,prob_A,label_A,predicted_at,arrived\n1,0.5,1,2024-01-01,2024-01-01\n"
           b"2,0.1,0,2024-01-02,2024-01-05\n3,0.1,0,2024-01-05,2024-01-06\n4,0.2,1,2024-01-05,2024-01-05\n")
    data = load_calibration(raw, label_available_column="arrived")
    # 1: on its own day -> right after its prediction (0); 2: dated 01-05 -> joins before the first
    # patient predicted on 01-05 (position 2), i.e. position 1; 3: after every prediction -> 3; 4: its own day -> 3
    assert data.label_available_at.tolist() == [0, 1, 3, 3]


@pytest.mark.parametrize("edit, message", [
    ((b"p2,young,1", b"p2,,1"), r"row 3, column band: this patient has no segment label"),
    ((b"p2,young,1", b"p2,young,0"), r"row 3, column arrived: the labels arrive at position 0, before the patient's own position 1"),
    ((b"p2,young,1", b"p2,young,1.5"), r"row 3, column arrived: '1.5' is not a whole stream position"),
    ((b"p2,young,1", b"p2,young,"), r"row 3, column arrived: this patient has no label-arrival position or date"),
    ((b"p2,young,1", b"p2,young,2024-01-01"), r"row 3, column arrived: '2024-01-01' is not a whole stream position, while other rows"),
    ((b"p2,young,1", b"p2,young,soon"), r"row 3, column arrived: 'soon' is not a whole stream position, while other rows"),
    ((b"p2,young,1", b"p2,young,-1e300"), r"row 3, column arrived: the labels arrive at position -1e300, before the patient's own position 1"),
])
def test_bad_segment_and_arrival_cells_name_the_row_and_column(edit, message):
    with pytest.raises(DataError, match=message):
        load_calibration(WIDE.replace(*edit), name="w.csv", segment_column=["plan", "band"],
                         label_available_column="arrived")


def test_dates_before_the_prediction_or_out_of_order_are_refused():
    raw = b"patient_id,prob_A,label_A,predicted_at,arrived\n1,0.5,1,2024-01-03,2024-01-02\n2,0.1,0,2024-01-04,2024-01-09\n"
    with pytest.raises(DataError, match="row 2, column arrived: the labels arrive on 2024-01-02, before the patient was predicted"):
        load_calibration(raw, name="w.csv", label_available_column="arrived")
    backwards = raw.replace(b"2024-01-04,2024-01-09", b"2024-01-01,2024-01-09").replace(b"2024-01-03,2024-01-02", b"2024-01-03,2024-01-03")
    with pytest.raises(DataError, match="row 3, column predicted_at: the prediction dates go backwards"):
        load_calibration(backwards, name="w.csv", label_available_column="arrived")
    with pytest.raises(DataError, match="no column named 'when'"):
        load_calibration(raw, label_available_column="when")
    with pytest.raises(DataError, match="given twice"):
        load_calibration(WIDE, segment_column=["plan", "plan"])


def test_date_arrivals_name_a_cell_that_is_no_date_and_ask_for_prediction_dates():
    dates = (b"patient_id,prob_A,label_A,arrived\n1,0.5,1,2024-01-02\n2,0.1,0,soon\n3,0.1,0,2024-01-09\n")
    with pytest.raises(DataError, match="row 3, column arrived: 'soon' is neither a stream position nor a date"):
        load_calibration(dates, name="w.csv", label_available_column="arrived")
    with pytest.raises(DataError, match="column arrived: the label arrivals in 'arrived' are dates, so each patient's prediction date"):
        load_calibration(dates.replace(b"soon", b"2024-01-03"), name="w.csv", label_available_column="arrived")


def test_a_huge_position_means_after_the_stream_ends():
    data = load_calibration(WIDE.replace(b"p2,young,7", b"p2,young,1e300"), label_available_column="arrived",
                            segment_column=["plan", "band"])
    assert data.label_available_at.tolist() == [2, 1, 2**62]  # any position >= the 3 patients: pending at the end
