"""The replay's keyless walk (issue 21, "Fourth round: replay memory") gives the thresholds of the walk over
the sorted keys, bit for bit.

Without groupings the expected-cost walk does not hold the calibration points' sorted keys: it records
each answer's slot, and the keys of the recorded slots are looked up afterwards
(``favmac.replay.engine.Engine._slot_keys``: a bit set over the slots, the points' keys recomputed chunk by
chunk). Here the walk with keys and the keyless walk are run on the same engine inputs and compared
exactly (every threshold, +-inf included), over ties, windows, delayed labels, both scores and the
full universe; the bit-set kernels and the numpy ``longest_run`` are checked against brute force.
"""
import importlib

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, replay
from favmac.replay import replay_spec
from favmac.replay_kernels import mark_slots, record_slot_keys, slot_keys, slot_prefix
from favmac.validation import check_labels

engine = importlib.import_module("favmac.replay.engine")
points = importlib.import_module("favmac.replay.points")
sizes = importlib.import_module("favmac.replay.sizes")
session_module = importlib.import_module("favmac.replay.session")


def _thresholds(probs, labels, value, cost, targets, keyless, **options):
    session = session_module.Session.prepare(probs, labels, value, cost,
                                             replay_spec(np.asarray(targets, dtype=float), **options), None, None, None, None, None)
    cands, realized, costs = session.rows()
    eng = engine.Engine(session, cands, realized, costs, keyless=keyless)
    part = eng.thresholds(np.zeros(len(probs), dtype=np.int64), 1, session.burn_in, None, lambda f: None)
    return part.steps, part.final


CASES = [
    dict(universe="ratio", score="price"),
    dict(universe="ratio", score="cost"),
    dict(universe="prob", score="price", window=15),
    dict(universe="value", score="cost", label_delay=7),
    dict(universe="full", score="cost"),
    dict(universe="ratio", score="price", window=4, label_delay=3),
]


