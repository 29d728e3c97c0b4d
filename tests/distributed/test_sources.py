"""favmac.distributed.sources: files read and refused by favmac.io's rules, batch by batch."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

from dist_helpers import tied_data, tree_thresholds, wide_frame, write_parts  # noqa: E402

from favmac import AdditiveCost, AdditiveValue, DataError, FavMac  # noqa: E402
from favmac.distributed import calibrate, sources  # noqa: E402


def _one_bad_cell(tmp_path, column, value, fmt="parquet"):
    probs, labels = tied_data(51, 40, 3, 1)
    paths = write_parts(tmp_path, probs, labels, [20, 20], fmt=fmt)
    frame = pd.read_parquet(paths[1]) if fmt == "parquet" else pd.read_csv(paths[1], dtype={column: object})
    frame[column] = frame[column].astype(object)
    frame.loc[7, column] = value
    if fmt == "parquet":
        frame[column] = pd.to_numeric(frame[column], errors="coerce") if not isinstance(value, str) else frame[column].astype(str)
        frame.to_parquet(paths[1], index=False)
    else:
        frame.to_csv(paths[1], index=False)
    return paths[1]

@pytest.mark.parametrize("column,value,message", [
    ("prob_C1", np.nan, "empty"),
    ("prob_C0", 1.5, "outside \\[0, 1\\]"),
    ("label_C2", 2, "is not 0 or 1"),
    ("prob_C2", np.inf, "infinite"),
    ("prob_C1", "abc", "not a number"),
])
def test_bad_cells_name_file_row_and_column(tmp_path, column, value, message):
    bad = _one_bad_cell(tmp_path, column, value)
    with pytest.raises(DataError, match=message) as err:
        calibrate(str(tmp_path), AdditiveValue(), AdditiveCost(), [1.0], scheduler="synchronous")
    assert err.value.file == bad and err.value.row == 9 and err.value.column == column

def test_bad_csv_cell(tmp_path):
    bad = _one_bad_cell(tmp_path, "prob_C0", "x1", fmt="csv")
    with pytest.raises(DataError, match="not a number") as err:
        calibrate(str(tmp_path / "*.csv"), AdditiveValue(), AdditiveCost(), [1.0], scheduler="synchronous")
    assert (err.value.file, err.value.row, err.value.column) == (bad, 9, "prob_C0")

def test_missing_columns_and_mismatched_codes(tmp_path):
    probs, labels = tied_data(61, 20, 3, 1)
    paths = write_parts(tmp_path, probs, labels, [10, 10])
    frame = pd.read_parquet(paths[1])
    frame.drop(columns=["label_C1"]).to_parquet(paths[1], index=False)
    with pytest.raises(DataError, match="no matching label_C1") as err:
        calibrate(str(tmp_path), AdditiveValue(), AdditiveCost(), [1.0])
    assert err.value.file == paths[1] and err.value.row == 1
    frame.rename(columns={"prob_C1": "prob_X", "label_C1": "label_X"}).to_parquet(paths[1], index=False)
    with pytest.raises(DataError, match="unknown code not in") as err:
        calibrate(str(tmp_path), AdditiveValue(), AdditiveCost(), [1.0])
    assert err.value.file == paths[1]
    with pytest.raises(DataError, match="matches no file"):
        calibrate(str(tmp_path / "nothing*.parquet"), AdditiveValue(), AdditiveCost(), [1.0])

def _csv_text(frame):
    return frame.to_csv(index=False, lineterminator="\n")

def test_csv_bom_crlf_header_spaces_blank_rows_and_column_order(tmp_path):
    """docs/method.md "Input files": tolerated silently, and the thresholds equal FavMac's on the clean data."""
    probs, labels = tied_data(151, 60, 4, 1)
    frame = wide_frame(probs, labels)
    value, cost = AdditiveValue(), AdditiveCost()
    targets = [0.5, 1.1, 2.0]
    want = tree_thresholds(probs, labels, value, cost, targets)
    lines = _csv_text(frame.iloc[:30]).split("\n")
    header = ", ".join(f" {name} " for name in lines[0].split(",")) + ",,"  # spaces, two empty unnamed columns
    body = [line + ",," for line in lines[1:] if line]
    body.insert(5, "")  # a blank line and a line of commas: skipped
    body.insert(9, ",,,,,,,,,,")
    (tmp_path / "a.csv").write_bytes(b"\xef\xbb\xbf" + "\r\n".join([header] + body).encode() + b"\r\n\r\n")
    later = frame.iloc[30:][["label_C2", "patient_id", "prob_C3", "prob_C0", "label_C1", "label_C0", "prob_C1",
                             "prob_C2", "label_C3"]]
    (tmp_path / "b.csv").write_bytes(_csv_text(later).replace("\n", "\r").encode())  # old-Mac line endings
    got = calibrate(str(tmp_path / "*.csv"), value, cost, targets, scheduler="synchronous")
    assert np.array_equal(got, want)

