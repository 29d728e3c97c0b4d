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

__all__ = ["expected_thresholds", "violation_thresholds", "rank_edge"]

#: :func:`favmac.thresholds.rank_edge`, compiled for the kernels.
rank_edge = njit(cache=True)(thresholds.rank_edge)


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
            n_cal = n
            if window > 0 and n_cal > window:
                n_cal = window
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
            n_cal = n
            if window > 0 and n_cal > window:
                n_cal = window
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
