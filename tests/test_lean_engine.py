"""The replay engine's big arrays are narrow (issue 21, "a lean engine"), and narrowing changes no result.

Orders are int8 up to 128 codes, Chat and realized costs are computed per chunk (no (N, K + 1)
tables), calibration weights and tree leaves take the smallest integer dtype that provably holds
them. Near each limit (128 / 129 codes, weights that need int16 / int32 / int64, many equal keys
in one slot) the replay equals the FavMac loop exactly.
"""
import importlib

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, FavMac, replay
from favmac.replay import replay_spec
from favmac.replay.realized import RealizedRows
from favmac.universe import candidate_sets, order_dtype

engine = importlib.import_module("favmac.replay.engine")
session_module = importlib.import_module("favmac.replay.session")


def _stream(rng, n_patients, n_codes, weights):
    probs = rng.rand(n_patients, n_codes)
    labels = rng.rand(n_patients, n_codes) < probs
    value = AdditiveValue(rng.uniform(0.5, 2.0, size=n_codes).round(2))
    return probs, labels, value, AdditiveCost(weights)


def _engine_of(probs, labels, value, cost, targets, **options):
    session = session_module.Session.prepare(probs, labels, value, cost,
                                             replay_spec(np.asarray(targets, dtype=float), **options), None, None, None, None, None)
    cands, realized, costs = session.rows()
    return session, cands, realized, costs, engine.Engine(session, cands, realized, costs)


def test_engine_arrays_are_narrow():
    rng = np.random.RandomState(3)
    n_patients, n_codes = 3000, 35
    weights = rng.uniform(0.1, 5.0, size=n_codes).round(3)  # scale 1000: every weight below 2^15
    probs, labels, value, cost = _stream(rng, n_patients, n_codes, weights)
    session, cands, realized, costs, eng = _engine_of(probs, labels, value, cost, [2.0, 6.0], burn_in=100)
    assert cands.order.dtype == np.int8
    assert callable(cands.chat_source)  # Chat is computed per chunk, never as an (N, K + 1) table
    assert isinstance(realized, RealizedRows) and realized.dtype == np.int32
    assert realized.shape == (n_patients, n_codes + 1)
    np.testing.assert_array_equal(realized[10:20], costs.realized(cands.subset(slice(10, 20)), labels[10:20]))
    ptr, ranks, point_weights, keys = eng.points()
    assert ranks.dtype == np.int32
    assert point_weights.dtype == np.int16 and int(point_weights.max()) == int(costs.weights.max()) > 127
    assert keys.dtype == np.float64 and len(keys) == ptr[-1] == len(point_weights)
    eng.thresholds(np.zeros(n_patients, dtype=np.int64), 1, 100, None, lambda f: None)
    assert eng._leaf.dtype.itemsize <= 4  # one slot per key here: a leaf holds at most a few weights
    assert callable(cands.chat_source)  # the walk did not build Chat either


@pytest.mark.parametrize("n_codes,dtype", [(127, np.int8), (128, np.int8), (129, np.int16)])
def test_order_dtype_limits(n_codes, dtype):
    rng = np.random.RandomState(n_codes)
    probs, labels, value, cost = _stream(rng, 20, n_codes, rng.uniform(0.1, 1.0, size=n_codes).round(2))
    cands = candidate_sets(probs, value, cost, "ratio")
    assert order_dtype(n_codes) is dtype and cands.order.dtype == dtype
    assert int(cands.order.max()) == n_codes - 1  # the last code's index fits
    wide = np.argsort(-(probs * value.weights_for(n_codes)) / ((1 - probs) * cost.weights_for(n_codes)), axis=1,
                      kind="stable")
    np.testing.assert_array_equal(cands.order.astype(np.int64), wide)


def _loop_equal(probs, labels, value, cost, targets, burn_in, score, window=None):
    res = replay(probs, labels, value, cost, targets, burn_in=burn_in, score=score, window=window)
    n_codes = probs.shape[1]
    for t, target in enumerate(targets):
        fm = FavMac(value, cost, target, n_codes=n_codes, score=score, window=window)
        for n in range(len(probs)):
            if n >= burn_in:
                s = n - burn_in
                assert res.thresholds[t, s] == fm.threshold
                chosen = fm.predict(probs[n])
                assert (res.chosen.masks(t, slice(s, s + 1))[0] == chosen).all()
                assert res.cost[t, s] == pytest.approx(cost(chosen, labels[n]))  # summed in another order
            fm.update(probs[n], labels[n])
        assert res.final_thresholds[t] == fm.threshold
    return res


@pytest.mark.parametrize("n_codes", [128, 129])
@pytest.mark.parametrize("score", ["price", "cost"])
def test_replay_at_the_order_limit_equals_the_loop(n_codes, score):
    rng = np.random.RandomState(11)
    probs, labels, value, cost = _stream(rng, 40, n_codes, rng.uniform(0.1, 1.0, size=n_codes).round(2))
    c_max = float(cost.weights_for(n_codes).sum())
    _loop_equal(probs, labels, value, cost, [0.05 * c_max, 0.3 * c_max], 10, score)


@pytest.mark.parametrize("weights,dtype", [
    ([1, 2, 3, 1, 2, 3], np.int8),  # integer weights, many equal Chat keys in one slot
    ([127, 1, 2, 3, 4, 5], np.int8),  # the int8 limit itself
    ([128, 1, 2, 3, 4, 5], np.int16),
    ([32.767, 0.001, 1.5, 2.25, 0.5, 3.0], np.int16),  # scale 1000: 32767, the int16 limit
    ([32.768, 0.001, 1.5, 2.25, 0.5, 3.0], np.int32),
    ([2**31 - 1, 5, 1000, 7, 3, 2], np.int32),
    ([2**31, 5, 1000, 7, 3, 2], np.int64),  # realized costs int64, weights int64
])
@pytest.mark.parametrize("score", ["price", "cost"])
def test_weights_at_the_dtype_limits_equal_the_loop(weights, dtype, score):
    rng = np.random.RandomState(5)
    n_codes = len(weights)
    probs = rng.choice([0.1, 0.3, 0.5, 0.8], size=(70, n_codes))  # ties: equal keys share a slot
    labels = rng.rand(70, n_codes) < 0.3
    value = AdditiveValue(np.ones(n_codes)) if score == "cost" else AdditiveValue(rng.choice([1.0, 2.0], n_codes))
    cost = AdditiveCost(np.asarray(weights, dtype=float))
    c_max = float(np.sum(weights))
    targets = [0.1 * c_max, 0.4 * c_max]
    *_, eng = _engine_of(probs, labels, value, cost, targets, burn_in=5, score=score)
    ptr, ranks, point_weights, keys = eng.points()
    assert point_weights.dtype == dtype
    layout = eng._layout(ptr, ranks, keys, np.zeros(len(probs), dtype=np.int64), 1, "points")
    bound = eng._leaf_bound(layout, ranks, point_weights)
    leaf, _ = eng._trees(layout, bound)
    assert np.iinfo(leaf.dtype).max >= bound
    totals = np.bincount(ranks, weights=point_weights.astype(float), minlength=len(keys))  # what a slot can hold
    assert totals.max() <= bound
    for window in (None, 9):
        _loop_equal(probs, labels, value, cost, targets, 5, score, window)
