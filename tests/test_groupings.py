"""Several groupings at once: replay with groups=[plan, band] against one replay per grouping, the
literal oracle and a FavMac loop with group=(plan, band); the guarantee per group of every grouping
on a cohort where one plan and, among the other patients, the oldest age band are over-confident."""
import numpy as np
import pandas as pd
import pytest

from favmac import AdditiveCost, AdditiveValue, FavMac, replay
from favmac.segments import check_groupings, grouping_tables, segment_table

import oracle
from instances import SCORED, random_instance, targets_for

def labels_without_singletons(rng, n_patients, names):
    """Random group labels in which every group present has at least two patients."""
    while True:
        labels = np.array(names)[rng.randint(0, len(names), size=n_patients)]
        if np.unique(labels, return_counts=True)[1].min() >= 2:
            return labels


@pytest.mark.parametrize("delta", [None, 0.2])
@pytest.mark.parametrize("universe, score", SCORED)
def test_two_groupings_are_the_min_of_the_one_grouping_thresholds(universe, score, delta):
    rng = np.random.RandomState(21)
    for trial in range(10):
        probs, labels, v, w = random_instance(rng, integer_weights=trial % 2 == 0)
        n_patients = len(probs)
        targets = targets_for(rng, w, trial % 2 == 0)
        plan = labels_without_singletons(rng, n_patients, ["a", "b"])
        band = labels_without_singletons(rng, n_patients, ["x", "y", "z"][: 1 + trial % 3])
        burn_in = int(rng.randint(0, n_patients))
        window = None if trial % 3 else 2
        delay = 0 if trial % 2 else int(rng.randint(0, 3))
        value, cost = AdditiveValue(v), AdditiveCost(w)
        settings = dict(delta=delta, universe=universe, burn_in=burn_in, window=window, score=score, label_delay=delay)
        both = replay(probs, labels, value, cost, targets, groups=[plan, band], **settings)
        by_plan = replay(probs, labels, value, cost, targets, groups=plan, **settings)
        by_band = replay(probs, labels, value, cost, targets, groups=band, **settings)
        assert (both.thresholds == np.minimum(by_plan.thresholds, by_band.thresholds)).all()
        assert [g.name for g in both.groupings] == ["grouping 1", "grouping 2"]
        assert (both.groupings[0].thresholds == by_plan.thresholds).all()
        assert (both.groupings[1].thresholds == by_band.thresholds).all()
        assert both.groupings[1].final_thresholds.keys() == by_band.group_thresholds.keys()
        for label, final in by_band.group_thresholds.items():
            assert (both.groupings[1].final_thresholds[label] == final).all()
        assert (both.final_thresholds == by_plan.final_thresholds).all()  # pooled, every patient
        stream = list(zip(probs, labels))
        for t, c in enumerate(targets):
            if delay == 0:  # the literal oracle, patient by patient
                literal = np.minimum(oracle.grouped_thresholds(stream, plan, v, w, c, universe, burn_in, delta, window, score),
                                     oracle.grouped_thresholds(stream, band, v, w, c, universe, burn_in, delta, window, score))
                assert both.thresholds[t].tolist() == literal.tolist()
            fm = FavMac(value, cost, c, delta=delta, universe=universe, window=window, n_codes=len(v), score=score)
            for n in range(n_patients):
                if n >= burn_in:
                    s = n - burn_in
                    assert both.thresholds[t, s] == fm.threshold_for((plan[n], band[n]))
                    assert (both.selected[t, s] == fm.predict(probs[n], group=(plan[n], band[n]))).all()
                # labels join right after position n's prediction (burn-in ones before the first)
                arrives = [n] if n < burn_in else [i for i in range(burn_in, n_patients) if i + delay == n]
                for i in arrives:
                    fm.update(probs[i], labels[i], group=(plan[i], band[i]))


def test_favmac_takes_a_tuple_of_groupings_in_batches():
    rng = np.random.RandomState(3)
    probs, labels = rng.rand(60, 4), rng.rand(60, 4) < 0.3
    plan, band = rng.choice(["p", "q"], size=60), rng.choice(["young", "old"], size=60)
    one = FavMac(AdditiveValue(), AdditiveCost(), 1.1, n_codes=4)
    for n in range(60):
        one.update(probs[n], labels[n], group=(plan[n], band[n]))
    batch = FavMac(AdditiveValue(), AdditiveCost(), 1.1).update(probs, labels, group=(plan, band))
    assert batch.segments == one.segments == {"p": int((plan == "p").sum()), "q": int((plan == "q").sum())}
    for g in [("p", "young"), ("q", "old"), ("p", "old")]:
        assert batch.threshold_for(g) == one.threshold_for(g) == min(one.threshold_for(g[0]),
                                                                     one._segment(g[1], 1).threshold)
    masks = batch.predict(probs[:6], group=(plan[:6], band[:6]))
    for n in range(6):
        assert (masks[n] == one.predict(probs[n], group=(plan[n], band[n]))).all()
    with pytest.raises(ValueError, match="adaptive target .* takes one grouping"):
        FavMac(AdditiveValue(), AdditiveCost(), 1.1, adaptive_rate=0.1).update(probs, labels, group=(plan, band))


def test_groupings_are_read_from_lists_arrays_frames_and_dicts():
    plan, band = ["a", "a", "b", "b"], ["x", "y", "x", "y"]
    as_list = check_groupings([plan, band], 4)
    as_array = check_groupings(np.column_stack([plan, band]), 4)
    as_frame = check_groupings(pd.DataFrame({"plan": plan, "band": band}), 4)
    as_dict = check_groupings({"plan": plan, "band": band}, 4)
    for got in (as_list, as_array, as_frame, as_dict):
        assert [labels.tolist() for _, labels in got] == [plan, band]
    assert [name for name, _ in as_frame] == ["plan", "band"] == [name for name, _ in as_dict]
    assert [name for name, _ in check_groupings(plan, 4)] == ["segment"]  # 1-D: one grouping, as before


