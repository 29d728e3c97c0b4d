"""CRC against the brute force."""
import math

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, FormulaValue
from favmac.baselines import BASELINE_CONTROLS, classwise, crc, fpcp, hb_p_value, inner_set, lambda_grid, rcps

from brute_force import *  # noqa: F401,F403  (the slow reference: q, instance, bf_*, ...)


@pytest.mark.parametrize("seed", SEEDS)
def test_crc_matches_brute_force(seed):
    probs, labels, weights, targets, burn_in = instance(seed)
    res = crc(probs, labels, AdditiveValue(), AdditiveCost(weights), targets, burn_in=burn_in)
    thresholds, selected, final = bf_exact_crc(probs, labels, weights, targets, burn_in)
    assert same(res.thresholds, thresholds)
    assert np.array_equal(res.selected, selected)
    assert same(res.final_thresholds, final)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("window", [1, 5])
def test_crc_window_matches_brute_force(seed, window):
    probs, labels, weights, targets, burn_in = instance(seed)
    res = crc(probs, labels, AdditiveValue(), AdditiveCost(weights), targets, burn_in=burn_in, window=window)
    thresholds, selected, final = bf_exact_crc(probs, labels, weights, targets, burn_in, window)
    assert same(res.thresholds, thresholds)
    assert np.array_equal(res.selected, selected)
    assert same(res.final_thresholds, final)

