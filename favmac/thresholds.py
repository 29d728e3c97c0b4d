"""Threshold arithmetic: the one place where numbers, ranks and bounds are decided exactly.

Every number is read as the decimal it prints as. Targets, deltas and weights come from
forms and CSV files as decimals ("4.1", "0.331"); reading them as those decimals — not as
the nearest binary float — makes docs/method.md's ties exact: with c = 4.1 and N + 1 = 10,
c(N+1) is exactly 41, so F(b) = 41 - C_max is a tie (not "> M"), and delta = 0.1 with
N + 1 = 20 gives k = 18. All sums of such numbers are integers at a common scale 10^d, so
comparisons need no tolerance.

Contents
--------
* numbers: :func:`exact`, :func:`decimal_places`, :func:`common_scale`, :func:`scaled_int`,
  :func:`floor_linear` (exact ``floor(a x + b)`` over an integer array);
* costs: :class:`ExactCosts` (cost weights as integers at one decimal scale, realized costs,
  the exact "cost > target" flags);
* expected-cost control: :func:`expected_margin` (M = c(N+1) - C_max) and
  :func:`expected_bounds` (floor(M * scale) for every calibration size);
* ranks: :func:`violation_rank` / :func:`violation_ranks` (k = ceil((1 - delta)(N + 1))),
  :func:`quantile_rank` (the conformal quantile's rank, ceil(beta (m + 1))), and the edge
  rule :func:`rank_edge` ("k > n gives -inf, k <= 0 gives +inf");
* calibration points: :func:`calibration_points`, :func:`violation_scores`.

This module is plain Python and numpy (no numba), so ``import favmac`` stays fast; the
compiled kernels compile :func:`rank_edge` itself with ``numba.njit`` so the rule is
written once.
"""
from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

import numpy as np

__all__ = [
    "calibration_count",
    "INT64_LIMIT",
    "ExactCosts",
    "calibration_points",
    "calibration_weights",
    "common_scale",
    "decimal_places",
    "exact",
    "expected_bounds",
    "limbs_fit",
    "expected_margin",
    "floor_linear",
    "quantile_rank",
    "rank_edge",
    "scaled_int",
    "violation_rank",
    "violation_ranks",
    "violation_scores",
]

#: The one overflow rule: exact integer arithmetic stays in int64 while every quantity is
#: below 2^62 (headroom for sums of two such numbers); above it, Python integers or a slower
#: exact path take over.
INT64_LIMIT = 2**62
_INT64_SAFE = INT64_LIMIT


# ---------------------------------------------------------------------------------------
# Numbers
# ---------------------------------------------------------------------------------------
@lru_cache(maxsize=4096)
def _float_to_fraction(x: float) -> Fraction:
    return Fraction(repr(x))


def exact(x) -> Fraction:
    """The exact rational a number stands for (floats by their shortest decimal repr).

    Parameters
    ----------
    x : int, float, Decimal or Fraction
        A finite number.

    Returns
    -------
    Fraction

    Examples
    --------
    >>> exact(0.1) + exact(0.2) == exact(0.3)
    True
    >>> exact(4.1) * 10
    Fraction(41, 1)
    """
    if isinstance(x, Fraction):
        return x
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return Fraction(int(x))
    if isinstance(x, Decimal):
        return Fraction(x)
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"expected a finite number, got {x!r}")
    if x.is_integer():
        return Fraction(int(x))
    return _float_to_fraction(x)


def decimal_places(x) -> int:
    """Smallest d with x * 10^d an integer; raises ValueError if x has no finite decimal expansion.

    >>> decimal_places(0.331), decimal_places(4)
    (3, 0)
    """
    q = exact(x)
    den = q.denominator
    twos = (den & -den).bit_length() - 1
    rest = den >> twos
    fives = 0
    while rest % 5 == 0:
        rest //= 5
        fives += 1
    if rest != 1:
        raise ValueError(f"{q} has no finite decimal expansion")
    return max(twos, fives)


def common_scale(values) -> int:
    """10^d for the smallest d that makes every value an integer.

    >>> common_scale([1, 0.5, 0.331])
    1000
    """
    d = 0
    for v in values:
        d = max(d, decimal_places(v))
    return 10**d


def scaled_int(x, scale: int) -> int:
    """x * scale as an exact integer (scale must make it integral).

    >>> scaled_int(0.331, 1000)
    331
    """
    q = exact(x) * scale
    if q.denominator != 1:
        raise ValueError(f"{x!r} is not a multiple of 1/{scale}")
    return q.numerator


