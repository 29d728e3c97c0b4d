"""FavMac and replay against the literal SPEC oracle on random instances."""
import math

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, FavMac, replay
from favmac.thresholds import violation_rank

import oracle


def random_instance(rng, integer_weights):
    K = rng.randint(1, 6)
    N = rng.randint(0, 14)
    # few distinct probabilities so that ties in orders and in Chat keys are common
    grid = np.array([0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])
    probs = grid[rng.randint(0, len(grid), size=(N + 3, K))]
    labels = rng.rand(N + 3, K) < 0.4
    if integer_weights:
        w = rng.randint(0, 4, size=K).astype(float)
        v = rng.randint(0, 4, size=K).astype(float)
    else:
        w = rng.choice([0.1, 0.2, 0.3, 0.7, 1.3, 2.5], size=K)
        v = rng.choice([0.1, 0.4, 1.0, 2.2], size=K)
    return probs, labels, v, w


def targets_for(rng, w, integer_weights):
    cmax = float(sum(w))
    base = [0.0, cmax, cmax + 1, -0.5]
    if integer_weights:
        base += [float(rng.randint(0, max(int(cmax), 1) + 1)), rng.randint(0, 4) + 0.1, rng.randint(0, 4) + 0.5]
    else:
        base += [round(rng.rand() * cmax, 1), 0.3, 0.6]
    return base


UNIVERSES = ["ratio", "prob", "value", "full"]
#: Fixed seeds per (universe, integer_weights): reproducible in every process.
SEEDS = {(u, integer): 100 * i + 10 * integer for i, u in enumerate(UNIVERSES) for integer in (False, True)}


@pytest.mark.parametrize("integer_weights", [True, False])
@pytest.mark.parametrize("universe", UNIVERSES)
def test_expected_threshold_matches_oracle(universe, integer_weights):
    rng = np.random.RandomState(SEEDS[universe, integer_weights])
    for _ in range(30):
        probs, labels, v, w = random_instance(rng, integer_weights)
        N = len(probs) - 3
        for c in targets_for(rng, w, integer_weights):
            fm = FavMac(AdditiveValue(v), AdditiveCost(w), c, universe=universe, n_codes=len(v))
            for n in range(N + 1):
                cal = list(zip(probs[:n], labels[:n]))
                expect = oracle.expected_threshold(cal, v, w, c, universe)
                assert fm.threshold == expect, (n, c, universe)
                got_set = np.flatnonzero(fm.predict(probs[n])).tolist()
                assert sorted(got_set) == sorted(oracle.predict(probs[n], v, w, expect, universe))
                fm.update(probs[n], labels[n])


@pytest.mark.parametrize("integer_weights", [True, False])
@pytest.mark.parametrize("universe", UNIVERSES)
def test_violation_threshold_matches_oracle(universe, integer_weights):
    rng = np.random.RandomState(1 + SEEDS[universe, integer_weights])
    for _ in range(25):
        probs, labels, v, w = random_instance(rng, integer_weights)
        N = len(probs) - 3
        delta = float(rng.choice([0.1, 0.2, 0.3, 0.5]))
        for c in targets_for(rng, w, integer_weights):
            fm = FavMac(AdditiveValue(v), AdditiveCost(w), c, delta=delta, universe=universe)
            for n in range(N + 1):
                cal = list(zip(probs[:n], labels[:n]))
                assert fm.threshold == oracle.violation_threshold(cal, v, w, c, delta, universe), (n, c, delta)
                fm.update(probs[n], labels[n])


