"""QuantileTree against an exact brute force over long random insert/delete sequences.

The brute force reads numbers with its own rule, written here independently of the module:
a float with at most 9 decimal places as printed is that decimal, any other float its exact
binary value, ints and Fractions themselves. Every query is recomputed with Fractions.
"""
import math
import random
from decimal import Decimal
from fractions import Fraction

import pytest

from favmac import QuantileTree, QuantileTreeError


def reading(x) -> Fraction:
    if isinstance(x, Fraction):
        return x
    if isinstance(x, int):
        return Fraction(x)
    printed = Decimal(repr(float(x)))
    if -printed.as_tuple().exponent <= 9:
        return Fraction(printed)
    return Fraction(float(x))  # the float's exact binary value


class BruteForce:
    """A dict of exact weights; every query recomputed from scratch."""

    def __init__(self):
        self.weights = {}

    def insert(self, key, weight):
        if reading(weight) > 0:
            self.weights[key] = self.weights.get(key, Fraction(0)) + reading(weight)

    def delete(self, key, weight):
        have = self.weights.get(key, Fraction(0))
        assert have >= reading(weight)
        if have == reading(weight):
            self.weights.pop(key, None)
        else:
            self.weights[key] = have - reading(weight)

    def cdf(self, v):
        return sum((w for k, w in self.weights.items() if k <= v), Fraction(0))

    def total(self):
        return sum(self.weights.values(), Fraction(0))

    def cdfs(self):
        """(key, cdf(key)) for the stored keys in increasing order: cdf(key) summed as one running sum
        over the sorted keys (the same exact Fractions as ``cdf(key)`` each time, without its n^2 cost)."""
        running = Fraction(0)
        for key in sorted(self.weights):
            running += self.weights[key]
            yield key, running

    def search_greater(self, m):
        for key, cdf in self.cdfs():
            if cdf > reading(m):
                return key
        return math.inf

    def quantile(self, q):
        need = reading(q) * self.total()
        if need <= 0:
            return -math.inf
        for key, cdf in self.cdfs():
            if cdf >= need:
                return key
        raise AssertionError


def test_the_reading_rule():
    assert reading(0.1) == Fraction(1, 10) and reading(4.1) == Fraction(41, 10) and reading(1e-05) == Fraction(1, 100000)
    assert reading(0.1 + 0.2) == Fraction(0.30000000000000004)  # 17 decimal places: binary
    tree = QuantileTree([(1.0, 0.1), (2.0, 0.2), (3.0, 0.1 + 0.2)])
    assert tree.cdf_exact(2.0) == Fraction(3, 10)
    assert tree.search_greater(0.3) == 3.0  # cdf(2.0) = 0.3 exactly: a tie, not "> 0.3"
    assert tree.total_exact == Fraction(3, 10) + Fraction(0.1 + 0.2)


@pytest.mark.parametrize("seed", range(6))
def test_random_sequences_match_brute_force(seed):
    rng = random.Random(seed)
    tree, brute = QuantileTree(load=4), BruteForce()  # tiny load: many splits and merges
    keys = [rng.choice([-math.inf, math.inf, 0.0]) if rng.random() < 0.05 else round(rng.uniform(-5, 5), 1) for _ in range(60)]
    weights = [1, 2, 0.5, 0.1, 0.2, 0.3, 1.7, 0]
    stored = []
    for step in range(1500):
        if stored and rng.random() < 0.4:
            key, weight = stored.pop(rng.randrange(len(stored)))
            tree.delete(key, weight)
            brute.delete(key, weight)
        else:
            key, weight = rng.choice(keys), rng.choice(weights)
            tree.insert(key, weight)
            brute.insert(key, weight)
            stored.append((key, weight))
        if step % 25 == 0:
            tree._check()
        probe = rng.choice(keys) + rng.choice([0, 0.05, -0.05])
        assert tree.cdf_exact(probe) == brute.cdf(probe)
        assert tree.total_exact == brute.total()
        m = rng.choice([brute.cdf(probe), brute.cdf(probe) - Fraction(1, 10), 0, -1, brute.total()])
        assert tree.search_greater(m) == brute.search_greater(m)
        level = rng.choice([0, 0.1, 0.25, 0.5, 0.9, 1.0, rng.random()])
        assert tree.quantile(level) == brute.quantile(level)
    tree._check()


