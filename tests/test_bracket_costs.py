"""Cost weights with many decimals (docs/method.md "Thresholds": ties exact, integer costs exact).

Weights such as 0.41477832512315 (a risk weight divided by a normalization factor) make the
exact integer sums overflow int64. The replay engine then runs twice at a coarser scale with
each weight rounded down and up (``ExactCosts.brackets``) and keeps the thresholds where both
agree; where they do not (a tie finer than the coarse scale) it runs the exact FavMac loop. The
oracle (tests/oracle.py, Fractions) and the exact loop are the references here.
"""
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, replay
import importlib

engine_module = importlib.import_module("favmac.replay.engine")
session_module = importlib.import_module("favmac.replay.session")
from favmac.thresholds import ExactCosts, INT64_LIMIT
from favmac.universe import candidate_sets

import oracle
from instances import SCORED

OVERFLOW = "costs too large for exact int64"
TINY = 1.2345678901234567e-6  # 22 decimals: every sum at the common scale 10^22 overflows int64


def many_decimal_weights(rng, k, tiny=TINY):
    """Full-precision floats, one of them tiny (so the common decimal scale is huge)."""
    w = rng.uniform(0.1, 2.5, size=k)
    w[rng.randint(0, k)] = tiny
    return w


def quiet_replay(*args, **kwargs):
    """replay, failing if it fell back to the exact loop (the bracket must have decided)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=OVERFLOW)
        return replay(*args, **kwargs)


def loop_replay(monkeypatch, *args, **kwargs):
    """replay through the exact FavMac loop (no brackets)."""
    with monkeypatch.context() as patch:
        patch.setattr(engine_module.Engine, "bracket_engines", lambda self: None)
        with pytest.warns(UserWarning, match=OVERFLOW):
            return replay(*args, **kwargs)


@pytest.mark.parametrize("seed", range(6))
def test_brackets_hold_every_realized_cost_between_them(seed):
    rng = np.random.RandomState(seed)
    k = rng.randint(1, 8)
    w = many_decimal_weights(rng, k)
    exact = ExactCosts(w)
    n_patients = int(rng.randint(1, 10**6))
    assert not exact.exact_sums(n_patients)
    low, high = exact.brackets(n_patients)
    assert low.exact_sums(n_patients) and high.exact_sums(n_patients)
    assert low.scale == high.scale
    divisor = Fraction(exact.scale) / Fraction(low.scale)
    assert divisor.denominator == 1 and divisor > 1
    probs = rng.rand(50, k)
    labels = rng.rand(50, k) < 0.4
    cands = candidate_sets(probs, AdditiveValue(np.ones(k)), AdditiveCost(w), "ratio")
    exact_table = exact.realized(cands, labels)
    for table, side in ((low.realized(cands, labels), -1), (high.realized(cands, labels), 1)):
        for got, want in zip(np.ravel(table), np.ravel(exact_table)):
            scaled = Fraction(int(want)) / divisor
            assert (int(got) <= scaled) if side < 0 else (int(got) >= scaled)
            assert abs(int(got) - scaled) < k + 1
    # C_max and the targets keep their exact values at the coarse scale
    for costs in (low, high):
        assert Fraction(costs.c_max_scaled) == Fraction(exact.c_max_scaled) / divisor
        assert costs.bound(0.5) == math.floor(Fraction("0.5") * Fraction(exact.scale) / divisor)


def small_stream(rng, k_stop, n_low, n_stop):
    """(probs on a coarse grid (ties), labels, value weights, many-decimal cost weights) for the oracle."""
    k = rng.randint(1, k_stop)
    n = rng.randint(n_low, n_stop)
    grid = np.array([0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])
    probs = grid[rng.randint(0, len(grid), size=(n, k))]
    labels = rng.rand(n, k) < 0.4
    v = rng.choice([0.1, 0.4, 1.0, 2.2], size=k)
    return probs, labels, v, many_decimal_weights(rng, k)


@pytest.mark.parametrize("universe,score", [pair for pair in SCORED if pair[0] != "full"])
def test_replay_with_many_decimal_weights_matches_the_oracle(universe, score):
    rng = np.random.RandomState(4000 + 10 * SCORED.index((universe, score)))
    for trial in range(6):
        probs, labels, v, w = small_stream(rng, 5, 2, 14)
        n = len(probs)
        cmax = float(sum(w))
        targets = [0.0, cmax, round(rng.rand() * cmax, 1), float(w[0]), cmax * rng.rand()]
        window = None if trial % 2 else int(rng.randint(1, 5))
        res = quiet_replay(probs, labels, AdditiveValue(v), AdditiveCost(w), targets, universe=universe, score=score,
                           burn_in=0, window=window)
        for t, c in enumerate(targets):
            for i in range(n + 1):
                first = 0 if window is None else max(0, i - window)
                expect = oracle.expected_threshold(list(zip(probs[first:i], labels[first:i])), v, w, c, universe,
                                                   score=score)
                got = res.thresholds[t, i] if i < n else res.final_thresholds[t]
                assert got == expect, (trial, t, i, window)


@pytest.mark.parametrize("score", ["cost", "price"])
def test_replay_with_many_decimal_weights_equals_the_exact_loop(monkeypatch, score):
    """Groupings, delayed labels and a window: every array equals the exact loop's."""
    rng = np.random.RandomState(17 if score == "cost" else 18)
    n, k = 400, 6
    probs = rng.rand(n, k)
    labels = rng.rand(n, k) < probs
    w = many_decimal_weights(rng, k)
    value, cost = AdditiveValue(rng.uniform(0.5, 2, size=k)), AdditiveCost(w)
    targets = [0.05, 0.4, float(sum(w)) / 3, 2.0]
    groups = {"plan": rng.choice(["A", "B", "C"], size=n), "age": rng.choice(["<65", "65+"], size=n)}
    cases = [dict(burn_in=30), dict(burn_in=30, window=80), dict(burn_in=30, label_delay=25),
             dict(burn_in=30, groups=groups), dict(burn_in=30, groups={"plan": groups["plan"]}, window=60)]
    for case in cases:
        fast = quiet_replay(probs, labels, value, cost, targets, score=score, **case)
        slow = loop_replay(monkeypatch, probs, labels, value, cost, targets, score=score, **case)
        for name in ("thresholds", "final_thresholds", "cost", "value", "exceeds"):
            assert np.array_equal(getattr(fast, name), getattr(slow, name)), (case, name)
        assert np.array_equal(fast.selected, slow.selected), case
        if "groups" in case:
            for a, b in zip(fast.groupings, slow.groupings):
                assert np.array_equal(a.thresholds, b.thresholds), case
                assert all(np.array_equal(a.final_thresholds[g], b.final_thresholds[g]) for g in a.final_thresholds)


