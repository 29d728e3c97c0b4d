"""QuantileTree against an exact brute force over long random insert/delete sequences.

The brute force reads numbers with its own rule, written here independently of the module:
a float with at most 9 decimal places as printed is that decimal, any other float its exact
binary value, ints and Fractions themselves. Every query is recomputed with Fractions.
"""
import math
import random
from decimal import Decimal
from fractions import Fraction

import numpy as np
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


def test_tiny_leaves_and_groups_split_and_merge_exactly():
    """load=2, fanout=2: leaves of 1-4 keys, groups of 1-4 leaves, so nearly every update
    splits or merges a leaf, and groups split and merge (the top Fenwick tree is rebuilt) all
    along. Inserts, whole-key deletes and partial deletes in an online pattern (one update,
    then queries); every answer matches the brute force and ``_check`` holds after every step."""
    rng = random.Random(2024)
    tree, brute = QuantileTree(load=2, fanout=2), BruteForce()
    group_counts = set()
    grew = shrank = False
    for step in range(1500):
        present = sorted(brute.weights)
        before = len(tree._maxes)
        phase_deletes = (step // 300) % 2 == 1  # alternate growing and shrinking phases
        if present and rng.random() < (0.7 if phase_deletes else 0.3):
            key = present[0] if step % 7 == 0 else rng.choice(present)  # often the smallest key
            weight = brute.weights[key] if rng.random() < 0.7 else min(brute.weights[key], Fraction(1, 4))
            tree.delete(key, weight)
            brute.delete(key, weight)
        else:
            key = rng.choice([round(rng.uniform(0, 10), 2), math.inf, -math.inf, 0.0, -0.0]) if rng.random() < 0.1 \
                else round(rng.uniform(0, 10), 2)
            weight = rng.choice([rng.random(), 0.25, 1, 0.331, Fraction(1, 3)])
            tree.insert(key, weight)
            brute.insert(key, weight)
        grew |= len(tree._maxes) > before
        shrank |= len(tree._maxes) < before
        group_counts.add(len(tree._maxes))
        tree._check()
        total = brute.total()
        m = rng.choice([rng.random() * float(total), total, 0, -1, brute.cdf(rng.uniform(0, 10))])
        assert tree.search_greater(m) == brute.search_greater(m)
        probe = rng.choice([rng.uniform(-1, 11), math.inf, -math.inf, 0.0])
        assert tree.cdf_exact(probe) == brute.cdf(probe)
        q = rng.choice([0, 1.0, rng.random()])
        assert tree.quantile(q) == brute.quantile(q)
        assert len(tree) == len(brute.weights)
    assert grew and shrank and max(group_counts) >= 8


def test_minus_zero_and_zero_are_one_key_stored_as_zero():
    tree = QuantileTree()
    tree.insert(-0.0, 1)
    tree.insert(0.0, 2)
    assert len(tree) == 1 and tree.cdf_exact(-0.0) == 3 and tree.cdf_exact(0.0) == 3
    assert math.copysign(1.0, tree.search_greater(0)) == 1.0  # 0.0, not -0.0
    tree.delete(0.0, 1)
    tree.delete(-0.0, 2)
    assert len(tree) == 0 and tree.total_exact == 0
    tree._check()


def random_points(rng, n, weight_kind):
    """n points with repeated keys, +-inf, -0.0 and 0.0, zero weights; weights of one kind."""
    keys = [rng.choice([-math.inf, math.inf, 0.0, -0.0]) if rng.random() < 0.08 else round(rng.uniform(-3, 3), rng.choice([1, 3, 12]))
            for _ in range(n)]

    def weight():
        if weight_kind == "float":
            return rng.choice([rng.random(), rng.random() * 2.0 ** rng.randint(-40, 10), 0.0])
        if weight_kind == "decimal":
            return rng.choice([0.331, 0.1, 1.0, 0.0, 4.1, 1e-05, 0.5])
        if weight_kind == "int":
            return rng.randint(0, 5)
        return rng.choice([Fraction(rng.randint(0, 9), rng.choice([3, 7, 10])), 2, 0.25, rng.random()])  # mixed
    return keys, [weight() for _ in keys]


def assert_same_tree(built, reference, brute, rng):
    """``built`` answers every query as ``reference`` (the points inserted one by one) and the brute force do."""
    built._check()
    assert list(built.items()) == list(reference.items())
    assert len(built) == len(reference) == len(brute.weights)
    assert built.total_exact == reference.total_exact == brute.total()
    for key, cdf in brute.cdfs():
        assert built.cdf_exact(key) == cdf
        assert built.search_greater(cdf) == brute.search_greater(cdf)  # a tie: the next key
        assert built.search_greater(cdf - Fraction(1, 10**15)) == key
    for _ in range(30):
        probe = rng.uniform(-4, 4)
        assert built.cdf_exact(probe) == brute.cdf(probe)
        q = rng.choice([0, 1.0, 0.5, rng.random()])
        assert built.quantile(q) == reference.quantile(q) == brute.quantile(q)
        m = rng.random() * float(brute.total())
        assert built.search_greater(m) == brute.search_greater(m)


@pytest.mark.parametrize("weight_kind", ["float", "decimal", "int", "mixed"])
@pytest.mark.parametrize("seed", range(3))
def test_from_arrays_equals_inserting_one_by_one(weight_kind, seed):
    rng = random.Random(1000 * seed + len(weight_kind))
    keys, weights = random_points(rng, rng.choice([1, 2, 7, 150, 400]), weight_kind)
    reference, brute = QuantileTree(load=3, fanout=2), BruteForce()
    for key, weight in zip(keys, weights):
        reference.insert(key, weight)
        brute.insert(key, weight)
    as_numpy = weight_kind in ("float", "int") and rng.random() < 0.5
    given = np.array(weights) if as_numpy else weights
    built = QuantileTree.from_arrays(np.array(keys), given, load=3, fanout=2)
    assert_same_tree(built, reference, brute, rng)
    # sorted keys (no sort needed) and the default layout give the same content
    order = sorted(range(len(keys)), key=lambda i: keys[i])
    in_order = QuantileTree.from_arrays([keys[i] for i in order], [weights[i] for i in order])
    assert_same_tree(in_order, reference, brute, rng)


@pytest.mark.parametrize("seed", range(3))
def test_from_arrays_then_updates_match_the_brute_force(seed):
    """A bulk-built tree (full leaves, tiny load) continues exactly under inserts and deletes."""
    rng = random.Random(seed)
    keys, weights = random_points(rng, 300, "mixed")
    brute = BruteForce()
    for key, weight in zip(keys, weights):
        brute.insert(key, weight)
    tree = QuantileTree.from_arrays(keys, weights, load=2, fanout=2)
    stored = [(k, w) for k, w in zip(keys, weights) if reading(w) > 0]
    for step in range(600):
        if stored and rng.random() < 0.5:
            key, weight = stored.pop(rng.randrange(len(stored)))
            tree.delete(key, weight)
            brute.delete(key, weight)
        else:
            key, weight = round(rng.uniform(-3, 3), 2), rng.choice([rng.random(), 0.1, 3])
            tree.insert(key, weight)
            brute.insert(key, weight)
            stored.append((key, weight))
        if step % 20 == 0:
            tree._check()
        m = rng.random() * float(brute.total())
        assert tree.search_greater(m) == brute.search_greater(m)
        probe = rng.uniform(-3, 3)
        assert tree.cdf_exact(probe) == brute.cdf(probe)
    tree._check()


@pytest.mark.parametrize("weight_kind", ["float", "decimal", "mixed"])
def test_to_arrays_round_trip_continues_alike(weight_kind):
    """from_arrays(*to_arrays()) is the same tree with the same scale: it answers alike and
    stays alike under the same further updates (a snapshot and its reopening)."""
    rng = random.Random(len(weight_kind))
    keys, weights = random_points(rng, 200, weight_kind)
    tree = QuantileTree(load=3, fanout=2)
    for key, weight in zip(keys, weights):
        tree.insert(key, weight)
    snapshot_keys, numerators, denominator = tree.to_arrays()
    assert snapshot_keys.dtype == np.float64 and numerators.dtype in (np.int64, object) and denominator == tree._scale
    reopened = QuantileTree.from_arrays(snapshot_keys, numerators, denominator, load=5)
    brute = BruteForce()
    for key, weight in zip(keys, weights):
        brute.insert(key, weight)
    assert_same_tree(reopened, tree, brute, rng)
    assert reopened._scale == tree._scale
    for _ in range(100):
        key, weight = round(rng.uniform(-3, 3), 2), rng.choice([rng.random(), 0.2, Fraction(1, 7)])
        for t in (tree, reopened):
            t.insert(key, weight)
        m = rng.random() * float(tree.total)
        assert reopened.search_greater(m) == tree.search_greater(m)
    assert list(reopened.items()) == list(tree.items()) and reopened._scale == tree._scale


def test_from_arrays_of_int64_numerators_and_big_numerators():
    small = QuantileTree.from_arrays(np.array([3.0, 1.0, 3.0]), np.array([5, 2, 1], dtype=np.int64), 1000)
    assert list(small.items()) == [(1.0, 0.002), (3.0, 0.006)] and small.total_exact == Fraction(8, 1000)
    big = [2**70 + 1, 2**80, 3]
    tree = QuantileTree.from_arrays([0.5, 0.25, 0.75], np.array(big, dtype=object), 2**75)
    assert tree.total_exact == Fraction(sum(big), 2**75)
    assert tree.cdf_exact(0.5) == Fraction(2**80 + 2**70 + 1, 2**75)
    huge = QuantileTree.from_arrays(np.linspace(0, 1, 5000), np.full(5000, 2**61, dtype=np.int64))  # int64 sums would overflow
    assert huge.total_exact == 5000 * 2**61
    huge._check()


def test_from_arrays_rejects_bad_input_naming_the_index():
    with pytest.raises(QuantileTreeError, match=r"keys\[1\] is NaN"):
        QuantileTree.from_arrays([1.0, float("nan")], [1, 1])
    with pytest.raises(QuantileTreeError, match=r"weights\[2\] = -0.5 must be"):
        QuantileTree.from_arrays([1.0, 2.0, 3.0], [1.0, 0.5, -0.5])
    with pytest.raises(QuantileTreeError, match=r"weights\[0\] = inf"):
        QuantileTree.from_arrays(np.array([1.0]), np.array([np.inf]))
    with pytest.raises(QuantileTreeError, match=r"weights\[1\] = -1 must be >= 0"):
        QuantileTree.from_arrays([1.0, 2.0], [Fraction(1, 3), -1])
    with pytest.raises(QuantileTreeError, match="2 keys but 3 weights"):
        QuantileTree.from_arrays([1.0, 2.0], [1, 1, 1])
    with pytest.raises(QuantileTreeError, match="must be an integer numerator"):
        QuantileTree.from_arrays([1.0, 2.0], [1, 0.5], 10)
    with pytest.raises(QuantileTreeError, match="denominator must be a positive integer"):
        QuantileTree.from_arrays([1.0], [1], 0)
    assert len(QuantileTree.from_arrays([], [])) == 0 and QuantileTree.from_arrays([], []).search_greater(0) == math.inf
    assert len(QuantileTree.from_arrays([1.0, 2.0], [0.0, 0])) == 0


def test_large_float_weights_and_subnormal_weights_read_like_insert():
    """Floats past the vectorized range (>= 1e6, non-integer; integers >= 2^62) and subnormal
    ones: from_arrays reads them by the scalar rule, like insert."""
    weights = [1234567.891, 2.0**70, 5e-324, 0.1, 3e6 + 0.5, 1e300]
    keys = [float(i) for i in range(len(weights))]
    reference = QuantileTree()
    for key, weight in zip(keys, weights):
        reference.insert(key, weight)
    built = QuantileTree.from_arrays(np.array(keys), np.array(weights))
    read = [Fraction(n, built._scale) for n in built.to_arrays()[1].tolist()]
    assert read == [Fraction(n, reference._scale) for n in reference.to_arrays()[1].tolist()]
    assert read[1] == 2**70 and read[5] == int(1e300)  # integral floats: their exact (binary) integer value
    assert [read[i] for i in (0, 2, 3, 4)] == [reading(weights[i]) for i in (0, 2, 3, 4)]
