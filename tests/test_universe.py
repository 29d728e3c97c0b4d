"""The compiled formula path of the general universes against the reference path.

The reference path evaluates the formula with simpleeval over numpy arrays, one patient at
a time (``FormulaValue.proxy_extensions`` / ``proxy``); the compiled path runs the same
draws through ``favmac.formula_kernels``. Orders (hence the candidate sets) must be
identical; Vhat agrees to round-off because sums are taken in another order (the compiled
path adds codes in greedy order, the reference in code order). A formula that jumps (% or
//) can therefore differ where a sum lands exactly on a jump; its tests use integer weights.
"""
from pathlib import Path

import numpy as np
import pytest

from favmac import AdditiveCost, FormulaError, FormulaValue, candidate_sets, replay
from favmac.universe import general_sequences

V_GEN = "prod_hits((v + 5) / 10) + sum_hits((v - 5) ** 2)"
FORMULAS = [
    V_GEN,
    "sum_hits(v) + 2 * max_hits(v) - min_hits(v / 2)",
    "sqrt(sum_selected(v) + 1) + n_hits * 0.5 + n_selected / 10",
    "sum_hits(v) * n_hits + prod_hits(1 + v / 10)",
    "log(1 + sum_hits(v)) + exp(-n_hits) + abs(sum_hits(v - 3))",
    "minimum(sum_hits(v), 6) + maximum(n_hits, 2) - -sum_hits(v ** 0.5)",
    "sum_hits(v - 3) % 2.5 + sum_hits(v) // -1.5 + sum_hits(v) / (1 + n_hits)",
    "max_hits(v - 4) + min_hits(4 - v) + pi * e",
]
VHAT_RTOL = 1e-12
DISCONTINUOUS = FORMULAS[6]  # % and // jump: its test weights are integers, so every sum is exact in any order
MNIST = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "favmac_mnist_predictions.csv"


def assert_same(fast, reference):
    order_fast, vhat_fast = fast
    order_ref, vhat_ref = reference
    np.testing.assert_array_equal(order_fast, order_ref)
    np.testing.assert_allclose(vhat_fast, vhat_ref, rtol=VHAT_RTOL, atol=VHAT_RTOL)


def tie_heavy_instance(seed, n_patients, n_codes):
    """Probabilities and value weights from small grids, so many gains tie exactly."""
    rng = np.random.RandomState(seed)
    probs = rng.choice([0.0, 0.2, 0.5, 0.5, 0.9, 1.0], size=(n_patients, n_codes))
    values = rng.choice([1.0, 2.0, 2.0, 5.0, 8.0], size=n_codes)
    costs = rng.choice([0.0, 1.0, 1.0, 2.5], size=n_codes)
    return probs, values, costs


@pytest.mark.parametrize("formula", FORMULAS)
def test_exact_enumeration_orders_and_vhat_match_the_reference(formula):
    rng = np.random.RandomState(10)
    probs = rng.rand(12, 10).round(3)
    f = FormulaValue(formula, weights=rng.uniform(0.5, 9, 10).round(0 if formula == DISCONTINUOUS else 1))
    assert f.compiled(10) is not None
    cost = AdditiveCost(rng.uniform(0.2, 2, 10).round(2))
    assert_same(general_sequences(probs, f, cost), general_sequences(probs, f, cost, reference=True))


@pytest.mark.parametrize("formula", FORMULAS)
def test_monte_carlo_orders_and_vhat_match_the_reference(formula):
    rng = np.random.RandomState(35)
    prevalence = rng.uniform(0.01, 0.3, size=35)
    probs = np.clip(prevalence + 0.3 * rng.randn(4, 35), 0, 1).round(4)
    f = FormulaValue(formula, weights=rng.uniform(0.5, 9, 35).round(0 if formula == DISCONTINUOUS else 3), n_samples=128, seed=7)
    cost = AdditiveCost(rng.uniform(0.1, 2.5, 35).round(3))
    assert_same(general_sequences(probs, f, cost), general_sequences(probs, f, cost, reference=True))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n_codes", [7, 13])