def tie_stream(n=400):
    """One code of weight TINY, never present: with m calibration patients F = m w at the set's key."""
    return np.full((n, 1), 0.3), np.zeros((n, 1), dtype=bool), AdditiveValue([1.0]), AdditiveCost([TINY])


def test_a_tie_finer_than_the_coarse_scale_is_decided_exactly():
    """Target c = w: M = c (m + 1) - C_max = m w equals F exactly, a tie (not "> M"), so T = +inf.
    Rounded up the weight exceeds M and rounded down it does not: the brackets differ at every step
    and each is decided exactly (favmac.near_ties), without the loop."""
    probs, labels, value, cost = tie_stream()
    assert not ExactCosts([TINY]).exact_sums(len(probs))
    targets = [TINY, 0.5, TINY * 1.001, TINY * 0.999]
    res = quiet_replay(probs, labels, value, cost, targets, burn_in=1)
    cal = list(zip(probs[:5], labels[:5]))
    for t, c in enumerate(targets):
        assert res.thresholds[t, 4] == oracle.expected_threshold(cal, [1.0], [TINY], c, "ratio", score=res.settings["score"])
    assert np.all(res.thresholds[[0, 2]] == np.inf) and np.all(res.final_thresholds[[0, 2]] == np.inf)
    assert np.all(res.thresholds[3, 1:] < np.inf)  # just below the tie: the set's key
    # with groupings and a window, per group and for the pooled final threshold
    groups = {"plan": np.where(np.arange(len(probs)) % 2, "A", "B")}
    grouped = quiet_replay(probs, labels, value, cost, [TINY, 0.5], burn_in=1, groups=groups, window=7)
    assert grouped.final_thresholds[0] == np.inf and np.all(grouped.thresholds[0] == np.inf)


