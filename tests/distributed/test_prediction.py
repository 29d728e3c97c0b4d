"""favmac.distributed.prediction: the chosen sets as Parquet parts, equal to FavMac's."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

from dist_helpers import tied_data, wide_frame, write_parts  # noqa: E402

from favmac import AdditiveCost, AdditiveValue, DataError, FavMac  # noqa: E402
from favmac.distributed import calibrate, predict  # noqa: E402
from favmac.export import round_noise  # noqa: E402
from favmac.scores import default_score  # noqa: E402


def test_predict_writes_parquet_parts_equal_to_favmac(tmp_path):
    probs, labels = tied_data(71, 200, 5, 2)
    weights = np.array([1.0, 2.5, 0.5, 1.5, 1.0])
    value, cost = AdditiveValue(weights), AdditiveCost(weights)
    write_parts(tmp_path / "cal", probs, labels, [0, 1, 99, 100])
    threshold = float(calibrate(str(tmp_path / "cal"), value, cost, 2.5, scheduler="synchronous"))  # default score
    fm = FavMac(value, cost, 2.5, score=default_score("ratio"))
    fm.update(probs, labels)
    assert threshold == fm.threshold
    new_probs, _ = tied_data(72, 120, 5, 2)
    new = pd.DataFrame(new_probs, columns=[f"C{k}" for k in range(5)])
    new.insert(0, "patient_id", [f"N{i}" for i in range(120)])
    os.makedirs(tmp_path / "new")
    new.iloc[:1].to_parquet(tmp_path / "new" / "a.parquet", index=False)
    new.iloc[1:].to_csv(tmp_path / "new" / "b.csv", index=False)
    with pytest.raises(DataError, match="mix Parquet and CSV"):
        predict(str(tmp_path / "new"), value, cost, threshold, tmp_path / "out")
    os.remove(tmp_path / "new" / "b.csv")
    new.iloc[1:].to_parquet(tmp_path / "new" / "b.parquet", index=False)
    n = predict(str(tmp_path / "new"), value, cost, threshold, tmp_path / "out", codes=[f"C{k}" for k in range(5)],
                target=2.5, scheduler="synchronous")
    assert n == 120
    written = pd.read_parquet(tmp_path / "out")
    assert list(written.columns) == ["patient_id", "codes", "n_codes", "expected_value", "cost_proxy", "threshold",
                                     "method", "target", "delta", "universe", "score"]
    masks = fm.predict(new_probs)
    want = [";".join(f"C{k}" for k in np.flatnonzero(m)) for m in masks]
    assert written["patient_id"].tolist() == new["patient_id"].tolist()
    assert written["codes"].tolist() == want
    assert (written["threshold"] == round_noise([threshold])[0]).all() and (written["target"] == 2.5).all()
    assert (written["score"] == "price").all()  # the default under expected-cost control, on both sides

def test_predict_writes_nothing_on_bad_input(tmp_path):
    new = pd.DataFrame({"patient_id": ["a", "b", "c"], "C0": [0.5, 0.2, 0.1], "C1": [0.3, 1.2, 0.0]})
    new.iloc[:1].to_parquet(tmp_path / "a.parquet", index=False)
    new.iloc[1:].to_parquet(tmp_path / "b.parquet", index=False)
    out = tmp_path / "out"
    with pytest.raises(DataError, match="outside \\[0, 1\\]") as err:
        predict(str(tmp_path / "*.parquet"), AdditiveValue(), AdditiveCost(), 1.0, out, scheduler="synchronous")
    assert err.value.row == 2 and err.value.file.endswith("b.parquet")
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []

def test_predict_refuses_duplicate_ids_and_writes_nothing(tmp_path):
    new = pd.DataFrame({"patient_id": ["a", "b", "c", "a"], "C0": [0.5, 0.2, 0.1, 0.3], "C1": [0.3, 0.2, 0.0, 0.9]})
    new.iloc[:2].to_csv(tmp_path / "a.csv", index=False)
    new.iloc[2:].to_csv(tmp_path / "b.csv", index=False)
    out = tmp_path / "out"
    with pytest.raises(DataError, match="'a' \\(.*a.csv row 2, .*b.csv row 3\\)") as err:
        predict(str(tmp_path / "*.csv"), AdditiveValue(), AdditiveCost(), 1.0, out, scheduler="synchronous")
    assert (err.value.file, err.value.row, err.value.column) == (str(tmp_path / "b.csv"), 3, "patient_id")
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []

def test_predict_says_why_a_too_small_segment_gets_the_empty_set(tmp_path):
    from favmac.segments import too_small_reason

    probs, labels = tied_data(171, 60, 3, 1)
    plans = np.array(["big"] * 57 + ["tiny"] * 3, dtype=object)
    frame = wide_frame(probs, labels)
    frame.insert(1, "plan", plans)
    frame.to_parquet(tmp_path / "cal.parquet", index=False)
    _, by_segment, details = calibrate(str(tmp_path / "cal.parquet"), AdditiveValue(), AdditiveCost(), [0.5],
                                       segment="plan", scheduler="synchronous", return_details=True)
    assert by_segment["tiny"][0] == -np.inf and np.isfinite(by_segment["big"][0])
    new = pd.DataFrame(tied_data(172, 6, 3, 1)[0], columns=["C0", "C1", "C2"])
    new.insert(0, "patient_id", [f"N{i}" for i in range(6)])
    new.insert(1, "plan", ["big", "tiny", "gold"] * 2)
    new.to_csv(tmp_path / "new.csv", index=False)
    thresholds = {label: float(values[0]) for label, values in by_segment.items()}
    predict(str(tmp_path / "new.csv"), AdditiveValue(), AdditiveCost(), thresholds, tmp_path / "out", target=0.5,
            segment="plan", segment_sizes=details["segment_sizes"], scheduler="synchronous")
    written = pd.read_parquet(tmp_path / "out").set_index("patient_id")
    # C_max = 3 (three codes of weight 1): M = 0.5 (3 + 1) - 3 < 0 for the 3 'tiny' patients
    assert written.loc["N1", "note"] == "segment 'tiny': " + too_small_reason(3, 0.5, 3)
    assert "needs at least 5" in written.loc["N1", "note"] and written.loc["N1", "codes"] == ""
    assert written.loc["N0", "note"] == "" and "not in the calibration data" in written.loc["N2", "note"]
    predict(str(tmp_path / "new.csv"), AdditiveValue(), AdditiveCost(), thresholds, tmp_path / "out2",
            segment="plan", scheduler="synchronous")  # sizes unknown: still says why the set is empty
    assert "threshold is -inf" in pd.read_parquet(tmp_path / "out2").set_index("patient_id").loc["N4", "note"]


@pytest.mark.parametrize("delta", [None, 0.2])
def test_predict_default_score_is_calibrates(tmp_path, delta):
    """No score given: predict and calibrate both use favmac.scores.default_score(universe, delta)."""
    probs, labels = tied_data(211, 120, 4, 2)
    write_parts(tmp_path / "cal", probs, labels, [60, 60])
    value, cost = AdditiveValue([1.0, 2.0, 0.5, 1.5]), AdditiveCost([1.0, 0.5, 2.0, 1.0])
    threshold = float(calibrate(str(tmp_path / "cal"), value, cost, 1.2, delta=delta, scheduler="synchronous"))
    new = pd.DataFrame(tied_data(212, 30, 4, 2)[0], columns=["A", "B", "C", "D"])
    new.insert(0, "patient_id", [f"N{i}" for i in range(30)])
    new.to_parquet(tmp_path / "new.parquet", index=False)
    predict(str(tmp_path / "new.parquet"), value, cost, threshold, tmp_path / "out", delta=delta, scheduler="synchronous")
    written = pd.read_parquet(tmp_path / "out")
    expected = default_score("ratio", delta)
    assert (written["score"] == expected).all()
    fm = FavMac(value, cost, 1.2, delta=delta, score=expected).update(probs, labels)
    assert fm.threshold == threshold
    assert written["codes"].tolist() == [";".join("ABCD"[k] for k in np.flatnonzero(m))
                                         for m in fm.predict(new.iloc[:, 1:].to_numpy())]


def test_predict_reads_a_wide_file_without_labels(tmp_path):
    """patient_id and prob_<code> columns only (labels dropped): the prob_ columns hold the codes, as
    favmac.io.load_new_patients reads them."""
    from favmac.io import load_new_patients
    from favmac.replay import predict_with_threshold

    frame = pd.DataFrame({"patient_id": ["a", "b"], "prob_B": [0.9, 0.1], "prob_A": [0.2, 0.8]})
    frame.to_csv(tmp_path / "new.csv", index=False)
    assert list(load_new_patients(tmp_path / "new.csv", ["A", "B"]).columns) == ["A", "B"]
    predict(str(tmp_path / "new.csv"), AdditiveValue(), AdditiveCost(), 0.5, tmp_path / "out", codes=["A", "B"],
            score="cost", scheduler="synchronous")
    masks = predict_with_threshold(frame[["prob_A", "prob_B"]].to_numpy(), AdditiveValue(), AdditiveCost(), 0.5)
    written = pd.read_parquet(tmp_path / "out")
    assert written["patient_id"].tolist() == ["a", "b"]
    assert written["codes"].tolist() == [";".join("AB"[k] for k in np.flatnonzero(m)) for m in masks] == ["B", "A"]
