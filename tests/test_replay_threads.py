"""A replay on two threads (``favmac.parallel.using(2)``) gives the one-thread replay bit for bit.

The engine's chunk-parallel steps (issue 21, "Large cohorts": Trade-offs runs its methods one after
another, each on both cores) are the points' counting pass, each chunk's keys and argsort, the merge of
the sorted chunks by key ranges (``replay_kernels.split_runs`` / ``merge_part``), the unsort, the
weights, the slot lookup, the compiled choice of the sets and the candidates' greedy orders. Each chunk
writes only its own slice, and what depends on an order (the last key written to an answered slot) is
recorded in point order (``parallel.ordered_chunks``). Here: the parallel merge against
``np.searchsorted`` (ties, +-inf, -0.0, NaN, any number of parts), ``ordered_chunks`` itself, and whole
replays on one and two threads over many random cases with small chunks forced, so that many chunks
exist: every result array compared byte for byte.
"""
import importlib
import threading

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, parallel, replay
from favmac.replay_kernels import merge_part, split_runs, unsort_ranks

engine = importlib.import_module("favmac.replay.engine")
points_module = importlib.import_module("favmac.replay.points")
sizes = importlib.import_module("favmac.replay.sizes")
universe_module = importlib.import_module("favmac.universe")

ARRAYS = ("thresholds", "final_thresholds", "cost", "value", "exceeds", "adaptive_targets", "labels_pending",
          "calibration_sizes")


def sorted_runs(rng, keys, n_runs):
    """Random runs of ``keys``, each sorted (its sort order kept in ranks), as ``_merged_points`` leaves them."""
    n = len(keys)
    starts = np.concatenate([[0], np.sort(rng.randint(0, n + 1, size=n_runs)), [n]]).astype(np.int64)
    work, ranks = keys.copy(), np.empty(n, dtype=np.int32)
    for a, b in zip(starts[:-1], starts[1:]):
        order = np.argsort(work[a:b])
        ranks[a:b], work[a:b] = order, work[a:b][order]
    return work, ranks, starts


def random_keys(rng, n, trial):
    keys = rng.randint(0, rng.randint(1, 40), size=n).astype(float)
    if trial % 4 == 1:
        keys = rng.rand(n)  # (almost) all different
    for special, share in ((np.inf, 0.05), (-np.inf, 0.05), (-0.0, 0.1), (0.0, 0.1), (np.nan, 0.1 * (trial % 3 == 0))):
        keys[rng.rand(n) < share] = special
    return keys


@pytest.mark.parametrize("threads", [1, 2])
def test_merge_in_parts_against_searchsorted(threads):
    rng = np.random.RandomState(17)
    for trial in range(400):
        n = rng.randint(0, 300)
        keys = random_keys(rng, n, trial)
        work, ranks, starts = sorted_runs(rng, keys, rng.randint(0, 9))
        parts = split_runs(work, starts, int(rng.choice([1, 2, 3, 4, 7, 16])))
        assert sum(int((hi - lo).sum()) for lo, hi, _ in parts) == n  # every key in exactly one part
        with parallel.using(threads):
            sharing = max(parallel.map_chunks(lambda part: merge_part(work, *part), parts))
            parallel.map_chunks(lambda r: unsort_ranks(work, starts[r : r + 2], ranks), range(len(starts) - 1))
        expected = np.searchsorted(np.sort(keys), keys)  # numpy's order: -0.0 == 0.0, NaN last and equal to NaN
        np.testing.assert_array_equal(ranks, expected)
        assert sharing == (np.bincount(expected).max() if n else 0)


def test_a_run_of_equal_keys_stays_in_one_part():
    # the splitters fall inside long runs of equal keys (and of -0.0 / 0.0 mixed): each run in one part
    keys = np.concatenate([np.full(500, 1.5), np.zeros(300), np.full(200, -0.0), np.arange(50.0), np.full(100, np.nan)])
    rng = np.random.RandomState(0)
    rng.shuffle(keys)
    work, ranks, starts = sorted_runs(rng, keys, 6)
    parts = split_runs(work, starts, 8)
    for key in (1.5, 0.0, np.nan):
        holding = [k for k, (lo, hi, _) in enumerate(parts)
                   if any(np.any((work[a:b] == key) | (np.isnan(key) & np.isnan(work[a:b]))) for a, b in zip(lo, hi))]
        assert len(holding) == 1, key
    sharing = max(merge_part(work, *part) for part in parts)
    unsort_ranks(work, starts, ranks)
    np.testing.assert_array_equal(ranks, np.searchsorted(np.sort(keys), keys))
    assert sharing == 501  # 0.0 (301, one from the arange) and -0.0 (200) share a slot


def test_ordered_chunks_in_order_with_bounded_lookahead():
    alive, most, lock = [0], [0], threading.Lock()

    def work(i):
        with lock:
            alive[0] += 1
            most[0] = max(most[0], alive[0])
        assert parallel.inner_threads() == 1
        return i * i

    with parallel.using(2):
        out = []
        for x in parallel.ordered_chunks(work, range(40)):
            out.append(x)
            with lock:
                alive[0] -= 1
    assert out == [i * i for i in range(40)]
    assert most[0] <= 3  # the caller's result and the two being computed
    assert list(parallel.ordered_chunks(work, range(3))) == [0, 1, 4]  # one thread: lazily, in order


