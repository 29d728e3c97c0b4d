"""Online baselines for FavMac: ClassWise, InnerSet, FPCP, CRC and RCPS.

Every baseline follows the same online protocol as :func:`favmac.replay.replay`: for each
stream position ``n >= burn_in`` the method is calibrated on *all* patients ``0..n-1``
(their labels known), predicts a set for patient ``n``, and the realized cost and value of
that set are recorded. All return a :class:`favmac.result.ReplayResult` with the same
shapes as FavMac's replay, so methods can be compared side by side.

Signature (all five)::

    f(probs, labels, value, cost, targets, *, delta=None, burn_in=0, codes=None,
      patient_ids=None) -> ReplayResult

``cost`` must be an additive cost (``AdditiveCost``); ``value`` may be any value function
(it is only used to score the chosen sets).

Exact quantiles
---------------
The conformal quantile ``Q(beta; {a_1..a_m} ∪ {+inf}) = inf{t : F(t) >= beta}`` of the
empirical distribution (each point weight 1, total m+1) is the ``j``-th smallest point with
``j = ceil(beta * (m + 1))``: ``-inf`` when ``j <= 0`` (beta <= 0), ``+inf`` when
``j = m + 1`` (the added +inf point, which is also what an empty calibration set gives), and
``+inf`` for beta > 1 as well (no finite point qualifies). The ceiling is computed in
integer arithmetic on the *decimal* value of the float arguments (:func:`favmac._exact.exact`,
as everywhere in the package), so ``beta = 0.9, m + 1 = 20`` gives 18 (the binary double
nearest 0.9 is slightly larger than 0.9, and ``ceil`` of its exact product with 20 is 19).

Online speed
------------
ClassWise and InnerSet keep one Fenwick tree of counts over value ranks (per code for
ClassWise): insert and k-th-smallest/rank queries are O(log N), so a replay costs
O(N K (log N + T)). CRC and RCPS restrict the candidate thresholds ``lambda`` to a fixed
grid (``grid_size`` quantiles of all probabilities of the stream, plus ``+inf`` = the empty
set) and keep the running sum of calibration cost at every grid point: O(G + K) per patient
and O(T log G) per prediction. This is what an interactive app can afford. The acceptance
test is monotone in lambda, so a grid picks the first grid point at or above the cut-off a
finer candidate set (e.g. all calibration probabilities) would pick: sets that are never
larger, i.e. slightly conservative. MAPIE itself uses a fixed grid of lambdas too.
"""
from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
from numba import njit
from scipy.stats import binom

from ._exact import common_scale, exact, scaled_int
from ._kernels import _fenwick_add
from .result import ReplayResult

__all__ = ["classwise", "inner_set", "fpcp", "crc", "rcps", "BASELINE_CONTROLS"]

#: Which control(s) each baseline supports: "expected" (delta=None) and/or "violation" (delta given).
BASELINE_CONTROLS = {
    "classwise": ("expected",),
    "inner_set": ("expected", "violation"),
    "fpcp": ("expected", "violation"),
    "crc": ("expected",),
    "rcps": ("violation",),
}