def test_csv_rows_are_numbered_as_favmac_io_numbers_them(tmp_path, monkeypatch):
    """Blank lines count (header = row 1); batches continue the numbering."""
    from favmac.io import read_wide

    monkeypatch.setattr(sources, "BATCH_ROWS", 4)
    probs, labels = tied_data(152, 12, 3, 1)
    lines = _csv_text(wide_frame(probs, labels)).split("\n")
    lines[10] = lines[10].replace(lines[10].split(",")[3], "1.5", 1)  # prob_C1 of patient P9 (file row 11)
    lines.insert(3, "")
    lines.insert(6, "")  # P9 is now on row 13
    (tmp_path / "a.csv").write_text("\n".join(lines))
    with pytest.raises(DataError, match="outside \\[0, 1\\]") as err:
        calibrate(str(tmp_path / "a.csv"), AdditiveValue(), AdditiveCost(), [1.0], scheduler="synchronous")
    assert (err.value.file, err.value.row, err.value.column) == (str(tmp_path / "a.csv"), 13, "prob_C1")
    with pytest.raises(DataError) as in_memory:
        read_wide(tmp_path / "a.csv")
    assert (in_memory.value.row, in_memory.value.column) == (13, "prob_C1")

@pytest.mark.parametrize("column,cell,message", [
    ("prob_C1", "", "empty"),
    ("prob_C1", "nan", "empty"),
    ("prob_C2", "inf", "infinite"),
    ("prob_C0", "-0.1", "outside \\[0, 1\\]"),
    ("label_C2", "0.5", "is not 0 or 1"),
    ("label_C0", "TRUE", "not a number"),
])
def test_bad_csv_cells_after_blank_lines(tmp_path, column, cell, message):
    probs, labels = tied_data(153, 10, 3, 1)
    frame = wide_frame(probs, labels).astype(object)
    frame.loc[6, column] = cell  # file row 8, row 9 after the blank line below
    lines = _csv_text(frame).split("\n")
    lines.insert(2, "   ")
    (tmp_path / "a.csv").write_text("\n".join(lines))
    with pytest.raises(DataError, match=message) as err:
        calibrate(str(tmp_path / "a.csv"), AdditiveValue(), AdditiveCost(), [1.0], scheduler="synchronous")
    assert (err.value.row, err.value.column) == (9, column)

