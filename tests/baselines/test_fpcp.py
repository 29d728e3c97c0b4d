"""FPCP is FavMac with the prob universe."""
import math

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, FormulaValue
from favmac.baselines import BASELINE_CONTROLS, classwise, crc, fpcp, hb_p_value, inner_set, lambda_grid, rcps

from brute_force import *  # noqa: F401,F403  (the slow reference: q, instance, bf_*, ...)


def test_fpcp_is_favmac_prob_universe():
    from favmac import replay

    probs, labels, weights, targets, burn_in = instance(7, max_n=30)
    value, cost = AdditiveValue(), AdditiveCost(weights)
    for delta in (None, 0.1):
        got = fpcp(probs, labels, value, cost, targets, delta=delta, burn_in=burn_in)
        ref = replay(probs, labels, value, cost, targets, delta=delta, universe="prob", burn_in=burn_in, score="cost")
        assert got.method == "FPCP"
        assert np.array_equal(got.selected, ref.selected) and same(got.thresholds, ref.thresholds)



def test_fpcp_passes_window_and_c_max_on():
    from favmac import replay

    probs, labels, weights, targets, burn_in = instance(11, max_n=30)
    value, cost = AdditiveValue(), AdditiveCost(weights)
    c_max = float(c_max_of(weights)) + 1
    got = fpcp(probs, labels, value, cost, targets, burn_in=burn_in, window=4, c_max=c_max)
    ref = replay(probs, labels, value, cost, targets, universe="prob", burn_in=burn_in, window=4, c_max=c_max,
                 score="cost")
    assert np.array_equal(got.selected, ref.selected) and same(got.thresholds, ref.thresholds)
