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
        load_calibration(raw, keep_columns=False)
    with pytest.raises(DataError, match="no label in this column"):
        load_calibration(raw.replace(b",gold,", b",,"), keep_columns=True).segments("plan")


def _table(text: bytes, fmt: str) -> bytes:
    """``text`` (CSV) as the bytes of a CSV or Parquet file (every column read back as text)."""
    if fmt == "csv":
        return text
    buffer = io.BytesIO()
    pd.read_csv(io.BytesIO(text), dtype=str, keep_default_na=False).to_parquet(buffer)
    return buffer.getvalue()


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_cms_cell_segment_column_is_also_each_members_cell(fmt):
    """segment_column="cms_cell": the column is the segments and, as without it, each member's CMS
    cell (the distributed engine reads it the same way), in every reader."""
    wide = (b"patient_id,cms_cell,known_codes,prob_HCC37,label_HCC37,prob_HCC38,label_HCC38,plan\n"
            b"1,CFA,HCC38,0.5,1,0.2,0,east\n2,ins,,0.3,0,0.9,1,west\n3,CNA,,0.1,0,0.4,0,east\n")
    cells, upper = ["CFA", "ins", "CNA"], ["CFA", "INS", "CNA"]
    for segment in ("cms_cell", ["cms_cell"]):
        data = load_calibration(_table(wide.replace(b",plan", b"").replace(b",east", b"").replace(b",west", b""), fmt),
                                name=f"w.{fmt}", segment_column=segment)
        assert data.groups.tolist() == cells and data.members["cells"].tolist() == upper
        assert data.members["known"].tolist() == [[False, True], [False, False], [False, False]]
    data = load_calibration(_table(wide, fmt), name=f"w.{fmt}", segment_column=["plan", "cms_cell"], keep_columns=True)
    assert data.groupings["cms_cell"].tolist() == cells and data.members["cells"].tolist() == upper
    probs = b"patient_id,cms_cell,HCC37,HCC38\n1,CFA,0.5,0.2\n2,ins,0.3,0.9\n3,CNA,0.1,0.4\n"
    labels = b"patient_id,cms_cell,HCC38,HCC37\n3,CNA,0,0\n1,CFA,0,1\n2,ins,1,0\n"
    data = load_calibration(_table(probs, fmt), _table(labels, fmt), segment_column="cms_cell")
    assert data.groups.tolist() == cells and data.members["cells"].tolist() == upper
    assert data.label_array().tolist() == [[1, 0], [0, 1], [0, 0]]
    for segment in ("cms_cell", ["cms_cell"]):
        new, groups = load_new_patients_segmented(_table(probs, fmt), ["HCC38", "HCC37"], segment_column=segment)
        assert groups.tolist() == cells and new.attrs["members"]["cells"].tolist() == upper
        assert list(new.columns) == ["HCC38", "HCC37"]
    new, groupings = load_new_patients_segmented(_table(wide, fmt), ["HCC37", "HCC38"], segment_column=["plan", "cms_cell"])
    assert groupings["cms_cell"].tolist() == cells and groupings["plan"].tolist() == ["east", "west", "east"]
    assert new.attrs["members"]["cells"].tolist() == upper and new.attrs["members"]["known"][0].tolist() == [False, True]
    with pytest.raises(DataError, match=r"row 3, column cms_cell: this patient has no segment label"):
        load_calibration(_table(probs.replace(b"2,ins", b"2,"), fmt), _table(labels, fmt), segment_column="cms_cell")


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_keep_columns_offers_cms_cell_as_a_segment_column(fmt):
    """keep_columns (the app's reading): a cms_cell column is a candidate segment column, read with
    the segment rule (stripped text, as segment_column="cms_cell" reads it), and still each member's
    cell; in the wide and the probabilities + labels layouts."""
    wide = (b"patient_id,cms_cell,known_codes,prob_HCC37,label_HCC37,prob_HCC38,label_HCC38,plan\n"
            b"1,CFA,HCC38,0.5,1,0.2,0,east\n2,ins ,,0.3,0,0.9,1,west\n3,CNA,,0.1,0,0.4,0,east\n")
    data = load_calibration(_table(wide, fmt), name=f"w.{fmt}", keep_columns=True)
    assert data.segment_columns() == ["plan", "cms_cell"]
    assert data.segments("cms_cell").tolist() == ["CFA", "ins", "CNA"]
    assert data.members["cells"].tolist() == ["CFA", "INS", "CNA"] and data.codes == ["HCC37", "HCC38"]
    asked = load_calibration(_table(wide, fmt), name=f"w.{fmt}", segment_column="cms_cell", keep_columns=True)
    assert asked.segment_columns() == ["cms_cell", "plan"] and asked.segments("cms_cell").tolist() == data.segments("cms_cell").tolist()
    probs = b"patient_id,cms_cell,HCC37,HCC38\n1,CFA,0.5,0.2\n2,ins,0.3,0.9\n3,CNA,0.1,0.4\n"
    labels = b"patient_id,HCC38,HCC37\n3,0,0\n1,0,1\n2,1,0\n"
    pair = load_calibration(_table(probs, fmt), _table(labels, fmt), keep_columns=True)
    assert pair.segment_columns() == ["cms_cell"] and pair.segments("cms_cell").tolist() == ["CFA", "ins", "CNA"]
    assert pair.members["cells"].tolist() == ["CFA", "INS", "CNA"]
    assert load_calibration(_table(probs, fmt), _table(labels, fmt), keep_columns=False).segment_columns() == []