@pytest.mark.parametrize("content,message,row,column", [
    (b"", "the file is empty", None, None),
    (b"\xef\xbb\xbf\r\n\r\n", "the file is empty", None, None),
    (b"\npatient_id,prob_A,label_A\nx,0.5,1\n", "first row is empty", 1, None),
    (b"patient_id;prob_A;label_A\nx;0.5;1\n", "separated by semicolons", 1, None),
    (b"patient_id\tprob_A\tlabel_A\nx\t0.5\t1\n", "separated by tabs", 1, None),
    (b"patient_id,prob_A,prob_A,label_A\nx,0.5,0.5,1\n", "appears more than once", 1, None),
    (b"patient_id,prob_A,label_A\nx,0.5,1\n\ny,0.5,0,7\n", "has 4 cells but the header has 3", 4, None),
    (b"patient_id,prob_A,label_A,\nx,0.5,1,\ny,0.5,0,9\n", "values but no name", 3, "4"),
    (b"patient_id,prob_A,label_A\nx,0.5,1\n  ,0.5,0\n", "no patient id", 3, "patient_id"),
    (b"patient_id,prob_A,label_A,prob_B\nx,0.5,1,0.5\n", "no matching label_B", 1, "prob_B"),
    (b"patient_id,prob_A,label_A,age\nx,0.5,1,40\n", "neither patient_id", 1, "age"),
    (b"id,prob_A,label_A\nx,0.5,1\n", "no 'patient_id' column .* Rename the column 'id'", 1, None),
    (b"PAR1" + bytes(range(256)), "not a text CSV file", None, None),
])
def test_csv_faults_are_refused_like_favmac_io(tmp_path, content, message, row, column):
    (tmp_path / "a.csv").write_bytes(content)
    with pytest.raises(DataError, match=message) as err:
        calibrate(str(tmp_path / "a.csv"), AdditiveValue(), AdditiveCost(), [1.0], scheduler="synchronous")
    assert (err.value.file, err.value.row, err.value.column) == (str(tmp_path / "a.csv"), row, column)

def test_csv_codes_unknown_or_missing_in_a_later_file(tmp_path):
    probs, labels = tied_data(154, 20, 3, 1)
    wide_frame(probs[:10], labels[:10]).to_csv(tmp_path / "a.csv", index=False)
    later = wide_frame(probs[10:], labels[10:], codes=["C0", "C1", "C9"], first_id=10)
    later.to_csv(tmp_path / "b.csv", index=False)
    a, b = str(tmp_path / "a.csv"), str(tmp_path / "b.csv")
    with pytest.raises(DataError) as err:
        calibrate(str(tmp_path / "*.csv"), AdditiveValue(), AdditiveCost(), [1.0], scheduler="synchronous")
    assert f"1 code in {a} is missing from {b}: C2; {b} has 1 unknown code not in {a}: C9." in str(err.value)
    assert (err.value.file, err.value.row) == (b, 1)

def test_csv_in_windows_1252_and_utf16(tmp_path):
    probs, labels = tied_data(155, 20, 2, 1)
    frame = wide_frame(probs, labels)
    frame["patient_id"] = [f"Zoë{i}" for i in range(20)]
    (tmp_path / "a.csv").write_bytes(_csv_text(frame.iloc[:10]).encode("cp1252"))
    (tmp_path / "b.csv").write_bytes(_csv_text(frame.iloc[10:]).encode("utf-16"))
    got = calibrate(str(tmp_path / "*.csv"), AdditiveValue(), AdditiveCost(), [0.5, 1.0], scheduler="synchronous")
    assert np.array_equal(got, tree_thresholds(probs, labels, AdditiveValue(), AdditiveCost(), [0.5, 1.0]))

def test_csv_segment_labels_stay_text(tmp_path):
    probs, labels = tied_data(141, 30, 3, 1)
    frame = wide_frame(probs, labels)
    frame.insert(1, "plan", ["007", "010"] * 15)
    frame.to_csv(tmp_path / "a.csv", index=False)
    _, by_segment = calibrate(str(tmp_path / "a.csv"), AdditiveValue(), AdditiveCost(), [1.0], segment="plan",
                              score="cost", scheduler="synchronous")
    fm = FavMac(AdditiveValue(), AdditiveCost(), 1.0, score="cost").update(probs, labels,
                                                                          group=frame["plan"].to_numpy(dtype=object))
    assert {k: float(v[0]) for k, v in by_segment.items()} == {"007": fm.threshold_for("007"), "010": fm.threshold_for("010")}