@pytest.mark.parametrize("options", CASES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_keyless_walk_equals_the_walk_over_the_keys(options, seed):
    rng = np.random.RandomState(seed)
    n_patients, n_codes = 160, 6
    probs = rng.choice([0.1, 0.25, 0.5, 0.8, 0.95], size=(n_patients, n_codes))  # many equal keys
    labels = rng.rand(n_patients, n_codes) < probs
    value = AdditiveValue(rng.choice([1.0, 2.0], n_codes))
    cost = AdditiveCost(rng.choice([1.0, 0.5, 2.25], n_codes))
    c_max = float(cost.weights_for(n_codes).sum())
    targets = [-0.1, 0.02 * c_max, 0.15 * c_max, 0.5 * c_max, 2 * c_max]  # -inf and +inf answers too
    kept = _thresholds(probs, labels, value, cost, targets, False, burn_in=10, **options)
    keyless = _thresholds(probs, labels, value, cost, targets, True, burn_in=10, **options)
    for with_keys, without in zip(kept, keyless):
        np.testing.assert_array_equal(without, with_keys)
        assert without.tobytes() == with_keys.tobytes()  # the same floats, bit for bit
    assert np.isinf(kept[0]).any() and np.isfinite(kept[0]).any()


def test_replay_without_groupings_equals_one_grouping():
    """End to end: a replay without groupings (keyless) equals the same replay with one group
    holding every patient (which walks over the keys)."""
    rng = np.random.RandomState(7)
    probs = rng.rand(300, 8).round(2)
    labels = rng.rand(300, 8) < probs
    value, cost = AdditiveValue(rng.uniform(0.5, 2, 8).round(2)), AdditiveCost(rng.uniform(0.1, 3, 8).round(3))
    targets = [0.5, 2.0, 5.0]
    plain = replay(probs, labels, value, cost, targets, burn_in=20, label_delay=5)
    grouped = replay(probs, labels, value, cost, targets, burn_in=20, label_delay=5, groups=np.zeros(300, dtype=int))
    for name in ("thresholds", "cost", "value", "exceeds", "final_thresholds"):
        assert getattr(plain, name).tobytes() == getattr(grouped, name).tobytes(), name
    np.testing.assert_array_equal(plain.chosen.index, grouped.chosen.index)


def test_slot_bit_set_against_brute_force():
    rng = np.random.RandomState(3)
    for n_slots in (1, 63, 64, 65, 200, 1000):
        answers = rng.choice([np.inf, -np.inf], size=(3, 40))
        picked = rng.randint(0, n_slots, size=(3, 40))
        finite = rng.rand(3, 40) < 0.7
        answers[finite] = picked[finite]
        bits = np.zeros((n_slots + 63) >> 6, dtype=np.uint64)
        mark_slots(answers, bits)
        marked = sorted(set(picked[finite].tolist()))
        prefix = slot_prefix(bits)
        assert prefix[-1] == len(marked)
        keys_of_slot = rng.rand(n_slots)
        ranks = rng.randint(0, n_slots, size=500).astype(np.int32)
        ranks[: len(marked)] = marked  # every marked slot has a point
        found = np.full(len(marked), np.nan)
        record_slot_keys(ranks, keys_of_slot[ranks], bits, prefix, found)
        np.testing.assert_array_equal(found, keys_of_slot[marked])
        expected = np.where(np.isfinite(answers), keys_of_slot[np.where(np.isfinite(answers), answers, 0).astype(int)], answers)
        slot_keys(answers, bits, prefix, found)
        np.testing.assert_array_equal(answers, expected)


def test_longest_run_against_brute_force():
    rng = np.random.RandomState(0)

    def brute(keys):
        best = run = 0
        for j in range(len(keys)):
            run = run + 1 if j and keys[j] == keys[j - 1] else 1
            best = max(best, run)
        return best

    for _ in range(500):
        keys = np.sort(rng.randint(0, rng.randint(1, 8), size=rng.randint(0, 40)).astype(float))
        for block in (1, 2, 3, 7, 1 << 16):
            assert points.longest_run(keys, block) == brute(keys)


def test_labels_of_bytes_are_not_copied():
    labels = (np.random.RandomState(0).rand(50, 4) < 0.5).astype(np.int8)
    checked = check_labels(labels, labels.shape)
    assert checked.dtype == bool and np.shares_memory(checked, labels)
    np.testing.assert_array_equal(checked, labels.astype(bool))
    as_bool = labels.astype(bool)
    assert check_labels(as_bool, labels.shape) is as_bool
    with pytest.raises(ValueError, match="every label must be 0 or 1"):
        check_labels(np.full((2, 2), 2, dtype=np.int8), (2, 2))


# Fifth round: the keyless walk's weights are filled after the sorted keys are dropped, the points are
# ranked in batches of sorted queries and the sets are chosen in small steps: the same arrays.

@pytest.mark.parametrize("chunk", [20_000, 7, 1])
@pytest.mark.parametrize("options", CASES)
def test_merged_points_and_later_weights_are_the_ranking_pass_points(options, chunk, monkeypatch):
    # Sixth round: the keyless walk's points are ranked by merging sorted chunks (no sorted keys, no
    # bisection); ranks, slots, heaviest weight, equal-key runs and the weights filled later are those
    # of the pass over the sorted keys. chunk: patients per sorted run (1: a run per patient; some empty).
    monkeypatch.setattr(sizes, "CHUNK", chunk)
    rng = np.random.RandomState(3)
    n_patients, n_codes = 120, 5
    probs = rng.choice([0.1, 0.25, 0.5, 0.8, 0.95], size=(n_patients, n_codes))
    labels = rng.rand(n_patients, n_codes) < probs
    value, cost = AdditiveValue(rng.choice([1.0, 2.0], n_codes)), AdditiveCost(rng.choice([1.0, 0.5, 2.25], n_codes))
    options = {k: v for k, v in options.items() if k in ("universe", "score")}
    session = session_module.Session.prepare(probs, labels, value, cost, replay_spec([1.0], **options),
                                      None, None, None, None, None)
    cands, realized, costs = session.rows()
    ptr, ranks, weights, keys = points.expected_points(cands, realized, costs, session.score)
    ptr2, ranks2, heaviest, n_keys, sharing = points.merged_points(cands, realized, costs, session.score)
    later = points.point_weights(cands, realized, session.score, ptr2, heaviest)
    for a, b in ((ptr, ptr2), (ranks, ranks2), (weights, later)):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert heaviest == int(weights.max()) > 0 and n_keys == len(keys)
    assert sharing == points.longest_run(keys) > 1  # many equal keys here


def test_merge_ranks_against_searchsorted():
    from favmac.replay_kernels import merge_ranks, unsort_ranks

    rng = np.random.RandomState(11)
    for trial in range(400):
        n = rng.randint(0, 200)
        keys = rng.randint(0, rng.randint(1, 40), size=n).astype(float)
        for special, share in ((np.inf, 0.05), (-np.inf, 0.05), (-0.0, 0.1), (np.nan, 0.1 * (trial % 3 == 0))):
            keys[rng.rand(n) < share] = special
        starts = np.concatenate([[0], np.sort(rng.randint(0, n + 1, size=rng.randint(0, 8))), [n]]).astype(np.int64)
        work, ranks = keys.copy(), np.empty(n, dtype=np.int32)
        for a, b in zip(starts[:-1], starts[1:]):  # each run sorted, its sort order kept (as _merged_points does)
            order = np.argsort(work[a:b])
            ranks[a:b], work[a:b] = order, work[a:b][order]
        sharing = merge_ranks(work, starts)
        unsort_ranks(work, starts, ranks)
        expected = np.searchsorted(np.sort(keys), keys)  # numpy's order: -0.0 == 0.0, NaN last and equal to NaN
        np.testing.assert_array_equal(ranks, expected)
        assert sharing == (np.bincount(expected).max() if n else 0)


@pytest.mark.parametrize("options", CASES[:2] + CASES[4:])
def test_small_steps_give_the_same_replay(options, monkeypatch):
    rng = np.random.RandomState(5)
    n_patients, n_codes = 150, 6
    probs = rng.rand(n_patients, n_codes).round(2)
    labels = rng.rand(n_patients, n_codes) < probs
    value, cost = AdditiveValue(rng.choice([1.0, 2.0], n_codes)), AdditiveCost(rng.choice([1.0, 0.5, 2.25], n_codes))
    targets = [0.3, 1.0, 2.5]
    default = replay(probs, labels, value, cost, targets, burn_in=10, **options)
    for name, size in (("RANK_BATCH", 5), ("SELECT_CHUNK", 7), ("POINTS_CHUNK", 3), ("CHUNK", 11)):
        monkeypatch.setattr(sizes, name, size)
    small = replay(probs, labels, value, cost, targets, burn_in=10, **options)
    for name in ("thresholds", "final_thresholds", "cost", "value", "exceeds"):
        assert getattr(small, name).tobytes() == getattr(default, name).tobytes(), name
    assert small.chosen.index.tobytes() == default.chosen.index.tobytes()