# ---------------------------------------------------------------------------------------
# Input checks and exact arithmetic
# ---------------------------------------------------------------------------------------
def _check_inputs(probs, labels, cost, targets, delta, burn_in, codes, patient_ids):
    probs = np.asarray(probs, dtype=float)
    if probs.ndim != 2:
        raise ValueError(f"probs must be a 2-D array (patients, codes), got shape {probs.shape}")
    if not np.all(np.isfinite(probs)) or np.any(probs < 0) or np.any(probs > 1):
        raise ValueError("probs must be finite probabilities in [0, 1]")
    labels_arr = np.asarray(labels)
    if labels_arr.shape != probs.shape:
        raise ValueError(f"labels must have the shape of probs {probs.shape}, got {labels_arr.shape}")
    if not np.all((labels_arr == 0) | (labels_arr == 1)):
        raise ValueError("labels must be 0/1")
    labels_arr = labels_arr.astype(bool)
    n_patients, n_codes = probs.shape
    if not getattr(cost, "is_additive", False) or not hasattr(cost, "weights_for"):
        raise ValueError("the baselines need an additive cost (favmac.AdditiveCost); got " + repr(cost))
    costs = _CostScale(cost.weights_for(n_codes), n_patients)
    targets = np.atleast_1d(np.asarray(targets, dtype=float))
    if targets.ndim != 1 or targets.size == 0:
        raise ValueError(f"targets must be a scalar or a non-empty 1-D list, got shape {targets.shape}")
    if not np.all(np.isfinite(targets)):
        raise ValueError("targets must be finite numbers (in the cost's own units)")
    if delta is not None:
        delta = float(delta)
        if not 0.0 < delta < 1.0:
            raise ValueError(f"delta must be in (0, 1) or None, got {delta}")
    burn_in = int(burn_in)
    if not 0 <= burn_in <= n_patients:
        raise ValueError(f"burn_in must be between 0 and the number of patients ({n_patients}), got {burn_in}")
    if codes is not None:
        codes = list(codes)
        if len(codes) != n_codes:
            raise ValueError(f"codes must name the {n_codes} columns of probs, got {len(codes)} names")
    if patient_ids is not None:
        patient_ids = np.asarray(patient_ids)
        if patient_ids.shape != (n_patients,):
            raise ValueError(f"patient_ids must have one id per patient ({n_patients}), got shape {patient_ids.shape}")
    return probs, labels_arr, costs, targets, delta, burn_in, codes, patient_ids


class _CostScale:
    """Cost weights as exact integers at a decimal scale (as the replay engine reads them).

    ``c_max`` is the exact decimal sum of the weights. ``kernel_weights`` are the weights
    the grid kernels sum: the scaled integers when every running sum stays below 2^53 (then
    float sums are exact and ties are decided exactly), else the plain float weights
    (``scale`` is then 1 and ``exact`` False).
    """

    def __init__(self, weights, n_patients):
        weights = [float(w) for w in weights]
        scale = common_scale(weights)
        ints = [scaled_int(w, scale) for w in weights]
        self.c_max = Fraction(sum(ints), scale)
        self.exact = sum(ints) * (int(n_patients) + 1) < 2**53
        if self.exact:
            self.scale, self.c_max_scaled = scale, sum(ints)
            self.kernel_weights = np.array(ints, dtype=float)
        else:
            self.scale, self.c_max_scaled = 1, float(self.c_max)
            self.kernel_weights = np.array(weights, dtype=float)


def _floor_affine(slope: Fraction, intercept: Fraction, x: np.ndarray) -> np.ndarray:
    """floor(slope * x + intercept) for integers x, exactly (int64 result).

    A float estimate is exact unless slope*x + intercept lies within rounding error of an
    integer; those few elements (or all, for huge values) are redone in Python integers.
    """
    x = np.asarray(x, dtype=np.int64)
    den = slope.denominator * intercept.denominator
    a = slope.numerator * intercept.denominator
    b = intercept.numerator * slope.denominator
    with np.errstate(over="ignore", invalid="ignore"):
        approx = (a / den) * x.astype(float) + b / den
    out = np.floor(approx)
    suspect = ~(np.abs(approx) < 2.0**50) | (np.abs(approx - np.rint(approx)) <= 1e-9 * np.maximum(1.0, np.abs(approx)))
    out = out.astype(np.int64, copy=False) if not suspect.any() else np.where(suspect, 0, out).astype(np.int64)
    if suspect.any():
        exact_floor = (x[suspect].astype(object) * a + b) // den  # Python ints: exact at any size
        out[suspect] = np.clip(exact_floor, -(2**62), 2**62).astype(np.int64)
    return out


def quantile_rank(beta, sizes) -> np.ndarray:
    """Rank of the conformal quantile Q(beta) among ``m`` points plus ``+inf``.

    Returns ``j = ceil(beta * (m + 1))`` clipped to ``[0, m + 1]`` for every ``m`` in
    ``sizes``: ``0`` stands for ``-inf`` (beta <= 0), ``m + 1`` for ``+inf``. ``beta`` is a
    float (read as the decimal it prints as) or a ``Fraction``.

    Examples
    --------
    >>> int(quantile_rank(0.9, [19])[0])
    18
    >>> quantile_rank(1 - Fraction(1, 10), [0, 9]).tolist()
    [1, 9]
    """
    beta = exact(beta)
    m1 = np.asarray(sizes, dtype=np.int64) + 1
    # ceil(beta * m1) = -floor(-beta * m1)
    j = -_floor_affine(-beta, Fraction(0), m1)
    return np.minimum(np.maximum(j, 0), m1)