def test_glob_with_a_character_class_selects_those_files(tmp_path):
    """'part-00[01].parquet' is a glob too (fsspec alone expands only '*'): it reads parts 0 and 1."""
    probs, labels = tied_data(11, 60, 4, 2)
    write_parts(tmp_path, probs, labels, [20, 25, 15])
    value, cost = AdditiveValue(), AdditiveCost()
    got = calibrate(str(tmp_path / "part-00[01].parquet"), value, cost, [0.5, 1.1])
    want = tree_thresholds(probs[:45], labels[:45], value, cost, [0.5, 1.1])
    assert got.tolist() == want.tolist()


# ----------------------------------------------------------------------------- the same rules as favmac.io


def _outcome(call):
    """What a reader makes of a file: its codes, or the DataError's (problem, file, row, column, fix)."""
    try:
        return "codes", list(call())
    except DataError as err:
        return "error", (err.problem, err.file, err.row, err.column, err.fix)


def _cell(column):
    return {"patient_id": "x", "segment": "s", "plan": "s"}.get(column, "1" if column.startswith("label_") else "0.5")


def _write_csv(path, header):
    names = header.split(",")
    path.write_text(header + "\n" + ",".join("" if not n else _cell(n) for n in names) + "\n")
    return str(path)


WIDE_HEADERS = [
    "patient_id,prob_A,label_A,prob_B,label_B",
    "label_B,patient_id,prob_B,prob_A,label_A",
    "patient_id,segment,prob_A,label_A",
    "patient_id,prob_A,label_A,",
    "patient_id,prob_A,label_A,age",
    "patient_id,prob_A,label_A,age,zip",
    "patient_id,age",
    "patient_id,prob_A,prob_B,label_A",
    "patient_id,label_A",
    "patient_id",
    "id,prob_A,label_A",
    "patient_id,prob_,label_",
    "patient_id,prob_A;B,label_A;B",
]


@pytest.mark.parametrize("segment", [None, "plan"])
@pytest.mark.parametrize("header", WIDE_HEADERS + ["patient_id,plan,prob_A,label_A"])
def test_wide_headers_are_judged_as_read_wide_judges_them(tmp_path, header, segment):
    """favmac.io.column_layout is the one rule: read_wide and the engine agree on codes and on every message."""
    from favmac.io import read_wide

    path = _write_csv(tmp_path / "w.csv", header)
    in_memory = _outcome(lambda: read_wide(path, name=path, segment_column=segment).codes)
    engine = _outcome(lambda: sources.source_codes(path, labelled=True, segment=segment))
    assert engine == in_memory


NEW_PATIENT_HEADERS = [
    "patient_id,A,B",
    "patient_id,B,A",
    "patient_id,prob_A,prob_B",
    "patient_id,prob_A,label_A,prob_B,label_B",
    "patient_id,prob_A,prob_B,label_A",
    "patient_id,segment,B,A",
    "patient_id,A",
    "patient_id,A,B,C",
    "patient_id,prob_A,B",
    "patient_id",
    "patient,A,B",
]


@pytest.mark.parametrize("header", NEW_PATIENT_HEADERS)
def test_new_patient_headers_are_judged_as_load_new_patients_judges_them(tmp_path, header):
    from favmac.io import load_new_patients

    path = _write_csv(tmp_path / "n.csv", header)
    in_memory = _outcome(lambda: load_new_patients(path, ["A", "B"], name=path).columns)
    engine = _outcome(lambda: sources.checked_source(path, labelled=False, codes=["A", "B"])[1])
    assert engine == in_memory


def test_parquet_index_columns_are_left_out_as_favmac_io_leaves_them_out(tmp_path):
    from favmac.io import read_wide

    frame = pd.DataFrame({"patient_id": ["a", "b"], "prob_A": [0.5, 0.25], "label_A": [1, 0]}, index=[7, 9])
    frame.to_parquet(tmp_path / "w.parquet")  # a non-default index: stored as __index_level_0__
    path = str(tmp_path / "w.parquet")
    assert "__index_level_0__" in pq_names(path)
    assert sources.source_codes(path) == read_wide(path).codes == ["A"]


def pq_names(path):
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).schema_arrow.names


ZOE = "Zoë"  # a character outside ASCII: its bytes tell the encodings apart


