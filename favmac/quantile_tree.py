"""QuantileTree: an exact weighted empirical distribution with O(log n) updates and queries.

Layout (after sortedcontainers' SortedList): the distinct keys are kept in sorted
sublists of at most ``2 * load`` keys; ``_weights`` mirrors ``_keys`` element for element.
Weights are stored as exact integers at a common scale (an integer multiple of every
weight's denominator), so sums never drift and ties compare exactly. How a number is
read: a float with at most 9 decimal places as printed ("0.331", "4.1", "1e-05") is that
decimal, so the SPEC's decimal ties are exact; any other float ("0.8444218515250481",
a random weight) is its exact binary value m / 2^e; ints and Fractions are themselves.
A Fenwick tree over the sublist totals gives prefix sums in O(log n) (and, while no
update comes between queries, a plain list of running sums is bisected instead). Inside a
sublist, blocks of positions with their lengths and totals (built by the first query that
needs them) reduce the scan to a bisection plus at most ``2 * _block`` additions. An update
changes one block's length and total and drops the block running sums, which the next query
of that sublist rebuilds (O(load / _block)); a block that grows past ``2 * _block`` splits.
``_block`` = load / 32, from 2 to 16.

Invariants (checked by ``_check``):

* every key in sublist i is < every key in sublist i + 1; keys are distinct;
* ``_maxes[i] == _keys[i][-1]``;
* every stored weight is a positive integer and ``_sums[i] == sum(_weights[i])``;
* ``_total == sum(_sums)``;
* when ``_fenwick`` is not None it is the Fenwick tree of ``_sums``;
* when ``_cumulative`` is not None, its first ``_stale`` entries are those of
  ``list(accumulate(_sums))`` (and it has one entry per sublist);
* when ``_marks[i]`` = [lengths, sums, ends, running] is not None, sublist i is cut into
  consecutive blocks of 1 to ``2 * _block`` positions: ``lengths`` and ``sums`` are each
  block's length and total weight; ``ends`` / ``running``, when not None, are their running
  sums (``list(accumulate(lengths))`` / ``list(accumulate(sums))``).

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
from math import gcd, isfinite

from .thresholds import exact

__all__ = ["QuantileTree", "QuantileTreeError"]

_INF = float("inf")
_DECIMAL_PLACES = 9  # floats with at most this many decimal places are read as decimals
_DECIMAL_SCALE = 10**_DECIMAL_PLACES
_FAST_DECIMAL_LIMIT = 1e6  # below it, round(x * 1e9) finds those decimals exactly
_MAX_SCALE_BITS = 4096


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
        if self._load < 1:
            raise QuantileTreeError(f"load must be a positive integer, got {load!r}")
        self._block = max(2, min(16, self._load // 32))
        self._keys: list[list[float]] = []
        self._weights: list[list[int]] = []
        self._maxes: list[float] = []
        self._sums: list[int] = []
        self._fenwick: list[int] | None = None
        self._cumulative: list[int] | None = None  # running sums of _sums, valid below _stale
        self._stale = 0
        self._quiet = 0  # queries since the last update
        self._marks: list[list[int] | None] = []
        self._total = 0
        self._scale = 1  # weights are stored as weight * _scale (an integer)
        self._int_cache: dict = {}
        for key, weight in items:
            self.insert(key, weight)

    # ------------------------------------------------------------------ weights
    def _to_int(self, weight) -> int:
        """Exact integer for ``weight`` at the current scale, rescaling if needed. O(1) usually.

        Only floats are cached: a Fraction or Decimal equal to a float hashes like it but may
        be read differently (Fraction(0.1) is the binary value, 0.1 the decimal).
        """
        is_float = type(weight) is float
        if is_float:
            cached = self._int_cache.get(weight)
            if cached is not None:
                return cached
        try:
            numerator, denominator = _ratio(weight)
        except (TypeError, ValueError):
            raise QuantileTreeError(f"weight must be a finite number >= 0, got {weight!r}") from None
        if numerator < 0:
            raise QuantileTreeError(f"weight must be >= 0, got {weight!r}")
        scale = self._scale
        if scale % denominator:
            self._refine(denominator, weight)
            scale = self._scale
        value = numerator * (scale // denominator)
        if is_float and len(self._int_cache) < 4096:
            self._int_cache[weight] = value
        return value

    def _factor_for(self, denominator: int, weight=None) -> int:
        """scale // denominator, after refining the scale so that it is a multiple."""
        if self._scale % denominator:
            self._refine(denominator, weight)
        return self._scale // denominator

    def _refine(self, denominator: int, weight) -> None:
        """Grow the scale to a multiple of ``denominator`` (at least doubling it). O(n)."""
        factor = needed = denominator // gcd(self._scale, denominator)
        if needed & (needed - 1) == 0:
            # Binary weights: make room for 2^-32 times finer ones at once, so a stream of
            # random weights rescales (O(n)) about never instead of at every new smallest one.
            factor = needed << 32
        if (self._scale * factor).bit_length() > _MAX_SCALE_BITS:
            shown = weight if weight is not None else f"1/{denominator}"
            raise QuantileTreeError(f"weight {shown!r} needs a finer common scale than the tree supports (2^{_MAX_SCALE_BITS})")
        self._rescale(factor)

    def _rescale(self, factor: int) -> None:
        """Multiply every stored integer by ``factor`` (a finer scale arrived). O(n)."""
        self._scale *= factor
        self._int_cache.clear()
        self._weights = [[w * factor for w in sub] for sub in self._weights]
        self._sums = [s * factor for s in self._sums]
        self._marks = [None] * len(self._weights)
        self._total *= factor
        self._fenwick = self._cumulative = None

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

    def _fresh_cumulative(self) -> list[int] | None:
        """Running sums of the sublist totals when they are current (or worth refreshing).

        Updates only mark them stale from the changed sublist on. A query bisects them when
        they are current; while updates keep coming it walks the Fenwick tree instead, and
        after enough queries in a row (about as many as a refresh costs) it refreshes them.
        """
        cumulative = self._cumulative
        if cumulative is not None and self._stale >= len(cumulative):
            return cumulative
        self._quiet += 1
        if self._quiet <= 2 + len(self._sums) // 64:
            return None
        if cumulative is None or self._stale == 0:
            cumulative = self._cumulative = list(accumulate(self._sums))
        else:
            stale = self._stale
            cumulative[stale:] = accumulate(self._sums[stale:], initial=cumulative[stale - 1])
            del cumulative[stale]  # the initial value
        self._stale = len(cumulative)
        return cumulative

    def _prefix_sublists(self, count: int) -> int:
        """Total weight of the first ``count`` sublists."""
        cumulative = self._cumulative
        if cumulative is None or self._stale < len(cumulative):
            cumulative = self._fresh_cumulative()
        if cumulative is not None:
            return cumulative[count - 1] if count else 0
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
        value = self._int_cache.get(weight) if type(weight) is float else None
        if value is None:
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
            self._marks.append(None)
            maxes.append(key)
            self._sums.append(value)
            self._total = value
            self._fenwick = self._cumulative = None
            return
        i = bisect_left(maxes, key)
        if i == len(maxes):
            i -= 1
            keys = self._keys[i]
            keys.append(key)
            self._weights[i].append(value)
            maxes[i] = key
            if self._marks[i] is not None:
                self._shift_marks(i, len(keys) - 1, value, 1)
        else:
            keys = self._keys[i]
            j = bisect_left(keys, key)
            if keys[j] == key:
                self._weights[i][j] += value
                if self._marks[i] is not None:
                    self._shift_marks(i, j, value, 0)
            else:
                keys.insert(j, key)
                self._weights[i].insert(j, value)
                if self._marks[i] is not None:
                    self._shift_marks(i, j, value, 1)
        self._sums[i] += value
        self._total += value
        self._quiet = 0
        if i < self._stale:
            self._stale = i
        tree = self._fenwick
        if tree is not None:  # _fenwick_add, inlined: this is the hot path of an online session
            node, size = i + 1, len(tree)
            while node < size:
                tree[node] += value
                node += node & -node
        if len(keys) > 2 * self._load:
            self._split(i)

    def _split(self, i: int) -> None:
        keys, weights = self._keys[i], self._weights[i]
        half = self._load
        self._keys[i : i + 1] = [keys[:half], keys[half:]]
        self._weights[i : i + 1] = [weights[:half], weights[half:]]
        self._marks[i : i + 1] = [None, None]
        self._maxes[i : i + 1] = [keys[half - 1], keys[-1]]
        self._sums[i : i + 1] = [sum(weights[:half]), sum(weights[half:])]
        self._fenwick = self._cumulative = None

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
            raise QuantileTreeError(f"cannot delete weight {_fmt(Fraction(*_ratio(weight)))} at key {key!r}: {have}")
        self._sums[i] -= value
        self._total -= value
        self._quiet = 0
        if i < self._stale:
            self._stale = i
        weights = self._weights[i]
        marks = self._marks[i]
        if stored > value:
            weights[j] = stored - value
            if marks is not None:
                self._shift_marks(i, j, -value, 0)
            if self._fenwick is not None:
                self._fenwick_add(i, -value)
            return
        del keys[j]
        del weights[j]
        if marks is not None:
            self._shift_marks(i, j, -value, -1)
        if keys:
            self._maxes[i] = keys[-1]
            if self._fenwick is not None:
                self._fenwick_add(i, -value)
        else:
            del self._keys[i], self._weights[i], self._maxes[i], self._sums[i], self._marks[i]
            self._fenwick = self._cumulative = None

    def _block_marks(self, i: int) -> list:
        """Sublist i's blocks [lengths, sums, ends, running], with the two running lists
        (re)built if an update dropped them. O(load) the first time, O(load / _block) after."""
        marks = self._marks[i]
        if marks is None:
            block = self._block
            weights = self._weights[i]
            starts = range(0, len(weights), block)
            lengths = [min(block, len(weights) - start) for start in starts]
            marks = self._marks[i] = [lengths, [sum(weights[start : start + block]) for start in starts], None, None]
        if marks[2] is None:
            marks[2] = list(accumulate(marks[0]))
        if marks[3] is None:
            marks[3] = list(accumulate(marks[1]))
        return marks

    def _shift_marks(self, i: int, j: int, value: int, moved: int) -> None:
        """Update sublist i's blocks after ``value`` was added at position j (``moved`` = 1:
        a new position j, -1: position j removed, 0: same positions). O(load / _block)."""
        marks = self._marks[i]
        lengths, sums, ends = marks[0], marks[1], marks[2]
        if ends is None:
            ends = list(accumulate(lengths))
        b = min(bisect_right(ends, j), len(lengths) - 1)  # the block holding (old) position j
        sums[b] += value
        marks[3] = None
        if moved:
            lengths[b] += moved
            marks[2] = None
            if moved > 0 and lengths[b] > 2 * self._block:  # split the block that grew
                start = ends[b - 1] if b else 0
                first = sum(self._weights[i][start : start + self._block])
                lengths[b : b + 1] = [self._block, lengths[b] - self._block]
                sums[b : b + 1] = [first, sums[b] - first]
            elif lengths[b] == 0:
                del lengths[b], sums[b]

    def _prefix_within(self, i: int, j: int) -> int:
        """Total weight of the first ``j`` keys of sublist i. O(log load + _block)."""
        marks = self._marks[i]
        if marks is None or marks[2] is None or marks[3] is None:
            marks = self._block_marks(i)
        ends, running = marks[2], marks[3]
        c = bisect_right(ends, j)
        if not c:
            return sum(self._weights[i][:j])
        return running[c - 1] + sum(self._weights[i][ends[c - 1] : j])

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
            if j:
                total += self._prefix_within(i, j)
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
        cumulative = self._cumulative
        if cumulative is None or self._stale < len(cumulative):
            cumulative = self._fresh_cumulative()
        if cumulative is not None:
            pos = bisect_right(cumulative, bound)
            acc = cumulative[pos - 1] if pos else 0
        else:
            tree = self._fenwick if self._fenwick is not None else self._build_fenwick()
            # Fenwick descent: largest count of whole sublists whose total is <= bound.
            pos, acc = 0, 0
            size = len(tree)
            step = 1 << (size - 1).bit_length()
            while step:
                nxt = pos + step
                if nxt < size:
                    here = acc + tree[nxt]
                    if here <= bound:
                        pos, acc = nxt, here
                step >>= 1
        # Inside sublist pos: bisect the checkpoints, then scan at most one block.
        bound -= acc
        marks = self._marks[pos]
        if marks is None or marks[3] is None or marks[2] is None:
            marks = self._block_marks(pos)
        ends, running = marks[2], marks[3]
        c = bisect_right(running, bound)
        if c:
            start, base = ends[c - 1], running[c - 1]
        else:
            start, base = 0, 0
        within = list(accumulate(self._weights[pos][start : ends[c]], initial=base))
        return self._keys[pos][start + bisect_right(within, bound) - 1]

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
        try:
            numerator, denominator = _ratio(m)
        except (TypeError, ValueError):
            raise QuantileTreeError(f"search_greater: m must be a finite number, got {m!r}") from None
        return self._search_int(numerator * self._scale // denominator)  # cdf > m*scale <=> cdf > floor(m*scale)

    def quantile(self, q: float) -> float:
        """inf{v : cdf(v) >= q * total}, for q in [0, 1]. O(log n + load).

        By that definition the answer is -inf when q * total is 0 (q = 0, or an empty tree).

        >>> t = QuantileTree([(1.0, 1), (2.0, 1), (3.0, 1), (4.0, 1)])
        >>> t.quantile(0.5), t.quantile(0.51), t.quantile(1.0), t.quantile(0.0)
        (2.0, 3.0, 4.0, -inf)
        """
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
        assert len(self._marks) == len(self._weights), "checkpoints misaligned"
        for marks, weights in zip(self._marks, self._weights):
            if marks is not None:
                lengths, sums, ends, running = marks
                assert all(0 < n <= 2 * self._block for n in lengths), "block empty or too long"
                assert sum(lengths) == len(weights), "block lengths do not cover the sublist"
                starts = [0, *accumulate(lengths)]
                assert sums == [sum(weights[a:b]) for a, b in zip(starts, starts[1:])], "block sums stale"
                assert ends is None or ends == starts[1:], "block ends stale"
                assert running is None or running == list(accumulate(sums)), "block running sums stale"
        if self._cumulative is not None:
            assert len(self._cumulative) == len(self._sums), "cumulative sums misaligned"
            stale = min(self._stale, len(self._sums))
            assert self._cumulative[:stale] == list(accumulate(self._sums))[:stale], "cumulative sums stale"
        if self._fenwick is not None:
            expected = self._fenwick
            self._fenwick = None
            assert self._build_fenwick() == expected, "fenwick stale"


def _fmt(q: Fraction) -> str:
    return str(q.numerator) if q.denominator == 1 else repr(float(q))
