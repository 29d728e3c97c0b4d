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



@pytest.mark.parametrize("n_positions", [1, 63, 64, 65, 4096, 4097, 300_000])
def test_occupancy_bit_set_finds_the_next_occupied_position(n_positions):
    """occupy / vacate / next_occupied against a plain Python set, over random operations that
    empty and refill whole words (one to four levels)."""
    from favmac.baselines.kernels import next_occupied, occupancy_levels, occupy, vacate

    rng = np.random.RandomState(n_positions)
    offsets = occupancy_levels(n_positions)
    bits = np.zeros(offsets[-1], dtype=np.uint64)
    occupied = set()
    clustered = rng.randint(0, n_positions, size=8)
    for step in range(3000):
        position = int(rng.choice(clustered) + rng.randint(0, 70)) % n_positions if step % 2 else int(rng.randint(n_positions))
        if position in occupied and rng.rand() < 0.6:
            vacate(bits, offsets, position)
            occupied.discard(position)
        else:
            occupy(bits, offsets, position)
            occupied.add(position)
        query = int(rng.randint(n_positions + 2))
        expected = min((p for p in occupied if p >= query), default=-1)
        assert next_occupied(bits, offsets, query) == expected, (step, query)


@pytest.mark.parametrize("window", [None, 9])
def test_crc_matches_brute_force_with_hundreds_of_distinct_probabilities(window):
    """400 distinct probabilities: the occupancy bit set has two levels (the small instances'
    one; more levels: the test above)."""
    rng = np.random.RandomState(21)
    probs = np.round(rng.rand(40, 10), 6)
    labels = (rng.rand(40, 10) < 0.2).astype(int)
    weights = np.round(rng.uniform(0.1, 2.0, size=10), 2)
    targets = [0.5, 2.0, 7.5]
    res = crc(probs, labels, AdditiveValue(), AdditiveCost(weights), targets, burn_in=20, window=window)
    thresholds, selected, final = bf_exact_crc(probs, labels, weights, targets, 20, window)
    assert same(res.thresholds, thresholds)
    assert np.array_equal(res.selected, selected)
    assert same(res.final_thresholds, final)
