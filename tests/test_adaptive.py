"""Adaptive target under drift: replay(adaptive_rate=) against the literal oracle and the FavMac loop,
the deterministic bound for ANY sequence, and a drifting stream where plain FavMac overruns."""
from fractions import Fraction

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, FavMac, replay
from favmac.adaptive import AdaptiveTarget, adaptive_bound, check_adaptive_rate

import oracle
from instances import UNIVERSES, random_instance, targets_for


def q(x):
    return oracle.q(x)


@pytest.mark.filterwarnings("ignore:costs too large")  # float-noise targets such as 1.4000000000000001
@pytest.mark.parametrize("universe, score", [(u, "cost") for u in UNIVERSES] + [(u, "price") for u in UNIVERSES if u != "full"])
def test_adaptive_replay_equals_oracle_and_favmac_loop(universe, score):
    rng = np.random.RandomState(5)
    for trial in range(12):
        integer = trial % 2 == 0
        probs, labels, v, w = random_instance(rng, integer)
        targets = [t for t in targets_for(rng, w, integer)]
        gamma = [0.1, 0.5, 1.0, 0.03][trial % 4]
        burn_in = int(rng.randint(0, len(probs)))
        window = None if trial % 3 else 3
        value, cost = AdditiveValue(v), AdditiveCost(w)
        res = replay(probs, labels, value, cost, targets, universe=universe, burn_in=burn_in, window=window,
                     adaptive_rate=gamma, score=score)
        stream = list(zip(probs, labels))
        for t, c in enumerate(targets):
            thresholds, c_ns, sets, costs = oracle.adaptive_session(stream, v, w, c, gamma, universe, burn_in, window,
                                                                    score)
            assert res.thresholds[t].tolist() == thresholds
            assert res.adaptive_targets[t].tolist() == [float(x) for x in c_ns]
            fm = FavMac(value, cost, c, universe=universe, window=window, n_codes=len(v), adaptive_rate=gamma,
                        score=score)
            if burn_in:
                fm.update(probs[:burn_in], labels[:burn_in], adapt=False)
            for n in range(burn_in, len(probs)):
                s = n - burn_in
                assert fm.threshold == res.thresholds[t, s]
                assert fm.current_target == c_ns[s]
                chosen = fm.predict(probs[n])
                assert (res.selected[t, s] == chosen).all()
                assert sorted(np.flatnonzero(chosen).tolist()) == sorted(sets[s])
                fm.update(probs[n], labels[n])
            assert res.final_thresholds[t] == fm.threshold
            assert res.final_adaptive_targets[t] == float(fm.current_target)


def test_adaptive_with_groups_adapts_each_segment_on_its_own():
    rng = np.random.RandomState(8)
    probs, labels = rng.rand(80, 4).round(2), rng.rand(80, 4) < 0.3
    groups = rng.choice(["n", "s"], size=80)
    res = replay(probs, labels, AdditiveValue(), AdditiveCost(), [1.1], burn_in=20, groups=groups, adaptive_rate=0.2,
                 score="cost")  # the oracle's default score
    stream = list(zip(probs, labels))
    ones = np.ones(4)
    for label in ("n", "s"):
        rows = np.flatnonzero(groups == label)
        sub = [stream[i] for i in rows]
        sub_burn = int((rows < 20).sum())
        thresholds, c_ns, _, _ = oracle.adaptive_session(sub, ones, ones, 1.1, 0.2, "ratio", sub_burn)
        mine = res.groups == label
        assert res.thresholds[0, mine].tolist() == thresholds
        assert res.adaptive_targets[0, mine].tolist() == [float(x) for x in c_ns]


def test_mean_cost_bound_holds_for_any_sequence():
    """Adversarial streams (labels unrelated to, or opposite of, the probabilities): the bound is exact."""
    for seed in range(30):
        rng = np.random.RandomState(seed)
        n, K = int(rng.randint(5, 120)), int(rng.randint(1, 6))
        w = rng.choice([0.1, 0.5, 1.0, 2.3], size=K)
        probs = rng.rand(n, K).round(3)
        labels = (rng.rand(n, K) < 0.5) if seed % 3 else (probs < 0.5)  # seed % 3 == 0: adversarial labels
        c = float(np.round(rng.uniform(0.05, 1.0) * w.sum(), 2))
        gamma = [0.01, 0.05, 0.2, 1.0, 3.0][seed % 5]
        burn_in = int(rng.randint(0, n))
        res = replay(probs, labels, AdditiveValue(), AdditiveCost(w), [c], burn_in=burn_in, adaptive_rate=gamma)
        steps = n - burn_in
        total = sum((sum((q(w[k]) for k in range(K) if sel[k] and not y[k]), Fraction(0))
                     for sel, y in zip(res.selected[0], labels[burn_in:])), Fraction(0))
        assert total / steps <= adaptive_bound(c, gamma, sum(q(x) for x in w), steps)
        assert min(res.adaptive_targets[0]) >= -gamma * float(sum(q(x) for x in w)) - 1e-12


