"""The replay's CPU work of the sixth round (issue 21, "Sixth round: FavMac variants in Trade-offs") gives the
same arrays, bit for bit.

* The sets are chosen by one compiled pass for every target (``favmac.replay_kernels.choose_prefixes``) on
  nested sequences with an additive cost and value: equal to ``Candidates.choose`` and the numpy select loop.
* The answered slots' keys are looked up from the patients holding an answered slot only
  (``favmac.replay_kernels.marked_patients``): equal to the lookup over every patient.
The points ranked by merging sorted chunks are checked in ``tests/test_engine_memory.py``.
"""
import importlib

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, replay
from favmac.replay_kernels import choose_prefixes, mark_slots, marked_patients
from favmac.universe import candidate_sets

session_module = importlib.import_module("favmac.replay.session")

ARRAYS = ("thresholds", "final_thresholds", "cost", "value", "exceeds")


def _data(seed, n_patients=160, n_codes=6):
    rng = np.random.RandomState(seed)
    probs = rng.choice([0.05, 0.2, 0.5, 0.5, 0.75, 0.9], size=(n_patients, n_codes))  # many equal keys
    labels = rng.rand(n_patients, n_codes) < probs
    value = AdditiveValue(rng.choice([1.0, 2.0, 0.0], n_codes))  # a zero value: infinite prices
    cost = AdditiveCost(rng.choice([1.0, 0.5, 2.25], n_codes))
    return probs, labels, value, cost


@pytest.mark.parametrize("universe", ["ratio", "prob", "value"])
@pytest.mark.parametrize("score", ["price", "cost"])
def test_compiled_choice_is_candidates_choose(universe, score):
    probs, labels, value, cost = _data(1)
    cands = candidate_sets(probs, value, cost, universe)
    scores = cands.scores(score)
    rng = np.random.RandomState(2)
    picks = scores[np.arange(len(probs))[:, None], rng.randint(0, scores.shape[1], size=(len(probs), 4))].T
    thresholds = np.vstack([picks, np.full(len(probs), np.inf), np.full(len(probs), -np.inf),
                            rng.rand(len(probs)) * 3, np.nextafter(picks[0], np.inf)])  # on, just above, between keys
    cost_table = cands.totals(cost.contributions(labels))
    value_table = cands.totals(value.contributions(labels))
    exact = np.rint(cost_table * 4).astype(np.int64)
    bounds = np.arange(len(thresholds), dtype=np.int64)
    shape = thresholds.shape
    index, got_cost, got_value, exceeds = (np.zeros(shape, np.int8), np.zeros(shape), np.zeros(shape), np.zeros(shape, bool))
    choose_prefixes(scores, cands.best_prefix(), thresholds, cost_table, value_table, exact, bounds, index, got_cost,
                    got_value, exceeds)
    rows = np.arange(len(probs))
    for t, row in enumerate(thresholds):
        expected = cands.choose(row, score)
        np.testing.assert_array_equal(index[t], expected)
        assert got_cost[t].tobytes() == cost_table[rows, expected].tobytes()
        assert got_value[t].tobytes() == value_table[rows, expected].tobytes()
        np.testing.assert_array_equal(exceeds[t], exact[rows, expected] > bounds[t])


@pytest.mark.parametrize("options", [dict(universe="ratio", score="price"), dict(universe="ratio", score="cost"),
                                     dict(universe="prob", score="price", window=20),
                                     dict(universe="value", score="cost", label_delay=9)])
def test_compiled_select_equals_the_numpy_select(options, monkeypatch):
    probs, labels, value, cost = _data(3)
    targets = [0.2, 1.0, 2.5, 6.0]
    compiled = replay(probs, labels, value, cost, targets, burn_in=15, **options)
    monkeypatch.setattr(session_module, "_compiled_choice", lambda *args: None)
    plain = replay(probs, labels, value, cost, targets, burn_in=15, **options)
    for name in ARRAYS:
        assert getattr(compiled, name).tobytes() == getattr(plain, name).tobytes(), name
    assert compiled.chosen.index.dtype == plain.chosen.index.dtype
    assert compiled.chosen.index.tobytes() == plain.chosen.index.tobytes()


def test_marked_patients_against_brute_force():
    rng = np.random.RandomState(4)
    for _ in range(200):
        counts = rng.randint(0, 5, size=rng.randint(1, 30))
        ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        n_slots = max(1, int(ptr[-1]))
        ranks = rng.randint(0, n_slots, size=ptr[-1]).astype(np.int32)
        answers = np.where(rng.rand(2, 6) < 0.3, np.inf, rng.randint(0, n_slots, size=(2, 6)).astype(float))
        bits = np.zeros((n_slots + 63) >> 6, dtype=np.uint64)
        mark_slots(answers, bits)
        marked = set(answers[np.isfinite(answers)].astype(int).tolist())
        expected = [any(int(r) in marked for r in ranks[ptr[i]:ptr[i + 1]]) for i in range(len(counts))]
        assert marked_patients(ptr, ranks, bits).tolist() == expected


@pytest.mark.parametrize("options", [dict(universe="ratio", score="price"), dict(universe="full", score="cost"),
                                     dict(universe="value", score="cost", window=12)])
def test_slot_lookup_from_the_holders_equals_every_patients(options, monkeypatch):
    probs, labels, value, cost = _data(5, n_codes=5)
    targets = [0.3, 1.5, 4.0]
    fast = replay(probs, labels, value, cost, targets, burn_in=10, **options)
    import favmac.replay_kernels as kernels

    monkeypatch.setattr(kernels, "marked_patients", lambda ptr, ranks, bits: np.ones(len(ptr) - 1, dtype=bool))
    every = replay(probs, labels, value, cost, targets, burn_in=10, **options)
    for name in ARRAYS:
        assert getattr(fast, name).tobytes() == getattr(every, name).tobytes(), name
