"""InnerSet: one threshold on p that keeps out every true negative with high probability.

One Fenwick tree (:mod:`favmac.fenwick`) of counts over the ranks of the scores s_i:
insert, delete (rolling window) and k-th-smallest queries are O(log N).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
from ..thresholds import exact, quantile_rank
from .common import ThresholdSets, build_result, prepare

__all__ = ["inner_set", "inner_set_scores"]


#: Patients per step of :func:`inner_set_scores`.
_SCORE_ROWS = 16_384


def inner_set_scores(probs, labels) -> np.ndarray:
    """s_i = max{p_k(x_i) : y_ik = 0} (0 when patient i has every code).

    >>> inner_set_scores([[0.9, 0.3], [0.8, 0.6]], [[1, 0], [1, 1]]).tolist()
    [0.3, 0.0]
    """
    from ..parallel import map_chunks

    probs = np.asarray(probs, dtype=float)
    labels = np.asarray(labels, dtype=bool)
    out = np.empty(probs.shape[0])

    def score(start):  # an (N, K) float temporary at once was 84 MB at 300,000 x 35; each block writes its own rows
        rows = slice(start, start + _SCORE_ROWS)
        out[rows] = np.where(labels[rows], -np.inf, probs[rows]).max(axis=1, initial=0.0)

    map_chunks(score, range(0, probs.shape[0], _SCORE_ROWS))
    return out


def inner_set(probs, labels, value, cost, targets, *, delta=None, burn_in=0, window=None, c_max=None,
              codes=None, patient_ids=None, progress=None):
    """InnerSet: one threshold on p that keeps out every true negative with high probability.

    ``s_i = max{p_k(x_i) : y_ik = 0}`` (0 if none), ``tau = Q(1 - eps; {s_i} ∪ {+inf})``,
    predict ``{k : p_k > tau}``. Violation control (``delta`` given): ``eps = delta``, which
    bounds P(any false positive) and hence P(C > c) for every c >= 0 — the target does not
    enter, so all targets give the same sets. Expected control: ``eps = c / C_max``, so
    E[C] <= C_max P(C > 0) <= c.

    Parameters
    ----------
    probs, labels : ndarray (N, K)
    value, cost : value function (any) and additive cost (``AdditiveCost``).
    targets : float or sequence of float
    delta : float or None
        None: expected-cost control; a level in (0, 1): violation control.
    burn_in : int
    window : int, optional
        Rolling window of calibration patients.
    c_max : float, optional
        C_max in ``eps = c / C_max`` (default: the sum of the cost weights).
    codes, patient_ids : optional labels carried into the result.
    progress : callable(float), optional

    Returns
    -------
    ReplayResult
        ``thresholds`` and ``final_thresholds`` are tau (rule: ``p_k > tau``).

    Notes
    -----
    Edge cases: empty calibration gives ``tau = +inf`` (nothing predicted); ``eps >= 1``
    (c >= C_max) gives ``tau = -inf`` (everything predicted); ``c < 0`` predicts nothing;
    ``C_max = 0`` predicts everything.
    """
    stream = prepare(probs, labels, cost, targets, delta=delta, burn_in=burn_in, window=window, c_max=c_max,
                     codes=codes, patient_ids=patient_ids, progress=progress)
    n_patients = stream.n_patients
    sizes = np.arange(n_patients + 1)
    ranks_needed = np.empty((stream.targets.size, n_patients + 1), dtype=np.int64)
    for t, target in enumerate(stream.targets):
        if stream.delta is not None:
            beta = 1 - exact(stream.delta)
        elif stream.costs.c_max == 0:
            beta = Fraction(0)
        else:
            beta = 1 - exact(target) / stream.costs.c_max
        ranks_needed[t] = quantile_rank(beta, sizes)
    scores = inner_set_scores(stream.probs, stream.labels)
    from .. import fenwick, parallel
    from .kernels import inner_set_kernel, stable_argsort

    order = stable_argsort(scores)
    rank = np.empty(n_patients, dtype=np.int64)
    rank[order] = np.arange(n_patients)
    sorted_scores = scores[order]
    thresholds = np.empty((stream.targets.size, n_patients - stream.burn_in))
    final = np.empty(stream.targets.size)
    # the targets are independent: a group per inner thread, each with its own tree (rows of thresholds its own)
    parallel.map_chunks(lambda group: inner_set_kernel(rank, sorted_scores, ranks_needed[group.start:group.stop], stream.burn_in,
                                                       stream.window_int, fenwick.top_bit(n_patients),
                                                       thresholds[group.start:group.stop], final[group.start:group.stop]),
                        parallel.chunk_ranges(stream.targets.size, parallel.inner_threads()))
    settings = {"rule": "predict code k iff p_k > threshold"}
    sets = ThresholdSets(stream.probs[stream.burn_in:], thresholds, ">")
    return build_result("InnerSet", stream, thresholds, sets, value, cost, settings, final)