def test_ties_break_the_same_way(seed, n_codes):
    probs, values, costs = tie_heavy_instance(seed, 10, n_codes)
    for formula in (V_GEN, "sum_hits(v) + n_hits", "sqrt(sum_selected(v)) + sum_hits(v)"):
        f = FormulaValue(formula, weights=values, n_samples=64, seed=seed)
        cost = AdditiveCost(costs)
        assert_same(general_sequences(probs, f, cost), general_sequences(probs, f, cost, reference=True))


@pytest.mark.parametrize("universe", ["prob", "value", "ratio"])
def test_candidate_sets_equal_the_reference_for_every_nested_universe(universe):
    rng = np.random.RandomState(3)
    probs = rng.rand(15, 9).round(2)
    f = FormulaValue(V_GEN, weights=np.arange(1.0, 10.0))
    cost = AdditiveCost()
    fast = candidate_sets(probs, f, cost, universe)
    order = fast.order.astype(np.int64)
    reference = general_sequences(probs, f, cost, None if universe == "ratio" else order, reference=True)
    assert_same((order, fast.vhat), reference)


@pytest.mark.skipif(not MNIST.exists(), reason="../shared/data/favmac_mnist_predictions.csv is absent")
def test_paper_mnist_value_on_the_paper_data_matches_the_reference():
    import pandas as pd

    probs = pd.read_csv(MNIST, nrows=300)[[f"P{k}" for k in range(10)]].to_numpy(float)
    digits = np.array([10, 1, 2, 3, 4, 5, 6, 7, 8, 9], dtype=float)
    f = FormulaValue(V_GEN, weights=digits)
    assert_same(general_sequences(probs, f, AdditiveCost()), general_sequences(probs, f, AdditiveCost(), reference=True))


class ReferenceFormula(FormulaValue):
    """The formula with the compiled path switched off."""

    def compiled(self, n_codes):
        return None


@pytest.mark.skipif(not MNIST.exists(), reason="../shared/data/favmac_mnist_predictions.csv is absent")
def test_replay_on_the_paper_data_chooses_the_reference_sets():
    import pandas as pd

    frame = pd.read_csv(MNIST, nrows=240)
    probs = frame[[f"P{k}" for k in range(10)]].to_numpy(float)
    labels = frame[[f"Y{k}" for k in range(10)]].to_numpy(bool)
    digits = np.array([10, 1, 2, 3, 4, 5, 6, 7, 8, 9], dtype=float)
    targets = [1.1, 2.1, 3.1]
    fast = replay(probs, labels, FormulaValue(V_GEN, weights=digits), AdditiveCost(), targets, burn_in=40, score="cost")
    reference = replay(probs, labels, ReferenceFormula(V_GEN, weights=digits), AdditiveCost(), targets, burn_in=40,
                       score="cost")
    np.testing.assert_array_equal(fast.thresholds, reference.thresholds)
    np.testing.assert_array_equal(fast.selected, reference.selected)


def test_a_code_that_cannot_change_the_value_is_an_exact_plateau():
    """V_GEN's digit 5 multiplies by (5 + 5) / 10 = 1 and adds (5 - 5)^2 = 0."""
    f = FormulaValue(V_GEN, weights=[5.0, 9.0, 2.0])
    cands = candidate_sets([[0.9, 0.5, 0.4]], f, AdditiveCost())
    step = int(np.flatnonzero(cands.order[0] == 0)[0]) + 1
    assert cands.vhat[0, step] == cands.vhat[0, step - 1]
    assert cands.best_prefix()[0, step] == step  # ties go to the last prefix


