"""Compiled inner loops of the replay engine (numba).

Both kernels keep a Fenwick tree over the ranks of all keys the stream will ever insert
(known up front in a replay), holding exact int64 weights, and walk the stream in order:
query the thresholds for position n, then insert patient n (and, with a rolling window,
delete patient n - window). They resume from ``start`` so the caller can run them in
chunks and report progress.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _fenwick_add(tree, index, delta):
    i = index + 1
    size = tree.shape[0]
    while i < size:
        tree[i] += delta
        i += i & -i


@njit(cache=True)
def _fenwick_count_le(tree, bound):
    """Largest count c of leading ranks whose total weight is <= bound."""
    size = tree.shape[0] - 1
    step = 1
    while step * 2 <= size:
        step *= 2
    pos = 0
    acc = 0
    while step > 0:
        nxt = pos + step
        if nxt <= size and acc + tree[nxt] <= bound:
            pos = nxt
            acc += tree[nxt]
        step //= 2
    return pos


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
                    pos = _fenwick_count_le(tree, bound)
                    out[t, n - burn_in] = np.inf if pos >= n_keys else keys[pos]
        if n < n_patients:
            for e in range(ptr[n], ptr[n + 1]):
                _fenwick_add(tree, ranks[e], weights[e])
            if window > 0 and n - window >= 0:
                old = n - window
                for e in range(ptr[old], ptr[old + 1]):
                    _fenwick_add(tree, ranks[e], -weights[e])


@njit(cache=True)
def floor_multiples(whole, remainder, denominator, offset, out):
    """out[m] = floor(a (m + 1) / b) - offset, for a = whole * b + remainder (0 <= remainder < b)."""
    q = whole
    r = remainder
    for m in range(out.shape[0]):
        out[m] = q - offset
        q += whole
        r += remainder
        if r >= denominator:
            r -= denominator
            q += 1


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
            if k > n_cal:
                out[n - burn_in] = -np.inf
            elif k <= 0:
                out[n - burn_in] = np.inf
            else:
                # k-th largest = smallest score whose count of scores <= it reaches n_cal - k + 1
                pos = _fenwick_count_le(tree, n_cal - k)
                out[n - burn_in] = scores[pos]
        if n < n_patients:
            _fenwick_add(tree, score_ranks[n], 1)
            if window > 0 and n - window >= 0:
                _fenwick_add(tree, score_ranks[n - window], -1)