@njit(cache=True)
def _masked_sums(selected, per_code):
    """out[t, s] = sum_k selected[t, s, k] * per_code[s, k] (additive value or cost of each set)."""
    n_targets, n_steps, n_codes = selected.shape
    out = np.zeros((n_targets, n_steps))
    for t in range(n_targets):
        for s in range(n_steps):
            total = 0.0
            for k in range(n_codes):
                total += selected[t, s, k] * per_code[s, k]  # branch-free: sets are unpredictable
            out[t, s] = total
    return out


def _realized(function, selected, labels, hit):
    """Realized value (hit=True) or cost (hit=False) of every chosen set, shape (T, S)."""
    n_targets, n_steps, n_codes = selected.shape
    if getattr(function, "is_additive", False) and hasattr(function, "weights_for"):
        weights = np.asarray(function.weights_for(n_codes), dtype=float)
        per_code = np.where(labels == hit, weights[None, :], 0.0)
        return _masked_sums(selected, np.ascontiguousarray(per_code))
    return np.asarray(function(selected, labels), dtype=float).reshape(n_targets, n_steps)


def _result(method, targets, delta, burn_in, thresholds, selected, probs, labels, value, cost,
            codes, patient_ids, settings, final_thresholds):
    step_labels = labels[burn_in:]
    cost_arr = _realized(cost, selected, step_labels, hit=False)
    value_arr = _realized(value, selected, step_labels, hit=True)
    kwargs = dict(
        method=method,
        targets=targets,
        delta=delta,
        burn_in=burn_in,
        thresholds=thresholds,
        selected=selected,
        cost=cost_arr,
        value=value_arr,
        codes=codes,
        patient_ids=None if patient_ids is None else patient_ids[burn_in:],
        settings=settings,
    )
    if "final_thresholds" in {f.name for f in dataclasses.fields(ReplayResult)}:
        kwargs["final_thresholds"] = final_thresholds
    return ReplayResult(**kwargs)


# ---------------------------------------------------------------------------------------
# Fenwick tree of counts (1-based array, position i stored at index i + 1)
# ---------------------------------------------------------------------------------------
@njit(cache=True)
def _fenwick_count_below(tree, pos):
    """Number of inserted items at positions < pos."""
    total = 0
    i = pos
    while i > 0:
        total += tree[i]
        i -= i & (-i)
    return total


@njit(cache=True)
def _fenwick_kth(tree, k, top_bit):
    """Position of the k-th smallest inserted item (k >= 1 and at most the count)."""
    pos = 0
    rem = k
    step = top_bit
    size = tree.shape[0]
    while step > 0:
        nxt = pos + step
        if nxt < size and tree[nxt] < rem:
            pos = nxt
            rem -= tree[nxt]
        step >>= 1
    return pos


def _top_bit(n):
    return 1 << max(int(n).bit_length() - 1, 0) if n > 0 else 0


# ---------------------------------------------------------------------------------------
# ClassWise
# ---------------------------------------------------------------------------------------
@njit(cache=True)
def _classwise_kernel(columns, negative, ranks_needed, burn_in, top_bit):
    """ClassWise sets for every step and target, one code at a time (its tree stays in cache).

    ``columns`` (K, N): scores p_k(x_i); ``negative`` (K, N): y_ik = 0;
    ``ranks_needed[t, m]``: rank j of the quantile among m negatives plus +inf.
    p > (j-th smallest negative score)  <=>  #{negative scores < p} >= j.
    """
    n_codes, n_patients = columns.shape
    n_targets = ranks_needed.shape[0]
    n_steps = n_patients - burn_in
    selected = np.zeros((n_targets, n_steps, n_codes), dtype=np.bool_)
    final = np.empty((n_targets, n_codes))
    tree = np.zeros(n_patients + 1, dtype=np.int32)
    rank = np.empty(n_patients, dtype=np.int64)
    below = np.empty(n_patients, dtype=np.int64)  # #{i : p_ik < p_nk}: start of p_nk's run of ties
    for k in range(n_codes):
        column = columns[k]
        order = np.argsort(column)  # any order of ties works: below[] marks runs
        sorted_column = column[order]
        run_start = 0
        for r in range(n_patients):
            if r > 0 and sorted_column[r] != sorted_column[r - 1]:
                run_start = r
            rank[order[r]] = r
            below[order[r]] = run_start
        tree[:] = 0
        m = 0
        for n in range(n_patients):
            if n >= burn_in:
                q = _fenwick_count_below(tree, below[n])
                s = n - burn_in
                for t in range(n_targets):
                    selected[t, s, k] = q >= ranks_needed[t, m]
            if negative[k, n]:
                _fenwick_add(tree, rank[n], 1)
                m += 1
        for t in range(n_targets):
            j = ranks_needed[t, m]
            if j <= 0:
                final[t, k] = -np.inf
            elif j > m:
                final[t, k] = np.inf
            else:
                final[t, k] = sorted_column[_fenwick_kth(tree, j, top_bit)]
    return selected, final