@pytest.mark.parametrize("n_codes", [8, 14])  # exact enumeration and Monte Carlo
def test_replay_with_a_formula_gives_the_reference_sets(n_codes):
    rng = np.random.RandomState(4)
    probs = rng.choice([0.0, 0.05, 0.3, 0.5, 0.8, 1.0], size=(80, n_codes))
    labels = rng.rand(80, n_codes) < probs
    values = np.arange(1.0, n_codes + 1)
    cost = AdditiveCost(rng.choice([0.5, 1.0, 2.0], size=n_codes))
    kwargs = dict(burn_in=20, targets=[1.1, 2.6, 4.0], score="cost")  # exact Chat thresholds (prices differ by float noise)
    fast = replay(probs, labels, FormulaValue(V_GEN, weights=values, n_samples=64), cost, **kwargs)
    reference = replay(probs, labels, ReferenceFormula(V_GEN, weights=values, n_samples=64), cost, **kwargs)
    np.testing.assert_array_equal(fast.thresholds, reference.thresholds)
    np.testing.assert_array_equal(fast.selected, reference.selected)
    np.testing.assert_allclose(fast.value, reference.value, rtol=1e-12)


@pytest.mark.parametrize("universe", ["ratio", "prob", "value"])
def test_violation_control_with_a_window_gives_the_reference_sets(universe):
    rng = np.random.RandomState(8)
    probs = rng.rand(70, 9).round(2)
    labels = rng.rand(70, 9) < probs
    values = rng.choice([1.0, 2.0, 5.0, 9.0], size=9)
    kwargs = dict(targets=[1.1, 2.6], delta=0.2, window=25, burn_in=15, universe=universe)
    formula = "sqrt(sum_selected(v) + 1) + sum_hits(v) * n_hits"
    fast = replay(probs, labels, FormulaValue(formula, weights=values), AdditiveCost(), **kwargs)
    reference = replay(probs, labels, ReferenceFormula(formula, weights=values), AdditiveCost(), **kwargs)
    np.testing.assert_array_equal(fast.thresholds, reference.thresholds)
    np.testing.assert_array_equal(fast.selected, reference.selected)


@pytest.mark.parametrize("delta", [None, 0.2])
def test_price_score_gives_the_reference_sets(delta):
    """Prices divide Vhat increments, so thresholds agree to round-off; the sets are the same."""
    rng = np.random.RandomState(4)
    probs = rng.choice([0.0, 0.05, 0.3, 0.5, 0.8, 1.0], size=(80, 8))
    labels = rng.rand(80, 8) < probs
    values, cost = np.arange(1.0, 9.0), AdditiveCost(rng.choice([0.5, 1.0, 2.0], size=8))
    kwargs = dict(burn_in=20, targets=[1.1, 2.6, 4.0], score="price", delta=delta)
    fast = replay(probs, labels, FormulaValue(V_GEN, weights=values, n_samples=64), cost, **kwargs)
    reference = replay(probs, labels, ReferenceFormula(V_GEN, weights=values, n_samples=64), cost, **kwargs)
    np.testing.assert_array_equal(fast.selected, reference.selected)
    np.testing.assert_allclose(fast.thresholds, reference.thresholds, rtol=1e-9)


def test_formulas_the_compiler_does_not_cover_use_the_reference_path():
    f = FormulaValue("(n_hits > 1) * 3 + sum_hits(v)", weights=np.arange(1.0, 7.0))
    assert f.compiled(6) is None
    probs = np.random.RandomState(0).rand(3, 6)
    assert_same(general_sequences(probs, f, AdditiveCost()), general_sequences(probs, f, AdditiveCost(), reference=True))


@pytest.mark.parametrize("reference", [False, True])
def test_non_finite_values_are_an_error_in_both_paths(reference):
    f = FormulaValue("log(sum_hits(v))", weights=np.ones(4))
    with pytest.raises(FormulaError, match="non-finite"):
        general_sequences(np.full((2, 4), 0.5), f, AdditiveCost(), reference=reference)


def test_compiled_program_is_instructions_not_text():
    compiled = FormulaValue(V_GEN, weights=[10.0, 1.0]).compiled(2)
    assert compiled.program.dtype == np.int64 and compiled.program.shape[1] == 2
    np.testing.assert_array_equal(compiled.coefs, [[1.5, 0.6], [25.0, 16.0]])
