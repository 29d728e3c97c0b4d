"""Segments (Mondrian control): replay with groups= against the literal oracle and the FavMac loop,
and the guarantee per segment on a cohort with one over-confident segment."""
import math

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, FavMac, replay
from favmac.segments import check_group_labels, group_rows, min_calibration, segment_table, too_small_reason

import oracle
from instances import SCORED, random_instance, targets_for


@pytest.mark.parametrize("delta", [None, 0.2])
@pytest.mark.parametrize("universe, score", SCORED)
def test_grouped_replay_equals_oracle_and_favmac_loop(universe, score, delta):
    rng = np.random.RandomState(11)
    for trial in range(12):
        probs, labels, v, w = random_instance(rng, integer_weights=trial % 2 == 0)
        targets = targets_for(rng, w, trial % 2 == 0)
        groups = np.array(["a", "b", "c"])[rng.randint(0, 1 + trial % 3, size=len(probs))]
        burn_in = int(rng.randint(0, len(probs)))
        window = None if trial % 4 else 2
        value, cost = AdditiveValue(v), AdditiveCost(w)
        res = replay(probs, labels, value, cost, targets, delta=delta, universe=universe, burn_in=burn_in,
                     window=window, groups=groups, score=score)
        assert res.groups.tolist() == groups[burn_in:].tolist()
        stream = list(zip(probs, labels))
        for t, c in enumerate(targets):
            literal = oracle.grouped_thresholds(stream, groups, v, w, c, universe, burn_in, delta, window, score)
            assert res.thresholds[t].tolist() == literal
            fm = FavMac(value, cost, c, delta=delta, universe=universe, window=window, n_codes=len(v), score=score)
            for n in range(len(probs)):
                if n >= burn_in:
                    s = n - burn_in
                    assert res.thresholds[t, s] == fm.threshold_for(groups[n])
                    assert (res.selected[t, s] == fm.predict(probs[n], group=groups[n])).all()
                fm.update(probs[n], labels[n], group=groups[n])
            for label, final in res.group_thresholds.items():
                assert final[t] == fm.threshold_for(label)
            assert res.final_thresholds[t] == fm.threshold  # pooled, every patient


def test_favmac_batch_update_with_groups_equals_one_by_one():
    rng = np.random.RandomState(3)
    probs, labels = rng.rand(40, 4), rng.rand(40, 4) < 0.3
    groups = rng.choice(["x", "y"], size=40)
    one = FavMac(AdditiveValue(), AdditiveCost(), 1.1, n_codes=4)
    for n in range(40):
        one.update(probs[n], labels[n], group=groups[n])
    batch = FavMac(AdditiveValue(), AdditiveCost(), 1.1).update(probs, labels, group=groups)
    assert batch.segments == one.segments == {"x": int((groups == "x").sum()), "y": int((groups == "y").sum())}
    for g in ("x", "y"):
        assert batch.threshold_for(g) == one.threshold_for(g)
    assert batch.threshold == one.threshold
    masks = batch.predict(probs[:5], group=groups[:5])
    for n in range(5):
        assert (masks[n] == one.predict(probs[n], group=groups[n])).all()


def over_confident_cohort(seed, n=900):
    """Two segments of one cohort: in 'B' the classifier is over-confident (probabilities pushed
    towards 1 for negatives too), in 'A' it is calibrated. Labels Bernoulli(p_true)."""
    rng = np.random.RandomState(seed)
    K = 6
    groups = np.where(rng.rand(n) < 0.35, "B", "A")
    p_true = rng.beta(1.2, 3.0, size=(n, K))
    labels = rng.rand(n, K) < p_true
    probs = p_true.copy()
    over = groups == "B"
    probs[over] = np.clip(0.35 + 0.65 * p_true[over] ** 0.5, 0, 1)  # says "likely" far too often
    return probs.round(4), labels, groups