@pytest.mark.parametrize("encoding,bom", [
    ("utf-8", b""),
    ("utf-8", b"\xef\xbb\xbf"),
    ("cp1252", b""),
    ("latin-1", b""),
    ("utf-16-le", b"\xff\xfe"),
    ("utf-16-be", b"\xfe\xff"),
])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_text_encodings_as_favmac_io_decodes_them(tmp_path, encoding, bom, newline):
    """Every encoding favmac.io reads: the engine decodes the file as favmac.io.text_encoding says, and
    reads the same ids and probabilities as read_wide."""
    from favmac.io import read_wide, text_encoding

    text = newline.join(["patient_id,prob_A,label_A", f"{ZOE}1,0.25,1", f"café 2,0.5,0", ""])
    data = bom + text.encode(encoding)
    (tmp_path / "w.csv").write_bytes(data)
    path = str(tmp_path / "w.csv")
    pieces, _ = sources.list_pieces(path)
    assert pieces[0].encoding == text_encoding(data) == {"utf-8": "utf-8-sig", "cp1252": "cp1252", "latin-1": "cp1252",
                                                        "utf-16-le": "utf-16", "utf-16-be": "utf-16"}[encoding]
    rows, frame = next(sources.batches(pieces[0], ["patient_id", "prob_A", "label_A"]))
    dataset = read_wide(path)
    assert [str(i).strip() for i in frame["patient_id"]] == dataset.patient_ids.tolist() == [f"{ZOE}1", "café 2"]
    assert frame["prob_A"].tolist() == dataset.prob_array()[:, 0].tolist() and rows.tolist() == [2, 3]


def test_a_character_cut_at_the_header_sample_end_is_still_utf8(tmp_path):
    """The engine judges a CSV from its first 64 KB; a UTF-8 character cut there must not make it cp1252."""
    from favmac.io import text_encoding

    prefix = b"patient_id,prob_A,label_A\n" + b"".join(b"p%d,0.5,1\n" % i for i in range(5000))
    pad = 65535 - len(prefix) - 1
    data = prefix + b"q" + b"x" * pad + "é,0.5,1\n".encode()  # 'é' (2 bytes) straddles byte 65536
    assert pad > 0 and data[65535:65537] == "é".encode()
    (tmp_path / "w.csv").write_bytes(data)
    pieces, _ = sources.list_pieces(str(tmp_path / "w.csv"))
    assert text_encoding(data[:65536], truncated=True) == text_encoding(data) == pieces[0].encoding == "utf-8-sig"
    assert text_encoding(data[:65536]) == "cp1252"  # without the allowance the cut would count against UTF-8


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_segment_labels_are_read_as_favmac_io_reads_them(tmp_path, fmt):
    """Numeric plan codes become the same text; a missing label is refused in the same words."""
    from favmac.io import read_wide

    probs, labels = tied_data(221, 12, 2, 1)
    frame = wide_frame(probs, labels)
    frame.insert(1, "plan", [7.0, 8.0, 7.0] * 4)
    path = str(tmp_path / f"w.{fmt}")
    frame.to_parquet(path, index=False) if fmt == "parquet" else frame.to_csv(path, index=False)
    _, by_segment = calibrate(path, AdditiveValue(), AdditiveCost(), [1.0], segment="plan", scheduler="synchronous")
    written = ["7.0", "8.0"] if fmt == "csv" else ["7", "8"]  # a CSV cell is its text; Parquet's 7.0 reads as "7"
    assert sorted(by_segment) == sorted(set(read_wide(path, segment_column="plan").groups)) == written
    frame.loc[5, "plan"] = None
    frame.to_parquet(path, index=False) if fmt == "parquet" else frame.to_csv(path, index=False)
    in_memory = _outcome(lambda: read_wide(path, name=path, segment_column="plan").codes)
    engine = _outcome(lambda: calibrate(path, AdditiveValue(), AdditiveCost(), [1.0], segment="plan",
                                        scheduler="synchronous"))
    assert engine == in_memory and in_memory[1][:4] == ("this patient has no segment label.", path, 7, "plan")
