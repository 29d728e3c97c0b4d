"""favmac.thresholds: exact numbers, ranks, bounds, the edge rule and the exact cost scale.

References here are plain Python integers and Fractions, independent of the code under test.
"""
import math
from fractions import Fraction

import numpy as np
import pytest

from favmac.thresholds import (
    INT64_LIMIT,
    ExactCosts,
    common_scale,
    exact,
    expected_bounds,
    expected_margin,
    floor_linear,
    quantile_rank,
    rank_edge,
    scaled_int,
    violation_rank,
    violation_ranks,
)


def q(x) -> Fraction:
    x = float(x)
    return Fraction(int(x)) if x.is_integer() else Fraction(repr(x))


def test_exact_ceiling():
    assert quantile_rank(0.9, [19]).tolist() == [18]  # float 0.9 * 20 would round up to 19
    assert quantile_rank(1 - q(0.1), [19]).tolist() == [18]
    assert quantile_rank(0.7, [9]).tolist() == [7]
    # edges: beta <= 0 -> 0 (-inf); beta > 1 -> m + 1 (+inf); empty calibration -> +inf
    assert quantile_rank(0.0, [0, 5]).tolist() == [0, 0]
    assert quantile_rank(-0.3, [4]).tolist() == [0]
    assert quantile_rank(1.5, [0, 4]).tolist() == [1, 5]
    assert quantile_rank(0.5, [0]).tolist() == [1]


def test_quantile_rank_matches_fractions():
    rng = np.random.RandomState(0)
    sizes = np.arange(0, 400)
    for _ in range(200):
        beta = q(round(rng.uniform(-0.2, 1.2), rng.randint(1, 17)))
        expected = [min(max(math.ceil(beta * (m + 1)), 0), m + 1) for m in sizes]
        assert quantile_rank(beta, sizes).tolist() == expected, beta



def test_violation_rank_exact():
    assert violation_rank(0.1, 19) == 18
    assert violation_rank(0.3, 9) == 7  # (1 - 0.3) * 10 = 7 exactly, not 7.000000000000001
    assert violation_rank(0.1, 9) == 9



def test_quantile_rank_delta_point_one_with_twenty():
    assert quantile_rank(1 - q(0.1), [19]).tolist() == [18]
    assert violation_rank(0.1, 19) == 18
    assert violation_ranks(0.1, 19)[19] == 18


def test_violation_ranks_match_the_scalar_rank():
    for delta in (0.1, 0.05, 0.3, 0.333, 0.9):
        assert violation_ranks(delta, 60).tolist() == [violation_rank(delta, m) for m in range(61)]


def test_rank_edge():
    assert rank_edge(6, 5) == -math.inf  # k > n: too few scores
    assert rank_edge(0, 5) == math.inf and rank_edge(-2, 0) == math.inf  # k <= 0
    assert rank_edge(1, 0) == -math.inf  # empty calibration, k = 1
    assert all(math.isnan(rank_edge(k, 5)) for k in range(1, 6))


def test_rank_edge_compiled_is_the_same_rule():
    from favmac.replay_kernels import rank_edge as compiled

    for k in range(-2, 8):
        for n in range(0, 6):
            a, b = rank_edge(k, n), compiled(k, n)
            assert (math.isnan(a) and math.isnan(b)) or a == b


def test_floor_linear_matches_python_integers():
    rng = np.random.RandomState(5)
    x = np.arange(-50, 400)
    for _ in range(100):
        slope = Fraction(int(rng.randint(-10**6, 10**6)), int(rng.randint(1, 10**4)))
        intercept = Fraction(int(rng.randint(-10**6, 10**6)), int(rng.randint(1, 10**3)))
        assert floor_linear(slope, intercept, x).tolist() == [math.floor(slope * v + intercept) for v in x]
    huge = Fraction(3**50, 7)
    assert floor_linear(huge, 0, [2]).tolist() == [(2 * 3**50) // 7]


def test_expected_margin_and_bounds():
    # c = 4.1, N + 1 = 10, C_max = 10: M = 41 - 10 = 31 exactly
    assert expected_margin(4.1, 10, 9) == 31
    costs = ExactCosts([0.3, 1.2, 0.05])
    bounds = expected_bounds([0.7000000000000001, 1 / 3, -0.2], costs, 40)
    for t, c in enumerate([0.7000000000000001, 1 / 3, -0.2]):
        expected = [math.floor((q(c) * (m + 1) - q(1.55)) * costs.scale) for m in range(41)]
        assert bounds[t].tolist() == expected


def test_exact_costs_scale_and_c_max_override():
    costs = ExactCosts([0.331, 1, 2.5])
    assert costs.scale == 1000 and costs.weights.tolist() == [331, 1000, 2500]
    assert costs.c_max == Fraction(3831, 1000) and costs.c_max_scaled == 3831
    override = ExactCosts([1, 2], c_max=3.25)
    assert override.scale == 100 and override.c_max == Fraction(13, 4) and override.c_max_scaled == 325


def test_exact_costs_one_overflow_rule():
    costs = ExactCosts([1.0, 2.0])
    limit = INT64_LIMIT // 3  # C_max * scale = 3
    assert costs.exact_sums(limit - 2) and not costs.exact_sums(limit)
    assert not ExactCosts([0.12345678901234567, 1e3]).exact_sums(10**4)
    assert ExactCosts([0.123456789, 100]).exact_sums(10**6)  # 9 decimals, a million patients: fast path


def test_exceeds_is_exact_at_float_ties():
    costs = ExactCosts([0.1, 0.2])
    selected = np.array([[[True, True], [True, False]]])
    labels = np.zeros((2, 2), bool)
    assert 0.1 + 0.2 > 0.3  # the float sum blurs the tie
    assert costs.exceeds(selected, labels, [0.3]).tolist() == [[False, False]]
    assert costs.exceeds(selected, labels, [0.1]).tolist() == [[True, False]]
    assert costs.exceeds(selected, np.ones((2, 2), bool), [0.0]).tolist() == [[False, False]]


def test_exact_and_scaled_int():
    assert exact(0.1) + exact(0.2) == exact(0.3)
    assert common_scale([0.5, 0.25, 3]) == 100 and scaled_int(0.25, 100) == 25
    with pytest.raises(ValueError, match="finite"):
        exact(float("nan"))
    with pytest.raises(ValueError, match="multiple of 1/10"):
        scaled_int(0.25, 10)


def test_expected_bounds_clip_beyond_int64():
    costs = ExactCosts([0.12345678901234567, 1.0])  # scale 10^17
    bounds = expected_bounds([1e6, -1e6], costs, 100)
    assert bounds.dtype == np.int64
    assert bounds[0, -1] == INT64_LIMIT and bounds[1, -1] == -INT64_LIMIT
    m = 0  # small enough to be exact
    assert bounds[0, m] == min(math.floor((q(1e6) * (m + 1) - costs.c_max) * costs.scale), INT64_LIMIT)
