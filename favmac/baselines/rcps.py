"""RCPS with the Hoeffding–Bentkus bound (Bates et al. 2021): P(risk > c) <= delta."""
from __future__ import annotations

import math

import numpy as np

from ..thresholds import INT64_LIMIT, exact
from .common import ThresholdSets, build_result, grid_costs, prepare, refuse_control
from .grid import grid_run, resolve_grid

__all__ = ["rcps", "hb_p_value"]


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
    from scipy.stats import binom

    if n == 0:
        return 1.0
    rhat = total_risk / n
    bentkus = np.e * binom.cdf(math.ceil(total_risk), n, alpha)
    hoeffding = float(np.exp(-n * _kl_bernoulli(np.array(min(rhat, alpha)), alpha)))
    return float(min(bentkus, hoeffding))


def _rcps_bounds(n_max, alpha, delta):
    """Accepted summed normalized risk for calibration sizes 0..n_max (see the kernel)."""
    if alpha >= 1:
        return np.full(n_max + 1, np.inf)
    if alpha <= 0:
        return np.full(n_max + 1, -np.inf)
    from .kernels import rcps_bound_kernel

    return rcps_bound_kernel(int(n_max), float(alpha), float(delta))


def _scaled_bounds(accepted, c_max_scaled: int) -> np.ndarray:
    """Largest accepted summed cost R = C_max S, as int64 at the costs' scale.

    An integer S (the Bentkus part, k*) gives k* C_max exactly; a fractional S (the
    Hoeffding part) gives floor(S C_max) (R is an integer, so R <= S C_max iff R <= floor).
    -inf accepts nothing, +inf everything.
    """
    out = np.empty(accepted.shape, dtype=np.int64)
    finite = np.isfinite(accepted)
    whole = finite & (accepted == np.floor(accepted))
    out[whole] = accepted[whole].astype(np.int64) * np.int64(c_max_scaled)
    part = finite & ~whole
    out[part] = np.floor(accepted[part] * c_max_scaled).astype(np.int64)
    out[~finite] = np.where(accepted[~finite] > 0, INT64_LIMIT, -INT64_LIMIT)
    return out


def rcps(probs, labels, value, cost, targets, *, delta=None, burn_in=0, window=None, c_max=None, codes=None,
         patient_ids=None, progress=None, grid_size=201, grid=None):
    """RCPS with the Hoeffding–Bentkus bound (Bates et al. 2021): P(risk > c) <= delta.

    The risk is the cost divided by C_max (in [0, 1]); ``alpha = c / C_max``. Among the grid
    thresholds (``S_lambda = {k : p_k >= lambda}``) choose the smallest lambda whose HB
    upper confidence bound at level delta is <= alpha, i.e. whose HB p-value
    ``min(e·P(Bin(n, alpha) <= ceil(n Rhat)), exp(-n h1(min(Rhat, alpha), alpha)))`` is
    <= delta (see :func:`hb_p_value`); the empty set if none. RCPS bounds the *population*
    risk, not the per-patient cost, so its violation rate P(C > c) is expected to exceed
    delta.

    Parameters
    ----------
    probs, labels, value, cost, targets, burn_in, codes, patient_ids, progress
        As :func:`favmac.baselines.classwise`.
    delta : float in (0, 1)
        Required: the level of the bound (ValueError when None).
    window : int, optional
        Rolling window of calibration patients.
    c_max : float, optional
        C_max normalizing the risk (default: the sum of the cost weights).
    grid_size, grid
        The candidate thresholds, as in :func:`favmac.baselines.crc`.

    Returns
    -------
    ReplayResult
        ``thresholds``/``final_thresholds`` are lambda (rule: ``p_k >= lambda``).

    Notes
    -----
    Costs are summed as integers at the weights' decimal scale, so the Bentkus part
    (``ceil(n Rhat) <= k*``) is decided exactly; ``c >= C_max`` accepts every lambda.
    """
    if delta is None:
        raise ValueError("delta: RCPS controls violations and needs a level in (0, 1), e.g. delta=0.1 "
                         "(use crc or classwise for expected-cost control)")
    refuse_control("RCPS", delta, ("violation",))
    stream = prepare(probs, labels, cost, targets, delta=delta, burn_in=burn_in, window=window, c_max=c_max,
                     codes=codes, patient_ids=patient_ids, progress=progress)
    grid = resolve_grid(stream.probs, grid_size, grid)
    n_patients = stream.n_patients
    weights, c_max_units, _, exact_sums = grid_costs(stream.costs, n_patients)
    bounds = np.empty((stream.targets.size, n_patients + 1))
    for t, target in enumerate(stream.targets):
        if stream.costs.c_max == 0:
            bounds[t] = np.inf if target >= 0 else -np.inf
            continue
        alpha = float(exact(target) / stream.costs.c_max)
        bounds[t] = _rcps_bounds(n_patients, alpha, stream.delta)
    if exact_sums:
        bounds = _scaled_bounds(bounds, c_max_units)
    else:
        bounds = bounds * c_max_units
    stream.progress(0.1)
    thresholds, final = grid_run(stream.probs, stream.labels, weights, grid, bounds, stream.burn_in, stream.window_int)
    settings = {"delta": stream.delta, "grid_size": int(grid.size), "rule": "predict code k iff p_k >= threshold",
                "grid": grid.tolist()}
    sets = ThresholdSets(stream.probs[stream.burn_in:], thresholds, ">=")
    return build_result("RCPS", stream, thresholds, sets, value, cost, settings, final)
