"""``new_patient_sets`` and ``favmac predict`` with several groupings: each new patient's threshold is
the smallest of its groups' final thresholds, checked against a per-group brute force."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from favmac import AdditiveCost, AdditiveValue, replay
from favmac.cli import main
from favmac.export import new_patient_sets
from favmac.io import load_calibration
from favmac.replay import predict_with_threshold

SAMPLE = Path(__file__).resolve().parent.parent / "sample_data"
GROUPINGS = SAMPLE / "groupings_calibration.csv"


def _group_final(probs, labels, rows, target, delta, score):
    """A group's final threshold, calibrated on that group's patients alone (burn-in = all of them)."""
    res = replay(probs[rows], labels[rows], AdditiveValue(), AdditiveCost(), [target], delta=delta,
                 burn_in=len(rows), score=score)
    return float(res.final_thresholds[0])


@pytest.mark.parametrize("delta", [None, 0.2])
def test_new_patient_thresholds_are_the_min_over_groupings_of_the_group_finals(delta):
    rng = np.random.default_rng(3)
    n, k = 300, 5
    probs = rng.uniform(size=(n, k))
    labels = (rng.uniform(size=(n, k)) < probs).astype(int)
    plan = rng.choice(["A", "B", "C"], size=n)
    band = rng.choice(["young", "old"], size=n, p=[0.8, 0.2])
    target, score = 1.0, "cost"
    res = replay(probs, labels, AdditiveValue(), AdditiveCost(), [target], delta=delta, burn_in=n,
                 groups={"plan": plan, "band": band}, score=score)
    new = pd.DataFrame(rng.uniform(size=(40, k)), index=[f"n{i}" for i in range(40)],
                       columns=[str(c) for c in range(k)])
    new_plan = rng.choice(["A", "B", "C", "D"], size=40)  # "D" never calibrated
    new_band = rng.choice(["young", "old"], size=40)
    frame = new_patient_sets(new, res, AdditiveValue(), AdditiveCost(), groups={"plan": new_plan, "band": new_band})
    finals = {}
    for name, labels_of in (("plan", plan), ("band", band)):
        for g in np.unique(labels_of):
            finals[name, g] = _group_final(probs, labels, np.flatnonzero(labels_of == g), target, delta, score)
    want = np.array([min(finals.get(("plan", p), -np.inf), finals[("band", b)]) for p, b in zip(new_plan, new_band)])
    got = frame["threshold"].to_numpy()
    assert np.array_equal(np.isinf(got), np.isinf(want))
    np.testing.assert_allclose(got, want, rtol=1e-11)  # the export keeps 12 significant digits
    sets = predict_with_threshold(new.to_numpy(), AdditiveValue(), AdditiveCost(), want, universe="ratio", score=score)
    assert frame["n_codes"].tolist() == sets.sum(axis=1).tolist()
    unseen = new_plan == "D"
    assert unseen.any() and (frame["n_codes"][unseen] == 0).all()
    assert all("plan 'D' is not in the calibration data" in note for note in frame["note"][unseen])
    assert all(note.startswith("binding grouping: ") or "calibration patients" in note for note in frame["note"][~unseen])
    assert frame["segment"].iloc[0] == f"plan={new_plan[0]}; band={new_band[0]}"


def test_several_groupings_need_labels_for_every_grouping():
    rng = np.random.default_rng(0)
    probs = rng.uniform(size=(60, 3))
    labels = (rng.uniform(size=(60, 3)) < probs).astype(int)
    res = replay(probs, labels, AdditiveValue(), AdditiveCost(), [1.0], burn_in=60,
                 groups={"plan": np.repeat(["a", "b"], 30), "band": np.tile(["x", "y"], 30)})
    new = pd.DataFrame(rng.uniform(size=(4, 3)), columns=["0", "1", "2"])
    with pytest.raises(ValueError, match="no labels for the grouping 'band'"):
        new_patient_sets(new, res, AdditiveValue(), AdditiveCost(), groups={"plan": ["a"] * 4})
    with pytest.raises(ValueError, match="several groupings"):
        new_patient_sets(new, res, AdditiveValue(), AdditiveCost())


def test_cli_predict_with_two_segment_columns(capsys, tmp_path):
    out = tmp_path / "p.csv"
    code = main(["predict", "--calibration", str(GROUPINGS), "--new", str(GROUPINGS), "--segment-column", "plan",
                 "--segment-column", "age_band", "--target", "1", "--score", "cost", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "smallest of its groups'" in captured.out + captured.err
    frame = pd.read_csv(out, dtype={"patient_id": str})
    data = load_calibration(GROUPINGS, segment_column=["plan", "age_band"])
    # 3,000 labelled patients: the CLI recalibrates on the first 1,000 by default (issue 33), so the library is asked to
    res = replay(data.prob_array(), data.label_array(), AdditiveValue(), AdditiveCost(), [1.0],
                 burn_in=data.n_patients - 1000, groups=data.groupings, score="cost", recalibrate=1000)
    by = [g.final_thresholds for g in res.groupings]
    want = np.array([min(float(by[0][p][0]), float(by[1][a][0]))
                     for p, a in zip(data.groupings["plan"], data.groupings["age_band"])])
    np.testing.assert_allclose(frame["threshold"].to_numpy(), want, rtol=1e-11)
    assert frame["segment"].iloc[0] == f"plan={data.groupings['plan'][0]}; age_band={data.groupings['age_band'][0]}"