def test_empty_tree_answers():
    tree = QuantileTree()
    assert tree.total == 0.0 and tree.cdf(1.0) == 0.0 and len(tree) == 0
    assert tree.search_greater(0) == math.inf
    assert tree.quantile(0.5) == -math.inf  # inf{v : 0 >= 0} by the definition
    with pytest.raises(QuantileTreeError, match="nothing is stored"):
        tree.delete(1.0)


def test_bad_delete_changes_nothing():
    tree = QuantileTree([(1.0, 2), (2.0, 1)])
    with pytest.raises(QuantileTreeError, match="only 2 is stored"):
        tree.delete(1.0, 3)
    with pytest.raises(QuantileTreeError, match="nothing is stored"):
        tree.delete(1.5, 1)
    assert list(tree.items()) == [(1.0, 2.0), (2.0, 1.0)]
    tree._check()


def test_rejects_bad_input():
    tree = QuantileTree()
    with pytest.raises(QuantileTreeError):
        tree.insert(1.0, -1)
    with pytest.raises(QuantileTreeError):
        tree.insert(float("nan"))
    with pytest.raises(QuantileTreeError):
        tree.insert(1.0, float("inf"))
    with pytest.raises(QuantileTreeError):
        tree.quantile(1.5)


def test_equal_keys_merge_and_strict_search_ties():
    tree = QuantileTree([(1.0, 1), (1.0, 1), (2.0, 2)])
    assert len(tree) == 2
    assert tree.search_greater(2) == 2.0  # cdf(1.0) = 2 is a tie, not "> 2"
    assert tree.search_greater(Fraction(19, 10)) == 1.0


