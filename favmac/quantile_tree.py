"""QuantileTree: an exact weighted empirical distribution with O(log n) updates and queries.

Layout: a B-tree of height three kept as flat lists, like sortedcontainers' SortedList. The
distinct keys, in order, are cut into *leaves* of at most ``2 * load`` keys; consecutive
leaves form *groups* of at most ``2 * fanout`` leaves. Each leaf keeps the running sums of
its keys' weights (not the weights); each group a Fenwick (binary indexed) tree over its
leaves' totals; one Fenwick tree sums the groups' totals. A query is two Fenwick descents
and one bisection; an update adds its weight to the running sums after it in one leaf
(O(load)) and to O(log n) Fenwick entries. Nothing is lazy: every sum is current after every
update, so a query costs the same right after an update as after a run of queries. A leaf
split or merge rebuilds its group's Fenwick tree (O(fanout)); a group split or merge the
top one (O(n / (load * fanout)), at C speed: one slice addition per tree level).

Why pure Python: Python integers keep every sum exact whatever the weights' scale (random
float weights need integers of about 100 bits), which int64 kernels (numba) cannot. Why
this layout (measured with ``scripts/bench_quantile_tree.py``, docs/benchmarks.md): in
CPython an operation costs mostly the separate objects it touches and its bytecodes; the
running sums make a query's last step one bisection, and the Fenwick trees keep an update's
work above the leaf at O(log n) entries instead of shifting per-leaf sums in a group.

Weights are stored as exact integers at a common scale (an integer multiple of every
weight's denominator), so sums never drift and ties compare exactly. How a number is read:
a float with at most 9 decimal places as printed ("0.331", "4.1", "1e-05") is that decimal,
so docs/method.md's decimal ties are exact; any other float ("0.8444218515250481", a random
weight) is its exact binary value m / 2^e; ints and Fractions are themselves. A key is
stored as ``float(key) + 0.0``: -0.0 and 0.0 are one key, stored as 0.0; +-inf are keys.

Invariants (checked by ``_check``), for G groups:

* the keys ``_keys[g][l][j]`` read in (g, l, j) order are strictly increasing (distinct),
  none is NaN or -0.0; ``_count`` is their number;
* every leaf holds 1 to ``2 * load`` keys and every group 1 to ``2 * fanout`` leaves; an
  empty tree has no group;
* ``_running[g][l]`` is ``list(accumulate(weights))`` of leaf (g, l)'s weights, every weight
  a positive integer (so the running sums increase strictly);
* ``_leaf_maxes[g][l] == _keys[g][l][-1]`` and ``_maxes[g] == _leaf_maxes[g][-1]``;
* ``_leaf_trees[g] == _fenwick_tree([r[-1] for r in _running[g]])`` and
  ``_fenwick == _fenwick_tree(group totals)``, where ``_fenwick_tree(totals)`` has
  ``size + 1`` entries, ``size`` the smallest power of two >= max(len(totals), 1), entry 0
  is 0 and entry i the total of ``totals[i - (i & -i) : i]`` (totals past the end count as
  0), so entry ``size`` is the sum of all; ``_size == len(_fenwick) - 1``;
* ``_total`` is the total weight; ``_scale`` is a positive integer and a weight w is stored
  as w * ``_scale``; ``_factors[d] == _scale // d`` for every cached denominator d.

Complexity: ``insert``, ``delete``: O(log n) bisections and Fenwick additions, O(load)
additions in one leaf's running sums, plus O(fanout / load) amortized for leaf splits and
merges and O(n / (load * fanout)^2) amortized (at C speed) for group splits and merges;
``cdf``, ``quantile``, ``search_greater``: O(log n); ``len``, ``total``: O(1);
``from_arrays``: O(n) after one sort (none when the keys come sorted); ``to_arrays``: O(n).
A weight that needs a finer common scale rescales every stored integer (O(n)); binary
weights leave 32 bits of room below the finest one seen, so a stream of random weights
rescales about never.

Examples
--------
>>> tree = QuantileTree()
>>> for key, weight in [(0.5, 1), (0.2, 2), (0.9, 1)]:
...     tree.insert(key, weight)
>>> tree.total, tree.cdf(0.5)
(4.0, 3.0)
>>> tree.quantile(0.5), tree.search_greater(2)
(0.2, 0.5)
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from fractions import Fraction
from itertools import accumulate
from math import copysign, gcd, isfinite
from operator import add, index

import numpy as np

from .thresholds import exact

__all__ = ["QuantileTree", "QuantileTreeError"]

_INF = float("inf")
_DECIMAL_PLACES = 9  # floats with at most this many decimal places are read as decimals
_DECIMAL_SCALE = 10**_DECIMAL_PLACES
_FAST_DECIMAL_LIMIT = 1e6  # below it, round(x * 1e9) finds those decimals exactly
_MAX_SCALE_BITS = 4096
_BINARY_ROOM = 32  # extra bits of scale taken when a finer binary weight arrives
_DEFAULT_LOAD = 24  # leaves of 12-48 keys (measured: scripts/bench_quantile_tree.py, docs/benchmarks.md)
_DEFAULT_FANOUT = 48  # groups of 24-96 leaves
_CACHE_LIMIT = 4096  # entries kept in each of the weight and denominator caches


def _ratio(x) -> tuple[int, int]:
    """(numerator, denominator > 0) of the exact rational the tree reads ``x`` as.

    >>> _ratio(0.1), _ratio(4.1), _ratio(0.5), _ratio(3)
    ((1, 10), (41, 10), (1, 2), (3, 1))
    >>> _ratio(0.1 + 0.2) == (0.30000000000000004).as_integer_ratio()  # 17 decimal places: binary
    True
    """
    if isinstance(x, float):
        if not isfinite(x):
            raise ValueError(f"expected a finite number, got {x!r}")
        if x.is_integer():
            return int(x), 1
        if -_FAST_DECIMAL_LIMIT < x < _FAST_DECIMAL_LIMIT:
            m = round(x * 1e9)
            if m / 1e9 == x:  # the decimal m / 10^9 prints as x: x has <= 9 decimal places
                g = gcd(m, _DECIMAL_SCALE)
                return m // g, _DECIMAL_SCALE // g
            return x.as_integer_ratio()
        q = exact(x)  # large magnitudes: decide from the printed decimal itself
        if q.denominator <= _DECIMAL_SCALE and _DECIMAL_SCALE % q.denominator == 0:
            return q.numerator, q.denominator
        return x.as_integer_ratio()
    q = exact(x)
    return q.numerator, q.denominator


def _finer_scale(scale: int, denominator: int) -> int:
    """The scale after ``denominator`` arrived: ``scale`` times the part of ``denominator`` it
    lacks, and for a binary one ``2^_BINARY_ROOM`` more. 0 when the result would exceed
    ``2^_MAX_SCALE_BITS``.

    >>> _finer_scale(10, 4), _finer_scale(1, 3), _finer_scale(1, 2**5000)
    (85899345920, 3, 0)
    """
    factor = needed = denominator // gcd(scale, denominator)
    if needed & (needed - 1) == 0:
        factor = needed << _BINARY_ROOM
    finer = scale * factor
    return finer if finer.bit_length() <= _MAX_SCALE_BITS else 0


class QuantileTreeError(ValueError):
    """A delete of weight that is not stored, or an invalid key, weight or level."""


class QuantileTree:
    """Weighted multiset of float keys supporting cdf, quantile and strict search.

    Parameters
    ----------
    items : iterable of (key, weight), optional
        Initial content, inserted one by one (``from_arrays`` builds from arrays in O(n)).
    load : int
        Leaves split past ``2 * load`` keys; a leaf below ``load // 2`` keys merges with a
        neighbour.
    fanout : int
        Groups split past ``2 * fanout`` leaves; a group below ``fanout // 2`` leaves merges
        with a neighbour.

    Complexity: ``insert``, ``delete``: O(log n + load); ``cdf``, ``quantile`` and
    ``search_greater``: O(log n); ``len``, ``total``: O(1). See the module docstring.
    """

    def __init__(self, items=(), load: int = _DEFAULT_LOAD, fanout: int = _DEFAULT_FANOUT):
        self._load = _check_positive("load", load)
        self._fanout = _check_positive("fanout", fanout)
        self._scale = 1  # weights are stored as weight * _scale (an integer)
        self._int_cache: dict = {}  # float weight -> its scaled integer
        self._factors: dict = {}  # denominator -> _scale // denominator
        self._clear()
        for key, weight in items:
            self.insert(key, weight)

    def _clear(self) -> None:
        self._maxes: list[float] = []  # largest key of each group
        self._leaf_maxes: list[list[float]] = []  # per group, largest key of each leaf
        self._keys: list[list[list[float]]] = []  # per group, per leaf, the keys
        self._running: list[list[list[int]]] = []  # per group, per leaf, running sums of the weights
        self._leaf_trees: list[list[int]] = []  # per group, a Fenwick tree over its leaves' totals
        self._fenwick: list[int] = [0, 0]  # a Fenwick tree over the groups' totals
        self._size = 1
        self._total = 0
        self._count = 0

    # ------------------------------------------------------------------ weights
    def _to_int(self, weight) -> int:
        """Exact integer for ``weight`` at the current scale, rescaling if needed. O(1) usually.

        Fills the float cache (``insert`` reads it first). Only floats are cached: a Fraction or
        Decimal equal to a float hashes like it but may be read differently (Fraction(0.1) is
        the binary value, 0.1 the decimal).
        """
        try:
            numerator, denominator = _ratio(weight)
        except (TypeError, ValueError):
            raise QuantileTreeError(f"weight must be a finite number >= 0, got {weight!r}") from None
        if numerator < 0:
            raise QuantileTreeError(f"weight must be >= 0, got {weight!r}")
        factor = self._factors.get(denominator)
        if factor is None:
            factor = self._factor_for(denominator, weight)
        value = numerator * factor
        if type(weight) is float and len(self._int_cache) < _CACHE_LIMIT:
            self._int_cache[weight] = value
        return value

    def _factor_for(self, denominator: int, weight=None) -> int:
        """scale // denominator, after refining the scale so that it is a multiple."""
        if denominator < 1:
            raise QuantileTreeError(f"denominator must be a positive integer, got {denominator!r}")
        if self._scale % denominator:
            self._refine(denominator, weight)
        factor = self._scale // denominator
        if len(self._factors) < _CACHE_LIMIT:
            self._factors[denominator] = factor
        return factor

    def _refine(self, denominator: int, weight) -> None:
        """Grow the scale to a multiple of ``denominator`` (at least doubling it). O(n)."""
        finer = _finer_scale(self._scale, denominator)
        if not finer:
            shown = weight if weight is not None else f"1/{denominator}"
            raise QuantileTreeError(f"weight {shown!r} needs a finer common scale than the tree supports (2^{_MAX_SCALE_BITS})")
        self._rescale(finer // self._scale)

    def _rescale(self, factor: int) -> None:
        """Multiply every stored integer by ``factor`` (a finer scale arrived). O(n)."""
        self._scale *= factor
        self._int_cache.clear()
        self._factors.clear()
        self._running = [[[r * factor for r in leaf] for leaf in group] for group in self._running]
        self._leaf_trees = [[t * factor for t in tree] for tree in self._leaf_trees]
        self._fenwick = [t * factor for t in self._fenwick]
        self._total *= factor

    def _to_float(self, value: int) -> float:
        return value / self._scale  # int / int is correctly rounded

    # ------------------------------------------------------------------ updates
    def insert(self, key: float, weight=1.0) -> None:
        """Add ``weight`` (>= 0) at ``key``; equal keys merge. O(log n + load).

        >>> t = QuantileTree(); t.insert(1.0); t.insert(1.0, 0.5); t.total
        1.5
        """
        value = None
        if type(weight) is float:
            value = self._int_cache.get(weight)
            if value is None and 0.0 < weight < _FAST_DECIMAL_LIMIT and round(weight * 1e9) / 1e9 != weight:
                # _ratio's rule, its hot case inlined: not a decimal of <= 9 places, so the exact binary value
                numerator, denominator = weight.as_integer_ratio()
                factor = self._factors.get(denominator)
                if factor is not None:
                    value = numerator * factor
        if value is None:
            value = self._to_int(weight)
        if value:
            self._insert_int((key if type(key) is float else float(key)) + 0.0, value)

    def insert_many(self, keys, numerators, denominator: int = 1) -> None:
        """Insert ``keys[i]`` with the exact weight ``numerators[i] / denominator`` (integers >= 0).

        The fast way to add many points whose weights share a denominator (e.g. costs at a
        scale 10^d): no per-point number conversion. O(m (log n + load)).

        >>> t = QuantileTree(); t.insert_many([0.5, 0.2, 0.5], [3, 1, 2], denominator=10); t.total
        0.6
        """
        factor = self._factor_for(int(denominator))
        for key, numerator in zip(keys, numerators):
            if numerator < 0:
                raise QuantileTreeError(f"weight must be >= 0, got {numerator}/{denominator}")
            if numerator:
                self._insert_int(float(key) + 0.0, int(numerator) * factor)

    def delete_many(self, keys, numerators, denominator: int = 1) -> None:
        """Delete what ``insert_many`` with the same arguments inserted. Each point is checked
        as by ``delete``; a failing point raises after the points before it were deleted.
        O(m (log n + load)).

        >>> t = QuantileTree(); t.insert_many([0.5, 0.2], [3, 1], 10); t.delete_many([0.5], [3], 10); t.total
        0.1
        """
        for key, numerator in zip(keys, numerators):
            if numerator:
                self.delete(key, Fraction(int(numerator), int(denominator)))

    def _insert_int(self, key: float, value: int) -> None:
        """Add the scaled integer ``value`` > 0 at ``key`` (a float, not -0.0)."""
        if key != key:
            raise QuantileTreeError("key must not be NaN")
        maxes = self._maxes
        if not maxes:
            self._build([[[key]]], [[[value]]])
            return
        g = bisect_left(maxes, key)
        if g == len(maxes):  # beyond the largest key: append to the last leaf
            g -= 1
            leaf_maxes = self._leaf_maxes[g]
            l = len(leaf_maxes) - 1
            keys = self._keys[g][l]
            running = self._running[g][l]
            keys.append(key)
            running.append(running[-1] + value)
            leaf_maxes[l] = maxes[g] = key
            self._count += 1
        else:
            l = bisect_left(self._leaf_maxes[g], key)
            keys = self._keys[g][l]
            running = self._running[g][l]
            j = bisect_left(keys, key)
            if keys[j] != key:  # a new key at position j: it starts from the running sum before it
                keys.insert(j, key)
                running.insert(j, running[j - 1] if j else 0)
                self._count += 1
            for k in range(j, len(running)):
                running[k] += value
        tree = self._leaf_trees[g]
        size, i = len(tree) - 1, l + 1
        while i <= size:
            tree[i] += value
            i += i & -i
        tree, size, i = self._fenwick, self._size, g + 1
        while i <= size:
            tree[i] += value
            i += i & -i
        self._total += value
        if len(keys) > 2 * self._load:
            self._split_leaf(g, l)

    def delete(self, key: float, weight=1.0) -> None:
        """Remove ``weight`` from ``key``; the amount must be stored there. O(log n + load).

        Raises QuantileTreeError (and changes nothing) if the key is absent or holds less.

        >>> t = QuantileTree([(1.0, 2)]); t.delete(1.0, 3)
        Traceback (most recent call last):
        ...
        favmac.quantile_tree.QuantileTreeError: cannot delete weight 3 at key 1.0: only 2 is stored there
        """
        value = self._to_int(weight)
        if value == 0:
            return
        key = float(key) + 0.0
        maxes = self._maxes
        g = bisect_left(maxes, key)
        stored = 0
        if g < len(maxes):
            l = bisect_left(self._leaf_maxes[g], key)
            keys = self._keys[g][l]
            running = self._running[g][l]
            j = bisect_left(keys, key)
            if keys[j] == key:
                stored = running[j] - running[j - 1] if j else running[0]
        if stored < value:
            have = "nothing is stored there" if stored == 0 else f"only {_fmt(Fraction(stored, self._scale))} is stored there"
            raise QuantileTreeError(f"cannot delete weight {_fmt(Fraction(*_ratio(weight)))} at key {key!r}: {have}")
        if stored == value:
            del keys[j], running[j]
            self._count -= 1
        for k in range(j, len(running)):
            running[k] -= value
        tree = self._leaf_trees[g]
        size, i = len(tree) - 1, l + 1
        while i <= size:
            tree[i] -= value
            i += i & -i
        tree, size, i = self._fenwick, self._size, g + 1
        while i <= size:
            tree[i] -= value
            i += i & -i
        self._total -= value
        if stored == value:
            if not keys:
                self._remove_leaf(g, l)
            else:
                if j == len(keys):  # the leaf's largest key went
                    leaf_maxes = self._leaf_maxes[g]
                    leaf_maxes[l] = keys[-1]
                    if l == len(leaf_maxes) - 1:
                        maxes[g] = keys[-1]
                if len(keys) < self._load // 2 and len(self._keys[g]) > 1:
                    self._merge_leaf(g, l)

    # ------------------------------------------------------------------ structure
    def _build(self, keys: list, running: list) -> None:
        """Take ``keys[g][l]`` and ``running[g][l]`` (per group, per leaf) as the whole content;
        derive the maxes, the Fenwick trees, the total and the count. O(n / load)."""
        self._keys, self._running = keys, running
        self._leaf_maxes = [[leaf[-1] for leaf in group] for group in keys]
        self._maxes = [group[-1] for group in self._leaf_maxes]
        self._leaf_trees = [_fenwick_tree([leaf[-1] for leaf in group]) for group in running]
        self._count = sum(len(leaf) for group in keys for leaf in group)
        self._rebuild_top()

    def _rebuild_top(self) -> None:
        """The Fenwick tree over the group totals, from scratch. O(number of groups), at C speed."""
        self._fenwick = _fenwick_tree([tree[-1] for tree in self._leaf_trees])
        self._size = len(self._fenwick) - 1
        self._total = self._fenwick[-1]

    def _rebuild_group(self, g: int) -> None:
        """Group g's Fenwick tree over its leaves' totals, from scratch. O(fanout), at C speed."""
        self._leaf_trees[g] = _fenwick_tree([leaf[-1] for leaf in self._running[g]])

    def _split_leaf(self, g: int, l: int) -> None:
        """Cut leaf (g, l), grown past ``2 * load`` keys, after its first ``load`` keys. O(load + fanout)."""
        half = self._load
        keys, running = self._keys[g][l], self._running[g][l]
        base = running[half - 1]
        self._keys[g][l : l + 1] = [keys[:half], keys[half:]]
        self._running[g][l : l + 1] = [running[:half], [r - base for r in running[half:]]]
        self._leaf_maxes[g].insert(l, keys[half - 1])
        if len(self._keys[g]) > 2 * self._fanout:
            self._split_group(g)
        else:
            self._rebuild_group(g)

    def _split_group(self, g: int) -> None:
        """Cut group g, grown past ``2 * fanout`` leaves, after its first ``fanout`` leaves.
        O(fanout + number of groups)."""
        half = self._fanout
        for parts in (self._keys, self._running, self._leaf_maxes):
            group = parts[g]
            parts[g : g + 1] = [group[:half], group[half:]]
        self._maxes.insert(g, self._leaf_maxes[g][-1])
        self._leaf_trees.insert(g, None)
        self._rebuild_group(g)
        self._rebuild_group(g + 1)
        self._rebuild_top()

    def _remove_leaf(self, g: int, l: int) -> None:
        """Drop leaf (g, l), emptied by a delete (its total is 0 already)."""
        del self._keys[g][l], self._running[g][l], self._leaf_maxes[g][l]
        if not self._keys[g]:
            del self._keys[g], self._running[g], self._leaf_maxes[g], self._leaf_trees[g], self._maxes[g]
            self._rebuild_top()
            return
        self._maxes[g] = self._leaf_maxes[g][-1]
        self._rebuild_group(g)
        self._merge_small_group(g)

    def _merge_leaf(self, g: int, l: int) -> None:
        """Join leaf (g, l), shrunk below ``load // 2`` keys, with a neighbour in its group (the
        one before it, or after it for the first); split again if that is too long. O(load + fanout)."""
        first = l - 1 if l else 0
        keys, running = self._keys[g], self._running[g]
        base = running[first][-1]
        keys[first].extend(keys[first + 1])
        running[first].extend([r + base for r in running[first + 1]])
        del keys[first + 1], running[first + 1]
        del self._leaf_maxes[g][first]  # the joined leaf ends where the second did
        if len(keys[first]) > 2 * self._load:
            self._split_leaf(g, first)
        else:
            self._rebuild_group(g)
            self._merge_small_group(g)

    def _merge_small_group(self, g: int) -> None:
        """If group g has fewer than ``fanout // 2`` leaves and is not the only group, join it with
        a neighbour (the one before it, or after it for the first); split again if that is too
        long. O(fanout + number of groups)."""
        if len(self._keys[g]) >= self._fanout // 2 or len(self._maxes) == 1:
            return
        first = g - 1 if g else 0
        for parts in (self._keys, self._running, self._leaf_maxes):
            parts[first].extend(parts[first + 1])
            del parts[first + 1]
        del self._leaf_trees[first + 1], self._maxes[first]  # the joined group ends where the second did
        if len(self._keys[first]) > 2 * self._fanout:
            self._split_group(first)
        else:
            self._rebuild_group(first)
            self._rebuild_top()

    # ------------------------------------------------------------------ arrays
    @classmethod
    def from_arrays(cls, keys, weights, denominator: int | None = None, *, load: int = _DEFAULT_LOAD,
                    fanout: int = _DEFAULT_FANOUT) -> "QuantileTree":
        """A tree holding ``(keys[i], weights[i])`` for every i, built in O(n) after one sort.

        Equal in every query (and in ``items``, ``len`` and ``to_arrays``' content) to
        inserting the points one by one. Without ``denominator``, each weight is read like
        ``insert`` reads it (a float array by the same rule, vectorized); with it, ``weights``
        are integer numerators and weight i is ``weights[i] / denominator`` exactly, as in
        ``insert_many`` (``to_arrays`` gives such a triple back). Keys may come in any order:
        unsorted keys cost one stable numpy sort. Zero weights are skipped; equal keys merge.

        Parameters
        ----------
        keys : array-like of float, shape (n,)
        weights : array-like, shape (n,)
            Numbers >= 0 (floats, ints, Fractions), or integer numerators >= 0 with ``denominator``.
        denominator : int, optional
        load, fanout : int
            As for the constructor.

        Returns
        -------
        QuantileTree

        Raises
        ------
        QuantileTreeError
            A NaN key, a negative or non-finite weight (naming the first such index), arrays
            of different lengths, or a weight needing a scale finer than 2^4096.

        Complexity: O(n) Python-level work plus one O(n log n) numpy sort when the keys are
        not sorted.

        >>> t = QuantileTree.from_arrays([0.9, 0.2, 0.5, 0.2], [1, 1.5, 1, 0.5])
        >>> list(t.items()), t.search_greater(2)
        ([(0.2, 2.0), (0.5, 1.0), (0.9, 1.0)], 0.5)
        >>> QuantileTree.from_arrays([0.1, 0.3], [3, 7], 10).total
        1.0
        """
        tree = cls(load=load, fanout=fanout)
        key_array = np.array(keys, dtype=np.float64).reshape(-1) + 0.0  # -0.0 -> 0.0
        nan = np.flatnonzero(np.isnan(key_array))
        if len(nan):
            raise QuantileTreeError(f"from_arrays: keys[{nan[0]}] is NaN; a key must be a number")
        if denominator is None:
            values, scale = _read_weights(weights)
        else:
            values, scale = _read_numerators(weights, denominator)
        if len(key_array) != len(values):
            raise QuantileTreeError(f"from_arrays: {len(key_array)} keys but {len(values)} weights; give one weight per key")
        if len(key_array) > 1 and not (key_array[1:] >= key_array[:-1]).all():
            order = np.argsort(key_array, kind="stable")
            key_array = key_array[order]
            values = values[order]
        positive = values != 0
        if not positive.all():
            key_array, values = key_array[positive], values[positive]
        tree._scale = scale
        if not len(key_array):
            return tree
        # running sums of the weights over all points; a run of equal keys keeps its last one
        if values.dtype == object or len(values) * int(values.max()) >= 2**62:  # int64 running sums could overflow
            cumulative = np.array(list(accumulate(values.tolist())), dtype=object)
        else:
            cumulative = np.cumsum(values)
        ends = np.flatnonzero(key_array[1:] != key_array[:-1])
        if len(ends) + 1 < len(key_array):  # equal keys: keep the end of each run
            ends = np.append(ends, len(key_array) - 1)
            key_array, cumulative = key_array[ends], cumulative[ends]
        tree._fill(key_array.tolist(), cumulative)
        return tree

    def _fill(self, keys: list, cumulative) -> None:
        """Take the distinct sorted ``keys`` with the running sums ``cumulative`` (a numpy array,
        int64 or object) of their scaled weights as the whole content: full leaves of ``load``
        keys, groups of ``fanout`` leaves. O(n)."""
        load, fanout = self._load, self._fanout
        n = len(keys)
        starts = np.arange(0, n, load)
        bases = np.zeros(len(starts), dtype=cumulative.dtype)  # the running sum before each leaf
        bases[1:] = cumulative[starts[1:] - 1]
        within = (cumulative - np.repeat(bases, np.diff(np.append(starts, n)))).tolist()
        leaf_keys = [keys[s : s + load] for s in starts.tolist()]
        leaf_running = [within[s : s + load] for s in starts.tolist()]
        self._build([leaf_keys[a : a + fanout] for a in range(0, len(leaf_keys), fanout)],
                    [leaf_running[a : a + fanout] for a in range(0, len(leaf_running), fanout)])

    def to_arrays(self):
        """The content as ``(keys, numerators, denominator)``: weight i is exactly
        ``numerators[i] / denominator``. O(n).

        ``keys`` is a sorted float64 array of the distinct keys; ``numerators`` an int64 array
        when every one fits, else an object array of Python ints; ``denominator`` the tree's
        scale (an int). ``QuantileTree.from_arrays(*tree.to_arrays())`` rebuilds an equal tree
        with the same scale, so it also continues alike under further updates.

        >>> t = QuantileTree([(0.5, 0.1), (0.2, 1)])
        >>> keys, numerators, denominator = t.to_arrays()
        >>> keys.tolist(), numerators.tolist(), denominator
        ([0.2, 0.5], [10, 1], 10)
        >>> list(QuantileTree.from_arrays(keys, numerators, denominator).items()) == list(t.items())
        True
        """
        keys = np.array([key for group in self._keys for leaf in group for key in leaf], dtype=np.float64)
        weights = [w for group in self._running for leaf in group for w in _differences(leaf)]
        try:
            numerators = np.array(weights, dtype=np.int64)
        except OverflowError:
            numerators = np.array(weights, dtype=object)
        return keys, numerators, self._scale

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        """Number of distinct keys with positive weight. O(1)."""
        return self._count

    def __bool__(self) -> bool:
        return bool(self._maxes)

    @property
    def total(self) -> float:
        """Total weight. O(1).

        >>> QuantileTree([(1.0, 0.1), (2.0, 0.2)]).total
        0.3
        """
        return self._to_float(self._total)

    @property
    def total_exact(self) -> Fraction:
        """Total weight as an exact Fraction. O(1).

        >>> QuantileTree([(1.0, 0.1), (2.0, 0.2)]).total_exact
        Fraction(3, 10)
        """
        return Fraction(self._total, self._scale)

    def _cdf_int(self, v: float) -> int:
        maxes = self._maxes
        g = bisect_right(maxes, v)
        if g == len(maxes):
            return self._total
        total, tree, i = 0, self._fenwick, g  # the first g groups
        while i:
            total += tree[i]
            i &= i - 1
        l = i = bisect_right(self._leaf_maxes[g], v)  # and the first l leaves of group g
        tree = self._leaf_trees[g]
        while i:
            total += tree[i]
            i &= i - 1
        j = bisect_right(self._keys[g][l], v)
        if j:
            total += self._running[g][l][j - 1]
        return total

    def cdf(self, v: float) -> float:
        """Total weight of keys <= v (0.0 for an empty tree). O(log n).

        >>> QuantileTree([(1.0, 1), (2.0, 3)]).cdf(1.5)
        1.0
        """
        return self._to_float(self._cdf_int(float(v)))

    def cdf_exact(self, v: float) -> Fraction:
        """``cdf`` as an exact Fraction. O(log n).

        >>> QuantileTree([(1.0, 0.1), (2.0, 0.2)]).cdf_exact(1.0)
        Fraction(1, 10)
        """
        return Fraction(self._cdf_int(float(v)), self._scale)

    def _search_int(self, bound: int) -> float:
        """Smallest key whose scaled cdf exceeds the integer ``bound``; +inf if none."""
        if bound >= self._total:
            return _INF
        if bound < 0:
            return self._keys[0][0][0]
        # Fenwick descents: g groups, then l leaves of group g, have totals summing to <= bound
        # (entry ``size`` holds the whole total, > bound: the descents start below it)
        tree, g, step = self._fenwick, 0, self._size >> 1
        while step:
            total = tree[g + step]
            if total <= bound:
                g += step
                bound -= total
            step >>= 1
        tree = self._leaf_trees[g]
        l, step = 0, (len(tree) - 1) >> 1
        while step:
            total = tree[l + step]
            if total <= bound:
                l += step
                bound -= total
            step >>= 1
        return self._keys[g][l][bisect_right(self._running[g][l], bound)]

    def search_greater(self, m) -> float:
        """Smallest key b with cdf(b) > m (exactly; a tie cdf(b) == m is not "greater").

        ``m`` may be a float (read as its decimal), int or Fraction. Returns +inf when the
        total does not exceed m, and the smallest key when m < 0. O(log n).

        >>> t = QuantileTree([(1.0, 1), (2.0, 1), (3.0, 1)])
        >>> t.search_greater(1), t.search_greater(0.5), t.search_greater(3)
        (2.0, 1.0, inf)
        """
        if not self._maxes:
            return _INF
        if type(m) is float and -_FAST_DECIMAL_LIMIT < m < _FAST_DECIMAL_LIMIT:  # _ratio, inlined
            decimal = round(m * 1e9)
            if decimal / 1e9 == m:
                numerator, denominator = decimal, _DECIMAL_SCALE
            else:
                numerator, denominator = m.as_integer_ratio()
        else:
            try:
                numerator, denominator = _ratio(m)
            except (TypeError, ValueError):
                raise QuantileTreeError(f"search_greater: m must be a finite number, got {m!r}") from None
        factor = self._factors.get(denominator)  # scale // denominator, when it divides the scale
        # cdf > m*scale <=> cdf > floor(m*scale)
        return self._search_int(numerator * factor if factor is not None else numerator * self._scale // denominator)

    def quantile(self, q: float) -> float:
        """inf{v : cdf(v) >= q * total}, for q in [0, 1]. O(log n).

        By that definition the answer is -inf when q * total is 0 (q = 0, or an empty tree).

        >>> t = QuantileTree([(1.0, 1), (2.0, 1), (3.0, 1), (4.0, 1)])
        >>> t.quantile(0.5), t.quantile(0.51), t.quantile(1.0), t.quantile(0.0)
        (2.0, 3.0, 4.0, -inf)
        """
        if type(q) is float and -_FAST_DECIMAL_LIMIT < q < _FAST_DECIMAL_LIMIT:  # _ratio, inlined
            decimal = round(q * 1e9)
            if decimal / 1e9 == q:
                numerator, denominator = decimal, _DECIMAL_SCALE
            else:
                numerator, denominator = q.as_integer_ratio()
        else:
            try:
                numerator, denominator = _ratio(q)
            except (TypeError, ValueError):
                raise QuantileTreeError(f"quantile level must be a number in [0, 1], got {q!r}") from None
        if not 0 <= numerator <= denominator:
            raise QuantileTreeError(f"quantile level must be in [0, 1], got {q!r}")
        need_int = -((-numerator * self._total) // denominator)  # ceil(q * total)
        if need_int <= 0:
            return -_INF
        return self._search_int(need_int - 1)

    def items(self):
        """(key, weight) pairs in key order, weights as floats. O(n).

        >>> list(QuantileTree([(2.0, 1), (1.0, 0.5)]).items())
        [(1.0, 0.5), (2.0, 1.0)]
        """
        for keys_group, running_group in zip(self._keys, self._running):
            for keys, running in zip(keys_group, running_group):
                for key, value in zip(keys, _differences(running)):
                    yield key, self._to_float(value)

    def __repr__(self):
        return f"QuantileTree(<{len(self)} keys, total={self.total!r}>)"

    def _check(self) -> None:
        """Verify the invariants stated in the module docstring (for tests). O(n)."""
        load, fanout = self._load, self._fanout
        groups = len(self._maxes)
        assert len(self._keys) == len(self._running) == len(self._leaf_maxes) == len(self._leaf_trees) == groups, "groups misaligned"
        flat = [k for group in self._keys for leaf in group for k in leaf]
        assert all(a < b for a, b in zip(flat, flat[1:])), "keys not strictly increasing"
        assert all(k == k and (k != 0 or copysign(1.0, k) > 0) for k in flat), "NaN or -0.0 key"
        assert self._count == len(flat), "count stale"
        for g in range(groups):
            keys, running = self._keys[g], self._running[g]
            assert 1 <= len(keys) <= 2 * fanout and len(running) == len(keys), "group empty, too long or misaligned"
            for leaf_keys, leaf_running in zip(keys, running):
                assert 1 <= len(leaf_keys) <= 2 * load and len(leaf_running) == len(leaf_keys), "leaf empty, too long or misaligned"
                weights = list(_differences(leaf_running))
                assert all(type(w) is int and w > 0 for w in weights), "non-positive weight"
            assert self._leaf_maxes[g] == [leaf[-1] for leaf in keys], "leaf maxes stale"
            assert self._maxes[g] == self._leaf_maxes[g][-1], "group maxes stale"
            assert self._leaf_trees[g] == _slow_fenwick([leaf[-1] for leaf in running]), "group Fenwick tree stale"
        assert self._fenwick == _slow_fenwick([tree[-1] for tree in self._leaf_trees]), "top Fenwick tree stale"
        assert self._size == len(self._fenwick) - 1, "Fenwick size stale"
        assert self._total == sum(w for group in self._running for leaf in group for w in _differences(leaf)), "total stale"
        assert isinstance(self._scale, int) and self._scale > 0, "scale invalid"
        assert all(self._scale % d == 0 and f == self._scale // d for d, f in self._factors.items()), "factor cache stale"


def _fenwick_tree(totals: list[int]) -> list[int]:
    """A Fenwick tree over ``totals``: ``size + 1`` entries (``size`` the smallest power of two
    >= max(len(totals), 1)), entry i the total of ``totals[i - (i & -i) : i]``. O(size), one
    slice addition per level (C speed).

    >>> _fenwick_tree([1, 2, 3])
    [0, 1, 3, 3, 6]
    """
    size = 1 << max(len(totals) - 1, 0).bit_length()
    tree = [0] * (size + 1)
    tree[1 : len(totals) + 1] = totals
    step = 1
    while step < size:  # entries with lowest bit ``step`` add into entry i + step
        tree[2 * step :: 2 * step] = map(add, tree[2 * step :: 2 * step], tree[step :: 2 * step])
        step *= 2
    return tree


def _slow_fenwick(totals: list[int]) -> list[int]:
    """``_fenwick_tree`` by its definition, entry by entry (for ``_check``)."""
    size = 1 << max(len(totals) - 1, 0).bit_length()
    padded = totals + [0] * (size - len(totals))
    return [0] + [sum(padded[i - (i & -i) : i]) for i in range(1, size + 1)]


def _differences(running: list[int]):
    """The weights whose running sums are ``running``."""
    previous = 0
    for r in running:
        yield r - previous
        previous = r


def _check_positive(name: str, value) -> int:
    try:
        number = index(value)
    except TypeError:
        number = 0
    if number < 1:
        raise QuantileTreeError(f"{name} must be a positive integer, got {value!r}")
    return number


def _read_numerators(numerators, denominator) -> tuple[np.ndarray, int]:
    """(numerators as an int64 or object array, the scale) for weights ``numerators[i] / denominator``."""
    try:
        scale = index(denominator)
    except TypeError:
        scale = 0
    if scale < 1:
        raise QuantileTreeError(f"from_arrays: denominator must be a positive integer, got {denominator!r}")
    array = _as_array(numerators)
    if array.dtype.kind in "iu" and array.dtype.itemsize <= 8 and not (array.dtype.kind == "u" and array.dtype.itemsize == 8):
        values = array.reshape(-1).astype(np.int64)
    else:
        try:
            values = np.array([index(x) for x in array.reshape(-1).tolist()], dtype=object)
        except TypeError:
            bad = next(i for i, x in enumerate(array.reshape(-1).tolist()) if not _is_index(x))
            raise QuantileTreeError(f"from_arrays: weights[{bad}] = {array.reshape(-1).tolist()[bad]!r} must be an integer numerator "
                                    f"(with a denominator, weights are integers)") from None
    negative = np.flatnonzero(values < 0)
    if len(negative):
        raise QuantileTreeError(f"from_arrays: weights[{negative[0]}] = {values.tolist()[negative[0]]!r} must be >= 0")
    return values, scale


def _is_index(x) -> bool:
    try:
        index(x)
    except TypeError:
        return False
    return True


def _read_weights(weights) -> tuple[np.ndarray, int]:
    """(weights as integers at a common scale, as an int64 or object array; that scale), each
    weight read by ``_ratio``'s rule (vectorized for a float array). O(n)."""
    array = _as_array(weights)
    if array.dtype.kind == "f":
        numerators, denominators = _read_float_weights(array.reshape(-1).astype(np.float64))
    elif array.dtype.kind in "iu" and array.dtype.itemsize <= 8 and not (array.dtype.kind == "u" and array.dtype.itemsize == 8):
        numerators = array.reshape(-1).astype(np.int64)
        denominators = np.ones(len(numerators), dtype=np.int64)
    else:
        pairs = []
        for i, w in enumerate(array.reshape(-1).tolist()):
            try:
                pairs.append(_ratio(w))
            except (TypeError, ValueError):
                raise QuantileTreeError(f"from_arrays: weights[{i}] = {w!r} must be a finite number >= 0") from None
        numerators = np.array([p[0] for p in pairs], dtype=object)
        denominators = np.array([p[1] for p in pairs], dtype=object)
    negative = np.flatnonzero(numerators < 0)
    if len(negative):
        i = negative[0]
        raise QuantileTreeError(f"from_arrays: weights[{i}] = {array.reshape(-1).tolist()[i]!r} must be >= 0")
    scale = 1
    for d in np.unique(denominators).tolist():
        if scale % d:
            scale = _finer_scale(scale, int(d))
            if not scale:
                raise QuantileTreeError(f"from_arrays: a weight with denominator {d} needs a finer common scale than the "
                                        f"tree supports (2^{_MAX_SCALE_BITS})")
    if scale < 2**62 and numerators.dtype != object and denominators.dtype != object:
        factors = scale // denominators  # int64
        if not len(numerators) or int(numerators.max()) < 2**62 // int(factors.max()):
            return numerators * factors, scale
    unique, inverse = np.unique(denominators, return_inverse=True)
    factors = np.array([scale // int(d) for d in unique.tolist()], dtype=object)[inverse]
    return numerators.astype(object) * factors, scale


def _as_array(weights) -> np.ndarray:
    """``weights`` as an array; a list becomes a float array only when every entry is a float and
    an int64 array only when every entry is an int that fits (numpy would round big ints mixed
    with floats), else an object array read entry by entry."""
    if isinstance(weights, np.ndarray):
        return weights
    items = list(weights)
    kinds = set(map(type, items))
    if kinds <= {float}:
        return np.array(items, dtype=np.float64)
    if kinds <= {int}:
        try:
            return np.array(items, dtype=np.int64)
        except OverflowError:
            pass
    array = np.empty(len(items), dtype=object)
    array[:] = items
    return array


def _read_float_weights(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(numerators, denominators) of float weights by ``_ratio``'s rule, vectorized: int64 arrays,
    or object arrays when some weight needs Python integers. Raises for a NaN, +-inf or negative one."""
    bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
    if len(bad):
        i = bad[0]
        raise QuantileTreeError(f"from_arrays: weights[{i}] = {w[i].item()!r} must be a finite number >= 0")
    numerators = np.zeros(len(w), dtype=np.int64)
    denominators = np.ones(len(w), dtype=np.int64)
    integral = np.floor(w) == w
    small = w < _FAST_DECIMAL_LIMIT
    exact_int = integral & (w < 2.0**62)
    numerators[exact_int] = w[exact_int].astype(np.int64)
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = np.rint(w * 1e9)  # round(x * 1e9): the same product, rounded half to even
    decimal = small & ~integral & (scaled / 1e9 == w)
    m = scaled[decimal].astype(np.int64)
    common = np.gcd(m, _DECIMAL_SCALE)
    numerators[decimal] = m // common
    denominators[decimal] = _DECIMAL_SCALE // common
    binary = small & ~integral & ~decimal
    mantissa, exponent = np.frexp(w[binary])  # w = mantissa * 2^exponent, mantissa in [0.5, 1)
    whole = (mantissa * 2.0**53).astype(np.int64)  # w = whole * 2^(exponent - 53), exactly
    twos = np.frexp((whole & -whole).astype(np.float64))[1] - 1  # trailing zero bits of whole
    shift = 53 - exponent - twos  # w = (whole >> twos) / 2^shift, shift >= 1 (w is not an integer)
    rest = ~(exact_int | decimal | binary)  # large floats: the scalar rule
    if not len(shift) and not rest.any():
        return numerators, denominators
    if len(shift) and shift.max() <= 62 and not rest.any():
        numerators[binary] = whole >> twos
        denominators[binary] = np.left_shift(np.int64(1), shift)
        return numerators, denominators
    numerators, denominators = numerators.astype(object), denominators.astype(object)
    numerators[binary] = (whole >> twos).astype(object)
    denominators[binary] = [1 << s for s in shift.tolist()]
    for i in np.flatnonzero(rest).tolist():
        numerators[i], denominators[i] = _ratio(float(w[i]))
    return numerators, denominators


def _fmt(q: Fraction) -> str:
    return str(q.numerator) if q.denominator == 1 else repr(float(q))