def classwise(probs, labels, value, cost, targets, *, delta=None, burn_in=0, codes=None, patient_ids=None):
    """ClassWise: one conformal threshold per code, expected-cost control.

    For code k, with ``a_i = p_k(x_i)`` over the calibration patients that do *not* have
    code k, ``t_k = Q(1 - c / C_max; {a_i} ∪ {+inf})`` and code k is predicted iff
    ``p_k > t_k``. For the false-positive count C_FP (all weights 1) ``C_max = K`` and
    this is the paper's ``1 - c/K``. With weighted costs every code gets the same
    false-positive rate ``c / C_max``, so the expected cost is at most
    ``sum_k w_k c / C_max = c``.

    Edge cases: an empty calibration set (or a code never observed negative) gives
    ``t_k = +inf`` (code never predicted) unless ``c >= C_max``; ``c >= C_max`` gives ``t_k = -inf`` (always
    predicted); ``c < 0`` predicts nothing; ``C_max = 0`` (all weights zero) predicts every
    code, as nothing can cost anything.

    Only expected-cost control applies: ``delta`` must be None (ValueError otherwise).
    ``thresholds`` are NaN (no single threshold); ``settings["code_thresholds"]`` holds the
    (T, K) per-code thresholds calibrated on all patients (use them for new patients:
    predict k iff ``p_k > t_k``).
    """
    probs, labels, costs, targets, delta, burn_in, codes, patient_ids = _check_inputs(
        probs, labels, cost, targets, delta, burn_in, codes, patient_ids)
    if delta is not None:
        raise ValueError("ClassWise controls the expected cost only; call it with delta=None "
                         "(use inner_set, fpcp or rcps for violation control)")
    n_patients, n_codes = probs.shape
    sizes = np.arange(n_patients + 1)
    ranks_needed = np.empty((targets.size, n_patients + 1), dtype=np.int64)
    for t, target in enumerate(targets):
        beta = Fraction(0) if costs.c_max == 0 else 1 - exact(target) / costs.c_max
        ranks_needed[t] = quantile_rank(beta, sizes)
    selected, code_thresholds = _classwise_kernel(
        np.ascontiguousarray(probs.T), np.ascontiguousarray(~labels.T), ranks_needed, burn_in,
        _top_bit(n_patients))
    n_steps = n_patients - burn_in
    settings = {
        "control": "expected",
        "c_max": float(costs.c_max),
        "rule": "predict code k iff p_k > code_thresholds[target][k]",
        "code_thresholds": code_thresholds.tolist(),
    }
    return _result("ClassWise", targets, None, burn_in, np.full((targets.size, n_steps), np.nan), selected,
                   probs, labels, value, cost, codes, patient_ids, settings, np.full(targets.size, np.nan))


# ---------------------------------------------------------------------------------------
# InnerSet
# ---------------------------------------------------------------------------------------
@njit(cache=True)
def _inner_set_kernel(probs, rank, sorted_scores, ranks_needed, burn_in, top_bit):
    n_patients, n_codes = probs.shape
    n_targets = ranks_needed.shape[0]
    n_steps = n_patients - burn_in
    tree = np.zeros(n_patients + 1, dtype=np.int32)
    thresholds = np.empty((n_targets, n_steps))
    selected = np.zeros((n_targets, n_steps, n_codes), dtype=np.bool_)
    final = np.empty(n_targets)
    for n in range(n_patients + 1):
        if n >= burn_in:
            for t in range(n_targets):
                j = ranks_needed[t, n]
                if j <= 0:
                    tau = -np.inf
                elif j > n:
                    tau = np.inf
                else:
                    tau = sorted_scores[_fenwick_kth(tree, j, top_bit)]
                if n == n_patients:
                    final[t] = tau
                else:
                    s = n - burn_in
                    thresholds[t, s] = tau
                    for k in range(n_codes):
                        selected[t, s, k] = probs[n, k] > tau
        if n < n_patients:
            _fenwick_add(tree, rank[n], 1)
    return thresholds, selected, final


