"""CRC: conformal risk control (as in MAPIE) with one threshold on p, expected-cost control, exact."""
from __future__ import annotations

import numpy as np

from ..thresholds import expected_bounds
from .common import ThresholdSets, build_result, grid_costs, prepare, refuse_control

__all__ = ["crc"]


def distinct_ranks(probs):
    """``np.unique(probs, return_inverse=True)`` with the inverse as int32 (int64 above 2^31
    values) in ``probs``' shape (:func:`distinct_positions`, with the values read out).

    >>> values, ranks = distinct_ranks(np.array([[0.5, 0.1], [0.5, 0.9]]))
    >>> values.tolist(), ranks.tolist()
    ([0.1, 0.5, 0.9], [[1, 0], [1, 2]])
    """
    first, ranks, _ = distinct_positions(probs)
    return np.asarray(probs, dtype=float).ravel()[first], ranks


def distinct_positions(probs):
    """(first, ranks, longest): ``ranks`` (``probs``' shape, int32 below 2^31 values) is each
    probability's position among the distinct values, sorted; the r-th distinct value is
    ``probs.flat[first[r]]`` (an index of the same integer dtype: 4 bytes per value where a copy
    of the values took 8); ``longest`` is the most probabilities sharing one value.

    >>> first, ranks, longest = distinct_positions(np.array([[0.5, 0.1], [0.5, 0.9]]))
    >>> first.tolist(), ranks.tolist(), longest
    ([1, 0, 3], [[1, 0], [1, 2]], 2)
    """
    from .kernels import distinct_runs

    flat = np.ascontiguousarray(probs, dtype=float).ravel()
    order = np.argsort(flat)
    dtype = np.int32 if flat.size < 2**31 else np.int64
    first = np.empty(flat.size, dtype=dtype)
    ranks = np.empty(flat.size, dtype=dtype)
    n_distinct, longest = distinct_runs(flat, order, first, ranks)
    return first[:n_distinct], ranks.reshape(np.shape(probs)), int(longest)


def crc(probs, labels, value, cost, targets, *, delta=None, burn_in=0, window=None, c_max=None, codes=None,
        patient_ids=None, progress=None):
    """Conformal risk control (as in MAPIE), expected-cost control, with an exact threshold.

    One threshold lambda on p, ``S_lambda = {k : p_k >= lambda}``; with n calibration
    patients choose the smallest lambda with ``(R(lambda) + C_max) / (n + 1) <= c``, where
    R(lambda) is the summed realized cost of S_lambda over the calibration patients (n times
    the mean cost; non-increasing in lambda). The candidates are every distinct probability
    of the calibration patients, 0 (every code) and +inf (the empty set): R only changes at
    calibration probabilities, so this is the exact minimizer, not a grid approximation.
    If not even the empty set qualifies (c (n + 1) < C_max) lambda is +inf.

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

    Returns
    -------
    ReplayResult
        ``thresholds``/``final_thresholds`` are lambda (rule: ``p_k >= lambda``).

    Notes
    -----
    Costs are summed as integers at the weights' decimal scale (the threshold arithmetic of
    :mod:`favmac.thresholds`, the same M = c(n+1) - C_max as FavMac), so with weights like 1
    or 0.331 an exact tie is decided exactly (it qualifies). A blocked prefix tree of costs and an
    occupancy bit set over the ranks of the stream's probabilities
    (:func:`favmac.baselines.kernels.crc_kernel`) make a prediction O(T log U) and a
    calibration update O(K log U). The chosen sets are kept as their rule
    (:class:`favmac.baselines.common.ThresholdSets`) and built when ``selected`` is read.

    Examples
    --------
    >>> import numpy as np
    >>> from favmac import AdditiveValue, AdditiveCost
    >>> probs = np.array([[0.9, 0.4], [0.8, 0.3], [0.7, 0.6]])
    >>> labels = np.array([[1, 0], [1, 0], [1, 0]])
    >>> res = crc(probs, labels, AdditiveValue(), AdditiveCost(), [1.0], burn_in=2)
    >>> float(res.thresholds[0, 0]), res.selected[0, 0].tolist()
    (0.4, [True, True])
    """
    refuse_control("CRC", delta, ("expected",), "use rcps for a high-probability risk bound")
    stream = prepare(probs, labels, cost, targets, delta=delta, burn_in=burn_in, window=window, c_max=c_max,
                     codes=codes, patient_ids=patient_ids, progress=progress)
    n_patients = stream.n_patients
    weights, c_max_units, _, exact_sums = grid_costs(stream.costs, n_patients)
    # summed calibration cost R(lambda) must satisfy R + C_max <= c (n + 1), i.e. R <= M
    if exact_sums:
        bounds = expected_bounds(stream.targets, stream.costs, n_patients)
    else:
        sizes = np.arange(n_patients + 1)
        bounds = np.array([float(t) * (sizes + 1) - c_max_units for t in stream.targets])
    first, ranks, longest = distinct_positions(stream.probs)
    stream.progress(0.1)
    from ..replay import smallest_int
    from .kernels import crc_kernel, occupancy_levels

    weights = np.asarray(weights)
    # a position's cost is at most the largest weight times the most probabilities sharing it
    largest = int(weights.max(initial=0)) * longest if exact_sums else None
    leaf = np.zeros(len(first), dtype=weights.dtype if largest is None else smallest_int(largest))
    labels = np.ascontiguousarray(stream.labels, dtype=bool)
    thresholds, final = crc_kernel(stream.probs, ranks, first, labels, weights, leaf, bounds, stream.burn_in,
                                   stream.window_int, occupancy_levels(len(first)))
    del first, ranks, leaf
    settings = {"rule": "predict code k iff p_k >= threshold",
                "candidates": "0, every calibration probability, +inf (exact)"}
    sets = ThresholdSets(stream.probs[stream.burn_in:], thresholds, ">=")
    return build_result("CRC", stream, thresholds, sets, value, cost, settings, final)
