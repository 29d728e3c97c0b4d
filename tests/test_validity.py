"""Validity evidence: re-orderings, p-values and the plain verdict, per segment and in arrival order."""
import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, replay
from favmac.validity import MIN_ORDERINGS, validity_check, verdict_sentence


def cohort(seed=0, n=600, K=5):
    rng = np.random.RandomState(seed)
    p_true = rng.beta(1.0, 3.0, size=(n, K))
    labels = rng.rand(n, K) < p_true
    groups = np.where(rng.rand(n) < 0.3, "B", "A")
    probs = p_true.copy()
    probs[groups == "B"] = np.clip(0.4 + 0.6 * p_true[groups == "B"] ** 0.5, 0, 1)
    return probs.round(4), labels, groups


def test_orderings_are_seeded_and_statistic_matches_replay():
    probs, labels, _ = cohort()
    value, cost = AdditiveValue(), AdditiveCost()
    seen = []
    report = validity_check(probs, labels, value, cost, 0.8, burn_in=200, seed=3, progress=seen.append)
    assert report.n_orderings == MIN_ORDERINGS and seen[0] == 0.0 and seen[-1] == 1.0 and len(seen) == 201
    rng = np.random.RandomState(3)
    for r in range(2):
        order = rng.permutation(len(probs))
        res = replay(probs[order], labels[order], value, cost, [0.8], burn_in=200)
        assert report.statistic[r] == pytest.approx(res.cost.mean())
    assert report.observed == pytest.approx(replay(probs, labels, value, cost, [0.8], burn_in=200).cost.mean())
    again = validity_check(probs, labels, value, cost, 0.8, burn_in=200, seed=3)
    assert np.array_equal(again.statistic, report.statistic)
    assert report.passed and report.verdict.startswith("PASS:") and report.mean <= 0.8


def test_pooled_control_fails_the_over_confident_segment_and_segment_control_passes():
    probs, labels, groups = cohort()
    value, cost = AdditiveValue(), AdditiveCost()
    pooled = validity_check(probs, labels, value, cost, 0.8, burn_in=200, groups=groups, segment_control=False)
    table = pooled.segments.set_index("segment")
    assert not pooled.passed and bool(table.loc["B", "passed"]) is False and table.loc["B", "p_value"] < 0.001
    assert "segment B at" in pooled.verdict and "per 100 charts" in pooled.verdict and "pooled" in pooled.verdict
    # the pooled promise is the only one made: the verdict says it held before naming the segment that ran over
    assert pooled.overall_passed and pooled.verdict.startswith("Held overall, not in every segment. PASS:")
    assert "However" not in pooled.verdict
    assert table.loc["B", "verdict"].startswith("FAIL:")
    grouped = validity_check(probs, labels, value, cost, 0.8, burn_in=200, groups=groups)
    assert grouped.passed and all(grouped.segments["passed"])
    assert (grouped.segments["mean"] <= 0.8 + 0.02).all()


def test_violation_control_reports_rates_and_binomial():
    probs, labels, _ = cohort(1)
    report = validity_check(probs, labels, AdditiveValue(), AdditiveCost(), 1.0, delta=0.1, burn_in=200)
    assert report.control == "violation" and report.promised == 0.1
    assert 0 <= report.binomial_p_value <= 1 and report.passed
    assert "% of patients got a set costing more than 1" in report.verdict
    assert report.predicted_spread == pytest.approx(np.sqrt(0.09 / 400) * np.sqrt(200 / 599))


def test_arrival_order_reveals_drift():
    rng = np.random.RandomState(2)
    n, K = 800, 6
    p_true = rng.beta(1.0, 3.0, size=(n, K))
    labels = rng.rand(n, K) < p_true
    probs = p_true.copy()
    probs[n // 2 :] = np.clip(0.35 + 0.65 * p_true[n // 2 :] ** 0.4, 0, 1)
    report = validity_check(probs.round(4), labels, AdditiveValue(), AdditiveCost(), 1.0, burn_in=200)
    assert report.order_p_value < 0.05 and "sign of drift" in report.verdict
    assert report.observed > np.quantile(report.statistic, 0.975)


def test_bad_arguments_are_named():
    probs, labels, _ = cohort(n=50)
    with pytest.raises(ValueError, match="n_orderings: expected a whole number >= 200"):
        validity_check(probs, labels, AdditiveValue(), AdditiveCost(), 1.0, n_orderings=10)
    with pytest.raises(ValueError, match="alpha"):
        validity_check(probs, labels, AdditiveValue(), AdditiveCost(), 1.0, alpha=2)
    text = verdict_sentence("expected", 1.3, 1.0, 0.0001, False, n_orderings=200, n_patients=10, alpha=0.05)
    assert text.startswith("FAIL:") and "p < 0.001" in text


def test_verdict_figures_carry_the_unit_and_no_exponent_form():
    """Issue 21's walkthrough: 'the chosen code sets cost 4.47e+03 dollars ... per patient'."""
    import numpy as np

    from favmac.validity import order_sentence

    text = verdict_sentence("expected", 4472.4, 5060.0, 1.0, True, n_orderings=200, n_patients=4000, alpha=0.05,
                            unit="dollars of unsupported payment")
    # per 100 charts, as the page's tiles
    assert "cost 447,240 dollars of unsupported payment per 100 charts" in text and "the promised 506,000 dollars" in text
    order = order_sentence("expected", 4350.0, np.array([4200.0, 4700.0]), 0.8, 0.05, False, unit="dollars")
    assert "435,000 dollars per 100 charts" in order and "e+" not in order and "421,250 and 468,750" in order


@pytest.mark.parametrize("n, burn_in", [(0, 0), (50, 50), (50, 60)])
def test_no_patient_to_predict_is_refused_by_name(n, burn_in):
    # replay allows burn_in = N (nothing predicted); the check then died with IndexError on the empty orderings
    from favmac import AdditiveCost, AdditiveValue

    rng = np.random.RandomState(0)
    p = rng.rand(n, 3)
    y = (rng.rand(n, 3) < p).astype(int)
    with pytest.raises(ValueError, match="burn_in.*no patient"):
        validity_check(p, y, AdditiveValue(), AdditiveCost(), 0.5, burn_in=burn_in)


def test_label_frames_are_matched_to_probability_frames_by_patient_and_code():
    import pandas as pd
    from favmac import AdditiveCost, AdditiveValue

    rng = np.random.RandomState(1)
    p = pd.DataFrame(rng.rand(80, 3).round(2), index=[f"p{i}" for i in range(80)], columns=list("ABC"))
    y = pd.DataFrame((rng.rand(80, 3) < p.to_numpy()).astype(int), index=p.index, columns=p.columns)
    want = validity_check(p.to_numpy(), y.to_numpy(), AdditiveValue(), AdditiveCost(), 0.5, burn_in=20)
    got = validity_check(p, y.iloc[::-1][["C", "B", "A"]], AdditiveValue(), AdditiveCost(), 0.5, burn_in=20)
    assert np.array_equal(got.statistic, want.statistic)
