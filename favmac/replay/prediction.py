"""Chosen sets of new patients under a fixed threshold (a replay's or a calibration's final one)."""
from __future__ import annotations

import math

import numpy as np

from ..scores import check_score, default_score
from ..universe import candidate_sets

__all__ = ["predict_with_threshold"]


def predict_with_threshold(probs, value, cost, threshold, universe: str = "ratio", score: str | None = None,
                           recalibration=None, delta=None, groups=None) -> np.ndarray:
    """Chosen sets (N, K) bool for new patients under a fixed threshold (e.g. final_thresholds[t]).

    ``score`` must be the score the threshold was calibrated on ("cost" or "price");
    ``recalibration`` the maps it was calibrated with (a ``Recalibration`` or its dict, e.g.
    ``result.settings["recalibration_maps"]``), applied to ``probs`` first; maps fitted per
    segment also need ``groups`` (each row's segment).

    >>> from favmac import AdditiveValue, AdditiveCost
    >>> predict_with_threshold([[0.9, 0.2], [0.4, 0.8]], AdditiveValue(), AdditiveCost(), 0.25).tolist()
    [[True, False], [False, True]]
    """
    score = check_score(default_score(universe, delta) if score is None else score, universe)
    probs = np.atleast_2d(np.asarray(probs, dtype=float))
    if recalibration is not None:
        from ..recalibration import as_recalibration
        probs = as_recalibration(recalibration).apply(probs, groups=groups)
    cands = candidate_sets(probs, value, cost, universe)
    if isinstance(threshold, float) and math.isnan(threshold):
        raise ValueError("threshold is NaN")
    return cands.masks(cands.choose(threshold, score))
