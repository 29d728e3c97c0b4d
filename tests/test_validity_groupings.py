"""The validity check with several groupings, labels that arrive later and the per-patient work
computed once (issue 20; docs/method.md "Several groupings at once", "Labels that arrive later").

Each ordering of the check must be exactly ``replay`` of the permuted patients, with their
groups, their arrivals (a patient's own delay travels with it) and their member context."""
import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, replay
from favmac.functions import bind_rows
from favmac.replay import PatientWork
from favmac.validity import GROUP_COLUMNS, validity_check
from tests.test_cms_payment import _payment_stream
from tests.test_groupings import over_confident_cohort


def group_means(values, labels):
    return {g: values[labels == g].mean() for g in np.unique(labels)}


def orderings(seed, n_patients, count):
    rng = np.random.RandomState(seed)
    return [rng.permutation(n_patients) for _ in range(count)]


@pytest.mark.parametrize("delta", [None, 0.2])
def test_two_groupings_equal_replay_of_the_permuted_patients_and_groups(delta):
    probs, labels, plan, band = over_confident_cohort(3, 500, 5)
    value, cost = AdditiveValue(), AdditiveCost()
    report = validity_check(probs, labels, value, cost, 0.8, delta=delta, burn_in=150, seed=4,
                            groups={"plan": plan, "band": band})
    assert list(report.groupings) == ["plan", "band"] and report.segments is report.groupings["plan"]
    for name, table in report.groupings.items():
        assert list(table.columns) == GROUP_COLUMNS
        assert set(table["segment"]) == set({"plan": plan, "band": band}[name])
        assert table["patients"].sum() == 500
    for r, order in enumerate(orderings(4, len(probs), 5)):
        res = replay(probs[order], labels[order], value, cost, [0.8], delta=delta, burn_in=150,
                     groups={"plan": plan[order], "band": band[order]})
        measured = res.cost[0] if delta is None else res.violations[0].astype(float)
        assert report.statistic[r] == measured.mean()
        for name, labels_of in (("plan", plan), ("band", band)):
            for group, mean in group_means(measured, labels_of[order][150:]).items():
                assert report.grouping_statistics[name][group][r] == pytest.approx(mean, rel=1e-12)
    # the table's numbers are the per-ordering statistics summarised
    p3 = report.groupings["plan"].set_index("segment").loc["P3"]
    stats = report.grouping_statistics["plan"]["P3"]
    assert p3["mean"] == pytest.approx(stats.mean()) and p3["spread"] == pytest.approx(stats.std(ddof=1))
    assert abs(p3["predicted"] - np.sum(plan == "P3") * 350 / 500) < 2  # per ordering, on average


def test_a_fixed_delay_stays_d_positions_in_every_ordering():
    probs, labels, plan, band = over_confident_cohort(5, 400, 5)
    value, cost = AdditiveValue(), AdditiveCost()
    for groups in (None, plan, [plan, band]):
        report = validity_check(probs, labels, value, cost, 0.8, burn_in=100, seed=2, label_delay=60, groups=groups)
        for r, order in enumerate(orderings(2, len(probs), 3)):
            permuted = None if groups is None else (plan[order] if groups is plan else [plan[order], band[order]])
            res = replay(probs[order], labels[order], value, cost, [0.8], burn_in=100, label_delay=60, groups=permuted)
            assert report.statistic[r] == res.cost[0].mean()
        assert report.observed == replay(probs, labels, value, cost, [0.8], burn_in=100, label_delay=60,
                                         groups=groups).cost[0].mean()