@pytest.mark.parametrize("delta", [None, 0.2])
@pytest.mark.parametrize("universe", UNIVERSES)
@pytest.mark.parametrize("integer_weights", [True, False])
def test_replay_equals_favmac_loop(universe, delta, integer_weights):
    rng = np.random.RandomState(7)
    for trial in range(15):
        probs, labels, v, w = random_instance(rng, integer_weights)
        targets = targets_for(rng, w, integer_weights)
        burn_in = int(rng.randint(0, len(probs)))
        window = None if trial % 3 else int(rng.randint(1, 6))
        value, cost = AdditiveValue(v), AdditiveCost(w)
        res = replay(probs, labels, value, cost, targets, delta=delta, universe=universe, burn_in=burn_in, window=window)
        for t, c in enumerate(targets):
            fm = FavMac(value, cost, c, delta=delta, universe=universe, window=window, n_codes=len(v))
            for n in range(len(probs)):
                if n >= burn_in:
                    s = n - burn_in
                    assert res.thresholds[t, s] == fm.threshold
                    chosen = fm.predict(probs[n])
                    assert (res.selected[t, s] == chosen).all()
                    assert res.cost[t, s] == pytest.approx(cost(chosen, labels[n]))
                    assert res.value[t, s] == pytest.approx(value(chosen, labels[n]))
                fm.update(probs[n], labels[n])
            assert res.final_thresholds[t] == fm.threshold


def test_exact_ties_integer_costs():
    """c = 4.1 and N + 1 = 10: c(N+1) = 41 exactly, so F(b) = M is a tie and is not "> M"."""
    K = 10
    probs = np.full((9, K), 0.5)
    probs[:, 0] = 0.9  # code 0 first in every order
    labels = np.zeros((9, K), bool)
    # each patient: one point per code; F(b) counts false positives with Chat <= b
    fm = FavMac(AdditiveValue(), AdditiveCost(), 4.1, universe="prob")
    fm.update(probs, labels)
    cal = list(zip(probs, labels))
    assert fm.threshold == oracle.expected_threshold(cal, np.ones(K), np.ones(K), 4.1, "prob")
    # M = 41 - 10 = 31 = 9 patients * 3 points + 4: the tie sits exactly at a key boundary
    assert fm.threshold == pytest.approx(0.1 + 0.5 * 3)


def test_violation_rank_exact():
    assert violation_rank(0.1, 19) == 18
    assert violation_rank(0.3, 9) == 7  # (1 - 0.3) * 10 = 7 exactly, not 7.000000000000001
    assert violation_rank(0.1, 9) == 9


def test_empty_calibration_and_infinities():
    value, cost = AdditiveValue(), AdditiveCost()
    assert FavMac(value, cost, 3.0, c_max=3.0).threshold == math.inf  # C_max / 1 <= c
    assert FavMac(value, cost, 2.9, c_max=3.0).threshold == -math.inf
    fm = FavMac(value, cost, 1.0)
    assert fm.predict([0.9, 0.8, 0.1]).tolist() == [False, False, False]  # K=3 > c: -inf
    fm = FavMac(value, cost, 3.0)
    assert fm.predict([0.9, 0.8, 0.1]).tolist() == [True, True, True]  # +inf allows every set
    fm = FavMac(value, cost, 1.0, delta=0.1)
    assert fm.threshold == -math.inf  # k = 1 > N = 0


def test_replay_handles_targets_with_many_decimals_exactly():
    """2% of C_max can print as 0.7000000000000001: still the fast exact path, same thresholds."""
    import warnings

    rng = np.random.RandomState(0)
    labels = rng.rand(200, 5) < 0.3
    probs = rng.rand(200, 5).round(3)
    w = np.array([0.3, 1.2, 0.7, 0.05, 2.0])
    targets = [0.7000000000000001, 1 / 3, -0.2, 1.1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the slow-path warning would fail the test
        res = replay(probs, labels, AdditiveValue(w), AdditiveCost(w), targets, burn_in=10, window=50)
    for t, c in enumerate(targets):
        fm = FavMac(AdditiveValue(w), AdditiveCost(w), c, window=50)
        fm.update(probs[:10], labels[:10])
        for n in range(10, 200):
            assert fm.threshold == res.thresholds[t, n - 10]
            fm.update(probs[n], labels[n])
