"""The threshold grid of RCPS: one threshold lambda on p, S_lambda = {k : p_k >= lambda}.

(CRC used this grid before; it now finds its threshold exactly, :mod:`favmac.baselines.crc`.)

The candidate thresholds are a fixed grid (``grid_size`` quantiles of all probabilities of
the stream, plus ``+inf`` = the empty set); the running sum of calibration cost at every
grid point is kept (patients leaving a rolling window are subtracted): O(G + K) per patient
and O(T log G) per prediction. The acceptance test is monotone in lambda, so a grid picks
the first grid point at or above the cut-off a finer candidate set would pick: sets that
are never larger, i.e. slightly conservative. MAPIE itself uses a fixed grid of lambdas too.
"""
from __future__ import annotations

import numpy as np

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


def grid_run(probs, labels, weights, grid, bounds, burn_in, window):
    """Run the grid kernel: (thresholds (T, S), final (T,)); the chosen sets are ``p >= threshold``."""
    weights = np.asarray(weights)
    negative_weight = np.where(labels, weights.dtype.type(0), weights[None, :]).astype(weights.dtype)
    from .kernels import grid_kernel

    return grid_kernel(probs, negative_weight, bounds, burn_in, window, np.ascontiguousarray(grid, dtype=float))