@pytest.mark.parametrize("delta", [None, 0.2])
def test_a_patients_own_delay_travels_with_it(delta):
    probs, labels, plan, band = over_confident_cohort(6, 400, 5)
    value, cost = AdditiveValue(), AdditiveCost()
    rng = np.random.RandomState(0)
    own = rng.randint(0, 80, size=len(probs))
    own[rng.rand(len(probs)) < 0.05] = 10_000  # some labels never arrive within the stream
    arrivals = np.arange(len(probs)) + own
    report = validity_check(probs, labels, value, cost, 0.8, delta=delta, burn_in=100, seed=7,
                            label_available_at=arrivals, groups=[plan, band], window=150)
    for r, order in enumerate(orderings(7, len(probs), 3)):
        res = replay(probs[order], labels[order], value, cost, [0.8], delta=delta, burn_in=100, window=150,
                     label_available_at=np.arange(len(probs)) + own[order], groups=[plan[order], band[order]])
        measured = res.cost[0] if delta is None else res.violations[0].astype(float)
        assert report.statistic[r] == measured.mean()
    observed = replay(probs, labels, value, cost, [0.8], delta=delta, burn_in=100, window=150,
                      label_available_at=arrivals, groups=[plan, band])
    assert report.observed == (observed.cost[0] if delta is None else observed.violations[0]).mean()


def payment_stream(seed, n=240):
    """Random V28 HCC stream with each member's cell and known codes (tests/test_cms_payment.py)."""
    return _payment_stream(seed, n=n)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("score,delta,rate", [("price", None, None), ("cost", None, None), ("cost", 0.2, None),
                                              ("price", 0.2, None), ("price", None, 0.05)])
def test_work_built_once_and_permuted_equals_rebuilding_it(seed, score, delta, rate):
    """Payment value (per-member cells and known codes): a replay with the permuted work equals
    the replay that rebuilds the candidate sets, exactly, with groupings and a delay too."""
    probs, labels, value, cost = payment_stream(seed)
    targets = [0.7, 1.4]
    work = PatientWork.of(probs, labels, value, cost, targets, delta=delta, score=score)
    plan = np.random.RandomState(seed).choice(["a", "b", "c"], len(probs))
    for order in orderings(seed + 10, len(probs), 3):
        for extra in ({}, {"groups": plan[order], "label_delay": 20, "window": 90},
                      {} if rate is not None else {"groups": [plan[order], order % 2]}):
            kwargs = dict(delta=delta, score=score, burn_in=60, adaptive_rate=rate, **extra)
            bound = bind_rows(value, order)
            fast = replay(probs[order], labels[order], bound, cost, targets, work=work.take(order), **kwargs)
            slow = replay(probs[order], labels[order], bound, cost, targets, **kwargs)
            for field in ("thresholds", "cost", "value", "exceeds", "final_thresholds"):
                np.testing.assert_array_equal(getattr(fast, field), getattr(slow, field), err_msg=field)
            np.testing.assert_array_equal(fast.chosen.masks(), slow.chosen.masks())


def test_validity_with_the_payment_value_equals_a_rebuilt_replay_per_ordering():
    probs, labels, value, cost = payment_stream(4)
    plan = np.random.RandomState(4).choice(["a", "b"], len(probs))
    report = validity_check(probs, labels, value, cost, 1.0, burn_in=60, score="price", seed=9, groups=plan,
                            label_delay=15)
    for r, order in enumerate(orderings(9, len(probs), 4)):
        res = replay(probs[order], labels[order], bind_rows(value, order), cost, [1.0], burn_in=60, score="price",
                     groups=plan[order], label_delay=15)
        assert report.statistic[r] == res.cost[0].mean()


def test_work_refuses_other_settings_and_a_recalibration_fold():
    probs, labels, value, cost = payment_stream(0, n=80)
    work = PatientWork.of(probs, labels, value, cost, [1.0], score="price")
    with pytest.raises(ValueError, match=r"work: built for \(universe, score, c_max, delta, targets\)"):
        replay(probs, labels, value, cost, [1.0], score="cost", work=work)
    with pytest.raises(ValueError, match="work: built for 80 patients, the stream has 40"):
        replay(probs[:40], labels[:40], bind_rows(value, slice(0, 40)), cost, [1.0], score="price", work=work)
    with pytest.raises(ValueError, match="work: not with recalibrate"):
        replay(probs, labels, value, cost, [1.0], score="price", work=work, recalibrate=50)


