"""Exact expected-cost thresholds at the few queries where the coarse brackets disagree.

Cost weights with many decimals make the exact sums overflow int64; the replay engine then runs
at a coarser scale ``S / D`` with every weight rounded down and up (``ExactCosts.brackets``) and
the exact threshold lies between the two answers (``favmac.replay._Engine._bracketed``). Where
they differ (a near-tie finer than the coarse scale), this module decides the query exactly.

Every exact integer here is kept as two int64 limbs ``(q, r)`` worth ``q * D + r`` with
``0 <= r < D``: a realized cost is ``sum floor(W_k / D)`` plus ``sum (W_k mod D)``, a sum of them
is normalized as it grows, and comparisons are lexicographic. For a query with brackets
``[low_key, high_key]`` one pass over its calibration patients gives F just below ``low_key``
(the base) and the increments of F at each key in the bracket (events); the threshold is the
first event key where F exceeds the bound M = c (m + 1) - C_max (SPEC "Thresholds").
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .thresholds import INT64_LIMIT, exact, floor_linear

__all__ = ["NearTieQueries", "fits", "resolve"]

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


def fits(divisor: int, n_codes: int) -> bool:
    """Whether limbs of this divisor fit int64: a remainder sum is below (K + 1) D, and K + 2 of them are added."""
    return divisor * (n_codes + 2) < INT64_LIMIT


def resolve(queries: NearTieQueries, chunks, costs, divisor: int, targets, group: np.ndarray, position: np.ndarray):
    """Exact thresholds of ``queries`` (an array aligned with them), or None when a bracket holds more
    than :data:`_EVENTS` increments or the limbs could overflow.

    ``chunks`` yields ``(rows, keys, cost_floor, cost_rest)`` per block of patients: the patients'
    indices, their candidates' keys (non-decreasing along each row) and the candidates' exact
    realized costs split as ``floor`` and ``rest`` sums (each weight W_k at the exact scale as
    ``floor(W_k / D)`` and ``W_k mod D``). ``group`` and ``position`` are each patient's group and
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
