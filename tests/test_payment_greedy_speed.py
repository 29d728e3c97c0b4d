"""The lazy greedy (gain bounds; exact gains only for candidates that could reach the best) gives the
same orders and Vhat, bit for bit, as evaluating every candidate's gain at every step, including
exact ties (equal probabilities and coefficients: the lowest code index wins), codes on the record
and codes with p = 0 (gain exactly 0)."""
from __future__ import annotations

import numpy as np
import pytest
from payment_previous import previous_sequences

from favmac import AdditiveCost, CmsHccValue
from favmac.payment_kernels import payment_sequences
from favmac.payment_tables import CELL_NAMES, model_tables


def _members(seed, model, n=400, ties=False):
    rng = np.random.RandomState(seed)
    hccs = sorted(model_tables(model, 2026).hccs, key=int)
    codes = hccs[:35] if seed % 2 else sorted(rng.choice(hccs, 35, replace=False), key=int)
    value = CmsHccValue([f"HCC{c}" for c in codes], model=model, cells=rng.choice(list(CELL_NAMES), n),
                        known=rng.rand(n, len(codes)) < 0.1)
    if ties:  # a handful of distinct probabilities: many candidates share a gain, ties decide the order
        probs = rng.choice([0.0, 0.1, 0.5, 0.9], size=(n, len(codes)))
    else:
        probs = rng.rand(n, len(codes)) ** rng.uniform(0.3, 3.0)
        probs[rng.rand(*probs.shape) < 0.1] = 0.0
    weights = np.ones(len(codes)) if ties else np.round(rng.uniform(0.1, 2.0, len(codes)), 2)
    return value, probs, AdditiveCost(weights)


def _run(value, probs, cost, lazy, kernel=payment_sequences):
    cells, known = value._context(len(probs))
    steps = (1.0 - probs) * cost.weights_for(probs.shape[1])
    if kernel is payment_sequences:
        return kernel(value._tables, probs, known, cells, steps, 1e-12, None, lazy=lazy)
    return kernel(value._tables, probs, known, cells, steps, 1e-12, None)


@pytest.mark.parametrize("model", ["V28", "V24"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("ties", [False, True])
def test_lazy_greedy_equals_every_gain_evaluated_bit_for_bit(model, seed, ties):
    value, probs, cost = _members(seed, model, ties=ties)
    lazy_order, lazy_vhat = _run(value, probs, cost, lazy=True)
    full_order, full_vhat = _run(value, probs, cost, lazy=False)
    np.testing.assert_array_equal(lazy_order, full_order)
    np.testing.assert_array_equal(lazy_vhat, full_vhat)  # not allclose: the same sums in the same order
    # and the older kernel kept for the tests (tests/payment_previous.py; its sums differ in the last bits)
    old_order, old_vhat = _run(value, probs, cost, lazy=None, kernel=previous_sequences)
    np.testing.assert_array_equal(lazy_order, old_order)
    np.testing.assert_allclose(lazy_vhat, old_vhat, rtol=0, atol=1e-12)