def test_too_many_near_ties_fall_back_to_the_exact_loop(monkeypatch):
    probs, labels, value, cost = tie_stream()
    monkeypatch.setattr(importlib.import_module("favmac.near_ties"), "_QUERIES", 0)
    with pytest.warns(UserWarning, match=OVERFLOW) as caught:
        res = replay(probs, labels, value, cost, [TINY, 0.5, TINY * 1.001], burn_in=1)
    assert "near-ties at 1 of 3 targets" in str(caught[0].message)  # only the tied target runs the loop
    assert np.all(res.thresholds[[0, 2]] == np.inf) and np.all(res.final_thresholds[[0, 2]] == np.inf)
    fast = quiet_replay(probs, labels, value, cost, [0.5], burn_in=1)
    assert np.array_equal(fast.thresholds[0], res.thresholds[1])


def test_sums_that_fit_int64_do_not_use_the_brackets(monkeypatch):
    """Three-decimal weights keep the one exact engine run (the brackets are never built)."""
    rng = np.random.RandomState(3)
    probs = rng.rand(200, 5)
    labels = rng.rand(200, 5) < probs
    monkeypatch.setattr(ExactCosts, "brackets", lambda self, n: pytest.fail("brackets built"))
    replay(probs, labels, AdditiveValue(np.ones(5)), AdditiveCost(np.round(rng.uniform(0.1, 2.5, 5), 3)), [0.5], burn_in=20)
    assert INT64_LIMIT == 2**62


def coarse_brackets(self, n_patients):
    """Brackets at about two significant digits: near-ties at many steps, each decided by favmac.near_ties."""
    exact_weights = [int(w) for w in self.weights]
    divisor = max(exact_weights) // 100 + 1
    return tuple(self._divided(exact_weights, divisor, way) for way in ("down", "up"))


@pytest.mark.parametrize("universe,score", [("ratio", "price"), ("ratio", "cost"), ("value", "price"), ("full", "cost")])
def test_many_near_ties_are_decided_like_the_exact_loop(monkeypatch, universe, score):
    rng = np.random.RandomState(["ratio", "value", "full"].index(universe) * 2 + (score == "price"))
    n, k = 300, (4 if universe == "full" else 6)
    probs = np.round(rng.rand(n, k), 2)  # ties between keys too
    labels = rng.rand(n, k) < probs
    w = many_decimal_weights(rng, k, tiny=1.2345678901234567e-3)  # scale 10^19: the remainders fit int64
    value, cost = AdditiveValue(rng.uniform(0.5, 2, size=k)), AdditiveCost(w)
    targets = [0.05, 0.3, float(sum(w)) / 4, 1.0]
    groups = {"plan": rng.choice(["A", "B", "C"], size=n), "age": rng.choice(["<65", "65+"], size=n)}
    cases = [dict(burn_in=20), dict(burn_in=20, window=50), dict(burn_in=20, label_delay=15),
             dict(burn_in=20, groups=groups), dict(burn_in=20, groups={"plan": groups["plan"]}, window=40, label_delay=9)]
    resolved = importlib.import_module("favmac.near_ties").resolve
    calls = []
    monkeypatch.setattr(importlib.import_module("favmac.near_ties"), "resolve",
                        lambda queries, *a: calls.append(len(queries)) or resolved(queries, *a))
    for case in cases:
        with monkeypatch.context() as patch:
            patch.setattr(ExactCosts, "brackets", coarse_brackets)
            fast = quiet_replay(probs, labels, value, cost, targets, universe=universe, score=score, **case)
        slow = loop_replay(monkeypatch, probs, labels, value, cost, targets, universe=universe, score=score, **case)
        for name in ("thresholds", "final_thresholds", "exceeds"):
            assert np.array_equal(getattr(fast, name), getattr(slow, name)), (case, name)
        if "groups" in case:
            for a, b in zip(fast.groupings, slow.groupings):
                assert np.array_equal(a.thresholds, b.thresholds), case
    assert sum(calls) > 50  # the coarse brackets did differ, many times


# ---------------------------------------------------------------------------------------------
# Exact "cost > c" on two int64 limbs (favmac.near_ties.CostLimbs): exceeds, violation control, PatientWork
# ---------------------------------------------------------------------------------------------
def object_tables(monkeypatch):
    """The Python-integer (object) cost tables the engine used before the limbs."""
    monkeypatch.setattr(ExactCosts, "limbs", lambda self: None)


