"""favmac.ui.patients: one patient's codes, the greedy cut, the set's numbers."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from ui_fixtures import CODES, weights_frame

from favmac import ReplayResult
from favmac.functions import AdditiveCost, AdditiveValue
from favmac.ui import patients


def test_patient_codes_status_and_greedy_cut():
    frame = patients.patient_codes([0.9, 0.2, 0.6], [1, 1, 0], [True, False, True], CODES, weights_frame(), order=[0, 2, 1])
    assert frame["code"].tolist() == ["A", "C", "B"]
    assert frame["status"].tolist() == [patients.STATUS_TP, patients.STATUS_FP, patients.STATUS_FN]
    unlabelled = patients.patient_codes([0.9, 0.2, 0.6], None, [True, False, False], CODES, weights_frame())
    assert unlabelled["status"].tolist() == [patients.STATUS_SELECTED, patients.STATUS_NOT_SELECTED, patients.STATUS_NOT_SELECTED]
    explain = pd.DataFrame({"rank": [1, 2, 3], "code": CODES, "chat": [0.1, 0.5, 1.2], "selected": [True, True, True]})
    assert patients.greedy_cut(explain, 0.5)["selected"].tolist() == [True, False, False]
    assert patients.greedy_cut(explain, float("inf"))["selected"].all()


def test_patient_summary():
    out = patients.patient_summary([True, False, True], [0.9, 0.2, 0.6], [1, 1, 0], AdditiveValue(None), AdditiveCost(None))
    assert out == {"n_selected": 2, "vhat": pytest.approx(1.5), "chat": pytest.approx(0.5), "value": 1.0, "cost": 1.0}


def test_first_informative_step_points_at_a_caught_code():
    import numpy as np
    from favmac import ReplayResult

    selected = np.zeros((1, 3, 2), bool)
    selected[0, 2, 1] = True
    labels = np.array([[0, 0], [1, 1], [0, 0], [0, 1]], bool)  # burn-in 1: steps are rows 1..3
    result = ReplayResult("m", np.array([1.0]), None, 1, np.zeros((1, 3)), selected, np.zeros((1, 3)), np.zeros((1, 3)))
    assert patients.first_informative_step(result, labels) == 2
    assert patients.first_informative_step(result, np.zeros((4, 2), bool)) == 0


def test_first_informative_step_prefers_a_confident_catch():
    import numpy as np
    from favmac import ReplayResult

    selected = np.ones((1, 3, 1), bool)
    labels = np.ones((3, 1), bool)
    probs = np.array([[0.1], [0.7], [0.9]])
    result = ReplayResult("m", np.array([1.0]), None, 0, np.zeros((1, 3)), selected, np.zeros((1, 3)), np.zeros((1, 3)))
    assert patients.first_informative_step(result, labels, probs) == 1
    assert patients.first_informative_step(result, labels) == 0
