"""The baselines on several inner threads (favmac.parallel.using) give the one-thread results, bit for bit.

Each chunk-parallel part (the outcomes by step chunks, ClassWise by code groups, InnerSet's scores by
blocks and thresholds by target groups, CRC's sort keys in one part per thread) is forced to cut its
work small here: many chunks of a few steps, CRC's keys split from the first value on, tiny score
blocks. Random cases with heavy ties, values a few ulps apart, targets whose thresholds are +-inf
(a negative target, targets at and above C_max), windows and burn-ins; every array compared by
its bytes (so -0.0 against 0.0 and NaN positions count too).
"""
import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, parallel
from favmac.baselines import classwise, crc, inner_set, rcps
from favmac.baselines import kernels
from favmac.baselines.crc import value_ranks

inner_set_module = __import__("favmac.baselines.inner_set", fromlist=["_SCORE_ROWS"])


@pytest.fixture
def small_chunks(monkeypatch):
    """Every chunk-parallel part cut as small as it goes."""
    monkeypatch.setattr(parallel, "CHUNKS_PER_THREAD", 1000)  # steps in chunks of one to a few
    monkeypatch.setattr(kernels, "SPLIT_FROM", 1)  # CRC's keys: one part per thread from the first value
    monkeypatch.setattr(inner_set_module, "_SCORE_ROWS", 3)  # InnerSet's scores: blocks of 3 patients


def case(seed):
    """(probs, labels, weights, targets, burn_in, window) with ties, close values and +-inf thresholds."""
    rng = np.random.RandomState(seed)
    n, k = rng.randint(1, 90), rng.randint(1, 7)
    kind = seed % 4
    if kind == 0:  # heavy ties
        probs = rng.choice([0.0, 0.2, 0.5, 0.7, 1.0], size=(n, k))
    elif kind == 1:
        probs = np.round(rng.rand(n, k), 2)
    elif kind == 2:  # neighbouring floats: runs of keys that share their kept bits
        centre = rng.choice([0.125, 0.3, 0.6], size=(n, k))
        probs = centre + rng.randint(0, 6, size=(n, k)) * np.spacing(centre)
    else:
        probs = rng.rand(n, k)
    labels = (rng.rand(n, k) < rng.uniform(0.1, 0.9)).astype(int)
    weights = np.ones(k) if seed % 3 == 0 else np.round(rng.uniform(0.1, 2.0, size=k), 2)
    cmax = float(weights.sum())
    targets = sorted({-0.5, 0.0, round(0.1 * cmax, 2), round(0.4 * cmax, 2), 1.0, round(cmax, 6), cmax + 1.0})
    burn_in = int(rng.randint(0, n + 1)) if rng.rand() < 0.6 else 0
    window = None if rng.rand() < 0.6 else int(rng.randint(1, n + 2))
    if seed % 2:
        probs = np.asfortranarray(probs)  # CRC ranks column-major probabilities through the transposed view
    return probs, labels, weights, targets, burn_in, window


METHODS = {
    "classwise": (classwise, None),
    "crc": (crc, None),
    "inner_set": (inner_set, None),
    "inner_set, violation": (inner_set, 0.2),
    "rcps": (rcps, 0.1),
}


def arrays(result):
    """Every number of a baseline's result, as bytes."""
    out = [result.thresholds, result.final_thresholds, result.cost, result.value, result.exceeds]
    thresholds = result.settings.get("code_thresholds")
    if thresholds is not None:
        out.append(np.asarray(thresholds, dtype=float))
    return [np.ascontiguousarray(a).tobytes() for a in out]


@pytest.mark.parametrize("method", list(METHODS))
def test_baselines_on_threads_equal_one_thread(method, small_chunks):
    run, delta = METHODS[method]
    for seed in range(40):
        probs, labels, weights, targets, burn_in, window = case(seed)

        def once():
            return run(probs, labels, AdditiveValue(), AdditiveCost(weights), targets, delta=delta, burn_in=burn_in, window=window)

        with parallel.using(1):
            alone = once()
        for threads in (2, 3):
            with parallel.using(threads):
                assert arrays(once()) == arrays(alone), (method, seed, threads)


@pytest.mark.parametrize("threads", [2, 3, 4])
def test_value_ranks_in_parts_equal_numpy_unique(threads, small_chunks):
    """CRC's ranks with the keys cut into one part per thread: np.unique's inverse, the number of values,
    the longest run, for ties, close values, a single value, infinities and -0.0."""
    rng = np.random.RandomState(threads)
    cases = [np.round(rng.rand(300, 7), 2), rng.rand(200, 3), np.full((40, 3), 0.3), rng.rand(1, 1),
             0.5 + rng.randint(0, 40, size=(500, 4)) * np.spacing(0.5),
             rng.choice([-np.inf, -0.0, 0.0, 1e-310, 0.5, np.inf], size=(60, 5))]
    for probs in cases:
        with parallel.using(threads):
            ranks, n_values, longest = value_ranks(probs)
        values, inverse, counts = np.unique(probs, return_inverse=True, return_counts=True)
        assert np.array_equal(ranks, inverse.reshape(probs.shape))
        assert (n_values, longest) == (len(values), counts.max())


@pytest.mark.parametrize("threads", [2, 3])
def test_sorted_keys_in_parts_are_the_one_part_keys(threads, small_chunks):
    """The parts' edges cut between different kept bits, and the keys are those of one part."""
    rng = np.random.RandomState(5)
    for values in (np.round(rng.rand(5000), 3), 0.25 + rng.randint(0, 9, size=3000) * np.spacing(0.25), np.zeros(50)):
        keys, shift = kernels.sorted_value_keys(values)  # one thread: one part
        with parallel.using(threads):
            parted, parted_shift, edges = kernels.sorted_value_key_parts(values)
        assert parted_shift == shift and np.array_equal(parted, keys)
        assert edges[0] == 0 and edges[-1] == values.size and list(edges) == sorted(edges)
        high = keys >> shift
        if len(np.unique(high)) > 100:  # many kept bits: the keys really are cut
            assert any(0 < e < values.size for e in edges[1:-1])
        assert all(high[e - 1] != high[e] for e in edges[1:-1] if 0 < e < values.size)
        with parallel.using(threads):
            order = kernels.stable_argsort(values)
        assert np.array_equal(order, np.argsort(values, kind="stable"))


def test_rule_outcomes_in_step_chunks_equal_one_pass(small_chunks):
    rng = np.random.RandomState(11)
    for rule in (0, 1, 2):
        for per_step in (False, True):
            n_steps, n_codes, n_targets = 37, 5, 4
            scores = np.round(rng.rand(n_steps, n_codes), 1)
            levels = np.round(rng.rand(n_targets, n_steps if per_step else 1), 1)
            levels[0] = np.inf
            levels[1, 0] = -np.inf
            labels = rng.rand(n_steps, n_codes) < 0.4
            cost_weights = np.round(rng.uniform(0.1, 2, n_codes), 2)
            exact_weights = np.round(cost_weights * 100).astype(np.int64)
            args = (scores, levels, rule, labels, cost_weights, rng.rand(n_codes), exact_weights,
                    np.array([0, 50, 100, 400], dtype=np.int64))
            alone = kernels.rule_outcomes(*args)
            with parallel.using(2):
                chunked = kernels.rule_outcomes(*args)
            assert [a.tobytes() for a in chunked] == [a.tobytes() for a in alone]
