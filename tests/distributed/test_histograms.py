"""favmac.distributed.histograms: ordered keys and exact sums."""
from __future__ import annotations

import numpy as np
import pytest

from favmac.distributed import histograms, key_of_bits, ordered_bits


def test_ordered_bits_sort_like_floats_and_round_trip():
    rng = np.random.default_rng(3)
    keys = np.concatenate([rng.standard_normal(500) * 10.0 ** rng.integers(-5, 5, 500),
                           [-np.inf, np.inf, 0.0, -0.0, 5e-324, -5e-324, 1.7976931348623157e308]])
    patterns = ordered_bits(keys)
    assert np.array_equal(np.sort(keys, kind="stable"), keys[np.argsort(patterns, kind="stable")])
    for k, pattern in zip(keys, patterns):
        assert key_of_bits(int(pattern)) == k
    assert ordered_bits([-0.0])[0] == ordered_bits([0.0])[0]
    with pytest.raises(ValueError, match="NaN"):
        ordered_bits([np.nan])

def test_exact_sums_switch_to_python_ints_before_overflow():
    ids = np.array([0, 1, 1, 2, 2, 2])
    small = np.array([5, 2**40, 3, 2**50, 2**50, 1], dtype=np.int64)
    assert histograms.group_sum(ids, small, 3).tolist() == [5, 2**40 + 3, 2**51 + 1]
    huge = np.array([1, 2**61, 2**61, 2**61, 2**61, 7], dtype=np.int64)
    total = histograms.group_sum(ids, huge, 3)
    assert [int(v) for v in total] == [1, 2**62, 2**62 + 7]
    assert [int(v) for v in histograms.add(total, total)] == [2, 2**63, 2**63 + 14]
