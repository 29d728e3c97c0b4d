"""CRC: conformal risk control (as in MAPIE) with one threshold on p, expected-cost control, exact."""
from __future__ import annotations

import numpy as np

from ..thresholds import expected_bounds
from .common import ThresholdSets, build_result, grid_costs, prepare, refuse_control

__all__ = ["crc"]


def distinct_ranks(probs):
    """``np.unique(probs, return_inverse=True)`` with the inverse as int32 (int64 from 2^31
    probabilities on) in ``probs``' shape (:func:`value_ranks`, with the values read out).

    >>> values, ranks = distinct_ranks(np.array([[0.5, 0.1], [0.5, 0.9]]))
    >>> values.tolist(), ranks.tolist()
    ([0.1, 0.5, 0.9], [[1, 0], [1, 2]])
    """
    ranks, n_values, _ = value_ranks(probs)
    values = np.empty(n_values)
    values[ranks] = probs  # every index of a value holds the same float (-0.0 and 0.0 are one value)
    return values, ranks


def value_ranks(probs):
    """(ranks, n_values, longest): ``ranks`` (``probs``' shape, int32 below 2^31 probabilities) is
    each probability's position among the ``n_values`` distinct values, sorted (``np.unique``'s
    inverse); ``longest`` is the most probabilities sharing one value. ``probs``: finite floats.

    One sort of 8-byte keys (the top bits of each value's order above its index,
    :func:`favmac.baselines.kernels.sorted_value_keys`: numpy's vectorized sort of integers,
    several times faster than an argsort of the floats), then one pass along them
    (:func:`~favmac.baselines.kernels.rank_sorted_keys`). It holds the keys (8 bytes per
    probability) and the ranks (4): no argsort (8 bytes), sorted copy or table of the values
    beside them. The probabilities are read where they are (row- or column-major; other
    layouts are copied first).

    >>> ranks, n_values, longest = value_ranks(np.array([[0.5, 0.1], [0.5, 0.9]]))
    >>> ranks.tolist(), n_values, longest
    ([[1, 0], [1, 2]], 3, 2)
    """
    from ..parallel import map_chunks
    from .kernels import rank_sorted_keys, sorted_value_key_parts

    probs = np.asarray(probs, dtype=float)
    transposed = probs.ndim == 2 and not probs.flags.c_contiguous and probs.flags.f_contiguous
    rows = np.ascontiguousarray(probs.T if transposed else probs)  # no copy unless neither layout
    flat = rows.reshape(-1)
    bits = flat.view(np.uint64)
    ranks = np.empty(rows.shape, dtype=np.int32 if flat.size < 2**31 else np.int64)
    keys, shift, edges = sorted_value_key_parts(flat)
    parts = [keys[a:b] for a, b in zip(edges[:-1], edges[1:])]
    # parts in value order, no value in two of them: a part's ranks start after the distinct values before it
    counts = [0] if len(parts) == 1 else map_chunks(lambda part: int(rank_sorted_keys(part, bits, shift, ranks[:0].reshape(-1))[0]), parts)
    firsts = np.cumsum([0] + counts[:-1])
    found = map_chunks(lambda i: rank_sorted_keys(parts[i], bits, shift, ranks.reshape(-1), firsts[i]), range(len(parts)))
    n_values, longest = sum(int(n) for n, _ in found), max(int(run) for _, run in found)
    return ranks.T if transposed else ranks, n_values, longest


def _position_values(ranks, n_values, probs, *answers):
    """Replace the positions :func:`favmac.baselines.kernels.crc_kernel` wrote in ``answers``
    (2-D float arrays, in place) by the probabilities at those positions, and its -inf (every
    code) by 0.0: a bit set over the positions and one float per answered position
    (:func:`favmac.replay_kernels.mark_slots` and the look-up the replay's keyless walk uses),
    filled in one pass over the ranks and probabilities."""
    from ..replay_kernels import mark_slots, record_slot_keys, slot_keys, slot_prefix

    bits = np.zeros((n_values + 63) >> 6, dtype=np.uint64)
    for table in answers:
        mark_slots(table, bits)
    prefix = slot_prefix(bits)
    found = np.empty(int(prefix[-1]))
    transposed = not ranks.flags.c_contiguous  # value_ranks' ranks of column-major probabilities
    record_slot_keys((ranks.T if transposed else ranks).reshape(-1),
                     np.ascontiguousarray(probs.T if transposed else probs).reshape(-1), bits, prefix, found)
    for table in answers:
        slot_keys(table, bits, prefix, found)
        table[np.isneginf(table)] = 0.0


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
    calibration update O(K log U); the walk answers with positions, whose probabilities are
    looked up after it (no table of the values beside the tree). The chosen sets are kept as their rule
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
    ranks, n_values, longest = value_ranks(stream.probs)  # first: its sort keys are gone before the bounds exist
    stream.progress(0.1)
    # summed calibration cost R(lambda) must satisfy R + C_max <= c (n + 1), i.e. R <= M
    if exact_sums:
        bounds = expected_bounds(stream.targets, stream.costs, n_patients)
    else:
        sizes = np.arange(n_patients + 1)
        bounds = np.array([float(t) * (sizes + 1) - c_max_units for t in stream.targets])
    from ..universe import smallest_int
    from .kernels import crc_kernel, occupancy_levels

    weights = np.asarray(weights)
    # a position's cost is at most the largest weight times the most probabilities sharing it
    largest = int(weights.max(initial=0)) * longest if exact_sums else None
    leaf = np.zeros(n_values, dtype=weights.dtype if largest is None else smallest_int(largest))
    labels = np.ascontiguousarray(stream.labels, dtype=bool)
    thresholds, final = crc_kernel(ranks, labels, weights, leaf, bounds, stream.burn_in, stream.window_int,
                                   occupancy_levels(n_values))
    del leaf, bounds
    _position_values(ranks, n_values, stream.probs, thresholds, final[None, :])
    del ranks
    settings = {"rule": "predict code k iff p_k >= threshold",
                "candidates": "0, every calibration probability, +inf (exact)"}
    sets = ThresholdSets(stream.probs[stream.burn_in:], thresholds, ">=")
    return build_result("CRC", stream, thresholds, sets, value, cost, settings, final)
