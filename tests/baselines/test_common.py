"""What all five baselines share: signature, controls, edge cases, exact flags, progress."""
import math

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, FormulaValue
from favmac.baselines import BASELINE_CONTROLS, classwise, crc, fpcp, hb_p_value, inner_set, lambda_grid, rcps

from brute_force import *  # noqa: F401,F403  (the slow reference: q, instance, bf_*, ...)


def control(method):
    """RCPS needs a violation level; the others run under expected-cost control."""
    return {"delta": 0.1} if method is rcps else {}



def test_empty_calibration_predicts_nothing():
    probs = np.array([[0.9, 0.8], [0.1, 0.6]])
    labels = np.array([[1, 0], [0, 1]])
    value, cost = AdditiveValue(), AdditiveCost()
    for method in (classwise, inner_set, crc, rcps):
        res = method(probs, labels, value, cost, [1.0], burn_in=0, **control(method))
        assert not res.selected[0, 0].any(), method.__name__
    assert inner_set(probs, labels, value, cost, [1.0]).thresholds[0, 0] == math.inf
    assert rcps(probs, labels, value, cost, [1.0], delta=0.1).thresholds[0, 0] == math.inf
    # a target at C_max allows everything, even with no calibration data
    assert classwise(probs, labels, value, cost, [2.0]).selected[0, 0].all()
    assert inner_set(probs, labels, value, cost, [2.0]).thresholds[0, 0] == -math.inf
    assert crc(probs, labels, value, cost, [2.0]).selected[0, 0].all()


def test_zero_weights_predict_everything():
    probs = np.array([[0.9, 0.1], [0.3, 0.6], [0.2, 0.2]])
    labels = np.zeros((3, 2), int)
    cost = AdditiveCost([0.0, 0.0])
    for method in (classwise, inner_set, crc, rcps):
        res = method(probs, labels, AdditiveValue(), cost, [0.0], **control(method))
        assert res.selected.all(), method.__name__
        assert np.all(res.cost == 0)


def test_burn_in_all_gives_no_steps():
    probs, labels, weights, targets, _ = instance(1)
    for method in (classwise, inner_set, crc, rcps):
        res = method(probs, labels, AdditiveValue(), AdditiveCost(weights), targets, burn_in=len(probs),
                     **control(method))
        assert res.selected.shape == (len(targets), 0, probs.shape[1])
        assert res.cost.shape == res.value.shape == res.thresholds.shape == (len(targets), 0)


def test_result_fields_and_general_value():
    probs, labels, weights, targets, burn_in = instance(5, max_n=30)
    ids = np.array([f"p{i}" for i in range(len(probs))])
    codes = [f"C{k}" for k in range(probs.shape[1])]
    value = FormulaValue("sum_hits(v) + n_hits", weights=np.arange(1, probs.shape[1] + 1))
    res = inner_set(probs, labels, value, AdditiveCost(weights), targets, delta=0.1, burn_in=burn_in,
                    codes=codes, patient_ids=ids)
    assert res.method == "InnerSet" and res.delta == 0.1 and res.burn_in == burn_in
    assert res.codes == codes and list(res.patient_ids) == list(ids[burn_in:])
    assert np.allclose(res.value, value(res.selected, labels[burn_in:]))
    assert res.settings["control"] == "violation"
    frame = res.to_frame()
    assert len(frame) == len(targets) * (len(probs) - burn_in)
    # violation control ignores the target: the same sets for every target
    assert all(np.array_equal(res.selected[0], res.selected[t]) for t in range(len(targets)))


def test_controls_are_enforced():
    probs, labels, weights, targets, _ = instance(2)
    value, cost = AdditiveValue(), AdditiveCost(weights)
    with pytest.raises(ValueError, match="expected cost only"):
        classwise(probs, labels, value, cost, targets, delta=0.1)
    with pytest.raises(ValueError, match="expected cost only"):
        crc(probs, labels, value, cost, targets, delta=0.1)
    with pytest.raises(ValueError, match="delta: RCPS"):
        rcps(probs, labels, value, cost, targets)
    assert rcps(probs, labels, value, cost, targets, delta=0.1).delta == 0.1
    with pytest.raises(ValueError, match="additive cost"):
        inner_set(probs, labels, value, FormulaValue("n_hits"), targets)
    with pytest.raises(ValueError, match="shape"):
        inner_set(probs, labels[:, :1], value, cost, targets)
    with pytest.raises(ValueError, match="burn_in"):
        inner_set(probs, labels, value, cost, targets, burn_in=len(probs) + 1)
    with pytest.raises(ValueError, match="delta"):
        inner_set(probs, labels, value, cost, targets, delta=1.5)
    assert set(BASELINE_CONTROLS) == {"classwise", "inner_set", "fpcp", "crc", "rcps"}


