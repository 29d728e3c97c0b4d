"""The threshold grid of CRC and RCPS: one threshold lambda on p, S_lambda = {k : p_k >= lambda}.

The candidate thresholds are a fixed grid (``grid_size`` quantiles of all probabilities of
the stream, plus ``+inf`` = the empty set); the running sum of calibration cost at every
grid point is kept (patients leaving a rolling window are subtracted): O(G + K) per patient
and O(T log G) per prediction. The acceptance test is monotone in lambda, so a grid picks
the first grid point at or above the cut-off a finer candidate set would pick: sets that
are never larger, i.e. slightly conservative. MAPIE itself uses a fixed grid of lambdas too.
"""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["lambda_grid", "grid_run"]


def lambda_grid(probs, grid_size=201, max_sample=2**20) -> np.ndarray:
    """Candidate thresholds: ``grid_size`` evenly spaced quantiles of all probabilities.

    Each grid point is an actual probability (``method="lower"``), duplicates are merged,
    and the smallest probability is always included (so the full set is reachable). Above
    ``max_sample`` probabilities the quantiles are taken over an evenly strided
    (deterministic) sample plus the minimum. The empty set (lambda = +inf) is added by the
    methods themselves.

    >>> lambda_grid([[0.1, 0.5], [0.9, 0.5]], grid_size=3).tolist()
    [0.1, 0.5, 0.9]
    """
    grid_size = int(grid_size)
    if grid_size < 2:
        raise ValueError(f"grid_size: expected at least 2, got {grid_size}")
    flat = np.asarray(probs, dtype=float).ravel()
    if flat.size == 0:
        return np.zeros(1)
    if flat.size > max_sample:
        flat = np.append(flat[:: -(-flat.size // max_sample)], flat.min())
    return np.unique(np.quantile(flat, np.linspace(0.0, 1.0, grid_size), method="lower"))


def resolve_grid(probs, grid_size, grid) -> np.ndarray:
    """The given grid (sorted, unique) or :func:`lambda_grid` of the probabilities."""
    return lambda_grid(probs, grid_size) if grid is None else np.unique(np.asarray(grid, dtype=float))


@njit(cache=True)
def _add_patient(running, patient, n_above, weights_row, sign):
    n_grid = running.shape[0] - 1
    for k in range(n_above.shape[0]):
        patient[n_above[k]] += weights_row[k]
    acc = 0.0
    for j in range(n_grid - 1, -1, -1):
        acc += patient[j + 1]
        running[j] += sign * acc
    patient[:] = 0.0


@njit(cache=True)
def _grid_kernel(probs, negative_weight, bounds, burn_in, window, grid):
    """Smallest grid index j with R[j] <= bound, R[j] = summed cost of S_{grid[j]} in the window.

    ``n_above[k]`` = number of grid points <= p_k, so k is in S_{grid[j]} iff n_above > j.
    Index G (one past the grid) is lambda = +inf, the empty set, with R[G] = 0.
    ``bounds[t, m]`` is the largest accepted R with m calibration patients.
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
            n_cal = n
            if window > 0 and n_cal > window:
                n_cal = window
            for t in range(n_targets):
                bound = bounds[t, n_cal]
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
            _add_patient(running, patient, n_above, negative_weight[n], 1.0)
            if window > 0 and n - window >= 0:
                old = n - window
                _add_patient(running, patient, np.searchsorted(grid, probs[old], side="right"),
                             negative_weight[old], -1.0)
    return thresholds, selected, final


def grid_run(probs, labels, weights, grid, bounds, burn_in, window):
    """Run the grid kernel: (thresholds (T, S), selected (T, S, K), final (T,))."""
    negative_weight = np.where(labels, 0.0, np.asarray(weights, dtype=float)[None, :])
    return _grid_kernel(probs, negative_weight, bounds, burn_in, window, np.ascontiguousarray(grid, dtype=float))