@pytest.mark.parametrize("seed", range(4))
def test_cost_limbs_compare_like_the_exact_integers(seed):
    from favmac.near_ties import CostLimbs

    rng = np.random.RandomState(seed)
    k = rng.randint(4, 8)
    exact = ExactCosts(many_decimal_weights(rng, k, tiny=1.2345678901234567e-3))  # scale 10^19
    assert exact.weights.dtype == object
    probs, labels = rng.rand(40, k), rng.rand(40, k) < 0.4
    for universe in ("ratio", "full"):
        cands = candidate_sets(probs, AdditiveValue(np.ones(k)), AdditiveCost(exact.float_weights), universe)
        table = exact.realized(cands, labels)
        divisor, low, rest = exact.limbs()
        coarse = divisor * int(rng.randint(10**5, 10**6))  # first limbs in the thousands: many costs share one
        choices = [(divisor, low, rest), (coarse, exact._divided([int(w) for w in exact.weights], coarse, "down"),
                                          exact._divided([int(w) for w in exact.weights], coarse, "rest"))]
        for limbs in choices:
            got = CostLimbs.realized(exact, cands, labels, limbs)
            assert got.low.dtype == np.int64 and np.all((0 <= got.rest) & (got.rest < limbs[0]))
            values = sorted({int(v) for v in table.ravel()})
            bounds = [-1, -(10**30), 0, 10**40] + [v + d for v in values[:: max(1, len(values) // 15)] for d in (-1, 0, 1)]
            rows = np.arange(len(table))
            index = rng.randint(0, table.shape[1], size=len(table))
            for bound in bounds:
                assert np.array_equal(got > bound, table > bound), (limbs[0], bound)
                assert np.array_equal(got[rows, index] > bound, table[rows, index] > bound)
                assert np.array_equal(got[5:9] > bound, table[5:9] > bound)


def test_exceeds_is_exact_with_many_decimal_weights():
    """Chosen sets' "cost > target" against Fractions, with targets equal to realized costs (ties)."""
    rng = np.random.RandomState(8)
    n, k = 200, 5
    probs = rng.rand(n, k)
    labels = rng.rand(n, k) < probs
    w = many_decimal_weights(rng, k)
    exact_w = [Fraction(x) for x in w]
    targets = [float(w[0]), float(w[1]), 0.3, float(sum(w)) / 3, 0.0]
    for delta in (None, 0.2):
        res = quiet_replay(probs, labels, AdditiveValue(np.ones(k)), AdditiveCost(w), targets, burn_in=20, delta=delta)
        selected = res.selected
        for t, c in enumerate(targets):
            for s in range(n - 20):
                cost = sum((x for x, on, y in zip(exact_w, selected[t, s], labels[20 + s]) if on and not y), Fraction(0))
                assert res.exceeds[t, s] == (cost > Fraction(c)), (delta, t, s)
        assert res.exceeds.any() and not res.exceeds.all()


@pytest.mark.parametrize("universe,score", [("ratio", "cost"), ("ratio", "price"), ("full", "cost")])
def test_violation_control_with_many_decimal_weights_matches_the_oracle(universe, score):
    rng = np.random.RandomState(50 + ["ratio", "full"].index(universe) * 2 + (score == "price"))
    for trial in range(4):
        probs, labels, v, w = small_stream(rng, 4, 3, 12)
        n = len(probs)
        targets = [0.0, float(w[0]), float(sum(w)) * rng.rand(), float(sum(w))]
        delta = [0.1, 0.3, 0.5][trial % 3]
        res = replay(probs, labels, AdditiveValue(v), AdditiveCost(w), targets, universe=universe, score=score,
                     burn_in=0, delta=delta)
        for t, c in enumerate(targets):
            for i in range(n + 1):
                expect = oracle.violation_threshold(list(zip(probs[:i], labels[:i])), v, w, c, delta, universe, score=score)
                got = res.thresholds[t, i] if i < n else res.final_thresholds[t]
                assert got == expect, (trial, t, i)


def test_violation_control_on_limbs_equals_the_object_tables(monkeypatch):
    """Groupings, a window and delayed labels: every array equals the Python-integer tables' (and no table of objects)."""
    rng = np.random.RandomState(23)
    n, k = 300, 6
    probs = np.round(rng.rand(n, k), 2)
    labels = rng.rand(n, k) < probs
    w = many_decimal_weights(rng, k)
    value, cost = AdditiveValue(rng.uniform(0.5, 2, size=k)), AdditiveCost(w)
    targets = [0.05, float(w[1]), float(sum(w)) / 3, 2.0]
    groups = {"plan": rng.choice(["A", "B", "C"], size=n)}
    cases = [dict(burn_in=30), dict(burn_in=30, window=70), dict(burn_in=30, label_delay=20), dict(burn_in=30, groups=groups)]
    realized = session_module.realized_costs
    kinds = []
    monkeypatch.setattr(session_module, "realized_costs", lambda *a: kinds.append(type(realized(*a)).__name__) or realized(*a))
    for case in cases:
        fast = replay(probs, labels, value, cost, targets, delta=0.2, **case)
        with monkeypatch.context() as patch:
            object_tables(patch)
            slow = replay(probs, labels, value, cost, targets, delta=0.2, **case)
        for name in ("thresholds", "final_thresholds", "cost", "value", "exceeds"):
            assert np.array_equal(getattr(fast, name), getattr(slow, name)), (case, name)
    assert kinds[::2] == ["CostLimbs"] * len(cases) and kinds[1::2] == ["ndarray"] * len(cases)


@pytest.mark.parametrize("delta", [None, 0.25])
def test_patient_work_with_many_decimal_weights(monkeypatch, delta):
    """work.take(order) replays equal replays from scratch, under both controls; forced near-ties too."""
    from favmac.replay import PatientWork

    rng = np.random.RandomState(31 if delta is None else 32)
    n, k = 240, 5
    probs = np.round(rng.rand(n, k), 2)
    labels = rng.rand(n, k) < probs
    w = many_decimal_weights(rng, k, tiny=1.2345678901234567e-3)
    value, cost = AdditiveValue(rng.uniform(0.5, 2, size=k)), AdditiveCost(w)
    targets = [0.1, float(sum(w)) / 4, 1.0]
    for brackets in (ExactCosts.brackets, coarse_brackets):
        with monkeypatch.context() as patch:
            patch.setattr(ExactCosts, "brackets", brackets)
            work = PatientWork.of(probs, labels, value, cost, targets, delta=delta)
            assert type(work.realized).__name__ == "CostLimbs"
            assert (work.points, work.brackets is None) == (None, delta is not None)  # the brackets' points kept
            for order in (np.arange(n), rng.permutation(n), rng.permutation(n)):
                kwargs = dict(delta=delta, burn_in=25, window=60)
                fast = quiet_replay(probs[order], labels[order], value, cost, targets, work=work.take(order), **kwargs)
                plain = quiet_replay(probs[order], labels[order], value, cost, targets, **kwargs)
                for name in ("thresholds", "final_thresholds", "cost", "value", "exceeds"):
                    assert np.array_equal(getattr(fast, name), getattr(plain, name)), name
        if delta is None:  # and the exact loop's
            slow = loop_replay(monkeypatch, probs[order], labels[order], value, cost, targets, **kwargs)
            assert np.array_equal(fast.thresholds, slow.thresholds) and np.array_equal(fast.exceeds, slow.exceeds)


@pytest.mark.parametrize("delta", [None, 0.2])
def test_validity_with_many_decimal_weights_equals_full_replays(monkeypatch, delta):
    """validity_check (PatientWork permuted, the brackets' points kept) equals a replay from scratch per ordering."""
    from favmac.replay import PatientWork
    from favmac.validity import validity_check

    rng = np.random.RandomState(41)
    n, k = 160, 4
    probs = np.round(rng.rand(n, k), 2)
    labels = rng.rand(n, k) < probs
    w = many_decimal_weights(rng, k, tiny=1.2345678901234567e-3)
    value, cost = AdditiveValue(rng.uniform(0.5, 2, size=k)), AdditiveCost(w)
    kwargs = dict(delta=delta, burn_in=40, window=50, groups={"plan": rng.choice(["A", "B"], size=n)})
    for brackets in (ExactCosts.brackets, coarse_brackets):
        with monkeypatch.context() as patch:
            patch.setattr(ExactCosts, "brackets", brackets)
            with warnings.catch_warnings():
                warnings.filterwarnings("error", message=OVERFLOW)
                fast = validity_check(probs, labels, value, cost, float(sum(w)) / 5, **kwargs)
            patch.setattr(PatientWork, "take", lambda self, order: None)  # every ordering replayed from its rows
            plain = validity_check(probs, labels, value, cost, float(sum(w)) / 5, **kwargs)
        assert np.array_equal(fast.statistic, plain.statistic) and fast.p_value == plain.p_value
        assert fast.segments.equals(plain.segments)
