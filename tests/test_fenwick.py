"""favmac.fenwick against a plain list of weights, over long random operation sequences."""
import numpy as np
import pytest

from favmac import fenwick


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_operations_match_a_list(seed):
    rng = np.random.RandomState(seed)
    size = int(rng.randint(1, 40))
    tree = np.zeros(size + 1, dtype=np.int64)
    weights = [0] * size
    top = fenwick.top_bit(size)
    for _ in range(2000):
        position = int(rng.randint(size))
        if rng.rand() < 0.3 and weights[position] > 0:  # delete part of what is there
            amount = -int(rng.randint(1, weights[position] + 1))
        else:
            amount = int(rng.randint(0, 5))
        fenwick.add(tree, position, amount)
        weights[position] += amount
        stop = int(rng.randint(size + 1))
        assert fenwick.prefix_total(tree, stop) == sum(weights[:stop])
        bound = int(rng.randint(-1, sum(weights) + 2))
        expected_count = max([c for c in range(size + 1) if sum(weights[:c]) <= bound], default=0)
        assert fenwick.count_le(tree, bound) == expected_count
        expected_below = max([c for c in range(size + 1) if sum(weights[:c]) < bound], default=0)
        assert fenwick.count_below(tree, bound) == expected_below
        total = sum(weights)
        if total:
            k = int(rng.randint(1, total + 1))
            expected_position = next(i for i in range(size) if sum(weights[: i + 1]) >= k)
            assert fenwick.kth(tree, k, top) == expected_position


def test_top_bit():
    assert [fenwick.top_bit(n) for n in (0, 1, 2, 3, 4, 5, 1023, 1024)] == [0, 1, 2, 2, 4, 4, 512, 1024]
