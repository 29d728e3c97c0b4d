"""Chosen sets of new patients under a fixed threshold (a replay's or a calibration's final one)."""
from __future__ import annotations

import math

import numpy as np

from ..functions import false_flag_weights
from ..scores import check_score, default_score
from ..universe import DEFAULT_UNIVERSE, candidate_sets

__all__ = ["predict_with_threshold"]


def predict_with_threshold(probs, value, cost, threshold, universe: str = DEFAULT_UNIVERSE, score: str | None = None,
                           recalibration=None, delta=None, groups=None, target=None) -> np.ndarray:
    """Chosen sets (N, K) bool for new patients under a fixed threshold (e.g. final_thresholds[t]).

    ``score`` must be the score the threshold was calibrated on ("cost" or "price"); None is the
    default of ``universe``, ``delta`` and ``target`` (:func:`favmac.scores.default_score`: give the
    target the threshold was calibrated for, or the score itself);
    ``recalibration`` the maps it was calibrated with (a ``Recalibration`` or its dict, e.g.
    ``result.settings["recalibration_maps"]``), applied to ``probs`` first; maps fitted per
    segment also need ``groups`` (each row's segment).

    >>> from favmac import AdditiveValue, AdditiveCost
    >>> predict_with_threshold([[0.9, 0.2], [0.4, 0.8]], AdditiveValue(), AdditiveCost(), 0.25).tolist()
    [[True, False], [False, True]]
    """
    probs = np.atleast_2d(np.asarray(probs, dtype=float))
    if score is None:
        score = default_score(universe, delta, target, false_flag_weights(cost, probs.shape[1]))
    score = check_score(score, universe)
    if recalibration is not None:
        from ..recalibration import as_recalibration
        probs = as_recalibration(recalibration).apply(probs, groups=groups)
    cands = candidate_sets(probs, value, cost, universe)
    if isinstance(threshold, float) and math.isnan(threshold):
        raise ValueError("threshold is NaN")
    return cands.masks(cands.choose(threshold, score))
