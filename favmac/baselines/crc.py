"""CRC: conformal risk control (as in MAPIE) with one threshold on p, expected-cost control."""
from __future__ import annotations

import numpy as np

from ..thresholds import expected_bounds
from .common import build_result, grid_costs, prepare, refuse_control
from .grid import grid_run, resolve_grid

__all__ = ["crc"]


def crc(probs, labels, value, cost, targets, *, delta=None, burn_in=0, window=None, c_max=None, codes=None,
        patient_ids=None, progress=None, grid_size=201, grid=None):
    """Conformal risk control (as in MAPIE), expected-cost control.

    One threshold lambda on p, ``S_lambda = {k : p_k >= lambda}``; with n calibration
    patients choose the smallest grid lambda with ``(n * Rhat(lambda) + C_max) / (n + 1) <= c``
    (Rhat = mean realized cost of S_lambda over the calibration patients; it is
    non-increasing in lambda). If none qualifies the set is empty (lambda = +inf).

    Parameters
    ----------
    probs, labels, value, cost, targets, burn_in, codes, patient_ids, progress
        As :func:`favmac.baselines.classwise`.
    delta : None
        Only expected-cost control applies (ValueError otherwise).
    window : int, optional
        Rolling window of calibration patients (n above is then at most ``window``).
    c_max : float, optional
        C_max in the acceptance test (default: the sum of the cost weights).
    grid_size : int
        Number of quantiles of all probabilities forming the candidate grid
        (:func:`favmac.baselines.lambda_grid`); or pass ``grid`` explicitly.

    Returns
    -------
    ReplayResult
        ``thresholds``/``final_thresholds`` are lambda (rule: ``p_k >= lambda``).

    Notes
    -----
    Costs are summed as integers at the weights' decimal scale (the threshold arithmetic of
    :mod:`favmac.thresholds`, the same M = c(n+1) - C_max as FavMac), so with weights like 1
    or 0.331 an exact tie is decided exactly (it qualifies).
    """
    refuse_control("CRC", delta, ("expected",), "use rcps for a high-probability risk bound")
    stream = prepare(probs, labels, cost, targets, delta=delta, burn_in=burn_in, window=window, c_max=c_max,
                     codes=codes, patient_ids=patient_ids, progress=progress)
    grid = resolve_grid(stream.probs, grid_size, grid)
    n_patients = stream.n_patients
    weights, c_max_units, _, exact_sums = grid_costs(stream.costs, n_patients)
    # summed calibration cost R(lambda) must satisfy R + C_max <= c (n + 1), i.e. R <= M
    if exact_sums:
        bounds = expected_bounds(stream.targets, stream.costs, n_patients)
    else:
        sizes = np.arange(n_patients + 1)
        bounds = np.array([float(t) * (sizes + 1) - c_max_units for t in stream.targets])
    stream.progress(0.1)
    thresholds, selected, final = grid_run(stream.probs, stream.labels, weights, grid, bounds,
                                           stream.burn_in, stream.window_int)
    settings = {"grid_size": int(grid.size), "rule": "predict code k iff p_k >= threshold", "grid": grid.tolist()}
    return build_result("CRC", stream, thresholds, selected, value, cost, settings, final)