def drifting_stream(seed, n=2000, K=8):
    """A classifier that is calibrated for the first half and over-confident in the second."""
    rng = np.random.RandomState(seed)
    p_true = rng.beta(1.0, 3.0, size=(n, K))
    labels = rng.rand(n, K) < p_true
    probs = p_true.copy()
    half = n // 2
    probs[half:] = np.clip(0.3 + 0.7 * p_true[half:] ** 0.4, 0, 1)
    return probs.round(4), labels


def test_adaptive_stays_within_bound_under_drift_while_plain_overruns():
    c, gamma, burn_in = 1.0, 0.05, 500
    probs, labels = drifting_stream(0)
    value, cost = AdditiveValue(), AdditiveCost()
    plain = replay(probs, labels, value, cost, [c], burn_in=burn_in)
    adaptive = replay(probs, labels, value, cost, [c], burn_in=burn_in, adaptive_rate=gamma)
    steps = len(probs) - burn_in
    assert plain.cost.mean() > c + 0.3
    total = sum(Fraction(int(x)) for x in adaptive.cost[0])  # FP counts are integers
    assert total / steps <= adaptive_bound(c, gamma, 8, steps)
    assert adaptive.cost.mean() <= c + 0.05


def test_adaptive_rule_and_refusals():
    rule = AdaptiveTarget(0.35, 0.05, cost_scale=10)
    assert rule.scale == 10_000 and rule.start == 3500
    assert rule.as_fraction(rule.step(rule.start, 12)) == Fraction(35, 100) + Fraction(5, 100) * (Fraction(35, 100) - Fraction(12, 10))
    with pytest.raises(ValueError, match="expected-cost control only"):
        check_adaptive_rate(0.1, delta=0.1)
    with pytest.raises(ValueError, match="adaptive_rate: expected None or a finite number > 0"):
        FavMac(AdditiveValue(), AdditiveCost(), 1.0, adaptive_rate=-1)
    with pytest.raises(ValueError, match="expected-cost control only"):
        replay(np.full((3, 2), 0.5), np.zeros((3, 2)), AdditiveValue(), AdditiveCost(), [1.0], delta=0.1,
               adaptive_rate=0.1)


def test_adaptive_with_groups_equals_the_favmac_loop():
    rng = np.random.RandomState(9)
    probs, labels = rng.rand(90, 4).round(2), rng.rand(90, 4) < 0.3
    groups = rng.choice(["n", "s", "e"], size=90)
    value, cost = AdditiveValue(), AdditiveCost()
    res = replay(probs, labels, value, cost, [0.9], burn_in=15, groups=groups, adaptive_rate=0.3)
    fm = FavMac(value, cost, 0.9, adaptive_rate=0.3, n_codes=4)
    fm.update(probs[:15], labels[:15], group=groups[:15], adapt=False)
    for n in range(15, 90):
        assert fm.threshold_for(groups[n]) == res.thresholds[0, n - 15]
        assert (fm.predict(probs[n], group=groups[n]) == res.selected[0, n - 15]).all()
        fm.update(probs[n], labels[n], group=groups[n])
    for label, final in res.group_thresholds.items():
        assert final[0] == fm.threshold_for(label)
        assert res.final_adaptive_targets[label][0] == float(fm.target_for(label))


def test_each_segment_keeps_its_own_adaptive_bound_on_any_stream():
    from favmac.segments import segment_table

    for seed in range(8):
        rng = np.random.RandomState(100 + seed)
        probs = rng.rand(300, 5).round(3)
        labels = probs < 0.5  # adversarial: the likely codes are the absent ones
        groups = rng.choice(["a", "b", "c"], size=300)
        res = replay(probs, labels, AdditiveValue(), AdditiveCost(), [0.7], burn_in=30, groups=groups,
                     adaptive_rate=[0.02, 0.2, 1.0][seed % 3])
        table = segment_table(res)
        for label, row in table.set_index("segment").iterrows():
            mine = res.groups == label
            total = Fraction(int(res.cost[0, mine].sum()))
            assert total / int(mine.sum()) <= adaptive_bound(0.7, res.settings["adaptive_rate"], 5, int(mine.sum()))
            assert bool(row["within_target"])