def inner_set_scores(probs, labels) -> np.ndarray:
    """s_i = max{p_k(x_i) : y_ik = 0} (0 when patient i has every code)."""
    probs = np.asarray(probs, dtype=float)
    return np.where(np.asarray(labels, dtype=bool), -np.inf, probs).max(axis=1, initial=0.0)


def inner_set(probs, labels, value, cost, targets, *, delta=None, burn_in=0, codes=None, patient_ids=None):
    """InnerSet: one threshold on p that keeps out every true negative with high probability.

    ``s_i = max{p_k(x_i) : y_ik = 0}`` (0 if none), ``tau = Q(1 - eps; {s_i} ∪ {+inf})``,
    predict ``{k : p_k > tau}``. Violation control (``delta`` given): ``eps = delta``, which
    bounds P(any false positive) and hence P(C > c) for every c >= 0 — the target does not
    enter, so all targets give the same sets. Expected control: ``eps = c / C_max``, so
    E[C] <= C_max P(C > 0) <= c.

    Edge cases: empty calibration gives ``tau = +inf`` (nothing predicted); ``eps >= 1``
    (c >= C_max) gives ``tau = -inf`` (everything predicted); ``c < 0`` predicts nothing;
    ``C_max = 0`` predicts everything.
    ``thresholds`` and ``final_thresholds`` are tau (rule: ``p_k > tau``).
    """
    probs, labels, costs, targets, delta, burn_in, codes, patient_ids = _check_inputs(
        probs, labels, cost, targets, delta, burn_in, codes, patient_ids)
    n_patients = probs.shape[0]
    sizes = np.arange(n_patients + 1)
    ranks_needed = np.empty((targets.size, n_patients + 1), dtype=np.int64)
    for t, target in enumerate(targets):
        if delta is not None:
            beta = 1 - exact(delta)
        elif costs.c_max == 0:
            beta = Fraction(0)
        else:
            beta = 1 - exact(target) / costs.c_max
        ranks_needed[t] = quantile_rank(beta, sizes)
    scores = inner_set_scores(probs, labels)
    order = np.argsort(scores, kind="stable")
    rank = np.empty(n_patients, dtype=np.int64)
    rank[order] = np.arange(n_patients)
    thresholds, selected, final = _inner_set_kernel(probs, rank, scores[order], ranks_needed, burn_in,
                                                    _top_bit(n_patients))
    settings = {"control": "expected" if delta is None else "violation", "c_max": float(costs.c_max),
                "rule": "predict code k iff p_k > threshold"}
    return _result("InnerSet", targets, delta, burn_in, thresholds, selected, probs, labels, value, cost,
                   codes, patient_ids, settings, final)


# ---------------------------------------------------------------------------------------
# FPCP
# ---------------------------------------------------------------------------------------
def fpcp(probs, labels, value, cost, targets, *, delta=None, burn_in=0, codes=None, patient_ids=None):
    """FPCP: FavMac with the ``prob`` universe (codes added in order of decreasing p).

    The paper's FPCP also trains a DeepSets cost proxy; the additive proxy stands in for it.
    Both controls apply. Thresholds are FavMac thresholds on the cost proxy Chat.
    """
    from .replay import replay  # lazy: the replay engine is a separate module

    return replay(probs, labels, value, cost, targets, delta=delta, universe="prob", burn_in=burn_in,
                  codes=codes, patient_ids=patient_ids, method="FPCP")


