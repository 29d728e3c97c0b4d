"""The readers and library: code columns named as segment columns, probabilities at the edges of floating point, two names of one HCC.

Third hostile-input audit of the readers and the library (tests/test_io_dates_and_empty_files.py and
tests/test_io_encodings_and_wide_files.py hold the earlier rounds): a code column named as the segment column,
probabilities at the edges of floating point, two names of one HCC."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from favmac import AdditiveCost, AdditiveValue, CmsHccValue, FavMac, replay
from favmac.io import DataError, load_calibration
from favmac.io.layouts import column_layout

import oracle


def _wide(path, rows=40, seed=0):
    rng = np.random.default_rng(seed)
    lines = ["patient_id,plan,prob_A,label_A,prob_B,label_B"]
    for i in range(rows):
        p = rng.random(2).round(3)
        lines.append(f"p{i},{'XY'[i % 2]},{p[0]},{int(rng.random() < p[0])},{p[1]},{int(rng.random() < p[1])}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("column, words", [
    ("prob_A", "the segment column 'prob_A' is the probability column of code 'A'"),
    ("label_B", "the segment column 'label_B' is the label column of code 'B'"),
])
def test_a_wide_files_code_column_is_not_a_segment_column(tmp_path, column, words):
    """Before: 'there is no matching label_A column' (the column was taken away first), which sent the
    user looking for a missing column."""
    path = _wide(tmp_path / "cal.csv")
    with pytest.raises(DataError) as err:
        load_calibration(path, segment_column=column)
    assert words in str(err.value) and "cal.csv" in str(err.value) and "column " + column in str(err.value)
    with pytest.raises(DataError, match=words):  # the distributed engine's header rule too
        column_layout(["patient_id", "plan", "prob_A", "label_A", "prob_B", "label_B"], "cal.csv", segment_column=column)
    assert load_calibration(path, segment_column="plan").segment_column == "plan"


def _two_files(tmp_path, segment_in_labels=None):
    frame = pd.read_csv(_wide(tmp_path / "wide.csv"), dtype={"plan": str})
    probs = frame[["patient_id", "plan", "prob_A", "prob_B"]].rename(columns={"prob_A": "A", "prob_B": "B"})
    labels = frame[["patient_id", "label_A", "label_B"]].rename(columns={"label_A": "A", "label_B": "B"})
    if segment_in_labels is not None:
        labels["plan"] = segment_in_labels
    probs.to_csv(tmp_path / "probs.csv", index=False)
    labels.iloc[::-1].to_csv(tmp_path / "labels.csv", index=False)  # another row order: matched by id
    return tmp_path / "probs.csv", tmp_path / "labels.csv", frame


def test_a_probabilities_files_code_column_is_not_taken_as_segments(tmp_path):
    """Before: segment_column='A' in the two-file layout silently made code A's probabilities the segment
    labels ('0.123', '0.456', ...: one patient per segment) and dropped code A from both files."""
    probs, labels, frame = _two_files(tmp_path)
    with pytest.raises(DataError) as err:
        load_calibration(probs, labels, segment_column="A")
    text = str(err.value)
    last = frame.iloc[-1]  # the labels file's first data row (row 2) is the last patient
    assert text.startswith("labels.csv, row 2, column A: the segment column 'A' holds "
                           f"'{last['label_A']}' for patient '{last['patient_id']}' here but '{last['prob_A']}' in probs.csv")
    assert "is not a segment column" in text


def test_a_segment_column_in_both_files_is_read_when_it_agrees(tmp_path):
    probs, labels, frame = _two_files(tmp_path, segment_in_labels=None)
    _, _, frame = _two_files(tmp_path, segment_in_labels=frame["plan"].to_numpy())
    data = load_calibration(probs, labels, segment_column="plan")
    assert data.codes == ["A", "B"] and data.groups.tolist() == frame["plan"].tolist()
    changed = frame["plan"].to_numpy().copy()
    changed[5] = "Z"
    _two_files(tmp_path, segment_in_labels=changed)
    with pytest.raises(DataError, match="holds 'Z' for patient 'p5' here but 'Y' in probs.csv"):
        load_calibration(probs, labels, segment_column="plan")


def test_subnormal_and_almost_one_probabilities_equal_the_oracle_without_warnings():
    """Before: probabilities of 1e-320 made the price score print 'RuntimeWarning: overflow encountered
    in divide' with the server's path (favmac/universe.py) on every run; the thresholds were right."""
    rng = np.random.RandomState(5)
    probs = rng.rand(24, 3).round(2)
    probs[rng.rand(24, 3) < 0.3] = 1e-320
    probs[rng.rand(24, 3) < 0.2] = 1 - 1e-16
    probs[rng.rand(24, 3) < 0.1] = 5e-324
    labels = rng.rand(24, 3) < probs
    v, w = np.array([0.3, 1.0, 2.5]), np.array([1.0, 0.5, 2.0])
    with warnings.catch_warnings():
        warnings.filterwarnings("error", module=r"favmac\.")  # favmac's own; the oracle's Python floats may warn
        for delta in (None, 0.2):
            for c in (0.3, 1.2):
                fm = FavMac(AdditiveValue(v), AdditiveCost(w), c, delta=delta, universe="ratio", score="price")
                for n in range(len(probs)):
                    cal = list(zip(probs[:n], labels[:n]))
                    expect = (oracle.expected_threshold(cal, v, w, c, "ratio", score="price") if delta is None
                              else oracle.violation_threshold(cal, v, w, c, delta, "ratio", score="price"))
                    assert fm.threshold == expect, (delta, c, n)
                    assert sorted(np.flatnonzero(fm.predict(probs[n]))) == sorted(
                        oracle.predict(probs[n], v, w, expect, "ratio", "price")), (delta, c, n)
                    fm.update(probs[n], labels[n])
                res = replay(probs, labels, AdditiveValue(v), AdditiveCost(w), [c], delta=delta, score="price")
                assert res.final_thresholds[0] == fm.threshold


@pytest.mark.parametrize("codes, pair", [
    (["HCC37", "HCC18", "37"], "'HCC37' and '37'"),
    (["HCC37", "hcc37"], "'HCC37' and 'hcc37'"),
])
def test_two_names_of_one_hcc_are_both_named(codes, pair):
    """Before: always "(e.g. 'HCC37' and '37')", whichever two columns it was."""
    with pytest.raises(ValueError, match=f"the same HCC appears twice: {pair} \\(HCC 37\\)"):
        CmsHccValue(codes)


def test_the_segment_column_named_as_the_label_arrival_column_says_so(tmp_path):
    """Before: "there is no column named 'plan' to read the label arrivals from" about a column the file has
    (the segments had taken it)."""
    path = _wide(tmp_path / "cal.csv")
    with pytest.raises(DataError, match="column plan: the column 'plan' is the segment column; it cannot also say when "
                                        "labels arrived"):
        load_calibration(path, segment_column="plan", label_available_column="plan")