def test_ordered_chunks_raises_at_the_failing_chunk():
    def work(i):
        if i == 5:
            raise ValueError("chunk 5")
        return i

    seen = []
    with parallel.using(2), pytest.raises(ValueError, match="chunk 5"):
        for x in parallel.ordered_chunks(work, range(20)):
            seen.append(x)
    assert seen == [0, 1, 2, 3, 4]


def test_ordered_chunks_stopped_early_starts_nothing_more():
    started = []

    def work(i):
        started.append(i)
        return i

    with parallel.using(2):
        results = parallel.ordered_chunks(work, range(100))
        assert [next(results) for _ in range(3)] == [0, 1, 2]
        results.close()  # the caller stops (as near_ties.resolve does when a bracket is too wide)
    assert len(started) <= 6 and sorted(started) == list(range(len(started)))


# ---------------------------------------------------------------------------------------------
# whole replays: one thread against two, small chunks forced
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def small_chunks(monkeypatch):
    for name, size in (("CHUNK", 13), ("POINTS_CHUNK", 5), ("SELECT_CHUNK", 7), ("RANK_BATCH", 9)):
        monkeypatch.setattr(sizes, name, size)
    monkeypatch.setattr(universe_module, "_ROWS", 11)


def assert_same(one, two, label):
    for name in ARRAYS:
        a, b = getattr(one, name), getattr(two, name)
        if a is None:
            assert b is None, (label, name)
            continue
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), (label, name)
    assert one.chosen.index.tobytes() == two.chosen.index.tobytes(), label
    for a, b in zip(one.groupings or (), two.groupings or ()):
        assert a.thresholds.tobytes() == b.thresholds.tobytes(), label
        assert {k: v.tobytes() for k, v in a.final_thresholds.items()} == {k: v.tobytes() for k, v in b.final_thresholds.items()}


def both(*args, threads=2, **kwargs):
    with parallel.using(1):
        one = replay(*args, **kwargs)
    with parallel.using(threads):
        two = replay(*args, **kwargs)
    return one, two


def random_stream(seed, n_patients=140, n_codes=6, decimals=3):
    rng = np.random.RandomState(seed)
    kind = seed % 3
    if kind == 0:
        probs = rng.choice([0.0, 0.1, 0.25, 0.5, 0.8, 1.0], size=(n_patients, n_codes))  # many ties, zero keys
    else:
        probs = rng.rand(n_patients, n_codes).round(2 if kind == 1 else 12)
    labels = rng.rand(n_patients, n_codes) < probs
    value = AdditiveValue(rng.uniform(0.5, 2.0, n_codes).round(3))
    weights = rng.uniform(0.1, 2.5, n_codes)
    cost = AdditiveCost(weights if decimals is None else weights.round(decimals))
    c_max = float(cost.weights_for(n_codes).sum())
    targets = [-0.1] + [round(share * c_max, 3) for share in (0.01, 0.1, 0.3, 0.6, 3)]  # -inf and +inf answers too
    return rng, probs, labels, value, cost, targets


NESTED = [("ratio", "price"), ("ratio", "cost"), ("prob", "price"), ("prob", "cost"), ("value", "price"), ("value", "cost")]


@pytest.mark.parametrize("universe,score", NESTED + [("full", "cost")])
@pytest.mark.parametrize("seed", range(4))
def test_keyless_replay_on_two_threads_is_bit_for_bit(universe, score, seed, small_chunks):
    rng, probs, labels, value, cost, targets = random_stream(seed, n_codes=4 if universe == "full" else 6)
    for options in (dict(burn_in=10), dict(burn_in=10, window=25), dict(burn_in=5, label_delay=7),
                    dict(burn_in=0, window=6, label_delay=3), dict(burn_in=40)):  # burn-in past the first chunk
        for threads in (2, 3, 5):  # the walk's slots in up to 2, 3 and 5 ranges
            one, two = both(probs, labels, value, cost, targets, universe=universe, score=score, threads=threads,
                            **options)
            assert_same(one, two, (universe, score, seed, options, threads))
        assert np.isinf(one.thresholds).any() and np.isfinite(one.thresholds).any()


@pytest.mark.parametrize("universe,score", [("ratio", "price"), ("value", "cost"), ("full", "cost")])
@pytest.mark.parametrize("seed", range(3))
def test_keyed_paths_on_two_threads_are_bit_for_bit(universe, score, seed, small_chunks):
    rng, probs, labels, value, cost, targets = random_stream(seed, n_codes=4 if universe == "full" else 6)
    n = len(probs)
    groups = {"plan": rng.choice(["A", "B", "C"], size=n), "age": rng.choice(["<65", "65+"], size=n)}
    cases = [dict(groups=groups["plan"]), dict(groups=groups, window=30, label_delay=4),
             dict(delta=0.1), dict(delta=0.2, groups=groups["age"])]
    if universe != "full":
        cases.append(dict(adaptive_rate=0.01))
    for options in cases:
        one, two = both(probs, labels, value, cost, [t for t in targets if t > 0], universe=universe, score=score,
                        burn_in=10, **options)
        assert_same(one, two, (universe, score, seed, options))


