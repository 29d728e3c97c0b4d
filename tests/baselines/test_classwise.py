"""ClassWise against the brute force."""
import math

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, FormulaValue
from favmac.baselines import BASELINE_CONTROLS, classwise, crc, fpcp, hb_p_value, inner_set, lambda_grid, rcps

from brute_force import *  # noqa: F401,F403  (the slow reference: q, instance, bf_*, ...)


@pytest.mark.parametrize("seed", SEEDS)
def test_classwise_matches_brute_force(seed):
    probs, labels, weights, targets, burn_in = instance(seed)
    res = classwise(probs, labels, AdditiveValue(), AdditiveCost(weights), targets, burn_in=burn_in)
    selected, final = bf_classwise(probs, labels, weights, targets, burn_in)
    assert np.array_equal(res.selected, selected)
    assert np.all(np.isnan(res.thresholds))
    assert same(res.settings["code_thresholds"], final)
    assert np.allclose(res.cost, AdditiveCost(weights)(selected, labels[burn_in:]))


def test_exact_ceiling_end_to_end():
    # C_FP with K = 1 and c = 0.7: beta = 1 - 0.7 = 0.3 and m + 1 = 10 give rank 3 exactly;
    # in floats 1 - 0.7 = 0.30000000000000004 and ceil(10 * that) = 4.
    calibration = np.array([0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85])
    probs = np.append(calibration, 0.30)[:, None]
    labels = np.zeros_like(probs, dtype=int)
    value, cost = AdditiveValue(), AdditiveCost()
    res = classwise(probs, labels, value, cost, [0.7], burn_in=9)
    assert res.selected[0, 0, 0]  # 0.30 > t = 0.25, the 3rd smallest (not 0.35, the 4th)
    assert res.settings["code_thresholds"] == [[0.30]]  # all 10 negatives: ceil(0.3 * 11) = 4th
    res = inner_set(probs, labels, value, cost, [0.7], burn_in=9)  # eps = 0.7 / C_max, same ranks
    assert res.thresholds[0, 0] == 0.25 and res.selected[0, 0, 0]



@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("window", [1, 3, 7])
def test_classwise_window_matches_brute_force(seed, window):
    probs, labels, weights, targets, burn_in = instance(seed)
    res = classwise(probs, labels, AdditiveValue(), AdditiveCost(weights), targets, burn_in=burn_in, window=window)
    selected, final = bf_classwise(probs, labels, weights, targets, burn_in, window)
    assert np.array_equal(res.selected, selected)
    assert same(res.settings["code_thresholds"], final)


@pytest.mark.parametrize("seed", range(12))
def test_classwise_targets_in_any_order(seed):
    """The kernel visits the targets by decreasing beta; results come back in the caller's order
    (unsorted and repeated targets, with and without a window) and equal the brute force."""
    probs, labels, weights, targets, burn_in = instance(seed)
    shuffled = list(np.random.RandomState(seed).permutation(targets)) + [targets[len(targets) // 2]]
    for window in (None, 3):
        res = classwise(probs, labels, AdditiveValue(), AdditiveCost(weights), shuffled, burn_in=burn_in, window=window)
        selected, final = bf_classwise(probs, labels, weights, shuffled, burn_in, window)
        assert np.array_equal(res.selected, selected)
        assert same(res.settings["code_thresholds"], final)
