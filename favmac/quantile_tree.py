"""QuantileTree: an exact weighted empirical distribution with O(log n) updates and queries.

Layout (after sortedcontainers' SortedList): the distinct keys are kept in sorted
sublists of at most ``2 * load`` keys; ``_weights`` mirrors ``_keys`` element for element.
Weights are stored as exact integers at a common scale (an integer multiple of every
weight's denominator), so sums never drift and ties compare exactly. How a number is
read: a float with at most 9 decimal places as printed ("0.331", "4.1", "1e-05") is that
decimal, so the SPEC's decimal ties are exact; any other float ("0.8444218515250481",
a random weight) is its exact binary value m / 2^e; ints and Fractions are themselves.

Prefix sums over the sublists: consecutive sublists form groups of ``2^_group_shift``
(about sqrt(number of sublists / 8), at least 4); the group totals have running sums, and
each group the running sums of its sublists' totals. An update adds to one group total
and marks the group running sums stale from that group on, and that group's inner running
sums from that sublist on; a query refreshes the stale suffixes it needs (O(groups) and
O(group size)) -- not at all when its answer lies in the still-fresh prefix -- then
bisects twice. Groups are small on purpose: in an online session (one update per query)
the group sums, touched by every update, are in the CPU cache, the sublist totals are
not, so a longer group-level refresh and a shorter inner one is the cheaper mix (measured:
online step 2.95x -> 2.8x SortedList at 10^6 keys against groups of sqrt(2 * sublists)).
A split (which shifts sublist indexes) drops the groups; the next query rebuilds them,
O(number of sublists).

Inside a sublist, blocks of positions with their lengths and totals (built by the first
query that needs them) reduce the scan to a bisection plus at most ``2 * _block``
additions. An update finds its block by bisecting the block bounds with its key (no
positions to recount), changes that block's length and total and marks the block running
sums stale from that block on; a search there extends the fresh prefix only as far as it
needs (at most O(load / _block)); a block that grows past ``2 * _block`` splits. ``_block`` = load / 32, from 2 to 16. A sublist queried more
than ``_FULL_AFTER`` times since its last update also keeps the running sums of all its
weights (O(load) to build, then a query there is one bisection). An update does not free
them (that alone costs O(load)): they become ``kept``, fresh below the updated position,
and answer the queries that fall in that prefix; the next rebuild refreshes only the
stale suffix.

Invariants (checked by ``_check``):

* every key in sublist i is < every key in sublist i + 1; keys are distinct;
* ``_maxes[i] == _keys[i][-1]``;
* every stored weight is a positive integer and ``_sums[i] == sum(_weights[i])``;
* ``_total == sum(_sums)``;
* when ``_group_sums`` is not None, with G = 2^``_group_shift``: ``_group_sums[g]`` is the
  total of sublists g*G to g*G + G - 1 (one entry per group, the last may be partial);
  ``_group_running`` has one entry per group and its first ``_group_stale`` entries are
  those of ``list(accumulate(_group_sums))``; ``_group_inner[g]`` is empty (not built yet)
  or has one entry per sublist of group g, and its first ``_group_fresh[g]`` entries are
  those of ``list(accumulate(_sums[g*G : g*G + G]))``;
* when ``_marks[i]`` = [lengths, sums, bounds, running, full, hits, fresh, kept,
  kept_fresh] is not None,
  sublist i is cut into consecutive blocks of 1 to ``2 * _block`` positions: ``lengths``
  and ``sums`` are each block's length and total weight; ``bounds`` has one separator per
  block after the first: every key of block c - 1 is < ``bounds[c - 1]`` <= every key of
  block c (so ``bisect_right(bounds, key)`` is the block of a key); the first ``fresh`` entries of ``running`` are those of
  ``list(accumulate(sums))`` (an update marks it stale from the changed block on, a query
  refreshes that suffix); ``full``, when not None, is ``list(accumulate(_weights[i]))``;
  ``hits`` >= 0 counts the queries since the sublist's last update; ``kept`` is None (then
  ``kept_fresh`` is 0) or a list whose first ``kept_fresh`` <= len(_weights[i]) entries are
  those of ``list(accumulate(_weights[i]))``; ``full`` and ``kept`` are never both set.

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
_FULL_AFTER = 8  # queries of an unchanged sublist before it keeps the running sums of all its weights


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
        self._group_shift = 2
        self._group_sums: list[int] | None = None  # None: rebuilt by the next query
        self._group_running: list[int] = []  # running sums of _group_sums, valid below _group_stale
        self._group_stale = 0
        self._group_inner: list[list[int]] = []  # running sums within each group, valid below _group_fresh
        self._group_fresh: list[int] = []
        self._marks: list[list | None] = []
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
        self._group_sums = None

    def _to_float(self, value: int) -> float:
        return value / self._scale  # int / int is correctly rounded

    # ------------------------------------------------------------------ groups
    def _build_groups(self) -> None:
        """(Re)build the group sums of the sublist totals. O(number of sublists)."""
        sums = self._sums
        shift = self._group_shift = max(2, (len(sums).bit_length() - 3) // 2)
        size = 1 << shift
        group_sums = self._group_sums = [sum(sums[k : k + size]) for k in range(0, len(sums), size)]
        self._group_running = list(accumulate(group_sums))
        self._group_stale = len(group_sums)
        self._group_inner = [[] for _ in group_sums]
        self._group_fresh = [0] * len(group_sums)

    def _fresh_group_running(self) -> list[int]:
        """The group running sums, refreshed from the first stale group on. O(groups)."""
        if self._group_sums is None:
            self._build_groups()
        running, stale = self._group_running, self._group_stale
        if stale < len(running):
            if stale:
                running[stale:] = accumulate(self._group_sums[stale:], initial=running[stale - 1])
                del running[stale]  # the initial value
            else:
                running[:] = accumulate(self._group_sums)
            self._group_stale = len(running)
        return running

    def _inner_running(self, g: int) -> list[int]:
        """Running sums of the totals of group g's sublists. O(group size) to rebuild."""
        inner, fresh = self._group_inner[g], self._group_fresh[g]
        if not inner or fresh < len(inner):  # (re)build it from the first stale entry on
            shift = self._group_shift
            first, last = g << shift, (g + 1) << shift
            if fresh:
                inner[fresh:] = accumulate(self._sums[first + fresh : last], initial=inner[fresh - 1])
                del inner[fresh]  # the initial value
            else:
                inner[:] = accumulate(self._sums[first:last])
            self._group_fresh[g] = len(inner)
        return inner

    def _prefix_sublists(self, count: int) -> int:
        """Total weight of the first ``count`` sublists."""
        if not count:
            return 0
        if self._group_sums is None:
            self._build_groups()
        g = count >> self._group_shift
        r = count - (g << self._group_shift)
        total = 0
        if g:
            running = self._group_running
            total = running[g - 1] if g <= self._group_stale else self._fresh_group_running()[g - 1]
        if r:
            inner = self._group_inner[g]
            total += inner[r - 1] if inner and r <= self._group_fresh[g] else self._inner_running(g)[r - 1]
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
            self._group_sums = None
            return
        i = bisect_left(maxes, key)
        if i == len(maxes):
            i -= 1
            keys = self._keys[i]
            keys.append(key)
            self._weights[i].append(value)
            maxes[i] = key
            if self._marks[i] is not None:
                self._shift_marks(i, key, len(keys) - 1, value, 1)
        else:
            keys = self._keys[i]
            j = bisect_left(keys, key)
            if keys[j] == key:
                self._weights[i][j] += value
                if self._marks[i] is not None:
                    self._shift_marks(i, key, j, value, 0)
            else:
                keys.insert(j, key)
                self._weights[i].insert(j, value)
                if self._marks[i] is not None:
                    self._shift_marks(i, key, j, value, 1)
        self._sums[i] += value
        self._total += value
        group_sums = self._group_sums
        if group_sums is not None:  # _add_to_group, inlined: the hot path of an online session
            g = i >> self._group_shift
            group_sums[g] += value
            if g < self._group_stale:
                self._group_stale = g
            r = i - (g << self._group_shift)
            if r < self._group_fresh[g]:
                self._group_fresh[g] = r
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
        self._group_sums = None

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
        self._add_to_group(i, -value)
        weights = self._weights[i]
        marks = self._marks[i]
        if stored > value:
            weights[j] = stored - value
            if marks is not None:
                self._shift_marks(i, key, j, -value, 0)
            return
        del keys[j]
        del weights[j]
        if marks is not None:
            self._shift_marks(i, key, j, -value, -1)
        if keys:
            self._maxes[i] = keys[-1]
        else:
            del self._keys[i], self._weights[i], self._maxes[i], self._sums[i], self._marks[i]
            self._group_sums = None

    def _add_to_group(self, i: int, value: int) -> None:
        """Record that sublist i's total changed by ``value`` in the group sums. O(1)."""
        group_sums = self._group_sums
        if group_sums is not None:
            g = i >> self._group_shift
            group_sums[g] += value
            if g < self._group_stale:
                self._group_stale = g
            r = i - (g << self._group_shift)
            if r < self._group_fresh[g]:
                self._group_fresh[g] = r

    def _block_marks(self, i: int, bound: int | None = None, prefix: int = 0) -> list:
        """Sublist i's marks for a query: counts the query, and returns them with ``full``
        built (after ``_FULL_AFTER`` queries since the last update) or else with the block
        running sums refreshed (skipped when the kept running sums answer: a search for
        ``bound`` where a fresh one exceeds it, or a prefix of ``prefix`` fresh ones; or for
        a search when a fresh block running sum exceeds ``bound``). O(load) to build ``full`` or the blocks, O(load / _block)
        to refresh the running sums."""
        marks = self._marks[i]
        if marks is None:
            block = self._block
            weights = self._weights[i]
            starts = range(0, len(weights), block)
            lengths = [min(block, len(weights) - start) for start in starts]
            keys = self._keys[i]
            marks = self._marks[i] = [lengths, [sum(weights[start : start + block]) for start in starts],
                                      [keys[start] for start in starts[1:]], [], None, 0, 0, None, 0]
        marks[5] += 1
        if marks[4] is None and marks[5] > _FULL_AFTER:
            kept, fresh = marks[7], marks[8]
            if kept is not None and fresh:  # refresh the stale suffix of the kept running sums
                kept[fresh:] = accumulate(self._weights[i][fresh:], initial=kept[fresh - 1])
                del kept[fresh]  # the initial value
                marks[4] = kept
            else:
                marks[4] = list(accumulate(self._weights[i]))
            marks[7], marks[8] = None, 0
        if marks[4] is not None:
            return marks
        kept_fresh = marks[8]
        if kept_fresh and (prefix <= kept_fresh if bound is None else marks[7][kept_fresh - 1] > bound):
            return marks  # the kept running sums answer
        sums, running, fresh = marks[1], marks[3], marks[6]
        if bound is not None and fresh and running[fresh - 1] > bound:
            return marks  # the search stays within the fresh prefix
        if fresh < len(sums) or len(running) != len(sums):  # refresh the stale suffix
            if fresh:
                running[fresh:] = accumulate(sums[fresh:], initial=running[fresh - 1])
                del running[fresh]  # the initial value
            else:
                running[:] = accumulate(sums)
            marks[6] = len(sums)
        return marks

    def _shift_marks(self, i: int, key: float, j: int, value: int, moved: int) -> None:
        """Update sublist i's blocks after ``value`` was added at ``key``, position j (``moved`` = 1:
        a new position j, -1: position j removed, 0: same positions). The block is found by
        bisecting the block bounds with the key: O(log(load / _block)) but for a block split."""
        marks = self._marks[i]
        lengths, sums, bounds = marks[0], marks[1], marks[2]
        b = bisect_right(bounds, key)  # the block holding key
        sums[b] += value
        if marks[4] is not None:  # keep the running sums of all weights, fresh below j: freeing
            marks[7], marks[8] = marks[4], j  # them here would cost O(load) per update
            marks[4] = None
        elif j < marks[8]:
            marks[8] = j
        marks[5] = 0
        if b < marks[6]:
            marks[6] = b
        if moved:
            length = lengths[b] = lengths[b] + moved
            if length > 2 * self._block:
                self._split_block(i, b)
            elif not length:
                del lengths[b], sums[b]
                if bounds:
                    del bounds[b - 1 if b else 0]

    def _split_block(self, i: int, b: int) -> None:
        """Cut block b of sublist i, grown past ``2 * _block`` positions, after its first ``_block``."""
        lengths, sums, bounds = self._marks[i][:3]
        start = sum(lengths[:b])
        half = start + self._block
        first = sum(self._weights[i][start:half])
        lengths[b : b + 1] = [self._block, lengths[b] - self._block]
        sums[b : b + 1] = [first, sums[b] - first]
        bounds.insert(b, self._keys[i][half])

    def _prefix_within(self, i: int, j: int) -> int:
        """Total weight of the first ``j`` keys of sublist i. O(log load + _block)."""
        marks = self._marks[i]
        if marks is None or marks[4] is None:
            marks = self._block_marks(i, prefix=j)
        full = marks[4]
        if full is not None:
            return full[j - 1] if j else 0
        if j <= marks[8]:  # within the fresh prefix of the kept running sums (j >= 1 here)
            return marks[7][j - 1]
        keys = self._keys[i]
        if j == len(keys):
            return self._sums[i]
        c = bisect_right(marks[2], keys[j])  # the block holding position j; blocks before it lie in the prefix
        if not c:
            return sum(self._weights[i][:j])
        return marks[3][c - 1] + sum(self._weights[i][sum(marks[0][:c]) : j])

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
        maxes = self._maxes
        i = bisect_right(maxes, v)
        total = self._prefix_sublists(i) if i else 0
        if i < len(maxes):
            j = bisect_right(self._keys[i], v)
            if j:
                marks = self._marks[i]
                if marks is not None and marks[4] is not None:  # _prefix_within, its fast case inlined
                    marks[5] += 1
                    total += marks[4][j - 1]
                else:
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
        # the group, then the sublist within it, whose running sums first exceed bound; a
        # stale suffix is refreshed only when the bound lies beyond the still-fresh prefix
        running = self._group_running
        stale = self._group_stale
        if self._group_sums is None or (stale < len(running) and not (stale and running[stale - 1] > bound)):
            running = self._fresh_group_running()
            stale = len(running)
        g = bisect_right(running, bound, 0, stale)
        if g:
            bound -= running[g - 1]
        inner, fresh = self._group_inner[g], self._group_fresh[g]
        if not inner or (fresh < len(inner) and not (fresh and inner[fresh - 1] > bound)):
            inner = self._inner_running(g)
            fresh = len(inner)
        k = bisect_right(inner, bound, 0, fresh)
        if k:
            bound -= inner[k - 1]
        pos = (g << self._group_shift) + k
        # inside sublist pos: bisect all its running sums, or the blocks and then one block
        marks = self._marks[pos]
        if marks is None or (marks[5] >= _FULL_AFTER and marks[4] is None):
            marks = self._block_marks(pos, bound)  # builds the blocks, or the full running sums
        else:
            marks[5] += 1
        full = marks[4]
        if full is not None:
            return self._keys[pos][bisect_right(full, bound)]
        fresh = marks[8]
        if fresh and marks[7][fresh - 1] > bound:  # the answer lies in the kept fresh prefix
            return self._keys[pos][bisect_right(marks[7], bound, 0, fresh)]
        running, fresh, lengths = marks[3], marks[6], marks[0]
        if not (fresh and running[fresh - 1] > bound):
            # extend the fresh prefix of the block running sums only as far as this search
            # needs: with one update per query it is stale about a third of the time, and
            # each refreshed entry reads a block total and frees an old sum that are cold
            # in the CPU cache (a whole-suffix refresh cost 10% of an online step)
            count = len(lengths)
            if len(running) != count:  # blocks were split or dropped: resize (stale entries)
                if len(running) > count:
                    del running[count:]
                else:
                    running.extend(lengths[len(running) :])
            sums = marks[1]
            total = running[fresh - 1] if fresh else 0
            while total <= bound:  # ends within the sublist: its total exceeds bound
                total += sums[fresh]
                running[fresh] = total
                fresh += 1
            marks[6] = fresh
        c = bisect_right(running, bound, 0, fresh)
        if c:
            start = sum(lengths[:c])
            bound -= running[c - 1]
        else:
            start = 0
        within = list(accumulate(self._weights[pos][start : start + lengths[c]]))
        return self._keys[pos][start + bisect_right(within, bound)]

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
        return self._search_int(numerator * self._scale // denominator)  # cdf > m*scale <=> cdf > floor(m*scale)

    def quantile(self, q: float) -> float:
        """inf{v : cdf(v) >= q * total}, for q in [0, 1]. O(log n + load).

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
        for marks, weights, keys in zip(self._marks, self._weights, self._keys):
            if marks is not None:
                lengths, sums, bounds, running, fresh = *marks[:4], marks[6]
                assert all(0 < n <= 2 * self._block for n in lengths), "block empty or too long"
                assert sum(lengths) == len(weights), "block lengths do not cover the sublist"
                starts = [0, *accumulate(lengths)]
                assert sums == [sum(weights[a:b]) for a, b in zip(starts, starts[1:])], "block sums stale"
                assert len(bounds) == len(lengths) - 1, "block bounds misaligned"
                assert all(keys[a - 1] < bound <= keys[a] for a, bound in zip(starts[1:], bounds)), "block bounds stale"
                assert 0 <= fresh <= len(running) and running[:fresh] == list(accumulate(sums))[:fresh], "block running sums stale"
        for marks, weights in zip(self._marks, self._weights):
            if marks is not None:
                assert marks[4] is None or marks[4] == list(accumulate(weights)), "full running sums stale"
                kept, fresh = marks[7], marks[8]
                assert kept is not None or fresh == 0, "kept running sums misaligned"
                assert marks[4] is None or kept is None, "both full and kept running sums"
                if kept is not None:
                    assert 0 <= fresh <= min(len(kept), len(weights)), "kept running sums misaligned"
                    assert kept[:fresh] == list(accumulate(weights))[:fresh], "kept running sums stale"
                assert isinstance(marks[5], int) and marks[5] >= 0, "query count invalid"
        if self._group_sums is not None:
            size = 1 << self._group_shift
            sums = self._sums
            assert self._group_sums == [sum(sums[k : k + size]) for k in range(0, len(sums), size)], "group sums stale"
            assert len(self._group_running) == len(self._group_sums), "group running sums misaligned"
            stale = min(self._group_stale, len(self._group_sums))
            assert self._group_running[:stale] == list(accumulate(self._group_sums))[:stale], "group running sums stale"
            assert len(self._group_inner) == len(self._group_sums), "group inner sums misaligned"
            for g, (inner, fresh) in enumerate(zip(self._group_inner, self._group_fresh)):
                expected = list(accumulate(sums[g * size : (g + 1) * size]))
                assert len(inner) in (0, len(expected)) and 0 <= fresh <= len(inner), "group inner sums misaligned"
                assert inner[:fresh] == expected[:fresh], "group inner sums stale"


def _fmt(q: Fraction) -> str:
    return str(q.numerator) if q.denominator == 1 else repr(float(q))
