"""The price score (docs/method.md "The score a threshold is on") against the literal oracle.

Every threshold and every chosen set of the online FavMac loop is compared with
tests/oracle.py on random instances: both controls, the greedy universes, integer and
decimal weights, heavy ties (probabilities on a coarse grid or rounded to one decimal),
p = 0 and p = 1 codes (zero cost increments and zero value increments: prices 0 and +inf),
burn-in 0 and rolling windows, and general formula values (greedy ratio steps, Vhat
differences, negative increments).
"""
import math

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, FavMac, FormulaValue, replay
from favmac.scores import price_scores, step_prices
from favmac.universe import candidate_sets

import oracle
from instances import random_instance, targets_for

NESTED = ["ratio", "prob", "value"]
CONTROLS = [None, 0.2]
#: Fixed integer seeds: reproducible in every process.
SEEDS = {(u, integer, d): 1000 + 100 * i + 10 * integer + (d is not None)
         for i, u in enumerate(NESTED) for integer in (False, True) for d in CONTROLS}


def one_decimal_instance(rng, integer_weights):
    """Probabilities rounded to one decimal (ties, and p = 0 / p = 1 at the ends)."""
    probs, labels, v, w = random_instance(rng, integer_weights)
    return np.round(rng.rand(*probs.shape), 1), labels, v, w


def oracle_threshold(cal, v, w, c, delta, universe, score, value_fn=None):
    if delta is None:
        return oracle.expected_threshold(cal, v, w, c, universe, score=score, value_fn=value_fn)
    return oracle.violation_threshold(cal, v, w, c, delta, universe, score=score, value_fn=value_fn)


def check_loop_against_oracle(probs, labels, v, w, value, targets, delta, universe, score, window,
                              value_fn=None):
    for c in targets:
        fm = FavMac(value, AdditiveCost(w), c, delta=delta, universe=universe, window=window, n_codes=len(w),
                    score=score)
        for n in range(len(probs)):
            first = 0 if window is None else max(0, n - window)
            cal = list(zip(probs[first:n], labels[first:n]))
            expect = oracle_threshold(cal, v, w, c, delta, universe, score, value_fn)
            assert fm.threshold == expect, (n, c, delta, universe, window)
            got = np.flatnonzero(fm.predict(probs[n])).tolist()
            assert sorted(got) == sorted(oracle.predict(probs[n], v, w, expect, universe, score, value_fn)), (n, c)
            fm.update(probs[n], labels[n])


@pytest.mark.parametrize("delta", CONTROLS)
@pytest.mark.parametrize("integer_weights", [True, False])
@pytest.mark.parametrize("universe", NESTED)
def test_price_score_matches_oracle(universe, integer_weights, delta):
    rng = np.random.RandomState(SEEDS[universe, integer_weights, delta])
    for trial in range(14):
        make = random_instance if trial % 2 else one_decimal_instance
        probs, labels, v, w = make(rng, integer_weights)
        window = None if trial % 3 else int(rng.randint(1, 5))
        targets = targets_for(rng, w, integer_weights)
        check_loop_against_oracle(probs, labels, v, w, AdditiveValue(v), targets, delta, universe, "price", window)


#: Formula values with their literal Python twins. Values stay dyadic (v is a small
#: integer, probabilities are multiples of 1/4), so Vhat is exact in floating point and
#: the oracle's exact expectation rounds to the same float.
FORMULAS = [
    ("max_hits(v) + 0.5 * n_hits",
     lambda v: lambda S, y: max([v[k] for k in S if y[k]], default=0) + 0.5 * sum(1 for k in S if y[k])),
    ("prod_hits(v / 2) + sum_hits(v)",
     lambda v: lambda S, y: math.prod(v[k] / 2 for k in S if y[k]) + sum(v[k] for k in S if y[k])),
    ("sum_hits(v) - 0.5 * n_selected",  # not monotone: negative value increments
     lambda v: lambda S, y: sum(v[k] for k in S if y[k]) - 0.5 * len(S)),
]


@pytest.mark.parametrize("delta", CONTROLS)
@pytest.mark.parametrize("score", ["cost", "price"])
@pytest.mark.parametrize("universe", NESTED)
def test_formula_values_match_oracle(universe, score, delta):
    rng = np.random.RandomState(2000 + 10 * NESTED.index(universe) + 2 * (score == "price") + (delta is not None))
    for trial in range(9):
        formula, twin = FORMULAS[trial % 3]
        K = int(rng.randint(1, 5))
        N = int(rng.randint(0, 10))
        probs = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=(N + 2, K))
        labels = rng.rand(N + 2, K) < 0.4
        v = rng.randint(0, 4, size=K).astype(float)
        w = rng.choice([1.0, 2.0, 0.5, 0.25, 1.5], size=K) if trial % 2 else rng.randint(0, 3, size=K).astype(float)
        window = None if trial % 4 else int(rng.randint(1, 4))
        targets = [0.5, round(float(w.sum()) / 2, 2), float(w.sum())]
        value = FormulaValue(formula, weights=v)
        check_loop_against_oracle(probs, labels, v, w, value, targets, delta, universe, score, window, twin(v))


