"""A hand-made ReplayResult shared by the export and UI tests (2 targets x 4 steps x 3 codes, burn-in 2)."""
from __future__ import annotations

import numpy as np

from favmac.result import ReplayResult

CODES = ["A", "B", "C"]


def toy_result(delta=None, settings=None) -> ReplayResult:
    selected = np.zeros((2, 4, 3), dtype=bool)
    selected[0, :, 0] = True
    selected[1, 1:, :2] = True
    cost = np.array([[0.0, 1.0, 1.0, 0.0], [2.0, 0.0, 1.0, 3.0]])
    value = np.array([[1.0, 0.0, 1.0, 2.0], [1.0, 1.0, 0.0, 0.0]])
    thresholds = np.array([[np.inf, 1.0, 0.5, 0.5], [-np.inf, 2.0, 2.0, 1.5]])
    return ReplayResult("FavMac (ratio)", np.array([0.5, 1.5]), delta, 2, thresholds, selected, cost, value, codes=CODES,
                        patient_ids=np.array(["p2", "p3", "p4", "p5"], dtype=object), settings=dict(settings or {}),
                        final_thresholds=np.array([0.4, 1.4]))
