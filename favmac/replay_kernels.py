"""Compiled inner loops of the replay engine (numba).

Both kernels keep a Fenwick tree (:mod:`favmac.fenwick`) over the ranks of all keys the
stream will ever insert (known up front in a replay), holding exact int64 weights, and
walk the stream in order: query the thresholds for position n, then insert patient n (and,
with a rolling window, delete patient n - window). They resume from ``start`` so the caller
can run them in chunks and report progress. The rank edge rule is
:func:`favmac.thresholds.rank_edge`, compiled here.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from . import thresholds
from .fenwick import add, count_le

__all__ = ["adaptive_thresholds", "calibration_count", "expected_thresholds", "violation_thresholds", "rank_edge"]

#: :func:`favmac.thresholds.rank_edge`, compiled for the kernels.
rank_edge = njit(cache=True)(thresholds.rank_edge)
#: :func:`favmac.thresholds.calibration_count`, compiled for the kernels.
calibration_count = njit(cache=True)(thresholds.calibration_count)


@njit(cache=True)
def expected_thresholds(ptr, ranks, weights, keys, bounds, burn_in, window, start, stop, tree, out):
    """Expected-cost thresholds for stream positions start..stop-1 (all targets at once).

    out[t, n - burn_in] = smallest key b with F_n(b) > bounds[t, n_cal], where F_n is the
    weight of the calibration points (patients before n, within the window) and
    bounds[t, m] = floor((c_t (m + 1) - C_max) * scale).
    """
    n_patients = ptr.shape[0] - 1
    n_keys = keys.shape[0]
    for n in range(start, stop):
        if n >= burn_in:
            n_cal = calibration_count(n, window)
            for t in range(bounds.shape[0]):
                bound = bounds[t, n_cal]
                if bound < 0:
                    out[t, n - burn_in] = -np.inf
                else:
                    pos = count_le(tree, bound)
                    out[t, n - burn_in] = np.inf if pos >= n_keys else keys[pos]
        if n < n_patients:
            for e in range(ptr[n], ptr[n + 1]):
                add(tree, ranks[e], weights[e])
            if window > 0 and n - window >= 0:
                old = n - window
                for e in range(ptr[old], ptr[old + 1]):
                    add(tree, ranks[e], -weights[e])


@njit(cache=True)
def violation_thresholds(score_ranks, scores, ranks_k, burn_in, window, start, stop, tree, out):
    """Violation-control thresholds: the k-th largest score T_i among calibration patients.

    ``ranks_k[m]`` is k = ceil((1 - delta)(m + 1)) for m calibration patients.
    """
    n_patients = score_ranks.shape[0]
    for n in range(start, stop):
        if n >= burn_in:
            n_cal = calibration_count(n, window)
            k = ranks_k[n_cal]
            edge = rank_edge(k, n_cal)
            if not math.isnan(edge):
                out[n - burn_in] = edge
            else:
                # k-th largest = smallest score whose count of scores <= it reaches n_cal - k + 1
                out[n - burn_in] = scores[count_le(tree, n_cal - k)]
        if n < n_patients:
            add(tree, score_ranks[n], 1)
            if window > 0 and n - window >= 0:
                add(tree, score_ranks[n - window], -1)



@njit(cache=True)
def adaptive_thresholds(ptr, ranks, weights, keys, cand_keys, preference, realized, start_targets, target_base,
                        rate_scaled, cost_to_base, ratio, c_max_big, burn_in, window, limit, tree, out, targets_out):
    """Expected-cost thresholds with the adaptive target c_n, walking the stream step by step.

    The target moves with the set each threshold chooses, so every step queries, chooses and
    updates c_n for all targets before the patient's points are inserted:

    * ``targets_out[t, n - burn_in]`` = c_n * S (S the adaptive scale; starts at ``start_targets``);
    * ``out[t, n - burn_in]`` = smallest key b with F_n(b) > c_n (m + 1) - C_max, i.e. with
      F (at the costs' scale) > floor((c_n S (m + 1) - C_max S) / ratio), ratio = S / cost scale;
      -inf when that margin is negative;
    * the chosen candidate is the first of ``preference[n]`` whose ``cand_keys`` is below the
      threshold (the empty set, candidate 0, when none is), and C_n = ``realized[n, chosen]``;
    * c_{n+1} S = c_n S + rate_scaled (target_base - C_n cost_to_base).

    Returns False (and stops) when |c_n S| (m + 1) would reach ``limit`` (int64 overflow):
    the caller then falls back to an exact Python loop.
    """
    n_patients = ptr.shape[0] - 1
    n_keys = keys.shape[0]
    n_targets = start_targets.shape[0]
    n_cands = preference.shape[1]
    current = start_targets.copy()
    for n in range(n_patients + 1):
        if n >= burn_in:
            n_cal = calibration_count(n, window)
            for t in range(n_targets):
                targets_out[t, n - burn_in] = current[t]
                if abs(current[t]) >= limit // (n_cal + 1):
                    return False
                margin = current[t] * (n_cal + 1) - c_max_big
                if margin < 0:
                    threshold = -np.inf
                else:
                    pos = count_le(tree, margin // ratio)
                    threshold = np.inf if pos >= n_keys else keys[pos]
                out[t, n - burn_in] = threshold
                if n < n_patients:
                    chosen = 0
                    for j in range(n_cands):
                        candidate = preference[n, j]
                        if cand_keys[n, candidate] < threshold:
                            chosen = candidate
                            break
                    current[t] += rate_scaled * (target_base[t] - realized[n, chosen] * cost_to_base)
        if n < n_patients:
            for e in range(ptr[n], ptr[n + 1]):
                add(tree, ranks[e], weights[e])
            if window > 0 and n - window >= 0:
                old = n - window
                for e in range(ptr[old], ptr[old + 1]):
                    add(tree, ranks[e], -weights[e])
    return True