def test_groups_keep_every_segment_within_target_where_pooled_fails():
    target, burn_in = 0.8, 300
    value, cost = AdditiveValue(), AdditiveCost()
    probs, labels, groups = over_confident_cohort(0)
    pooled_b, grouped = [], {"A": [], "B": []}
    for seed in range(40):  # many orderings of the same cohort
        order = np.random.RandomState(seed).permutation(len(probs))
        p, y, g = probs[order], labels[order], groups[order]
        plain = replay(p, y, value, cost, [target], burn_in=burn_in, score="cost")  # the rule this test was sized for
        seg = replay(p, y, value, cost, [target], burn_in=burn_in, groups=g, score="cost")
        tail = g[burn_in:]
        pooled_b.append(plain.cost[0, tail == "B"].mean())
        for label in grouped:
            grouped[label].append(seg.cost[0, tail == label].mean())
    assert np.mean(pooled_b) > target + 0.2  # the pooled guarantee hides segment B's overrun
    for label, means in grouped.items():
        assert np.mean(means) <= target, (label, np.mean(means))


def test_small_segment_gets_the_empty_set_and_says_why():
    rng = np.random.RandomState(1)
    probs, labels = rng.rand(60, 5), rng.rand(60, 5) < 0.3
    groups = np.array(["big"] * 57 + ["tiny"] * 3)
    res = replay(probs, labels, AdditiveValue(), AdditiveCost(), [1.0], groups=groups, burn_in=20)
    assert res.group_thresholds["tiny"][0] == -math.inf
    assert not res.selected[0, res.groups == "tiny"].any()
    table = segment_table(res).set_index("segment")
    assert table.loc["tiny", "patients"] == 3 and table.loc["big", "patients"] == 57
    assert "needs at least 4" in table.loc["tiny", "warning"] and table.loc["big", "warning"] == ""
    assert bool(table.loc["big", "within_target"]) == bool(res.cost[0, res.groups == "big"].mean() <= 1.0)


def test_min_calibration_is_the_first_size_without_minus_infinity():
    for c_max, target in ((10, 1), (5, 0.3), (3, 3), (7, 2.5)):
        need = min_calibration(target, c_max)
        fm = FavMac(AdditiveValue(), AdditiveCost([c_max / 5] * 5), target, n_codes=5)
        probs, labels = np.full((need + 1, 5), 0.5), np.ones((need + 1, 5), bool)
        if need:
            fm.update(probs[: need - 1], labels[: need - 1])
            assert fm.threshold == -math.inf
            fm.update(probs[need - 1], labels[need - 1])
        assert fm.threshold > -math.inf
    for delta in (0.1, 0.05, 0.3, 0.5):
        need = min_calibration(1, 10, delta)
        assert math.ceil((1 - delta) * (need + 1) - 1e-12) <= need
        assert need == 0 or math.ceil((1 - delta) * need - 1e-12) > need - 1
    assert too_small_reason(9, 1, 10) is None


def test_group_labels_are_checked():
    assert [g for g, _ in group_rows(check_group_labels([3, "3", 1], 3))] == ["1", "3"]
    with pytest.raises(ValueError, match=r"the patient at row 3 \(the header is row 1; array index 1\) has no group label"):
        check_group_labels(["a", None], 2)
    with pytest.raises(ValueError, match="groups: expected one group label per patient, shape \\(3,\\)"):
        replay(np.full((3, 2), 0.5), np.zeros((3, 2)), AdditiveValue(), AdditiveCost(), [1.0], groups=["a"])


def test_run_method_takes_the_segment_labels_and_refuses_without_them():
    from favmac import RunSpec, run_method

    rng = np.random.RandomState(4)
    probs, labels = rng.rand(60, 3), rng.rand(60, 3) < 0.3
    groups = rng.choice(["a", "b"], size=60)
    spec = RunSpec(value_kind="tp", targets=(1.1,), burn_in=20, segment="plan", score="cost").validate(3, 60)
    result = run_method(spec, "favmac", probs, labels, groups=groups)
    assert sorted(result.group_thresholds) == ["a", "b"] and result.groups.tolist() == groups[20:].tolist()
    with pytest.raises(ValueError, match="segment: the run is per segment \\(column 'plan'\\)"):
        run_method(spec, "favmac", probs, labels)
    with pytest.raises(ValueError, match="segment is not supported by ClassWise"):
        run_method(spec, "classwise", probs, labels, groups=groups)