@pytest.mark.parametrize("by", ["code", "segment"])
def test_recalibration_fold_is_rebuilt_for_every_ordering(by):
    probs, labels, plan, _ = over_confident_cohort(8, 400, 5)
    value, cost = AdditiveValue(), AdditiveCost()
    report = validity_check(probs, labels, value, cost, 0.8, burn_in=50, recalibrate=100, recalibrate_by=by, seed=1,
                            groups=plan)
    assert report.n_predicted == 250
    assert report.groupings["segment"]["predicted"].sum() == 250
    for r, order in enumerate(orderings(1, len(probs), 3)):
        res = replay(probs[order], labels[order], value, cost, [0.8], burn_in=50, recalibrate=100, recalibrate_by=by,
                     groups=plan[order])
        assert report.statistic[r] == res.cost[0].mean()


def test_adaptive_target_with_several_groupings_stays_refused():
    probs, labels, plan, band = over_confident_cohort(0, 200, 4)
    with pytest.raises(ValueError, match="adaptive_rate: the adaptive target is for one grouping at most; got 2"):
        validity_check(probs, labels, AdditiveValue(), AdditiveCost(), 0.8, burn_in=50, adaptive_rate=0.05,
                       groups=[plan, band])
    with pytest.raises(ValueError, match=r"label_available_at: the patient at row 5 \(the header is row 1; array index 3\) .* before its own position 3"):
        validity_check(probs, labels, AdditiveValue(), AdditiveCost(), 0.8, burn_in=50,
                       label_available_at=np.r_[np.arange(3), 2, np.arange(4, 200)])


def test_every_group_of_both_groupings_keeps_its_guarantee_where_pooled_control_does_not():
    """Issue 20's cohort (plan P3 and, among the others, age band 75+ over-confident), 200
    orderings: the two-grouping check passes every group of every grouping (with and without a
    label delay); pooled control, reported per group, fails P3 and 75+."""
    probs, labels, plan, band = over_confident_cohort(0, 1500, 6)
    value, cost = AdditiveValue(), AdditiveCost()
    groups = {"plan": plan, "age band": band}
    for delay in (None, 100):
        both = validity_check(probs, labels, value, cost, 0.8, burn_in=400, groups=groups, label_delay=delay, seed=11)
        assert both.passed, both.verdict
        for name, table in both.groupings.items():
            assert table["passed"].all(), (delay, name, table)
            assert (table["mean"] <= 0.8 + 2 * table["spread"] / np.sqrt(200)).all()
    pooled = validity_check(probs, labels, value, cost, 0.8, burn_in=400, groups=groups, segment_control=False, seed=11)
    assert not pooled.passed
    failing = {(name, g) for name, table in pooled.groupings.items() for g, ok in zip(table["segment"], table["passed"])
               if ok is False}
    assert {("plan", "P3"), ("age band", "75+")} <= failing
    assert "plan P3" in pooled.verdict and "age band 75+" in pooled.verdict and "table of each grouping" in pooled.verdict
    table = pooled.groupings["age band"].set_index("segment")
    assert table.loc["75+", "verdict"].startswith("FAIL: over 200 random orderings of age band 75+")


def test_violation_control_per_group_of_each_grouping():
    probs, labels, plan, band = over_confident_cohort(2, 1200, 6)
    report = validity_check(probs, labels, AdditiveValue(), AdditiveCost(), 1.0, delta=0.15, burn_in=400,
                            groups=[plan, band], seed=3)
    assert report.passed, report.verdict
    for table in report.groupings.values():
        assert table["passed"].all()
        assert table["binomial_p_value"].between(0, 1).all()
        assert (table["mean"] == table["violation_rate"]).all()
