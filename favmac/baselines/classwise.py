"""ClassWise: one conformal threshold per code (expected-cost control).

Each code keeps a Fenwick tree (:mod:`favmac.fenwick`) of counts over the ranks of its
scores among the calibration patients that do not have the code: insert, delete (rolling
window) and rank queries are O(log N), so a replay costs O(N K (log N + T)).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
from ..thresholds import exact, quantile_rank
from .common import ThresholdSets, build_result, prepare, refuse_control

__all__ = ["classwise", "target_plan"]


def target_plan(targets, c_max, n_patients: int):
    """(order, needs_by_size, place) of ClassWise's targets: ``order`` the targets by decreasing
    beta = 1 - c / C_max (the quantile's rank ceil(beta (m + 1)) then never grows along them, for
    every m, so the targets that predict a code are the last ones of this order);
    ``needs_by_size[m, i]`` the rank of the i-th target's quantile among m negatives plus +inf
    (m = 0..``n_patients``); ``place[t]``: target t is the place[t]-th of the order (int64)."""
    sizes = np.arange(n_patients + 1)
    betas = [Fraction(0) if c_max == 0 else 1 - exact(target) / c_max for target in targets]
    order = sorted(range(len(betas)), key=lambda t: betas[t], reverse=True)
    needs_by_size = np.empty((n_patients + 1, len(order)), dtype=np.int64)
    for i, t in enumerate(order):
        needs_by_size[:, i] = quantile_rank(betas[t], sizes)
    place = np.empty(len(order), dtype=np.int64)
    place[order] = np.arange(len(order))
    return order, needs_by_size, place


def classwise(probs, labels, value, cost, targets, *, delta=None, burn_in=0, window=None, c_max=None,
              codes=None, patient_ids=None, progress=None):
    """ClassWise: one conformal threshold per code, expected-cost control.

    For code k, with ``a_i = p_k(x_i)`` over the calibration patients that do *not* have
    code k, ``t_k = Q(1 - c / C_max; {a_i} ∪ {+inf})`` and code k is predicted iff
    ``p_k > t_k``. For the false-positive count C_FP (all weights 1) ``C_max = K`` and
    this is the paper's ``1 - c/K``. With weighted costs every code gets the same
    false-positive rate ``c / C_max``, so the expected cost is at most
    ``sum_k w_k c / C_max = c``.

    Parameters
    ----------
    probs, labels : ndarray (N, K)
        Probabilities in [0, 1] and 0/1 labels, in stream order.
    value, cost : value function (any) and additive cost (``AdditiveCost``).
    targets : float or sequence of float
        Target costs c (cost units).
    delta : None
        Only expected-cost control applies (ValueError otherwise).
    burn_in : int
        Calibration-only patients at the head of the stream.
    window : int, optional
        Rolling window: calibrate on the last ``window`` patients only.
    c_max : float, optional
        C_max in ``1 - c / C_max`` (default: the sum of the cost weights).
    codes, patient_ids : optional labels carried into the result.
    progress : callable(float), optional
        Called with the fraction done, 0 to 1.

    Returns
    -------
    ReplayResult
        ``thresholds`` are NaN (no single threshold); ``settings["code_thresholds"]`` holds
        the (T, K) per-code thresholds calibrated on the last patients (use them for new
        patients: predict k iff ``p_k > t_k``).

    Notes
    -----
    Edge cases: an empty calibration set (or a code never observed negative) gives
    ``t_k = +inf`` (code never predicted) unless ``c >= C_max``; ``c >= C_max`` gives
    ``t_k = -inf`` (always predicted); ``c < 0`` predicts nothing; ``C_max = 0`` (all weights
    zero) predicts every code, as nothing can cost anything.
    """
    refuse_control("ClassWise", delta, ("expected",), "use inner_set, fpcp or rcps for violation control")
    stream = prepare(probs, labels, cost, targets, delta=delta, burn_in=burn_in, window=window, c_max=c_max,
                     codes=codes, patient_ids=patient_ids, progress=progress)
    n_patients = stream.n_patients
    order, needs_by_size, place = target_plan(stream.targets, stream.costs.c_max, n_patients)
    from .. import fenwick, parallel
    from .kernels import classwise_code, stable_argsort

    passed = np.empty((stream.n_codes, n_patients - stream.burn_in), dtype=np.uint8 if len(order) < 256 else np.int64)
    final = np.empty((stream.n_codes, len(order)))

    def run_codes(codes_here):  # one code at a time: its tree stays in cache; the work space is this thread's own
        tree = np.zeros(n_patients + 1, dtype=np.int32)
        rank, below = np.empty(n_patients, dtype=np.int64), np.empty(n_patients, dtype=np.int64)
        for k in codes_here:
            column = np.ascontiguousarray(stream.probs[:, k])
            classwise_code(column, stable_argsort(column), np.ascontiguousarray(~stream.labels[:, k]), needs_by_size,
                           stream.burn_in, stream.window_int, fenwick.top_bit(n_patients), passed[k], final[k], tree, rank, below)

    # the codes are independent (each writes its own row of passed and final): a group per inner thread
    parallel.map_chunks(run_codes, parallel.chunk_ranges(stream.n_codes, parallel.inner_threads()))
    final = final.T
    place = place.astype(passed.dtype)
    # code k is predicted for target t at step s iff passed[s, k] <= place[t]
    sets = ThresholdSets(np.ascontiguousarray(passed.T), place[:, None], "<=")
    del passed
    code_thresholds = np.empty_like(final)
    code_thresholds[np.asarray(order, dtype=np.int64)] = final
    n_targets, n_steps = stream.targets.size, n_patients - stream.burn_in
    settings = {
        "rule": "predict code k iff p_k > code_thresholds[target][k]",
        "code_thresholds": code_thresholds.tolist(),
    }
    return build_result("ClassWise", stream, np.full((n_targets, n_steps), np.nan), sets, value, cost,
                        settings, np.full(n_targets, np.nan))
