"""Exact expected-cost thresholds at the few queries where the coarse brackets disagree.

Cost weights with many decimals make the exact sums overflow int64; the replay engine then runs
at a coarser scale ``S / D`` with every weight rounded down and up (``ExactCosts.brackets``) and
the exact threshold lies between the two answers (``favmac.replay.engine.Engine._bracketed``). Where
they differ (a near-tie finer than the coarse scale), this module decides the query exactly.

Every exact integer here is kept as two int64 limbs ``(q, r)`` worth ``q * D + r`` with
``0 <= r < D``: a realized cost is ``sum floor(W_k / D)`` plus ``sum (W_k mod D)``, a sum of them
is normalized as it grows, and comparisons are lexicographic. For a query with brackets
``[low_key, high_key]`` one pass over its calibration patients gives F just below ``low_key``
(the base) and the increments of F at each key in the bracket (events); the threshold is the
first event key where F exceeds the bound M = c (m + 1) - C_max (docs/method.md "Thresholds").
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .thresholds import INT64_LIMIT, ExactCosts, exact, floor_linear, limbs_fit

__all__ = ["CostLimbs", "NearTieQueries", "fits", "resolve"]

_EVENTS = 1 << 12  # increments kept per query; a bracket holding more is left to the exact loop
_QUERIES = 1 << 10  # near-ties decided here at most; more are left to the exact loop


class NearTieQueries:
    """The queries to decide: for each, the target index, the calibration patients (a group and a
    window of arrival positions) and the bracket of keys."""

    def __init__(self):
        self.target, self.group, self.first, self.stop, self.size, self.low, self.high = ([] for _ in range(7))

    def add(self, target: int, group: int, first: int, stop: int, size: int, low: float, high: float) -> None:
        """Calibration patients: those of ``group`` whose arrival position is in [first, stop), ``size`` of them."""
        for name, value in zip(("target", "group", "first", "stop", "size", "low", "high"),
                               (target, group, first, stop, size, low, high)):
            getattr(self, name).append(value)

    def __len__(self) -> int:
        return len(self.target)


class CostLimbs:
    """Exact realized costs whose values overflow int64, as two int64 tables: ``divisor * low + rest``
    with ``0 <= rest < divisor`` (:meth:`ExactCosts.limbs`). Indexed like the (N, M) table it stands
    for (``limbs[start:stop]``, ``limbs[order]``, ``limbs[rows, index]``), and ``limbs > bound`` (an
    exact integer, :meth:`ExactCosts.bound`) is the exact "cost > target" table: the replay's
    ``exceeds`` and violation scores without Python integers.

    ``dtype`` is object, as the table's would be: the int64 engine paths decline it as they decline
    that table.

    >>> costs = ExactCosts([0.123456789012345678, 2.5] * 20)
    >>> from favmac import AdditiveCost, AdditiveValue
    >>> from favmac.universe import candidate_sets
    >>> labels = np.zeros((1, 40), dtype=bool); labels[0, 1] = True
    >>> cands = candidate_sets(np.linspace(0.9, 0.1, 40)[None, :], AdditiveValue(), AdditiveCost(), "ratio")
    >>> limbs = CostLimbs.realized(costs, cands, labels)
    >>> table = costs.realized(cands, labels)
    >>> bound = int(table[0, 20])
    >>> bool(np.array_equal(limbs > bound, table > bound)), bool(np.array_equal(limbs[0:1, [3, 7]] > bound - 1, table[0:1, [3, 7]] > bound - 1))
    (True, True)
    """

    dtype = np.dtype(object)

    def __init__(self, low: np.ndarray, rest: np.ndarray, divisor: int):
        self.low, self.rest, self.divisor = low, rest, divisor

    @classmethod
    def realized(cls, costs: ExactCosts, candidates, labels, limbs=None) -> "CostLimbs":
        """``costs.realized`` of these patients (``limbs``: ``costs.limbs()``, already computed)."""
        divisor, low, rest = limbs or costs.limbs()
        low_part = low.realized(candidates, labels).astype(np.int64, copy=False)
        rest_part = rest.realized(candidates, labels).astype(np.int64, copy=False)
        return cls(low_part + rest_part // divisor, rest_part % divisor, divisor)

    @classmethod
    def stack(cls, parts) -> "CostLimbs":
        """The rows of ``parts`` (CostLimbs of one divisor) one after the other."""
        return cls(np.concatenate([p.low for p in parts]), np.concatenate([p.rest for p in parts]), parts[0].divisor)

    @property
    def shape(self) -> tuple:
        return self.low.shape

    def __len__(self) -> int:
        return len(self.low)

    def __getitem__(self, index) -> "CostLimbs":
        return CostLimbs(self.low[index], self.rest[index], self.divisor)

    def __gt__(self, bound) -> np.ndarray:
        bound = int(bound)
        if bound < 0:  # realized costs are >= 0
            return np.ones(self.shape, dtype=bool)
        q, r = divmod(bound, self.divisor)
        if q >= INT64_LIMIT:  # no limb reaches it
            return np.zeros(self.shape, dtype=bool)
        return (self.low > q) | ((self.low == q) & (self.rest > r))


fits = limbs_fit  # the one rule (favmac.thresholds)


def resolve(queries: NearTieQueries, chunks, costs, divisor: int, targets, group: np.ndarray, position: np.ndarray):
    """Exact thresholds of ``queries`` (an array aligned with them), or None when a bracket holds more
    than :data:`_EVENTS` increments or the limbs could overflow.

    ``chunks`` yields ``(rows, keys, cost_floor, cost_rest)`` per block of patients: the patients'
    indices, their candidates' keys (non-decreasing along each row) and the candidates' exact
    realized costs as two limbs, ``D * floor + rest`` (:class:`CostLimbs`; a rest below (K + 1) D). ``group`` and ``position`` are each patient's group and
    arrival position (its index in the arrival order)."""
    n_codes = len(costs.weights)
    if not fits(divisor, n_codes) or len(queries) > _QUERIES:
        return None
    n = len(queries)
    q_limb, r_limb = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    for i in range(n):  # floor(M) at the exact scale, as two limbs
        slope = exact(targets[queries.target[i]]) * costs.scale
        bound = int(floor_linear(slope, slope - costs.c_max_scaled, [queries.size[i]])[0])
        q, r = divmod(bound, divisor)
        if bound < 0 or q >= INT64_LIMIT:  # -inf and +inf are never near-ties (both brackets agree)
            return None
        q_limb[i], r_limb[i] = q, r
    arrays = [np.asarray(getattr(queries, name), dtype=dtype) for name, dtype in
              (("group", np.int64), ("first", np.int64), ("stop", np.int64), ("low", float), ("high", float))]
    base = np.zeros((n, 2), dtype=np.int64)
    event_keys = np.empty((n, _EVENTS))
    event_limbs = np.empty((n, _EVENTS, 2), dtype=np.int64)
    counts = np.zeros(n, dtype=np.int64)
    for rows, keys, floor_part, rest_part in chunks:
        ok = _gather(rows, np.ascontiguousarray(keys, dtype=float), np.ascontiguousarray(floor_part, dtype=np.int64),
                     np.ascontiguousarray(rest_part, dtype=np.int64), group, position, *arrays, np.int64(divisor),
                     np.int64(n_codes + 1), base, event_keys, event_limbs, counts)
        if not ok:
            return None
    out = np.empty(n)
    for i in range(n):
        out[i] = _first_exceeding(base[i], event_keys[i, : counts[i]], event_limbs[i, : counts[i]], q_limb[i], r_limb[i],
                                  divisor)
    return out


def _first_exceeding(base, keys, limbs, q_bound, r_bound, divisor) -> float:
    """The smallest event key where base + the increments so far exceed the bound (+inf if none)."""
    order = np.argsort(keys, kind="stable")
    q, r = int(base[0]), int(base[1])
    i = 0
    while i < len(order):
        key = keys[order[i]]
        while i < len(order) and keys[order[i]] == key:  # every increment at this key
            q, r = q + int(limbs[order[i], 0]), r + int(limbs[order[i], 1])
            i += 1
        q, r = q + r // divisor, r % divisor
        if (q, r) > (q_bound, r_bound):
            return float(key)
    return float("inf")


@njit(cache=True)
def _greater(q1, r1, q2, r2, divisor, span):
    """(q1 D + r1) > (q2 D + r2), exactly, for limbs with 0 <= r < span D (span D fits int64)."""
    d = q1 - q2
    if d >= span:
        return True
    if d <= -span:
        return False
    return d * divisor + (r1 - r2) > 0


@njit(cache=True)
def _gather(rows, keys, floor_part, rest_part, group, position, q_group, q_first, q_stop, q_low, q_high, divisor,
            span, base, event_keys, event_limbs, counts):
    """Add the patients ``rows`` to every query they calibrate: their C+ below the bracket to the base,
    their increments inside it as events. False when a query's events overflow."""
    n_queries = len(q_group)
    n_rows, n_sets = keys.shape
    capacity = event_keys.shape[1]
    for a in range(n_rows):
        i = rows[a]
        for q in range(n_queries):
            if group[i] != q_group[q] or position[i] < q_first[q] or position[i] >= q_stop[q]:
                continue
            best_q = np.int64(0)
            best_r = np.int64(0)
            in_base = True
            for j in range(n_sets):
                key = keys[a, j]
                if key > q_high[q]:
                    break
                cq = floor_part[a, j]
                cr = rest_part[a, j]
                if not _greater(cq, cr, best_q, best_r, divisor, span):
                    continue
                if key < q_low[q]:
                    best_q, best_r = cq, cr
                    continue
                if in_base:  # the running max below the bracket joins the base
                    base[q, 0] += best_q + (base[q, 1] + best_r) // divisor
                    base[q, 1] = (base[q, 1] + best_r) % divisor
                    in_base = False
                if counts[q] >= capacity:
                    return False
                # the increment (cq, cr) - (best_q, best_r), with a non-negative second limb
                dq = cq - best_q
                dr = cr - best_r
                while dr < 0:
                    dr += divisor
                    dq -= 1
                event_keys[q, counts[q]] = key
                event_limbs[q, counts[q], 0] = dq
                event_limbs[q, counts[q], 1] = dr
                counts[q] += 1
                best_q, best_r = cq, cr
            if in_base:
                base[q, 0] += best_q + (base[q, 1] + best_r) // divisor
                base[q, 1] = (base[q, 1] + best_r) % divisor
    return True
