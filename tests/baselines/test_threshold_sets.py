"""The baselines' compact chosen sets (ThresholdSets), their compiled scoring, CRC's blocked
prefix tree and its ranks of the distinct probabilities: each against a plain reference."""
import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue
from favmac.baselines import classwise, crc, inner_set, rcps
from favmac.baselines.common import RULES, ThresholdSets
from favmac.baselines.crc import distinct_ranks, value_ranks


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


def _close_values(rng, shape):
    """Probabilities in clusters of neighbouring floats (a few ulps apart, repeated): many share
    the kept bits of value_ranks' sort keys without being equal, in short runs and long ones."""
    centres = rng.uniform(0.01, 1.0, size=12)
    spread = rng.randint(0, 40, size=shape)
    centre = centres[rng.randint(0, len(centres), size=shape)]
    values = centre + spread * np.spacing(centre)
    return np.where(rng.rand(*shape) < 0.1, centre, values)


def _ranks_cases():
    rng = np.random.RandomState(6)
    yield "ties", np.round(rng.rand(500, 7), 2)
    yield "continuous", rng.rand(300, 5)
    yield "one value", np.full((50, 4), 0.3)
    yield "one patient", rng.rand(1, 6)
    yield "one probability", np.array([[0.7]])
    yield "no patients", np.zeros((0, 3))
    yield "zeros and ones", rng.choice([0.0, -0.0, 1.0], size=(40, 3))
    yield "tiny", rng.choice([0.0, 5e-324, 1e-310, 2.2250738585072014e-308, 1e-300], size=(30, 4))
    yield "close values", _close_values(rng, (400, 9))
    yield "close values, long runs", _close_values(rng, (20_000, 5))  # 17-bit indices, runs above 16 keys
    yield "negative and large", rng.choice([-3.5, -1e-12, 0.0, 1e-12, 2.0, 1e300], size=(60, 2))


@pytest.mark.parametrize("name,probs", list(_ranks_cases()), ids=[name for name, _ in _ranks_cases()])
def test_value_ranks_equal_numpy_unique(name, probs):
    ranks, n_values, longest = value_ranks(probs)
    values, inverse, counts = np.unique(probs, return_inverse=True, return_counts=True)
    assert ranks.dtype == np.int32 and ranks.shape == probs.shape
    assert np.array_equal(ranks, inverse.reshape(probs.shape))
    assert n_values == len(values) and longest == counts.max(initial=0)
    got_values, got_ranks = distinct_ranks(probs)
    assert np.array_equal(got_values, values) and np.array_equal(got_ranks, ranks)
    # any memory layout: the same ranks, each at its probability's place
    for layout in (np.asfortranarray(probs), np.repeat(probs, 2, axis=1)[:, ::2]):
        again, n_again, longest_again = value_ranks(layout)
        assert np.array_equal(again, ranks) and (n_again, longest_again) == (n_values, longest)


def test_runs_of_close_values_are_ordered_exactly():
    """A run of keys sharing their kept bits holds distinct values in any order (insertion sort
    up to 16 keys, a stable sort above): the order and the ranks follow the values, ties in index order."""
    from favmac.baselines.kernels import order_keys, order_runs, rank_sorted_keys

    rng = np.random.RandomState(2)
    for size in (2, 3, 16, 17, 200):
        values = 0.5 + rng.randint(0, 5, size=size) * np.spacing(0.5)  # equal above the lowest 3 bits
        shift = np.uint64(20)
        keys = np.empty(size, dtype=np.uint64)
        order_keys(values.view(np.uint64), shift, keys)
        assert len(np.unique(keys >> shift)) == 1  # one run
        keys.sort()
        order_runs(keys, values.view(np.uint64), shift)
        assert np.array_equal(keys & np.uint64(2**20 - 1), np.argsort(values, kind="stable"))
        ranks = np.empty(size, dtype=np.int32)
        n_values, longest = rank_sorted_keys(keys, values.view(np.uint64), shift, ranks)
        expected, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
        assert np.array_equal(ranks, inverse) and n_values == len(expected) and longest == counts.max()


@pytest.mark.parametrize("name,probs", list(_ranks_cases()), ids=[name for name, _ in _ranks_cases()])
def test_stable_argsort_equals_numpy(name, probs):
    """ClassWise's and InnerSet's sort: numpy's stable argsort, -0.0 tied with 0.0, infinities included."""
    from favmac.baselines.kernels import stable_argsort

    for values in (probs.ravel(), probs[:, 0] if probs.size else probs.ravel(),
                   np.concatenate([probs.ravel(), [np.inf, -np.inf, 0.0, np.inf]])):
        order = stable_argsort(values)
        assert order.dtype == np.int64 and np.array_equal(order, np.argsort(values, kind="stable"))


@pytest.mark.parametrize("window", [None, 7])
def test_crc_reads_any_memory_layout_the_same(window):
    """CRC's thresholds (looked up from the positions its walk answers) are the same floats for
    row-major, column-major and strided probabilities."""
    rng = np.random.RandomState(8)
    probs = np.round(rng.rand(120, 6), 3)
    labels = (rng.rand(120, 6) < 0.3).astype(int)
    cost = AdditiveCost(np.round(rng.uniform(0.1, 2.0, size=6), 3))
    runs = [crc(layout, labels, AdditiveValue(), cost, [0.05, 0.5, 1.5, 9.0], burn_in=10, window=window)
            for layout in (probs, np.asfortranarray(probs), np.repeat(probs, 3, axis=1)[:, ::3])]
    for run in runs[1:]:
        for name in ("thresholds", "final_thresholds", "cost", "value", "exceeds"):
            assert getattr(run, name).tobytes() == getattr(runs[0], name).tobytes(), name
    assert not np.isneginf(runs[0].thresholds).any() and not np.signbit(runs[0].thresholds).any()
    assert (runs[0].thresholds == 0.0).any() and np.isinf(runs[0].thresholds).any()  # both ends reached
