"""Extra text columns (not codes, not a grouping in use) are accepted by the library and the CLI as by the app;
the two-file layout carries them too, so a second grouping column works there (favmac.io.load_calibration)."""
import numpy as np
import pytest

from favmac.cli import main
from favmac.io import DataError, load_calibration

WIDE = (b"patient_id,plan,age_band,prob_A,label_A,prob_B,label_B\n"
        + b"".join(f"p{i},P{i % 2},{'80-84' if i % 3 else '65-69'},{(i % 10) / 10},{i % 2},{(i % 7) / 7},{i % 3 == 0:d}\n".encode()
                   for i in range(120)))


def _two_files(tmp_path):
    rows = [line.split(b",") for line in WIDE.splitlines()]
    probs = b"\n".join(b",".join([r[0], r[1], r[2], r[3], r[5]]) for r in rows).replace(b"prob_A", b"A").replace(b"prob_B", b"B")
    labels = b"\n".join(b",".join([r[0], r[4], r[6]]) for r in rows).replace(b"label_A", b"A").replace(b"label_B", b"B")
    (tmp_path / "p.csv").write_bytes(probs + b"\n")
    (tmp_path / "l.csv").write_bytes(labels + b"\n")
    return tmp_path / "p.csv", tmp_path / "l.csv"


def test_the_library_keeps_extra_text_columns_in_both_layouts(tmp_path):
    wide = load_calibration(WIDE)
    assert wide.codes == ["A", "B"] and {"plan", "age_band"} <= set(wide.segment_columns())
    probs, labels = _two_files(tmp_path)
    two = load_calibration(probs, labels)
    assert two.codes == ["A", "B"] and {"plan", "age_band"} <= set(two.segment_columns())
    assert two.segments("age_band")[:3].tolist() == ["65-69", "80-84", "80-84"]
    np.testing.assert_array_equal(two.prob_array(), wide.prob_array())
    grouped = load_calibration(probs, labels, segment_column=["plan", "age_band"])  # a second grouping column
    assert list(grouped.groupings) == ["plan", "age_band"]
    with pytest.raises(DataError, match="neither patient_id"):
        load_calibration(WIDE, keep_columns=False)


def test_a_number_column_the_labels_lack_is_still_a_missing_code(tmp_path):
    probs, labels = _two_files(tmp_path)
    text = probs.read_bytes().splitlines()
    probs.write_bytes(b"\n".join([text[0] + b",C"] + [line + b",0.5" for line in text[1:]]) + b"\n")
    with pytest.raises(DataError, match="C"):
        load_calibration(probs, labels)


def test_the_cli_accepts_them(tmp_path, capsys):
    (tmp_path / "w.csv").write_bytes(WIDE)
    out = tmp_path / "sets.csv"
    assert main(["replay", "--calibration", str(tmp_path / "w.csv"), "--targets", "0.5", "--out", str(out)]) == 0
    probs, labels = _two_files(tmp_path)
    assert main(["replay", "--calibration", str(probs), "--labels", str(labels), "--targets", "0.5",
                 "--segment-column", "plan", "--segment-column", "age_band", "--out", str(out)]) == 0
    assert "age_band" in capsys.readouterr().out


def test_new_patients_may_carry_the_calibration_datas_text_columns(tmp_path):
    (tmp_path / "w.csv").write_bytes(WIDE)
    probs, _ = _two_files(tmp_path)  # patient_id, plan, age_band, A, B: new patients with both text columns
    out = tmp_path / "sets.csv"
    assert main(["predict", "--calibration", str(tmp_path / "w.csv"), "--new", str(probs), "--target", "0.5",
                 "--out", str(out)]) == 0
    assert main(["predict", "--calibration", str(tmp_path / "w.csv"), "--new", str(probs), "--target", "0.5",
                 "--segment-column", "plan", "--out", str(out)]) == 0
    from favmac.io import load_new_patients_segmented

    with pytest.raises(DataError, match="unknown code"):
        load_new_patients_segmented(probs, ["A", "B"])  # without text_columns: refused as before