@pytest.mark.parametrize("method", [classwise, inner_set, crc])
def test_expected_cost_is_controlled(method):
    probs, labels = synthetic(seed=1)
    weights = np.round(np.random.RandomState(0).uniform(0.2, 2.0, size=probs.shape[1]), 2)
    targets = [round(f * weights.sum(), 2) for f in (0.1, 0.3)]
    cost_means, _ = over_orderings(method, probs, labels, AdditiveValue(weights), AdditiveCost(weights), targets,
                                   n_orderings=100, burn_in=20)
    stderr = cost_means.std(axis=0, ddof=1) / np.sqrt(len(cost_means))
    assert np.all(cost_means.mean(axis=0) <= np.array(targets) + 3 * stderr)



METHODS = [classwise, inner_set, fpcp, crc, rcps]


@pytest.mark.parametrize("method", METHODS)
def test_exceeds_flags_are_exact(method):
    # C_max = 0.1 + 0.2 and target = C_max: every method allows the full set; its float
    # cost 0.30000000000000004 is not a violation, and the exact flags say so.
    probs = np.array([[0.6, 0.4], [0.3, 0.8], [0.5, 0.5], [0.9, 0.2]])
    labels = np.zeros((4, 2), int)
    res = method(probs, labels, AdditiveValue(), AdditiveCost([0.1, 0.2]), [0.3], burn_in=2, **control(method))
    assert res.exceeds is not None and res.exceeds.shape == (1, 2)
    assert res.selected.all() and np.all(res.cost > 0.3)
    assert not res.violations.any()


@pytest.mark.parametrize("method", METHODS)
def test_progress_runs_from_zero_to_one(method):
    probs, labels, weights, targets, burn_in = instance(3)
    seen = []
    method(probs, labels, AdditiveValue(), AdditiveCost(weights), targets, burn_in=burn_in, progress=seen.append,
           **control(method))
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen)


@pytest.mark.parametrize("method", [classwise, inner_set, crc, rcps])
def test_c_max_overrides_the_sum_of_weights(method):
    probs, labels, weights, targets, burn_in = instance(4)
    value, cost = AdditiveValue(), AdditiveCost(weights)
    # doubling C_max = halving the target, for the methods that use C_max only through c / C_max
    got = method(probs, labels, value, cost, targets, burn_in=burn_in, c_max=2 * float(c_max_of(weights)),
                 **control(method))
    assert got.settings["c_max"] == pytest.approx(2 * float(c_max_of(weights)))
    if method in (classwise, inner_set):
        ref = method(probs, labels, value, cost, [t / 2 for t in targets], burn_in=burn_in, **control(method))
        assert np.array_equal(got.selected, ref.selected)


@pytest.mark.parametrize("method", METHODS)
def test_uniform_signature(method):
    import inspect

    params = inspect.signature(method).parameters
    assert list(params)[:5] == ["probs", "labels", "value", "cost", "targets"]
    for name in ("delta", "burn_in", "window", "c_max", "codes", "patient_ids", "progress"):
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, name


def test_unsupported_controls_are_refused_by_name():
    probs, labels, weights, targets, _ = instance(2)
    value, cost = AdditiveValue(), AdditiveCost(weights)
    for name, controls in BASELINE_CONTROLS.items():
        method = {"classwise": classwise, "inner_set": inner_set, "fpcp": fpcp, "crc": crc, "rcps": rcps}[name]
        for delta, control_name in ((None, "expected"), (0.1, "violation")):
            if control_name in controls:
                method(probs, labels, value, cost, targets, delta=delta)
            else:
                with pytest.raises(ValueError, match="ClassWise|CRC|RCPS"):
                    method(probs, labels, value, cost, targets, delta=delta)
