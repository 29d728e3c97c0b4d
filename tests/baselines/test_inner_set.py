"""InnerSet against the brute force, and its violation guarantee."""
import math

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, FormulaValue
from favmac.baselines import BASELINE_CONTROLS, classwise, crc, fpcp, hb_p_value, inner_set, lambda_grid, rcps

from brute_force import *  # noqa: F401,F403  (the slow reference: q, instance, bf_*, ...)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("delta", [None, 0.1, 0.25])
def test_inner_set_matches_brute_force(seed, delta):
    probs, labels, weights, targets, burn_in = instance(seed)
    res = inner_set(probs, labels, AdditiveValue(), AdditiveCost(weights), targets, delta=delta, burn_in=burn_in)
    thresholds, selected, final = bf_inner_set(probs, labels, weights, targets, burn_in, delta)
    assert same(res.thresholds, thresholds)
    assert np.array_equal(res.selected, selected)
    assert same(res.final_thresholds, final)


def test_inner_set_violation_rate_is_controlled():
    probs, labels = synthetic()
    delta, targets = 0.1, [0.0, 1.1]
    _, violation = over_orderings(inner_set, probs, labels, AdditiveValue(), AdditiveCost(), targets,
                                  delta=delta, burn_in=20)
    assert np.all(violation.mean(axis=0) <= delta + 3 * violation.std(axis=0, ddof=1) / np.sqrt(len(violation)))
    assert violation.mean(axis=0)[0] > 0.5 * delta, "so loose the test says nothing"



@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("delta", [None, 0.25])
@pytest.mark.parametrize("window", [1, 4])
def test_inner_set_window_matches_brute_force(seed, delta, window):
    probs, labels, weights, targets, burn_in = instance(seed)
    res = inner_set(probs, labels, AdditiveValue(), AdditiveCost(weights), targets, delta=delta, burn_in=burn_in,
                    window=window)
    thresholds, selected, final = bf_inner_set(probs, labels, weights, targets, burn_in, delta, window)
    assert same(res.thresholds, thresholds)
    assert np.array_equal(res.selected, selected)
    assert same(res.final_thresholds, final)
