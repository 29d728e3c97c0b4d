"""The payment value's fast paths equal the previous ones: the incremental greedy kernel against the
kernel it replaced (tests/payment_previous.py) and the slow reference greedy, and the batch evaluation
of chosen sets against one call of the value per set; random cohorts, several cells, known codes,
V24 and V28."""
from __future__ import annotations

import numpy as np
import pytest

from favmac import AdditiveCost, CmsHccValue
from favmac.payment_tables import CELL_NAMES, model_tables
from favmac.universe import general_sequences
from payment_previous import previous_sequences


def _cohort(seed, model, n_codes, n=300, clustered=True):
    """Codes of the model (all of a few families when ``clustered``), cells, known codes, probabilities."""
    rng = np.random.RandomState(seed)
    hccs = sorted(model_tables(model, 2026).hccs, key=int)
    codes = sorted(rng.choice(hccs, n_codes, replace=False), key=int) if not clustered else hccs[: n_codes]
    value = CmsHccValue([f"HCC{c}" for c in codes], model=model, cells=rng.choice(list(CELL_NAMES), n),
                        known=rng.rand(n, len(codes)) < 0.08)
    probs = rng.rand(n, len(codes)) ** rng.uniform(0.5, 3.0)
    probs[rng.rand(*probs.shape) < 0.05] = 0.0  # codes that cannot be true: zero gains, ties
    probs = np.round(probs, 3)  # repeated probabilities: equal gains of equal coefficients
    cost = AdditiveCost(np.round(rng.uniform(0.1, 1.0, len(codes)), 2))
    return value, probs, cost


def _previous(value, probs, cost, order=None):
    cells, known = value._context(len(probs))
    steps = (1.0 - probs) * cost.weights_for(probs.shape[1])
    out_order, vhat = previous_sequences(value._tables, probs, known, cells, steps, 1e-12, order)
    return out_order, vhat * value.factor


@pytest.mark.parametrize("model", ["V28", "V24"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("clustered", [True, False])
def test_greedy_equals_the_previous_kernel(model, seed, clustered):
    value, probs, cost = _cohort(seed, model, 35 if clustered else 30, clustered=clustered)
    order, vhat = general_sequences(probs, value, cost)
    old_order, old_vhat = _previous(value, probs, cost)
    np.testing.assert_array_equal(order, old_order)
    np.testing.assert_allclose(vhat, old_vhat, rtol=0, atol=1e-12)
    # a given order (the prob and value universes): Vhat of its prefixes
    given = np.argsort(-probs, axis=1, kind="stable")
    _, prefix_vhat = general_sequences(probs, value, cost, given)
    _, old_prefix_vhat = _previous(value, probs, cost, given)
    np.testing.assert_allclose(prefix_vhat, old_prefix_vhat, rtol=0, atol=1e-12)


def test_greedy_equals_the_reference_greedy_on_every_v28_code():
    value, probs, cost = _cohort(3, "V28", 115, n=12)
    order, vhat = general_sequences(probs, value, cost)
    ref_order, ref_vhat = general_sequences(probs, value, cost, reference=True)
    np.testing.assert_array_equal(order, ref_order)
    np.testing.assert_allclose(vhat, ref_vhat, rtol=0, atol=1e-11)


@pytest.mark.parametrize("model", ["V28", "V24"])
@pytest.mark.parametrize("seed", [0, 1])
def test_batch_values_of_chosen_sets_equal_one_call_per_set(model, seed):
    value, probs, cost = _cohort(seed, model, 30, n=200)
    rng = np.random.RandomState(seed + 10)
    labels = rng.rand(*probs.shape) < probs
    order, _ = general_sequences(probs, value, cost)
    index = rng.randint(0, probs.shape[1] + 1, size=(6, len(probs)))
    index[3] = index[2]  # repeated targets reuse a patient's sets
    ranks = np.argsort(order, axis=1)
    sets = np.stack([ranks < index[t][:, None] for t in range(len(index))])
    one_by_one = np.stack([value(sets[t], labels) for t in range(len(index))])
    np.testing.assert_array_equal(value.prefixes(order, index, labels), one_by_one)
    np.testing.assert_array_equal(value.per_target(sets, labels), one_by_one)
    # adjustments, a base rate and one context for everybody
    paid = CmsHccValue(value.codes, model=model, segment="CFD", normalization=1.05, coding_intensity=0.059, base_rate=11000)
    np.testing.assert_array_equal(paid.prefixes(order, index, labels), np.stack([paid(sets[t], labels) for t in range(len(index))]))
    np.testing.assert_array_equal(paid.per_target(sets, labels), np.stack([paid(sets[t], labels) for t in range(len(index))]))
    with pytest.raises(ValueError, match="per_target: expected"):
        value.per_target(sets[0], labels)
    with pytest.raises(ValueError, match="prefixes: expected"):
        value.prefixes(order, index[:, :10], labels)


def test_payment_trade_offs_share_candidates_with_the_same_runs():
    """Trade-offs builds the ratio universe once for FavMac (price) and FavMac (ratio) with the payment value too."""
    from favmac.methods import run_method
    from favmac.metrics import summarize
    from favmac.runspec import RunSpec
    from favmac.universe import candidate_sets

    value, probs, cost = _cohort(4, "V28", 20, n=160)
    rng = np.random.RandomState(5)
    labels = (rng.rand(*probs.shape) < probs).astype(np.int8)
    members = {"cells": np.array([value.cell_names[c] for c in value._cell_index], dtype=object), "known": value._known}
    spec = RunSpec(value_kind="cms_payment", cost_kind="fp", control="expected", targets=(1.0, 2.5), universe="ratio",
                   burn_in=40).validate(n_codes=probs.shape[1], n_patients=len(probs))
    built, built_cost = spec.build(value.codes, members)
    shared = candidate_sets(probs, built, built_cost, "ratio")
    for method in ("FavMac (price)", "FavMac (ratio)"):
        alone = run_method(spec, method, probs, labels, codes=value.codes, members=members)
        with_shared = run_method(spec, method, probs, labels, codes=value.codes, members=members, candidates=shared)
        np.testing.assert_array_equal(alone.thresholds, with_shared.thresholds)
        np.testing.assert_array_equal(alone.value, with_shared.value)
        pd_summary = summarize(alone), summarize(with_shared)
        assert pd_summary[0].equals(pd_summary[1]), method


@pytest.mark.parametrize("greedy", [True, False])
def test_row_blocks_on_threads_give_the_single_block_result(monkeypatch, greedy):
    """payment_sequences splits a large batch into row blocks run on threads (the kernel releases
    the GIL); each patient depends on its own row only, so any split gives the same arrays."""
    from favmac import payment_kernels

    value, probs, cost = _cohort(3, "V28", 35, n=257)
    given = None if greedy else np.argsort(-probs, axis=1, kind="stable")
    monkeypatch.setattr(payment_kernels, "THREAD_ROWS", 10**9)
    one_order, one_vhat = general_sequences(probs, value, cost, given)
    monkeypatch.setattr(payment_kernels, "THREAD_ROWS", 20)
    monkeypatch.setattr(payment_kernels, "_cores", lambda: 5)
    assert len(payment_kernels.row_blocks(len(probs))) == 5
    order, vhat = general_sequences(probs, value, cost, given)
    np.testing.assert_array_equal(order, one_order)
    np.testing.assert_array_equal(vhat, one_vhat)
    blocks = payment_kernels.row_blocks(len(probs))
    assert blocks[0].start == 0 and blocks[-1].stop == len(probs)
    assert all(a.stop == b.start for a, b in zip(blocks, blocks[1:]))