def test_no_drift_after_a_million_operations():
    """10^6 mixed inserts/deletes of float weights (short decimals and random floats); cdf
    equals an exact recomputation."""
    rng = random.Random(123)
    tree = QuantileTree()
    live = []
    for _ in range(1_000_000 // 2):
        key, weight = rng.random(), rng.choice([0.1, 0.331, 1e-3, 7.25, 1 / 3, rng.random(), rng.random()])
        tree.insert(key, weight)
        live.append((key, weight))
    for i in range(1_000_000 // 2):
        j = rng.randrange(len(live))
        live[j], live[-1] = live[-1], live[j]
        key, weight = live.pop()
        tree.delete(key, weight)
        if i % 2 == 0:
            key, weight = rng.random(), rng.choice([0.1, 0.331, 1e-3, 7.25])
            tree.insert(key, weight)
            live.append((key, weight))
    live.sort()
    exact, running, i = {}, Fraction(0), 0  # exact[v]: the exact sum of the weights of keys <= v, one running sum
    for v in (0.1, 0.5, 0.9, 1.0):
        while i < len(live) and live[i][0] <= v:
            running += reading(live[i][1])
            i += 1
        exact[v] = running
    for v in (0.1, 0.5, 0.9, 1.0):
        exact_sum = math.fsum(w for k, w in live if k <= v)
        assert tree.cdf(v) == pytest.approx(exact_sum, rel=1e-9)
        assert tree.cdf_exact(v) == exact[v]


def random_float_sequence(seed, tree, brute, steps, probe_every=1):
    """Inserts and deletes with arbitrary float weights (random, tiny, huge, short decimals)."""
    rng = random.Random(seed)
    keys = [round(rng.uniform(-3, 3), 2) for _ in range(80)] + [-math.inf, math.inf]
    stored = []

    def weight():
        kind = rng.random()
        if kind < 0.5:
            return rng.random()  # arbitrary binary float
        if kind < 0.6:
            return rng.random() * 2.0 ** rng.randint(-60, 20)
        if kind < 0.8:
            return rng.choice([0.1, 0.331, 4.1, 1e-05, 2.5, 0.3])
        if kind < 0.9:
            return rng.randint(0, 3)
        return Fraction(rng.randint(1, 9), rng.choice([3, 7, 10]))

    for step in range(steps):
        if stored and rng.random() < 0.4:
            key, w = stored.pop(rng.randrange(len(stored)))
            tree.delete(key, w)
            brute.delete(key, w)
        else:
            key, w = rng.choice(keys), weight()
            tree.insert(key, w)
            brute.insert(key, w)
            stored.append((key, w))
        if step % probe_every:
            continue
        probe = rng.choice(keys) + rng.choice([0, 0.005, -0.005])
        assert tree.cdf_exact(probe) == brute.cdf(probe)
        assert tree.total_exact == brute.total()
        m = rng.choice([brute.cdf(probe), brute.cdf(probe) - Fraction(1, 10**12), rng.random() * 3, 0, -1, brute.total()])
        assert tree.search_greater(m) == brute.search_greater(m)
        level = rng.choice([0, 0.25, 0.5, 1.0, rng.random()])
        assert tree.quantile(level) == brute.quantile(level)
    return stored


@pytest.mark.parametrize("seed", range(4))
def test_random_float_weights_match_the_brute_force_exactly(seed):
    tree = QuantileTree(load=4)  # tiny load: many splits, block splits and checkpoint shifts
    random_float_sequence(seed, tree, BruteForce(), 1200)
    tree._check()


def test_a_fraction_equal_to_a_float_keeps_its_own_reading():
    tree = QuantileTree()
    tree.insert(1.0, 0.1)  # the decimal 1/10
    tree.insert(2.0, Fraction(0.1))  # the binary value of the float 0.1, which hashes like it
    assert tree.cdf_exact(1.0) == Fraction(1, 10)
    assert tree.cdf_exact(2.0) - tree.cdf_exact(1.0) == Fraction(0.1)


def test_queries_between_updates_keep_the_indexes_exact():
    """Long query runs switch to the bisected running sums; updates make them stale again."""
    rng = random.Random(77)
    tree, brute = QuantileTree(load=8), BruteForce()
    for _ in range(6):
        random_float_sequence(rng.randrange(10**6), tree, brute, 150, probe_every=50)
        for _ in range(60):  # a run of queries with no update in between
            m = rng.random() * float(brute.total())
            assert tree.search_greater(m) == brute.search_greater(m)
            q = rng.random()
            assert tree.quantile(q) == brute.quantile(q)
        tree._check()


def test_insert_many_and_delete_many_match_single_operations():
    rng = random.Random(9)
    tree, brute = QuantileTree(load=4), BruteForce()
    batches = []
    for step in range(300):
        if batches and rng.random() < 0.3:
            keys, nums, den = batches.pop(rng.randrange(len(batches)))
            tree.delete_many(keys, nums, den)
            for key, num in zip(keys, nums):
                if num:
                    brute.delete(key, Fraction(num, den))
        else:
            den = rng.choice([1, 10, 1000])
            keys = [round(rng.uniform(0, 3), 1) for _ in range(rng.randint(1, 6))]
            nums = [rng.randint(0, 2500) for _ in keys]
            tree.insert_many(keys, nums, den)
            for key, num in zip(keys, nums):
                brute.insert(key, Fraction(num, den))
            batches.append((keys, nums, den))
        probe = rng.uniform(-0.5, 3.5)
        assert tree.cdf_exact(probe) == brute.cdf(probe)
        assert tree.total_exact == brute.total()
    tree._check()
    with pytest.raises(QuantileTreeError):
        tree.insert_many([1.0], [-1])


def test_lazy_indexes_stay_exact_through_query_runs_and_single_updates():
    """Runs of queries build a sublist's full running sums (after _FULL_AFTER queries); single
    updates between queries leave group, inner and block running sums stale from the changed
    entry on. Every answer matches the brute force and ``_check`` holds after every step."""
    rng = random.Random(2024)
    tree, brute = QuantileTree(load=4), BruteForce()
    for _ in range(300):
        key, weight = round(rng.uniform(0, 10), 2), rng.choice([rng.random(), 0.25, 1, 0.331])
        tree.insert(key, weight)
        brute.insert(key, weight)
    saw_full = saw_stale_groups = saw_stale_blocks = False
    for step in range(400):
        if step % 100 < 60:  # a run of queries only: full running sums get built
            m = rng.random() * float(brute.total())
            assert tree.search_greater(m) == brute.search_greater(m)
        else:  # one update, then one query of each kind
            key = round(rng.uniform(0, 10), 2)
            if key in brute.weights and rng.random() < 0.4:
                tree.delete(key, brute.weights[key])
                brute.delete(key, brute.weights[key])
            else:
                weight = rng.choice([rng.random(), 0.1, 2])
                tree.insert(key, weight)
                brute.insert(key, weight)
            saw_stale_groups |= tree._group_sums is not None and tree._group_stale < len(tree._group_running)
            saw_stale_blocks |= any(m is not None and m[6] < len(m[1]) for m in tree._marks)
            probe = rng.uniform(0, 10)
            assert tree.cdf_exact(probe) == brute.cdf(probe)
            q = rng.random()
            assert tree.quantile(q) == brute.quantile(q)
        saw_full |= any(m is not None and m[4] is not None for m in tree._marks)
        tree._check()
    assert saw_full and saw_stale_groups and saw_stale_blocks


def test_update_keeps_full_running_sums_as_a_fresh_prefix():
    """After a run of queries built a sublist's running sums of all weights, an update there
    keeps them fresh below the updated position (instead of freeing them); queries answered
    from that prefix, from the blocks beyond it, and after the rebuild all match brute force."""
    tree, brute = QuantileTree(load=16), BruteForce()
    for k in range(20):  # one sublist of 20 keys, weights 1..20
        tree.insert(float(k), k + 1)
        brute.insert(float(k), k + 1)
    for _ in range(12):  # more than _FULL_AFTER queries: the full running sums get built
        assert tree.search_greater(7) == brute.search_greater(7)
    assert tree._marks[0][4] is not None and tree._marks[0][7] is None
    tree.insert(10.5, 3)  # new position 11
    brute.insert(10.5, 3)
    marks = tree._marks[0]
    assert marks[4] is None and marks[7] is not None and marks[8] == 11
    tree._check()
    tree.delete(4.0, 2)  # position 4 keeps its key: fresh below it
    brute.delete(4.0, 2)
    assert tree._marks[0][8] == 4
    tree._check()
    for m in [0, 2.5, 5, 9, 9.5, 14, 50, 120, 200.5, 211, 212, 500]:
        assert tree.search_greater(m) == brute.search_greater(m), m
        assert tree.cdf_exact(m / 10) == brute.cdf(m / 10), m
        tree._check()
    assert tree._marks[0][4] is not None and tree._marks[0][7] is None and tree._marks[0][8] == 0  # rebuilt
    running, expected = 0, []
    for weight in tree._weights[0]:
        running += weight
        expected.append(running)
    assert tree._marks[0][4] == expected


def test_block_bounds_stay_separators_through_block_splits_and_emptied_blocks():
    """An update finds its block by bisecting the block bounds with its key. Deleting a block's
    first key leaves its bound as a separator; emptying a block (the first one too) drops a
    bound; a block grown past 2 * _block splits at a new bound. Online-session pattern (one
    update, one query), sublists of 64-128 keys in blocks of 2-4."""
    rng = random.Random(4242)
    tree, brute = QuantileTree(load=64), BruteForce()
    for _ in range(250):
        key, weight = round(rng.uniform(0, 10), 3), rng.choice([rng.random(), 0.5, 3])
        tree.insert(key, weight)
        brute.insert(key, weight)
    saw_bounds = False
    for step in range(500):
        present = sorted(brute.weights)
        if present and rng.random() < 0.45:
            # delete a whole key, often the smallest of the tree or of a block
            key = present[0] if step % 7 == 0 else rng.choice(present)
            tree.delete(key, brute.weights[key])
            brute.delete(key, brute.weights[key])
        elif present and rng.random() < 0.2:  # more weight on a stored key: same positions
            key = rng.choice(present)
            tree.insert(key, 0.25)
            brute.insert(key, 0.25)
        else:
            key, weight = round(rng.uniform(0, 10), 3), rng.random()
            tree.insert(key, weight)
            brute.insert(key, weight)
        saw_bounds |= any(m is not None and len(m[2]) > 3 for m in tree._marks)
        m = rng.random() * float(brute.total())
        assert tree.search_greater(m) == brute.search_greater(m)
        probe = rng.uniform(0, 10)
        assert tree.cdf_exact(probe) == brute.cdf(probe)
        tree._check()
    assert saw_bounds