def test_bad_groupings_are_refused_clearly():
    probs, labels = np.full((6, 2), 0.5), np.zeros((6, 2))
    args = (probs, labels, AdditiveValue(), AdditiveCost(), [1.0])
    plan = ["a", "a", "a", "b", "b", "b"]
    with pytest.raises(ValueError, match=r"groups\[1\] \(band\): group 'old' has a single patient \(the patient at row 7 \(the header is row 1; array index 5\)\)"):
        replay(*args, groups={"plan": plan, "band": ["y", "y", "y", "y", "y", "old"]})
    with pytest.raises(ValueError, match=r"groups\[1\] \(grouping 2\): the patient at row 4 \(the header is row 1; array index 2\) has no group label"):
        replay(*args, groups=[plan, ["y", "y", "", "y", "z", "z"]])
    with pytest.raises(ValueError, match=r"groups\[0\] \(grouping 1\): expected one group label per patient"):
        replay(*args, groups=[plan[:5], plan])
    with pytest.raises(ValueError, match="adaptive_rate: the adaptive target is for one grouping at most; got 2"):
        replay(*args, groups=[plan, plan[::-1]], adaptive_rate=0.1)
    with pytest.raises(ValueError, match="two groupings share a name"):
        replay(*args, groups=pd.DataFrame([plan, plan], index=["g", "g"]).T)


def over_confident_cohort(seed=0, n_patients=1500, n_codes=6):
    """Plans P1-P3 and age bands; the classifier is over-confident (probabilities pushed towards 1,
    negatives too) for plan P3 and, among the other patients, for the oldest band 75+."""
    rng = np.random.RandomState(seed)
    plan = rng.choice(["P1", "P2", "P3"], size=n_patients, p=[0.4, 0.35, 0.25])
    band = rng.choice(["<50", "50-74", "75+"], size=n_patients, p=[0.35, 0.4, 0.25])
    p_true = rng.beta(1.2, 3.0, size=(n_patients, n_codes))
    labels = rng.rand(n_patients, n_codes) < p_true
    probs = p_true.copy()
    over = (plan == "P3") | (band == "75+")
    probs[over] = np.clip(0.35 + 0.65 * p_true[over] ** 0.5, 0, 1)
    return probs.round(4), labels, plan, band


def test_two_groupings_keep_every_group_where_each_grouping_alone_fails():
    """Over 40 orderings (exchangeable by construction), the mean cost of each group estimates its
    E[C | group]; 'keeps' means mean <= target + 3 standard errors (one-sided, about 1e-3 per group),
    'fails' means mean > target + 3 standard errors."""
    target, burn_in, orderings = 0.8, 400, 40
    value, cost = AdditiveValue(), AdditiveCost()
    probs, labels, plan, band = over_confident_cohort()
    runs = {"plan": {}, "band": {}, "both": {}, "both, delay 50": {}}
    for seed in range(orderings):
        order = np.random.RandomState(seed).permutation(len(probs))
        p, y, a, b = probs[order], labels[order], plan[order], band[order]
        results = {"plan": replay(p, y, value, cost, [target], burn_in=burn_in, groups=a),
                   "band": replay(p, y, value, cost, [target], burn_in=burn_in, groups=b),
                   "both": replay(p, y, value, cost, [target], burn_in=burn_in, groups={"plan": a, "band": b}),
                   "both, delay 50": replay(p, y, value, cost, [target], burn_in=burn_in, groups=[a, b], label_delay=50)}
        for key, res in results.items():
            for grouping, column in (("plan", a[burn_in:]), ("band", b[burn_in:])):
                for group in np.unique(column):
                    runs[key].setdefault((grouping, group), []).append(res.cost[0, column == group].mean())

    def margin(means):
        return np.mean(means) - (target + 3 * np.std(means, ddof=1) / np.sqrt(len(means)))

    assert margin(runs["plan"][("band", "75+")]) > 0.3  # plan control leaves the oldest band far over
    assert margin(runs["band"][("plan", "P3")]) > 0.3  # band control leaves plan P3 far over
    for key in ("both", "both, delay 50"):
        for group, means in runs[key].items():
            assert margin(means) <= 0, (key, group, np.mean(means))
    for key in ("plan", "band"):  # each one-grouping run keeps its own groups
        for (grouping, group), means in runs[key].items():
            if grouping == key:
                assert margin(means) <= 0, (key, group, np.mean(means))


def test_tables_per_grouping_say_which_grouping_binds():
    probs, labels, plan, band = over_confident_cohort(1, 900)
    res = replay(probs, labels, AdditiveValue(), AdditiveCost(), [0.8], burn_in=300, groups={"plan": plan, "band": band})
    tables = grouping_tables(res)
    assert list(tables) == ["plan", "band"]
    for name, table in tables.items():
        assert set(table["segment"]) == set({"plan": plan, "band": band}[name])
        assert table["binds"].between(0, 1).all()
    # P3's own threshold binds for its patients more often than P1's does for P1's
    by_plan = tables["plan"].set_index("segment")["binds"]
    assert by_plan["P3"] > by_plan["P1"]
    # each patient's threshold is the one of the grouping that binds (ties count for both)
    plan_binds = res.groupings[0].thresholds[0] == res.thresholds[0]
    band_binds = res.groupings[1].thresholds[0] == res.thresholds[0]
    assert (plan_binds | band_binds).all()
    assert segment_table(res, grouping="band").equals(tables["band"])
    assert {"segment", "segment_band"} <= set(res.to_frame().columns)
