"""The baselines' compact chosen sets (ThresholdSets), their compiled scoring, CRC's blocked
prefix tree and its distinct positions: each against a plain reference."""
import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue
from favmac.baselines import classwise, crc, inner_set, rcps
from favmac.baselines.common import RULES, ThresholdSets
from favmac.baselines.crc import distinct_positions


def _compare(scores, levels, rule):
    return {">=": np.greater_equal, ">": np.greater, "<=": np.less_equal}[rule](scores[None, :, :], levels[:, :, None])


@pytest.mark.parametrize("rule", list(RULES))
@pytest.mark.parametrize("per_step", [True, False])
def test_masks_follow_the_rule(rule, per_step):
    rng = np.random.RandomState(3)
    scores = np.round(rng.rand(40, 6), 1)  # ties with the levels
    levels = np.round(rng.rand(4, 40 if per_step else 1), 1)
    sets = ThresholdSets(scores, levels, rule)
    expected = _compare(scores, np.broadcast_to(levels, (4, 40)), rule)
    assert sets.shape == (4, 40, 6)
    assert np.array_equal(sets.masks(), expected)
    assert np.array_equal(sets.masks(2), expected[2])
    assert np.array_equal(sets.masks(1, slice(5, 9)), expected[1, 5:9])
    assert ThresholdSets(scores[:0], levels[:, :0] if per_step else levels, rule).masks().shape == (4, 0, 6)
    with pytest.raises(ValueError, match="rule: expected one of"):
        ThresholdSets(scores, levels, "<")


@pytest.mark.parametrize("rule", list(RULES))
def test_rule_outcomes_equal_the_outcomes_of_the_built_sets(rule):
    """The same floats (the same additions in the same order) and the same exact flags."""
    from favmac.baselines.kernels import rule_outcomes, set_outcomes

    rng = np.random.RandomState(4)
    n_steps, n_codes = 300, 9
    scores = rng.rand(n_steps, n_codes)
    levels = rng.rand(5, n_steps)
    labels = rng.rand(n_steps, n_codes) < 0.3
    cost_weights, value_weights = np.round(rng.uniform(0, 3, n_codes), 3), rng.uniform(0, 2, n_codes)
    exact_weights = np.round(cost_weights * 1000).astype(np.int64)
    bounds = np.array([0, 500, 1500, 3000, 6000], dtype=np.int64)
    sets = ThresholdSets(scores, levels, rule)
    for values in (value_weights, np.zeros(0)):
        got = rule_outcomes(scores, levels, RULES[rule], labels, cost_weights, values, exact_weights, bounds)
        expected = set_outcomes(sets.masks(), labels, cost_weights, values, exact_weights, bounds)
        for a, b in zip(got, expected):
            assert a.dtype == b.dtype and np.array_equal(a, b)


def test_baselines_keep_their_sets_as_rules():
    rng = np.random.RandomState(5)
    probs, labels = rng.rand(60, 4), (rng.rand(60, 4) < 0.3).astype(int)
    value, cost = AdditiveValue(), AdditiveCost([1.0, 0.5, 2.0, 1.5])
    for method, extra in ((classwise, {}), (inner_set, {}), (crc, {}), (rcps, {"delta": 0.1})):
        res = method(probs, labels, value, cost, [0.5, 1.5], burn_in=20, **extra)
        assert isinstance(res.chosen, ThresholdSets) and res.chosen.order is None, method.__name__
        assert res.selected.shape == (2, 40, 4)
        assert np.array_equal(res.cost, cost(res.selected, labels[20:].astype(bool)).reshape(2, 40)), method.__name__


@pytest.mark.parametrize("n_positions", [1, 63, 64, 65, 4095, 4096, 4097, 70_000])
@pytest.mark.parametrize("dtype", [np.int16, np.int64, np.float64])
def test_blocked_prefix_tree_finds_what_a_fenwick_tree_finds(n_positions, dtype):
    """first_reaching against fenwick.count_below over one plain tree, through random additions
    and removals (CRC's window), with leaves of a narrow dtype."""
    from favmac import fenwick
    from favmac.baselines.kernels import block_add, first_reaching

    rng = np.random.RandomState(n_positions)
    n_blocks = -(-n_positions // 64)
    weight_type = np.float64 if dtype == np.float64 else np.int64
    leaf = np.zeros(n_positions, dtype=dtype)
    blocks = np.zeros(n_blocks, dtype=weight_type)
    supers = np.zeros(-(-n_blocks // 64) + 1, dtype=weight_type)
    plain = np.zeros(n_positions + 1, dtype=weight_type)
    added = []
    total = weight_type(0)
    for step in range(1500):
        if added and rng.rand() < 0.3:
            position, weight = added.pop(rng.randint(len(added)))
            weight = -weight
        else:
            position, weight = int(rng.randint(n_positions)), weight_type(rng.randint(0, 40))
            added.append((position, weight))
        block_add(leaf, blocks, supers, position, weight)
        fenwick.add(plain, position, weight)
        total += weight
        x = weight_type(rng.randint(1, int(total) + 2)) if total > 0 else weight_type(1)
        assert first_reaching(leaf, blocks, supers, x) == fenwick.count_below(plain, x), (step, x)


def test_distinct_positions_equal_numpy_unique():
    rng = np.random.RandomState(6)
    probs = np.round(rng.rand(500, 7), 2)  # many ties
    first, ranks, longest = distinct_positions(probs)
    values, inverse, counts = np.unique(probs, return_inverse=True, return_counts=True)
    assert np.array_equal(probs.ravel()[first], values)
    assert np.array_equal(ranks, inverse.reshape(probs.shape)) and ranks.dtype == np.int32
    assert longest == counts.max()
    fortran = np.asfortranarray(probs)  # any memory layout: ranks follow the row-major positions
    assert np.array_equal(distinct_positions(fortran)[1], ranks)
