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
    grid_size = [2, 5, 201][seed % 3]
    res = crc(probs, labels, AdditiveValue(), AdditiveCost(weights), targets, burn_in=burn_in, grid_size=grid_size)
    grid = lambda_grid(probs, grid_size)
    thresholds, selected, final = bf_grid_method(probs, labels, weights, targets, burn_in, grid, crc_accept(weights))
    assert same(res.thresholds, thresholds)
    assert np.array_equal(res.selected, selected)
    assert same(res.final_thresholds, final)
    assert res.settings["grid"] == grid.tolist()



@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("window", [1, 5])
def test_crc_window_matches_brute_force(seed, window):
    probs, labels, weights, targets, burn_in = instance(seed)
    grid = lambda_grid(probs, 5)
    res = crc(probs, labels, AdditiveValue(), AdditiveCost(weights), targets, burn_in=burn_in, grid=grid,
              window=window)
    thresholds, selected, final = bf_grid_method(probs, labels, weights, targets, burn_in, grid,
                                                 crc_accept(weights), window)
    assert same(res.thresholds, thresholds)
    assert np.array_equal(res.selected, selected)
    assert same(res.final_thresholds, final)