def floor_linear(slope, intercept, x) -> np.ndarray:
    """floor(slope * x + intercept) for every integer in ``x``, exactly.

    ``slope`` and ``intercept`` are read with :func:`exact`. The result is int64 when every
    intermediate fits, else a Python-integer (object) array.

    >>> floor_linear(Fraction(9, 10), 0, [20, 10]).tolist()
    [18, 9]
    >>> floor_linear(Fraction(-1, 3), Fraction(1, 2), [0, 1, 2]).tolist()
    [0, 0, -1]
    """
    slope, intercept = exact(slope), exact(intercept)
    den = math.lcm(slope.denominator, intercept.denominator)
    a = slope.numerator * (den // slope.denominator)
    b = intercept.numerator * (den // intercept.denominator)
    x = np.asarray(x, dtype=np.int64)
    largest = int(np.abs(x).max()) if x.size else 0
    if abs(a) * largest + abs(b) < _INT64_SAFE and den < _INT64_SAFE:
        return (np.int64(a) * x + np.int64(b)) // np.int64(den)
    # a = qa den + ra, b = qb den + rb (0 <= r < den): floor = qa x + qb + floor((ra x + rb) / den), in
    # int64 when those fit (a coarse scale with a many-decimal divisor: ExactCosts.brackets)
    (qa, ra), (qb, rb) = divmod(a, den), divmod(b, den)
    if den * (largest + 1) < _INT64_SAFE and abs(qa) * largest + abs(qb) + largest + 1 < _INT64_SAFE:
        return np.int64(qa) * x + np.int64(qb) + (np.int64(ra) * x + np.int64(rb)) // np.int64(den)
    return np.array([(a * int(v) + b) // den for v in x.ravel()], dtype=object).reshape(x.shape)


# ---------------------------------------------------------------------------------------
# Costs at one exact scale
# ---------------------------------------------------------------------------------------
class ExactCosts:
    """Per-code cost weights as integers at one decimal scale (weights * scale).

    Parameters
    ----------
    weights : sequence of float
        The K additive cost weights w_k (>= 0).
    c_max : float, optional
        Largest possible cost C_max (default: the sum of the weights). Included in the
        scale, so ``c_max * scale`` is an integer too.

    Attributes
    ----------
    scale : int
        10^d, the smallest power of ten making every weight (and ``c_max``) an integer.
    weights : ndarray of int, shape (K,)
        ``w_k * scale``; int32 or int64 by size (Python integers when the sum does not fit int64).
    float_weights : ndarray of float, shape (K,)
        The weights as given.
    c_max : Fraction
        C_max, exactly.
    c_max_scaled : int
        ``C_max * scale``.

    Notes
    -----
    One overflow rule: :meth:`exact_sums` says whether the running sums over ``n`` patients
    (at most ``C_max * scale * (n + 1)``) stay below :data:`INT64_LIMIT` = 2^62, so int64
    arithmetic is exact. Above it the replay engine falls back to its exact Python loop and
    the grid baselines (CRC, RCPS) sum plain float weights (ties then follow float rounding).

    Examples
    --------
    >>> costs = ExactCosts([1, 0.5, 0.25])
    >>> costs.scale, costs.weights.tolist(), costs.c_max
    (100, [100, 50, 25], Fraction(7, 4))
    >>> costs.bound(1.2), costs.exact_sums(10)
    (120, True)
    """

    def __init__(self, weights, c_max=None):
        weights = [float(w) for w in weights]
        self.scale = common_scale(weights + ([c_max] if c_max is not None else []))
        ints = [scaled_int(w, self.scale) for w in weights]
        total = sum(ints)
        dtype = np.int32 if total < 2**31 else (np.int64 if total < _INT64_SAFE else object)
        self.weights = np.array(ints, dtype=dtype)
        self.float_weights = np.array(weights, dtype=float)
        self.c_max = exact(c_max) if c_max is not None else Fraction(total, self.scale)
        self.c_max_scaled = scaled_int(self.c_max, self.scale)

    @property
    def realized_dtype(self):
        """int32 when every realized cost fits it (the weights' sum does), else None (the sums' own type)."""
        return np.int32 if self.weights.dtype == np.int32 else None

    @classmethod
    def of(cls, cost, n_codes: int, c_max=None) -> "ExactCosts":
        """ExactCosts of an additive cost function (anything with ``weights_for(K)``)."""
        return cls(cost.weights_for(n_codes), c_max)

    def exact_sums(self, n_patients: int) -> bool:
        """True when sums of costs over ``n_patients + 1`` patients fit int64 (below :data:`INT64_LIMIT`)."""
        largest = max(self.c_max_scaled, int(sum(int(w) for w in self.weights)))
        return largest * (int(n_patients) + 1) < INT64_LIMIT

    def brackets(self, n_patients: int) -> tuple["ExactCosts", "ExactCosts"]:
        """(low, high): these costs at the coarser scale ``scale / D``, each weight rounded down
        (low) and up (high), with one integer D chosen so that sums over ``n_patients + 1`` patients
        fit int64 (:meth:`exact_sums`). C_max and the targets keep their exact values at that scale.

        Every realized cost of ``low`` is at most the exact one divided by D and every one of
        ``high`` at least, so a running maximum, a sum of them and "cost > target" keep that order:
        an exact threshold that is monotone in the costs lies between the two costs' thresholds.
        For weights with many decimals (whose exact sums overflow int64) the replay engine runs on
        both and keeps the answer where they agree.

        >>> low, high = ExactCosts([0.123456789012345, 2.5]).brackets(2**40)
        >>> low.exact_sums(2**40), high.exact_sums(2**40), int(high.weights[0]) - int(low.weights[0])
        (True, True, 1)
        """
        exact_weights = [int(w) for w in self.weights]
        largest = max(self.c_max_scaled, sum(exact_weights))
        divisor = -(-largest * (int(n_patients) + 1) // (INT64_LIMIT >> 2)) + 1
        return tuple(self._divided(exact_weights, divisor, way) for way in ("down", "up"))

    def remainders(self, divisor: int) -> "ExactCosts":
        """The weights' remainders ``W_k mod divisor`` at the exact scale (with :meth:`brackets`' low
        weights, ``W_k = divisor * low_k + remainder_k``: an exact cost as two int64 limbs)."""
        return self._divided([int(w) for w in self.weights], divisor, "rest")

    def limbs(self):
        """(divisor D, low, rest) for weights whose exact sums overflow int64 (object ``weights``): an
        exact realized cost is ``D * low + rest`` with both int64 (``low``: :meth:`brackets`' rounded-down
        weights at D, ``rest``: :meth:`remainders`), D chosen so that one patient's ``low`` sum stays
        below 2^31; None for int64 weights or when the limbs could overflow (:func:`favmac.near_ties.fits`).

        >>> costs = ExactCosts([0.123456789012345678, 2.5] * 20)  # sums beyond 2^62 at scale 10^17
        >>> d, low, rest = costs.limbs()
        >>> costs.weights.dtype, d * int(low.weights[0]) + int(rest.weights[0]) == int(costs.weights[0])
        (dtype('O'), True)
        """
        if self.weights.dtype != object:
            return None
        exact_weights = [int(w) for w in self.weights]
        divisor = (max(self.c_max_scaled, sum(exact_weights)) >> 31) + 1
        if not limbs_fit(divisor, len(exact_weights)):
            return None
        return divisor, self._divided(exact_weights, divisor, "down"), self._divided(exact_weights, divisor, "rest")

    def _divided(self, exact_weights, divisor: int, way: str) -> "ExactCosts":
        out = object.__new__(ExactCosts)
        ints = [w % divisor if way == "rest" else -(-w // divisor) if way == "up" else w // divisor for w in exact_weights]
        out.divisor = divisor
        out.weights = np.array(ints, dtype=np.int32 if sum(ints) < 2**31 else np.int64)
        out.float_weights = self.float_weights
        out.scale = Fraction(self.scale, divisor)
        out.c_max = self.c_max
        out.c_max_scaled = Fraction(self.c_max_scaled, divisor)
        return out

    def bound(self, target) -> int:
        """floor(target * scale): an integer cost exceeds ``target`` iff it exceeds this."""
        q = exact(target) * self.scale
        return q.numerator // q.denominator

    def realized(self, candidates, labels, cost=None) -> np.ndarray:
        """(N, M) exact realized cost C(S; y) * scale of every candidate set of a universe.

        ``cost`` (the cost bound to these patients) matters only to set costs
        (:class:`favmac.costs.SetCosts`); per-code weights have no per-patient context."""
        labels = np.atleast_2d(np.asarray(labels, dtype=bool))
        false_pos = np.where(labels, 0, self.weights[None, :]).astype(self.weights.dtype)
        if candidates.subsets is not None:
            return false_pos @ candidates.subsets.T.astype(self.weights.dtype)
        rows = np.arange(labels.shape[0])[:, None]
        steps = false_pos[rows, candidates.order]
        zeros = np.zeros((labels.shape[0], 1), dtype=self.weights.dtype)
        return np.concatenate([zeros, np.cumsum(steps, axis=1)], axis=1)

    def set_costs(self, selected, labels) -> np.ndarray:
        """Exact C(S; y) * scale of chosen sets: ``selected`` (..., S, K) bool, labels (S, K)."""
        selected = np.asarray(selected, dtype=bool)
        false_pos = np.where(np.asarray(labels, dtype=bool), 0, self.weights[None, :]).astype(self.weights.dtype)
        return np.einsum("...sk,sk->...s", selected.astype(self.weights.dtype), false_pos)

    def exceeds(self, selected, labels, targets) -> np.ndarray:
        """(T, S) bool: chosen set's cost > target, decided exactly.

        ``selected`` is (T, S, K) (one set per target and step), ``labels`` (S, K).

        >>> ExactCosts([0.1, 0.2]).exceeds([[[True, True]], [[True, False]]], [[0, 0]], [0.3, 0.05]).tolist()
        [[False], [True]]
        """
        costs = self.set_costs(selected, labels)
        bounds = [self.bound(t) for t in np.atleast_1d(targets)]
        if costs.dtype != object and all(abs(b) < _INT64_SAFE for b in bounds):
            return costs > np.array(bounds, dtype=np.int64)[:, None]
        return np.array([[int(v) > b for v in row] for row, b in zip(costs, bounds)], dtype=bool).reshape(costs.shape)


def limbs_fit(divisor: int, n_codes: int) -> bool:
    """Whether costs as two int64 limbs ``divisor * low + rest`` stay in int64: a sum of the K remainders is
    below (K + 1) D, and K + 2 of them are added (:meth:`ExactCosts.limbs`, :mod:`favmac.near_ties`).

    >>> limbs_fit(2**40, 35), limbs_fit(2**60, 35)
    (True, False)
    """
    return divisor * (n_codes + 2) < INT64_LIMIT


# ---------------------------------------------------------------------------------------
# Expected-cost control
# ---------------------------------------------------------------------------------------
def expected_margin(target, c_max, n_calibration: int) -> Fraction:
    """M = c (N + 1) - C_max, exactly: T_c is the smallest key b with F(b) > M (-inf if M < 0).

    >>> expected_margin(4.1, 3, 9)
    Fraction(38, 1)
    """
    return exact(target) * (int(n_calibration) + 1) - exact(c_max)


def expected_bounds(targets, costs: ExactCosts, n_patients: int, first: int = 0):
    """(T, N + 1) int64: floor(M * scale) with M = c (m + 1) - C_max for m = 0..N calibration patients
    (``first``: for m = first..N only, (T, N - first + 1)).

    An integer F at the costs' scale exceeds M exactly when it exceeds this bound, whatever
    decimals the target has. Bounds are clipped to +-:data:`INT64_LIMIT`: every F they are
    compared with is a sum of costs below that limit (:meth:`ExactCosts.exact_sums`), so
    clipping changes no decision.

    >>> expected_bounds([1.5], ExactCosts([1, 1]), 3).tolist(), expected_bounds([1.5], ExactCosts([1, 1]), 3, first=2).tolist()
    ([[-1, 1, 2, 4]], [[2, 4]])
    """
    sizes = np.arange(int(first), int(n_patients) + 1, dtype=np.int64)
    out = np.empty((len(targets), sizes.size), dtype=np.int64)
    for t, target in enumerate(targets):
        row = floor_linear(exact(target) * costs.scale, exact(target) * costs.scale - costs.c_max_scaled, sizes)
        if row.dtype == object:
            row = np.array([max(min(int(v), INT64_LIMIT), -INT64_LIMIT) for v in row], dtype=np.int64)
        out[t] = np.clip(row, -INT64_LIMIT, INT64_LIMIT)
    return out


# ---------------------------------------------------------------------------------------
# Ranks and the edge rule
# ---------------------------------------------------------------------------------------
def rank_edge(k, n):
    """Threshold decided by the rank alone, for the k-th largest of n scores.

    ``k > n`` gives -inf (too few scores: the empty set), ``k <= 0`` gives +inf (every set
    allowed); otherwise NaN, meaning "look the k-th largest score up". The j-th *smallest*
    of n is the ``(n + 1 - j)``-th largest, so ``rank_edge(n + 1 - j, n)`` gives the
    conformal quantile's edges (j <= 0: -inf, j > n: +inf). Plain Python: the numba
    kernels compile this same function.

    >>> rank_edge(5, 4), rank_edge(0, 4), rank_edge(2, 4)
    (-inf, inf, nan)
    """
    if k > n:
        return -math.inf
    if k <= 0:
        return math.inf
    return math.nan


def calibration_count(n, window):
    """Patients a threshold at stream position ``n`` is calibrated on: all n, or the last ``window``.

    ``window <= 0`` means no window. Plain Python: the numba kernels compile this same function.

    >>> calibration_count(7, 0), calibration_count(7, 5), calibration_count(3, 5)
    (7, 5, 3)
    """
    if window > 0 and n > window:
        return window
    return n


def quantile_rank(beta, sizes) -> np.ndarray:
    """Rank j = ceil(beta (m + 1)) of the conformal quantile Q(beta; m points ∪ {+inf}), exactly.

    Clipped to ``[0, m + 1]`` for every ``m`` in ``sizes``: 0 stands for -inf (beta <= 0),
    ``m + 1`` for the added +inf point. ``beta`` is read with :func:`exact`.

    Examples
    --------
    >>> int(quantile_rank(0.9, [19])[0])
    18
    >>> quantile_rank(1 - Fraction(1, 10), [0, 9]).tolist()
    [1, 9]
    """
    m1 = np.asarray(sizes, dtype=np.int64) + 1
    j = -floor_linear(-exact(beta), 0, m1)  # ceil(beta m1) = -floor(-beta m1)
    j = np.asarray(np.clip(j, 0, m1), dtype=np.int64) if j.dtype != object else \
        np.array([min(max(int(v), 0), int(m)) for v, m in zip(j, m1)], dtype=np.int64)
    return j


def violation_rank(delta, n_calibration: int) -> int:
    """k = ceil((1 - delta)(N + 1)), exactly (delta read as its decimal).

    >>> violation_rank(0.1, 19)
    18
    """
    q = (1 - exact(delta)) * (int(n_calibration) + 1)
    return -((-q.numerator) // q.denominator)


def violation_ranks(delta, n_patients: int) -> np.ndarray:
    """k(m) = ceil((1 - delta)(m + 1)) for m = 0..N calibration patients, int64.

    >>> violation_ranks(0.1, 3).tolist()
    [1, 2, 3, 4]
    """
    return quantile_rank(1 - exact(delta), np.arange(int(n_patients) + 1))


# ---------------------------------------------------------------------------------------
# Calibration points
# ---------------------------------------------------------------------------------------
def calibration_points(candidates, realized: np.ndarray, score: str = "cost"):
    """Keys (scores, sorted within each patient) and weights (increments of the running max of C).

    Parameters
    ----------
    candidates : favmac.universe.Candidates
    realized : ndarray (N, M)
        Exact realized cost of every candidate set (:meth:`ExactCosts.realized`).
    score : {"cost", "price"}
        The key of a set: Chat, or the price score (:meth:`Candidates.scores`).

    Returns
    -------
    keys : ndarray (N, M) of float
    increments : ndarray (N, M) of exact integers
        Zero increments carry no weight and may be skipped by the caller.
    """
    keys = candidates.scores(score)
    if candidates.nested:  # the score is non-decreasing along a nested sequence; C need not be (a set cost)
        return keys, calibration_weights(candidates, realized, score)
    idx = np.argsort(keys, axis=1, kind="stable")
    keys = np.take_along_axis(keys, idx, axis=1)
    running = np.maximum.accumulate(np.take_along_axis(realized, idx, axis=1), axis=1)
    increments = np.diff(running, axis=1, prepend=np.zeros((running.shape[0], 1), dtype=running.dtype))
    return keys, increments


def calibration_weights(candidates, realized: np.ndarray, score: str = "cost") -> np.ndarray:
    """The increments of :func:`calibration_points` alone: along a nested sequence (keys
    non-decreasing) they are those of C's running max in the sequence's order, so the keys are
    not computed; the ``full`` universe orders its sets by key first."""
    if not candidates.nested:
        return calibration_points(candidates, realized, score)[1]
    running = np.maximum.accumulate(realized, axis=1)
    return np.diff(running, axis=1, prepend=np.zeros((running.shape[0], 1), dtype=running.dtype))


def violation_scores(candidates, realized: np.ndarray, bound: int, score: str = "cost") -> np.ndarray:
    """T_i = min{score(S) : C(S; z_i) > c} per patient (+inf when no set exceeds c).

    ``bound`` is :meth:`ExactCosts.bound` of the target; ``score`` as in :func:`calibration_points`.
    """
    over = realized > bound
    return np.min(np.where(over, candidates.scores(score), np.inf), axis=1)
