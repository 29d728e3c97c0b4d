"""RCPS (Hoeffding–Bentkus) against the brute force."""
import math

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, FormulaValue
from favmac.baselines import BASELINE_CONTROLS, classwise, crc, fpcp, hb_p_value, inner_set, lambda_grid, rcps

from brute_force import *  # noqa: F401,F403  (the slow reference: q, instance, bf_*, ...)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("delta", [0.1, 0.3])
def test_rcps_matches_brute_force(seed, delta):
    probs, labels, weights, targets, burn_in = instance(seed, max_n=30)
    grid = np.unique(probs)  # every probability is a candidate
    res = rcps(probs, labels, AdditiveValue(), AdditiveCost(weights), targets, delta=delta, burn_in=burn_in, grid=grid)
    thresholds, selected, final = bf_grid_method(probs, labels, weights, targets, burn_in, grid,
                                                 rcps_accept(weights, delta))
    assert same(res.thresholds, thresholds)
    assert np.array_equal(res.selected, selected)
    assert same(res.final_thresholds, final)


def test_rcps_long_stream_matches_p_values():
    """The O(1)-per-step Bentkus/Hoeffding bounds agree with the HB p-value at large n."""
    rng = np.random.RandomState(3)
    N, K = 3000, 5
    probs = np.round(rng.rand(N, K), 2)
    labels = rng.rand(N, K) < probs
    weights = np.array([1.0, 2.0, 1.0, 3.0, 1.0])
    grid = np.linspace(0, 1, 11)
    targets = [0.5, 1.5, 3.0]
    res = rcps(probs, labels, AdditiveValue(), AdditiveCost(weights), targets, delta=0.1, burn_in=2990, grid=grid)
    accept = rcps_accept(weights, 0.1)
    lambdas = list(grid) + [math.inf]
    for s, n in enumerate(range(2990, N)):
        sums = summed_costs(probs, labels, weights, lambdas, n)
        for t, c in enumerate(targets):
            assert res.thresholds[t, s] == next(lam for lam, total in zip(lambdas, sums) if accept(total, n, c))


def test_hb_p_value_reference():
    # Bentkus term dominates for integer risk sums far below alpha; Hoeffding caps it at 1
    assert hb_p_value(0.0, 0, 0.1) == 1.0
    p = hb_p_value(5.0, 200, 0.1)
    assert p == pytest.approx(min(math.e * binom.cdf(5, 200, 0.1), math.exp(-200 * kl(0.025, 0.1))))
    assert hb_p_value(50.0, 200, 0.1) == 1.0  # Rhat above alpha



@pytest.mark.parametrize("seed", SEEDS)
def test_rcps_window_matches_brute_force(seed):
    probs, labels, weights, targets, burn_in = instance(seed, max_n=30)
    grid = np.unique(probs)
    res = rcps(probs, labels, AdditiveValue(), AdditiveCost(weights), targets, delta=0.2, burn_in=burn_in,
               grid=grid, window=6)
    thresholds, selected, final = bf_grid_method(probs, labels, weights, targets, burn_in, grid,
                                                 rcps_accept(weights, 0.2), 6)
    assert same(res.thresholds, thresholds)
    assert np.array_equal(res.selected, selected)
    assert same(res.final_thresholds, final)


def test_rcps_needs_delta():
    probs, labels, weights, targets, _ = instance(2)
    with pytest.raises(ValueError, match="delta: RCPS .* level in \\(0, 1\\)"):
        rcps(probs, labels, AdditiveValue(), AdditiveCost(weights), targets)
