"""QuantileTree: an exact weighted empirical distribution with O(log n) updates and queries.

Layout (after sortedcontainers' SortedList): the distinct keys are kept in sorted
sublists of at most ``2 * load`` keys; ``_weights`` mirrors ``_keys`` element for element.
Weights are stored as exact integers at a common scale ``10^d`` (every weight is read as
the decimal it prints as, see ``favmac._exact``), so sums never drift and ties compare
exactly. A Fenwick tree over the sublist totals gives prefix sums in O(log n).

Invariants (checked by ``_check``):

* every key in sublist i is < every key in sublist i + 1; keys are distinct;
* ``_maxes[i] == _keys[i][-1]``;
* every stored weight is a positive integer and ``_sums[i] == sum(_weights[i])``;
* ``_total == sum(_sums)``;
* when ``_fenwick`` is not None it is the Fenwick tree of ``_sums``.

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

from ._exact import exact

__all__ = ["QuantileTree", "QuantileTreeError"]

_INF = float("inf")


class QuantileTreeError(ValueError):
    """A delete of weight that is not stored, or an invalid key, weight or level."""


class QuantileTree:
    """Weighted multiset of float keys supporting cdf, quantile and strict search.

    Parameters
    ----------
    items : iterable of (key, weight), optional
        Initial content.
    load : int
        Sublist size parameter (sublists split at ``2 * load`` keys).

    Complexity: ``insert``, ``delete``, ``cdf``, ``quantile`` and ``search_greater`` take
    O(log n) list searches plus O(load) element moves or sums inside one sublist, like
    ``SortedList``; ``len``, ``total`` are O(1).
    """

    def __init__(self, items=(), load: int = 512):
        self._load = int(load)
        self._keys: list[list[float]] = []
        self._weights: list[list[int]] = []
        self._maxes: list[float] = []
        self._sums: list[int] = []
        self._fenwick: list[int] | None = None
        self._total = 0
        self._scale = 1  # weights are stored as weight * _scale (an integer)
        self._int_cache: dict = {}
        for key, weight in items:
            self.insert(key, weight)

    # ------------------------------------------------------------------ weights
    def _to_int(self, weight) -> int:
        """Exact integer for ``weight`` at the current scale, rescaling if needed. O(1) usually."""
        cached = self._int_cache.get(weight)
        if cached is not None:
            return cached
        try:
            q = exact(weight)
        except (TypeError, ValueError):
            raise QuantileTreeError(f"weight must be a finite number >= 0, got {weight!r}") from None
        if q < 0:
            raise QuantileTreeError(f"weight must be >= 0, got {weight!r}")
        value = q.numerator * self._factor_for(q.denominator, weight)
        if len(self._int_cache) < 4096 and isinstance(weight, (int, float, Fraction)):
            self._int_cache[weight] = value
        return value

    def _factor_for(self, denominator: int, weight=None) -> int:
        """scale // denominator, after refining the scale (x10 steps) until it is a multiple."""
        if self._scale % denominator:
            new_scale = self._scale
            while new_scale % denominator:
                new_scale *= 10
                if new_scale > 10**400:
                    shown = weight if weight is not None else f"1/{denominator}"
                    raise QuantileTreeError(f"weight {shown!r} has no finite decimal expansion")
            self._rescale(new_scale // self._scale)
        return self._scale // denominator

    def _rescale(self, factor: int) -> None:
        """Multiply every stored integer by ``factor`` (a finer scale arrived). O(n)."""
        self._scale *= factor
        self._int_cache.clear()
        self._weights = [[w * factor for w in sub] for sub in self._weights]
        self._sums = [s * factor for s in self._sums]
        self._total *= factor
        self._fenwick = None

    def _to_float(self, value: int) -> float:
        return value / self._scale  # int / int is correctly rounded

    # ------------------------------------------------------------------ fenwick
    def _build_fenwick(self) -> list[int]:
        tree = [0] + list(self._sums)
        size = len(tree)
        for i in range(1, size):
            j = i + (i & -i)
            if j < size:
                tree[j] += tree[i]
        self._fenwick = tree
        return tree

    def _fenwick_add(self, index: int, delta: int) -> None:
        tree = self._fenwick
        if tree is None:
            return
        i = index + 1
        size = len(tree)
        while i < size:
            tree[i] += delta
            i += i & -i

    def _prefix_sublists(self, count: int) -> int:
        """Total weight of the first ``count`` sublists."""
        tree = self._fenwick if self._fenwick is not None else self._build_fenwick()
        total = 0
        i = count
        while i > 0:
            total += tree[i]
            i -= i & -i
        return total

    # ------------------------------------------------------------------ updates
    def insert(self, key: float, weight=1.0) -> None:
        """Add ``weight`` (>= 0) at ``key``; equal keys merge. O(log n) + O(load) moves.

        >>> t = QuantileTree(); t.insert(1.0); t.insert(1.0, 0.5); t.total
        1.5
        """
        value = self._to_int(weight)
        if value:
            self._insert_int(float(key), value)

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
                self._insert_int(float(key), int(numerator) * factor)

    def delete_many(self, keys, numerators, denominator: int = 1) -> None:
        """Delete what ``insert_many`` with the same arguments inserted. Each point is checked
        as by ``delete``; a failing point raises after the points before it were deleted."""
        for key, numerator in zip(keys, numerators):
            if numerator:
                self.delete(key, Fraction(int(numerator), int(denominator)))

    def _insert_int(self, key: float, value: int) -> None:
        if key != key:
            raise QuantileTreeError("key must not be NaN")
        maxes = self._maxes
        if not maxes:
            self._keys.append([key])
            self._weights.append([value])
            maxes.append(key)
            self._sums.append(value)
            self._total = value
            self._fenwick = None
            return
        i = bisect_left(maxes, key)
        if i == len(maxes):
            i -= 1
            keys = self._keys[i]
            keys.append(key)
            self._weights[i].append(value)
            maxes[i] = key
        else:
            keys = self._keys[i]
            j = bisect_left(keys, key)
            if keys[j] == key:
                self._weights[i][j] += value
            else:
                keys.insert(j, key)
                self._weights[i].insert(j, value)
        self._sums[i] += value
        self._total += value
        if self._fenwick is not None:
            self._fenwick_add(i, value)
        if len(keys) > 2 * self._load:
            self._split(i)

    def _split(self, i: int) -> None:
        keys, weights = self._keys[i], self._weights[i]
        half = self._load
        self._keys[i : i + 1] = [keys[:half], keys[half:]]
        self._weights[i : i + 1] = [weights[:half], weights[half:]]
        self._maxes[i : i + 1] = [keys[half - 1], keys[-1]]
        self._sums[i : i + 1] = [sum(weights[:half]), sum(weights[half:])]
        self._fenwick = None

    def delete(self, key: float, weight=1.0) -> None:
        """Remove ``weight`` from ``key``; the amount must be stored there. O(log n) + O(load).

        Raises QuantileTreeError (and changes nothing) if the key is absent or holds less.

        >>> t = QuantileTree([(1.0, 2)]); t.delete(1.0, 3)
        Traceback (most recent call last):
        ...
        favmac.quantile_tree.QuantileTreeError: cannot delete weight 3 at key 1.0: only 2 is stored there
        """
        value = self._to_int(weight)
        if value == 0:
            return
        key = float(key)
        i = bisect_left(self._maxes, key)
        stored = 0
        if i < len(self._maxes):
            keys = self._keys[i]
            j = bisect_left(keys, key)
            if keys[j] == key:
                stored = self._weights[i][j]
        if stored < value:
            have = "nothing is stored there" if stored == 0 else f"only {_fmt(Fraction(stored, self._scale))} is stored there"
            raise QuantileTreeError(f"cannot delete weight {_fmt(exact(weight))} at key {key!r}: {have}")
        self._sums[i] -= value
        self._total -= value
        if stored > value:
            self._weights[i][j] = stored - value
            if self._fenwick is not None:
                self._fenwick_add(i, -value)
            return
        del keys[j]
        del self._weights[i][j]
        if keys:
            self._maxes[i] = keys[-1]
            if self._fenwick is not None:
                self._fenwick_add(i, -value)
        else:
            del self._keys[i], self._weights[i], self._maxes[i], self._sums[i]
            self._fenwick = None

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        """Number of distinct keys with positive weight. O(n / load)."""
        return sum(len(sub) for sub in self._keys)

    def __bool__(self) -> bool:
        return bool(self._maxes)

    @property
    def total(self) -> float:
        """Total weight. O(1)."""
        return self._to_float(self._total)

    @property
    def total_exact(self) -> Fraction:
        return Fraction(self._total, self._scale)

    def _cdf_int(self, v: float) -> int:
        i = bisect_right(self._maxes, v)
        total = self._prefix_sublists(i)
        if i < len(self._maxes):
            j = bisect_right(self._keys[i], v)
            total += sum(self._weights[i][:j])
        return total

    def cdf(self, v: float) -> float:
        """Total weight of keys <= v (0.0 for an empty tree). O(log n + load).

        >>> QuantileTree([(1.0, 1), (2.0, 3)]).cdf(1.5)
        1.0
        """
        return self._to_float(self._cdf_int(float(v)))

    def cdf_exact(self, v: float) -> Fraction:
        """``cdf`` as an exact Fraction."""
        return Fraction(self._cdf_int(float(v)), self._scale)

    def _search_int(self, bound: int) -> float:
        """Smallest key whose scaled cdf exceeds the integer ``bound``; +inf if none."""
        if bound >= self._total:
            return _INF
        if bound < 0:
            return self._keys[0][0]
        tree = self._fenwick if self._fenwick is not None else self._build_fenwick()
        # Fenwick descent: largest count of whole sublists whose total is <= bound.
        pos, acc = 0, 0
        step = 1 << (len(tree) - 1).bit_length()
        while step:
            nxt = pos + step
            if nxt < len(tree) and acc + tree[nxt] <= bound:
                pos = nxt
                acc += tree[nxt]
            step >>= 1
        for j, running in enumerate(accumulate(self._weights[pos], initial=acc)):
            if running > bound:
                return self._keys[pos][j - 1]
        raise AssertionError("QuantileTree invariant broken: sublist sums disagree")  # pragma: no cover

    def search_greater(self, m) -> float:
        """Smallest key b with cdf(b) > m (exactly; a tie cdf(b) == m is not "greater").

        ``m`` may be a float (read as its decimal), int or Fraction. Returns +inf when the
        total does not exceed m, and the smallest key when m < 0. O(log n + load).

        >>> t = QuantileTree([(1.0, 1), (2.0, 1), (3.0, 1)])
        >>> t.search_greater(1), t.search_greater(0.5), t.search_greater(3)
        (2.0, 1.0, inf)
        """
        if not self._maxes:
            return _INF
        q = exact(m) * self._scale
        bound = q.numerator // q.denominator  # cdf (an integer) > q  <=>  cdf > floor(q)
        return self._search_int(bound)

    def quantile(self, q: float) -> float:
        """inf{v : cdf(v) >= q * total}, for q in [0, 1]. O(log n + load).

        By that definition the answer is -inf when q * total is 0 (q = 0, or an empty tree).

        >>> t = QuantileTree([(1.0, 1), (2.0, 1), (3.0, 1), (4.0, 1)])
        >>> t.quantile(0.5), t.quantile(0.51), t.quantile(1.0), t.quantile(0.0)
        (2.0, 3.0, 4.0, -inf)
        """
        try:
            level = exact(q)
        except (TypeError, ValueError):
            raise QuantileTreeError(f"quantile level must be a number in [0, 1], got {q!r}") from None
        if not 0 <= level <= 1:
            raise QuantileTreeError(f"quantile level must be in [0, 1], got {q!r}")
        needed = level * self._total
        need_int = -((-needed.numerator) // needed.denominator)  # ceil
        if need_int <= 0:
            return -_INF
        return self._search_int(need_int - 1)

    def items(self):
        """(key, weight) pairs in key order, weights as floats. O(n)."""
        for keys, weights in zip(self._keys, self._weights):
            for key, value in zip(keys, weights):
                yield key, self._to_float(value)

    def __repr__(self):
        return f"QuantileTree(<{len(self)} keys, total={self.total!r}>)"

    def _check(self) -> None:
        """Verify the invariants stated in the module docstring (for tests). O(n)."""
        flat = [k for sub in self._keys for k in sub]
        assert flat == sorted(flat) and len(set(flat)) == len(flat), "keys not sorted/distinct"
        assert all(sub for sub in self._keys), "empty sublist"
        assert self._maxes == [sub[-1] for sub in self._keys], "maxes stale"
        assert all(w > 0 for sub in self._weights for w in sub), "non-positive weight"
        assert self._sums == [sum(sub) for sub in self._weights], "sublist sums stale"
        assert self._total == sum(self._sums), "total stale"
        if self._fenwick is not None:
            expected = self._fenwick
            self._fenwick = None
            assert self._build_fenwick() == expected, "fenwick stale"


def _fmt(q: Fraction) -> str:
    return str(q.numerator) if q.denominator == 1 else repr(float(q))