@pytest.mark.parametrize("delta", CONTROLS)
@pytest.mark.parametrize("universe", NESTED)
def test_replay_equals_favmac_loop_with_price(universe, delta):
    rng = np.random.RandomState(3000 + NESTED.index(universe) + 10 * (delta is not None))
    for trial in range(10):
        integer_weights = bool(trial % 2)
        probs, labels, v, w = (random_instance if trial % 3 else one_decimal_instance)(rng, integer_weights)
        targets = targets_for(rng, w, integer_weights)
        burn_in = int(rng.randint(0, len(probs))) if trial % 4 else 0
        window = None if trial % 3 else int(rng.randint(1, 6))
        value, cost = AdditiveValue(v), AdditiveCost(w)
        res = replay(probs, labels, value, cost, targets, delta=delta, universe=universe, burn_in=burn_in,
                     window=window, score="price")
        assert res.settings["score"] == "price"
        for t, c in enumerate(targets):
            fm = FavMac(value, cost, c, delta=delta, universe=universe, window=window, n_codes=len(v), score="price")
            for n in range(len(probs)):
                if n >= burn_in:
                    s = n - burn_in
                    assert res.thresholds[t, s] == fm.threshold
                    chosen = fm.predict(probs[n])
                    assert (res.selected[t, s] == chosen).all()
                    assert res.cost[t, s] == pytest.approx(cost(chosen, labels[n]))
                fm.update(probs[n], labels[n])
            assert res.final_thresholds[t] == fm.threshold


def test_replay_with_a_formula_value_uses_the_price_score():
    rng = np.random.RandomState(5)
    probs = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=(130, 3))
    labels = rng.rand(130, 3) < 0.5
    value, cost = FormulaValue("max_hits(v) + 0.5 * n_hits", weights=[1, 2, 3]), AdditiveCost([1, 0.5, 2])
    res = replay(probs, labels, value, cost, [0.75, 1.5], burn_in=20, score="price")  # > 100 patients: chunked
    fm = FavMac(value, cost, 1.5, score="price")
    fm.update(probs[:20], labels[:20])
    for n in range(20, 130):
        assert res.thresholds[1, n - 20] == fm.threshold
        assert (res.selected[1, n - 20] == fm.predict(probs[n])).all()
        fm.update(probs[n], labels[n])


def test_prices_by_hand_and_infinite_prices_are_never_paid():
    # code 0: p = 1 (cost step 0, value step 1: price 0); code 2: 0.5 / 0.5 = 1; code 1: p = 0 (value 0: +inf)
    cands = candidate_sets([[1.0, 0.0, 0.5]], AdditiveValue(), AdditiveCost(), "ratio")
    assert cands.order[0].tolist() == [0, 2, 1]
    assert cands.scores("price").tolist() == [[-math.inf, 0.0, 1.0, math.inf]]
    assert cands.choose(math.inf, "price").tolist() == [2]  # "<" is strict at +inf too
    assert cands.choose(math.inf, "cost").tolist() == [3]
    assert cands.choose(1.0, "price").tolist() == [1]
    assert cands.choose(-math.inf, "price").tolist() == [0]
    # the running max keeps the score non-decreasing when a later step is cheaper (prob universe)
    prob = candidate_sets([[0.6, 0.5]], AdditiveValue([1.0, 4.0]), AdditiveCost(), "prob")
    assert prob.scores("price").tolist() == [[-math.inf, 0.4 / 0.6, 0.4 / 0.6]]


def test_step_prices_follow_the_spec_conventions():
    assert step_prices([0.0, 0.0, 2.0, 1.0], [0.0, 3.0, 0.0, -2.0]).tolist() == [math.inf, 0.0, math.inf, -0.5]
    assert math.copysign(1.0, step_prices([0.0], [-1.0])[0]) == 1.0  # -0.0 is read as 0.0
    assert price_scores(np.zeros((0, 2)), np.zeros((0, 2))).shape == (0, 3)


def test_price_refuses_the_full_universe_and_unknown_scores():
    value, cost = AdditiveValue(), AdditiveCost()
    with pytest.raises(ValueError, match="price score is defined on nested sequences"):
        FavMac(value, cost, 1.0, universe="full", score="price")
    with pytest.raises(ValueError, match="price score is defined on nested sequences"):
        replay(np.full((3, 2), 0.5), np.zeros((3, 2)), value, cost, [1.0], universe="full", score="price")
    with pytest.raises(ValueError, match="score: expected one of cost, price"):
        FavMac(value, cost, 1.0, score="value")
