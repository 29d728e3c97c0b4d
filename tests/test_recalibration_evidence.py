"""The Data page recommends recalibrating only on held-out evidence (docs/method.md "Recalibration on a split": within
the fold, maps fitted on one part must gain on the other part), as value at the user's target."""
import numpy as np
import pandas as pd
import pytest

from favmac import AdditiveCost, AdditiveValue, FavMac
from favmac.recalibration import fit_recalibration
from favmac.recalibration_evidence import evidence_summary, recalibration_evidence


def _cohort(seed, n=2000, k=8, distortion=1.0, decimals=None):
    """True q, labels, and the classifier's p = sigmoid(distortion * logit q) (optionally rounded)."""
    rng = np.random.RandomState(seed)
    logit_q = rng.uniform(-4.0, -1.0, k) + 1.5 * rng.randn(n, k)
    q = 1 / (1 + np.exp(-logit_q))
    p = 1 / (1 + np.exp(-distortion * logit_q))
    if decimals is not None:
        p = np.round(p, decimals)
    return p, rng.rand(n, k) < q, np.exp(rng.uniform(-1.5, 1.5, k))


def _held_out_value(p_fit, y_fit, p_eval, y_eval, value, cost, target, method):
    """By hand: maps fitted on one part; on the other part, FavMac calibrated on that part's own labels and
    applied to it (the hindsight threshold) with the raw and the mapped probabilities."""
    maps = fit_recalibration(p_fit, y_fit, method)
    out = []
    for probs in (p_eval, maps.apply(p_eval)):
        model = FavMac(value, cost, target).update(probs, y_eval)
        chosen = model.predict(probs)
        out.append((value(chosen, y_eval).mean(), cost(chosen, y_eval).mean()))
    return out


def test_the_table_is_the_held_out_value_of_each_half():
    p, y, v = _cohort(0, n=1200, distortion=2.0)
    value, cost = AdditiveValue(v), AdditiveCost()
    table = recalibration_evidence(p, y, value, cost, 1.0, fold=1000, methods=("platt_tested", "platt"))
    assert list(table["method"]) == ["platt_tested", "platt_tested", "platt", "platt"]
    halves = (slice(0, 500), slice(500, 1000))
    for _, row in table.iterrows():
        fit, held = halves if row["measured_on"] == "second half" else halves[::-1]
        (plain, plain_cost), (mapped, mapped_cost) = _held_out_value(p[fit], y[fit], p[held], y[held], value, cost, 1.0,
                                                                     row["method"])
        assert row["patients"] == 500
        assert row["value_plain"] == pytest.approx(plain) and row["value_mapped"] == pytest.approx(mapped)
        assert row["cost_plain"] == pytest.approx(plain_cost) and row["cost_mapped"] == pytest.approx(mapped_cost)
        assert row["gain"] == pytest.approx(mapped - plain)


def test_a_distorted_classifier_is_recommended_and_a_calibrated_one_is_not():
    value, cost = None, AdditiveCost()
    over, y, v = _cohort(1, distortion=0.4)  # under-confident: the maps repair it on held-out patients
    value = AdditiveValue(v)
    summary = evidence_summary(recalibration_evidence(over, y, value, cost, 1.0, fold=1000))
    assert bool(summary.loc["platt_tested", "recommended"]) and summary.loc["platt_tested", "gain"] > 0
    calibrated, y, v = _cohort(2, distortion=1.0)
    summary = evidence_summary(recalibration_evidence(calibrated, y, AdditiveValue(v), cost, 1.0, fold=1000))
    assert not bool(summary.loc["platt_tested", "recommended"])  # nothing to repair: no evidence of a gain


def test_every_half_must_gain():
    table = pd.DataFrame({"method": ["platt", "platt", "isotonic", "isotonic"], "measured_on": ["second half", "first half"] * 2,
                          "patients": 500, "value_plain": [1.0, 1.0, 1.0, 1.0], "value_mapped": [1.2, 0.99, 1.1, 1.1],
                          "gain": [0.2, -0.01, 0.1, 0.1], "cost_plain": 1.0, "cost_mapped": 1.0})
    summary = evidence_summary(table)
    assert not summary.loc["platt", "recommended"] and summary.loc["isotonic", "recommended"]
    assert summary.loc["platt", "gain"] == pytest.approx(0.095) and summary.loc["isotonic", "gain_percent"] == pytest.approx(10.0)


def test_the_fold_is_checked():
    p, y, v = _cohort(3, n=300)
    with pytest.raises(ValueError, match="fold"):
        recalibration_evidence(p, y, AdditiveValue(v), AdditiveCost(), 1.0, fold=400)
    with pytest.raises(ValueError, match="fold"):
        recalibration_evidence(p, y, AdditiveValue(v), AdditiveCost(), 1.0, fold=60)  # halves of 30: below MIN_FOLD


def test_the_family_map_is_measured_beside_the_runs_map_only_where_codes_have_families():
    from favmac.recalibration_evidence import candidate_methods

    assert candidate_methods(["HCC37", "HCC38", "HCC48"]) == ("platt_tested", "platt_family")
    assert candidate_methods(["HCC37", "HCC38"], "platt_family") == ("platt_family",)
    assert candidate_methods(["HCC37", "HCC38"], "isotonic") == ("isotonic", "platt_family")
    assert candidate_methods(["HCC37", "HCC48"]) == ("platt_tested",)  # no two levels of one ladder
    assert candidate_methods(["E11.9", "HCC37", "HCC38"]) == ("platt_tested",) == candidate_methods(None)
    with pytest.raises(ValueError, match="recalibration"):
        candidate_methods(["HCC37"], "sigmoid")


def test_another_map_is_suggested_only_when_it_beats_the_runs_map_on_every_held_out_half():
    from favmac.recalibration_evidence import better_method

    rows = lambda m, plain, mapped: [{"method": m, "measured_on": h, "value_plain": a, "value_mapped": b, "gain": b - a}  # noqa: E731
                                     for h, a, b in zip(("first half", "second half"), plain, mapped)]
    t = pd.DataFrame(rows("platt_tested", (1, 1), (1.1, 1.0)) + rows("platt_family", (1, 1), (1.2, 1.05)))
    assert better_method(t, "platt_tested") == "platt_family" and better_method(t, "platt_family") is None
    ties = pd.DataFrame(rows("platt_tested", (1, 1), (1.1, 1.05)) + rows("platt_family", (1, 1), (1.2, 1.05)))
    assert better_method(ties, "platt_tested") is None  # equal on one half: no evidence it is better
    loses = pd.DataFrame(rows("platt_tested", (1, 1), (0.8, 0.8)) + rows("platt_family", (1, 1), (0.9, 0.95)))
    assert better_method(loses, "platt_tested") is None  # better than the run's map, but below no recalibration
    with pytest.raises(ValueError, match="current"):
        better_method(t, "isotonic")


def test_on_a_family_spill_the_held_out_check_prefers_the_family_map():
    # the classifier's evidence for one level of a ladder raises its siblings' scores (tests/test_recalibration_family.py)
    from test_recalibration_family import CODES, _spill
    from favmac.recalibration_evidence import better_method, candidate_methods

    p, y = _spill(3, n=2400)
    value = AdditiveValue([0.166, 0.166, 0.186, 4.209, 2.341])
    table = recalibration_evidence(p, y, value, AdditiveCost(), 0.3, fold=2000, methods=candidate_methods(CODES), codes=CODES)
    assert sorted(set(table["method"])) == ["platt_family", "platt_tested"]
    assert better_method(table, "platt_tested") == "platt_family"