@pytest.mark.parametrize("universe,score", [("ratio", "price"), ("prob", "cost"), ("value", "price")])
@pytest.mark.parametrize("seed", range(3))
def test_many_decimal_weights_on_two_threads_are_bit_for_bit(universe, score, seed, small_chunks):
    # sums beyond int64: two bracket engines (each a keyless walk) and near-ties decided exactly
    _, probs, labels, value, cost, targets = random_stream(seed, decimals=None)
    for options in (dict(burn_in=10), dict(burn_in=10, window=40, label_delay=5)):
        one, two = both(probs, labels, value, cost, targets, universe=universe, score=score, **options)
        assert_same(one, two, (universe, score, seed, options))


@pytest.mark.parametrize("universe", ["ratio", "value"])
def test_a_formula_value_on_two_threads_is_bit_for_bit(universe, small_chunks):
    # a value given as a formula (not additive): its sets are chosen in this thread, the rest on the threads
    from favmac.functions import FormulaValue

    _, probs, labels, _, cost, targets = random_stream(2, n_patients=80, n_codes=4)
    value = FormulaValue("sum_hits(v) + prod_hits(v / 2)", weights=[1.0, 2.0, 3.0, 1.5])
    one, two = both(probs, labels, value, cost, targets, universe=universe, burn_in=10)
    assert_same(one, two, universe)


def test_signed_zero_keys_keep_the_last_written_key(small_chunks, monkeypatch):
    """Points of one slot may hold -0.0 and 0.0 (equal keys, other bits): an answered slot keeps the
    key of its last point in point order on two threads as on one."""
    points = engine.calibration_points

    def signed(cands, realized, score):
        keys, increments = points(cands, realized, score)
        keys = keys.copy()
        chosen = (np.asarray(realized)[:, -1] % 3 != 0)[:, None]  # by the patient's own row: the same in any chunking
        keys[(keys == 0) & chosen] = -0.0
        return keys, increments

    monkeypatch.setattr(points_module, "calibration_points", signed)  # the points' keys
    monkeypatch.setattr(engine, "calibration_points", signed)  # the answered slots' keys (Engine._slot_keys)
    rng = np.random.RandomState(4)
    n, k = 200, 5
    probs = rng.choice([1.0, 0.9, 0.5, 0.2], size=(n, k), p=[0.5, 0.2, 0.2, 0.1])  # many zero Chat keys
    labels = rng.rand(n, k) < 0.5
    value, cost = AdditiveValue(rng.uniform(0.5, 2, k).round(2)), AdditiveCost(rng.uniform(0.1, 2, k).round(3))
    one, two = both(probs, labels, value, cost, [0.05, 0.2, 0.5], universe="prob", score="cost", burn_in=5)
    assert_same(one, two, "signed zeros")
    zeros = one.thresholds[one.thresholds == 0]
    assert len(zeros) and np.signbit(zeros).any()  # the case is exercised: -0.0 answers exist


def test_walk_in_ranges_answers_like_one_range(monkeypatch):
    """The keyless walk split into slot ranges (one per thread) writes each answer of the one-range walk,
    whatever the edges (here forced: every split, also empty ranges), with a window (evictions)."""
    _, probs, labels, value, cost, targets = random_stream(5, n_patients=90)
    monkeypatch.setattr(sizes, "CHUNK", 9)
    kwargs = dict(universe="ratio", score="price", burn_in=4, window=20, label_delay=2)
    with parallel.using(1):
        expected = replay(probs, labels, value, cost, targets, **kwargs)
    splits = engine.range_splits
    for edges in ([0, 1], [0, 0.5], [0, 0.1, 0.2, 0.9], [0, 0.999], [0, 0.3, 0.3, 0.6]):
        def forced(answers, n_keys, points, parts, edges=edges):
            return np.unique(np.concatenate([np.round(np.array(edges) * n_keys), [n_keys]])).astype(np.int64)

        monkeypatch.setattr(engine, "range_splits", forced)
        with parallel.using(3):
            assert_same(expected, replay(probs, labels, value, cost, targets, **kwargs), edges)
    monkeypatch.setattr(engine, "range_splits", splits)


def test_chunks_run_on_two_threads(monkeypatch):
    """The first two chunks of keys meet at a barrier: it opens only if two threads run them at once."""
    points, seen, meet = points_module.calibration_points, set(), threading.Barrier(2, timeout=60)
    calls = []

    def spy(*args):
        seen.add(threading.get_ident())
        calls.append(1)
        if len(calls) <= 2:
            meet.wait()
        return points(*args)

    monkeypatch.setattr(points_module, "calibration_points", spy)
    monkeypatch.setattr(sizes, "CHUNK", 20)
    _, probs, labels, value, cost, targets = random_stream(1)
    with parallel.using(2):
        replay(probs, labels, value, cost, targets, burn_in=10)
    assert len(seen) >= 2 and threading.get_ident() not in seen  # (each parallel step has its own pool)
