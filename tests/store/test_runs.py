"""SortedRuns (favmac/store/runs.py): the program's calibration points as sorted runs with exact integer
sums. Checked against a plain recomputation (Python integers over the points) on random batches with
ties, +-inf, -0.0, zero weights and weights far beyond int64."""
from __future__ import annotations

import math

import numpy as np
import pytest

from favmac.store.runs import SortedRuns


def oracle_search(points, bound):
    """The smallest key whose total weight of keys <= it exceeds ``bound`` (+inf if none), by brute force."""
    if bound < 0:
        return min((k for k, w in points if w > 0), default=math.inf)
    running, answer = 0, math.inf
    for key in sorted({k for k, _ in points}):
        running += sum(w for k, w in points if k == key)
        if running > bound:
            answer = key
            break
    return answer


def random_batch(rng, m):
    kind = rng.randint(4)
    if kind == 0:
        keys = rng.choice([-np.inf, np.inf, 0.0, -0.0, 0.5, 1.5, -2.0], size=m)
    else:
        keys = rng.randn(m).round(int(rng.randint(1, 4)))
    style = rng.randint(4)
    if style == 0:
        weights = rng.randint(0, 5, size=m)
    elif style == 1:
        weights = rng.randint(0, 2**62, size=m)
    elif style == 2:
        weights = np.array([int(v) * 2**70 + int(v) for v in rng.randint(0, 6, size=m)], dtype=object)
    else:
        weights = np.ones(m, dtype=np.int64)
    return keys, weights


@pytest.mark.parametrize("seed", range(6))
def test_search_and_cdf_equal_a_recomputation(seed):
    rng = np.random.RandomState(seed)
    runs = SortedRuns(merge_ratio=int(rng.randint(1, 5)))
    points = []
    for _ in range(8):
        keys, weights = random_batch(rng, int(rng.randint(0, 120)))
        runs.add(keys, weights)
        points += [(float(k) + 0.0, int(w)) for k, w in zip(keys.tolist(), weights.tolist())]
        total = sum(w for _, w in points)
        assert runs.total == total and len(runs) == sum(1 for _, w in points if w > 0)
        runs._check()
        bounds = [-1, 0, total - 1, total, total + 3, total // 2, total // 3] + [int(rng.randint(0, 50)) for _ in range(4)]
        for bound in bounds:
            assert runs.search_greater(bound) == oracle_search(points, bound), bound
        for v in (-np.inf, -2.0, 0.0, 0.5, 1.0, np.inf):
            assert runs.cdf(v) == sum(w for k, w in points if k <= v)
    keys, weights = runs.items()
    assert keys.tolist() == sorted({k for k, w in points if w > 0})
    assert weights == [sum(w for k, w in points if k == key) for key in keys.tolist()]
    assert runs.n_runs <= 8


def test_a_small_batch_after_a_large_run_merges_nothing():
    rng = np.random.RandomState(1)
    runs = SortedRuns()
    runs.add(rng.rand(20_000), rng.randint(1, 2**40, size=20_000))
    runs.add(rng.rand(500), rng.randint(1, 2**40, size=500))
    assert runs.n_runs == 2  # a label batch against a large history: its own run
    for _ in range(3):
        runs.add(rng.rand(500), rng.randint(1, 2**40, size=500))
    assert runs.n_runs <= 3  # runs of similar size merge


def test_bad_points_are_refused():
    runs = SortedRuns()
    with pytest.raises(ValueError, match="NaN"):
        runs.add(np.array([np.nan]), np.array([1]))
    with pytest.raises(ValueError, match="non-negative"):
        runs.add(np.array([1.0]), np.array([-1]))
    with pytest.raises(TypeError, match="integers"):
        runs.add(np.array([1.0]), np.array([0.5]))
    assert runs.total == 0 and runs.search_greater(0) == math.inf


@pytest.mark.parametrize("seed", range(4))
def test_removed_points_leave_the_sums_exact(seed):
    """A rolling window removes its oldest patients' points: runs of negative weights, cancelled when runs
    merge; every query equals the recomputation over the points still held."""
    rng = np.random.RandomState(100 + seed)
    runs = SortedRuns(merge_ratio=int(rng.randint(1, 5)))
    held = []  # batches still held: (keys, weights)
    for _ in range(14):
        if held and rng.rand() < 0.45:
            keys, weights = held.pop(int(rng.randint(len(held))))
            runs.remove(keys, weights)
        else:
            keys, weights = random_batch(rng, int(rng.randint(0, 80)))
            runs.add(keys, weights)
            held.append((keys, weights))
        points = [(float(k) + 0.0, int(w)) for keys, weights in held for k, w in zip(keys.tolist(), weights.tolist())]
        total = sum(w for _, w in points)
        assert runs.total == total
        runs._check()
        for bound in [-1, 0, total - 1, total, total // 2, total // 5] + [int(rng.randint(0, 40)) for _ in range(3)]:
            assert runs.search_greater(bound) == oracle_search(points, bound), bound
        for v in (-np.inf, -2.0, 0.0, 0.5, np.inf):
            assert runs.cdf(v) == sum(w for k, w in points if k <= v)
    keys, weights = runs.items()
    expected = {}
    for k, w in points:
        expected[k] = expected.get(k, 0) + w
    assert [(k, w) for k, w in zip(keys.tolist(), weights) if w] == sorted((k, w) for k, w in expected.items() if w)