# ---------------------------------------------------------------------------------------
# CRC and RCPS: one threshold lambda on p, S_lambda = {k : p_k >= lambda}, on a fixed grid
# ---------------------------------------------------------------------------------------
def lambda_grid(probs, grid_size=201, max_sample=2**20) -> np.ndarray:
    """Candidate thresholds: ``grid_size`` evenly spaced quantiles of all probabilities.

    Each grid point is an actual probability (``method="lower"``), duplicates are merged,
    and the smallest probability is always included (so the full set is reachable). Above
    ``max_sample`` probabilities the quantiles are taken over an evenly strided
    (deterministic) sample plus the minimum. The empty set (lambda = +inf) is added by the
    methods themselves.
    """
    grid_size = int(grid_size)
    if grid_size < 2:
        raise ValueError(f"grid_size must be at least 2, got {grid_size}")
    flat = np.asarray(probs, dtype=float).ravel()
    if flat.size == 0:
        return np.zeros(1)
    if flat.size > max_sample:
        flat = np.append(flat[:: -(-flat.size // max_sample)], flat.min())
    return np.unique(np.quantile(flat, np.linspace(0.0, 1.0, grid_size), method="lower"))


@njit(cache=True)
def _grid_kernel(probs, negative_weight, bounds, burn_in, grid):
    """Smallest grid index j with R[j] <= bound, R[j] = summed cost of S_{grid[j]} so far.

    ``n_above[k]`` = number of grid points <= p_k, so k is in S_{grid[j]} iff n_above > j.
    Index G (one past the grid) is lambda = +inf, the empty set, with R[G] = 0.
    """
    n_patients, n_codes = probs.shape
    n_grid = grid.shape[0]
    n_targets = bounds.shape[0]
    n_steps = n_patients - burn_in
    running = np.zeros(n_grid + 1)
    patient = np.zeros(n_grid + 1)
    n_above = np.zeros(n_codes, dtype=np.int64)
    thresholds = np.empty((n_targets, n_steps))
    selected = np.zeros((n_targets, n_steps, n_codes), dtype=np.bool_)
    final = np.empty(n_targets)
    for n in range(n_patients + 1):
        if n < n_patients:
            n_above[:] = np.searchsorted(grid, probs[n], side="right")
        if n >= burn_in:
            for t in range(n_targets):
                bound = bounds[t, n]
                lo = 0
                hi = n_grid
                while lo < hi:  # running is non-increasing in j
                    mid = (lo + hi) // 2
                    if running[mid] <= bound:
                        hi = mid
                    else:
                        lo = mid + 1
                lam = grid[lo] if lo < n_grid else np.inf
                if n == n_patients:
                    final[t] = lam
                else:
                    s = n - burn_in
                    thresholds[t, s] = lam
                    for k in range(n_codes):
                        selected[t, s, k] = n_above[k] > lo
        if n < n_patients:
            for k in range(n_codes):
                patient[n_above[k]] += negative_weight[n, k]
            acc = 0.0
            for j in range(n_grid - 1, -1, -1):
                acc += patient[j + 1]
                running[j] += acc
            patient[:] = 0.0
    return thresholds, selected, final


def _grid_run(probs, labels, weights, grid, bounds, burn_in):
    negative_weight = np.where(labels, 0.0, weights[None, :])
    return _grid_kernel(probs, negative_weight, bounds, burn_in, np.ascontiguousarray(grid, dtype=float))


def crc(probs, labels, value, cost, targets, *, delta=None, burn_in=0, codes=None, patient_ids=None,
        grid_size=201, grid=None):
    """Conformal risk control (as in MAPIE), expected-cost control.

    One threshold lambda on p, ``S_lambda = {k : p_k >= lambda}``; with n calibration
    patients choose the smallest grid lambda with ``(n * Rhat(lambda) + C_max) / (n + 1) <= c``
    (Rhat = mean realized cost of S_lambda over the calibration patients; it is
    non-increasing in lambda). If none qualifies the set is empty (lambda = +inf).

    ``grid_size`` quantiles of all probabilities form the candidate grid (see
    :func:`lambda_grid`), or pass ``grid`` explicitly. Costs are summed as integers at the
    weights' decimal scale (as in :func:`favmac.replay.replay`), so with weights like 1 or
    0.331 an exact tie is decided exactly (it qualifies). ``delta`` must be None.
    """
    probs, labels, costs, targets, delta, burn_in, codes, patient_ids = _check_inputs(
        probs, labels, cost, targets, delta, burn_in, codes, patient_ids)
    if delta is not None:
        raise ValueError("CRC controls the expected cost only; call it with delta=None "
                         "(use rcps for a high-probability risk bound)")
    grid = lambda_grid(probs, grid_size) if grid is None else np.unique(np.asarray(grid, dtype=float))
    n_patients = probs.shape[0]
    sizes = np.arange(n_patients + 1)
    bounds = np.empty((targets.size, n_patients + 1))
    for t, target in enumerate(targets):
        # summed calibration cost R(lambda) must satisfy R + C_max <= c (n + 1); in scaled
        # integer units R <= floor(scale c (n + 1) - scale C_max) decides ties exactly
        if costs.exact:
            bounds[t] = _floor_affine(exact(target) * costs.scale, Fraction(-costs.c_max_scaled), sizes + 1)
        else:
            bounds[t] = float(target) * (sizes + 1) - costs.c_max_scaled
    thresholds, selected, final = _grid_run(probs, labels, costs.kernel_weights, grid, bounds, burn_in)
    settings = {"control": "expected", "c_max": float(costs.c_max), "grid_size": int(grid.size),
                "rule": "predict code k iff p_k >= threshold", "grid": grid.tolist()}
    return _result("CRC", targets, None, burn_in, thresholds, selected, probs, labels, value, cost,
                   codes, patient_ids, settings, final)


def _kl_bernoulli(r, alpha):
    """h1(r, alpha) = KL(Bernoulli(r) || Bernoulli(alpha)), with 0 log 0 = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        first = np.where(r > 0, r * np.log(r / alpha), 0.0)
        second = np.where(r < 1, (1 - r) * np.log((1 - r) / (1 - alpha)), 0.0)
    return first + second


def hb_p_value(total_risk, n, alpha):
    """Hoeffding–Bentkus p-value of H0: risk > alpha (Bates et al. 2021; Angelopoulos et al. 2021).

    ``total_risk`` is the summed normalized risk (in [0, n]) of n calibration patients:
    ``min(e * P(Bin(n, alpha) <= ceil(total_risk)), exp(-n h1(min(Rhat, alpha), alpha)))``.
    Slow reference used in tests; :func:`rcps` uses the equivalent precomputed bounds.
    """
    if n == 0:
        return 1.0
    rhat = total_risk / n
    bentkus = np.e * binom.cdf(math.ceil(total_risk), n, alpha)
    hoeffding = float(np.exp(-n * _kl_bernoulli(np.array(min(rhat, alpha)), alpha)))
    return float(min(bentkus, hoeffding))


@njit(cache=True)
def _hoeffding_gap(r, alpha, level):
    """h1(r, alpha) - level, and its derivative in r, for 0 <= r < alpha < 1."""
    first = r * np.log(r / alpha) if r > 0 else 0.0
    gap = first + (1 - r) * np.log((1 - r) / (1 - alpha)) - level
    slope = np.log(r * (1 - alpha) / (alpha * (1 - r))) if r > 0 else -np.inf
    return gap, slope


@njit(cache=True)
def _rcps_bound_kernel(n_max, alpha, delta):
    """Largest summed normalized risk S accepted by the HB test, for n = 0..n_max.

    Accept iff ``ceil(S) <= k*`` (Bentkus: k* = largest k with e·F(k; n, alpha) <= delta)
    or ``S / n <= r_H`` (Hoeffding: h1(r_H, alpha) = log(1/delta) / n), i.e. iff
    ``S <= max(k*, n r_H)``; -inf when neither part accepts anything (then only the empty
    set qualifies). k*(n) is non-decreasing and grows by at most 1 per step, so one pass
    with the binomial pmf/cdf recurrences (n -> n + 1) finds it in O(1) per n. r_H(n)
    is found only when it beats k*: safeguarded Newton from k*/n (h1 is convex and
    decreasing on [0, alpha], so Newton from the left never overshoots).
    """
    out = np.full(n_max + 1, -np.inf)
    log_inv_delta = np.log(1.0 / delta)
    e = np.e
    k = -1
    cdf = 0.0
    pmf = 0.0
    for n in range(1, n_max + 1):
        # Bentkus part: F(k; n) and pmf(k; n) from n - 1, then try k + 1.
        if k < 0:
            first = np.exp(n * np.log1p(-alpha))
            if e * first <= delta:
                k = 0
                cdf = first
                pmf = first
        else:
            cdf = cdf - alpha * pmf
            pmf = pmf * (1 - alpha) * n / (n - k)
            up_pmf = pmf * (n - k) / (k + 1) * alpha / (1 - alpha)
            up_cdf = cdf + up_pmf
            if k + 1 <= n and e * up_cdf <= delta:
                k += 1
                cdf = up_cdf
                pmf = up_pmf
        best = float(k) if k >= 0 else -np.inf
        # Hoeffding part: it can only matter if it accepts a larger S than k*, i.e. if
        # h1(max(k*, 0)/n) >= level; then the root lies in [max(k*, 0)/n, alpha).
        level = log_inv_delta / n
        start = max(best, 0.0) / n
        if start < alpha:
            gap, _ = _hoeffding_gap(start, alpha, level)
            if gap >= 0:
                lo = start
                hi = alpha
                x = lo
                for _ in range(200):
                    gap, slope = _hoeffding_gap(x, alpha, level)
                    if gap >= 0:
                        lo = x
                    else:
                        hi = x
                    nxt = x - gap / slope if np.isfinite(slope) and slope < 0 else 0.5 * (lo + hi)
                    if not (lo < nxt < hi):
                        nxt = 0.5 * (lo + hi)
                    if nxt == x or hi - lo <= 1e-16 * hi:
                        break
                    x = nxt
                best = max(best, n * lo)
        out[n] = best
    return out


def _rcps_bounds(n_max, alpha, delta):
    """Accepted summed normalized risk for calibration sizes 0..n_max (see the kernel)."""
    if alpha >= 1:
        return np.full(n_max + 1, np.inf)
    if alpha <= 0:
        return np.full(n_max + 1, -np.inf)
    return _rcps_bound_kernel(int(n_max), float(alpha), float(delta))


def rcps(probs, labels, value, cost, targets, *, delta=None, burn_in=0, codes=None, patient_ids=None,
         grid_size=201, grid=None):
    """RCPS with the Hoeffding–Bentkus bound (Bates et al. 2021): P(risk > c) <= delta.

    The risk is the cost divided by C_max (in [0, 1]); ``alpha = c / C_max``. Among the grid
    thresholds (``S_lambda = {k : p_k >= lambda}``) choose the smallest lambda whose HB
    upper confidence bound at level delta is <= alpha, i.e. whose HB p-value
    ``min(e·P(Bin(n, alpha) <= ceil(n Rhat)), exp(-n h1(min(Rhat, alpha), alpha)))`` is
    <= delta (see :func:`hb_p_value`); the empty set if none. RCPS bounds the *population*
    risk, not the per-patient cost, so its violation rate P(C > c) is expected to exceed
    delta. ``delta=None`` uses 0.1 (recorded in ``settings`` and ``result.delta``).
    Costs are summed as integers at the weights' decimal scale, so the Bentkus part
    (``ceil(n Rhat) <= k*``) is decided exactly; ``c >= C_max`` accepts every lambda.
    """
    probs, labels, costs, targets, delta, burn_in, codes, patient_ids = _check_inputs(
        probs, labels, cost, targets, delta, burn_in, codes, patient_ids)
    delta_defaulted = delta is None
    if delta is None:
        delta = 0.1
    grid = lambda_grid(probs, grid_size) if grid is None else np.unique(np.asarray(grid, dtype=float))
    n_patients = probs.shape[0]
    bounds = np.empty((targets.size, n_patients + 1))
    for t, target in enumerate(targets):
        if costs.c_max == 0:
            bounds[t] = np.inf if target >= 0 else -np.inf
            continue
        # summed (scaled) cost R = C_max * summed normalized risk S; k* C_max is exact
        alpha = float(exact(target) / costs.c_max)
        bounds[t] = _rcps_bounds(n_patients, alpha, delta) * costs.c_max_scaled
    thresholds, selected, final = _grid_run(probs, labels, costs.kernel_weights, grid, bounds, burn_in)
    settings = {"control": "violation", "c_max": float(costs.c_max), "delta": delta, "delta_defaulted": delta_defaulted,
                "grid_size": int(grid.size), "rule": "predict code k iff p_k >= threshold",
                "grid": grid.tolist()}
    return _result("RCPS", targets, delta, burn_in, thresholds, selected, probs, labels, value, cost,
                   codes, patient_ids, settings, final)
