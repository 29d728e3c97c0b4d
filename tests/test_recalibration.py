"""Recalibration on a split (favmac.recalibration; docs/method.md "Recalibration on a split")."""
import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from favmac import AdditiveCost, AdditiveValue, FavMac, RunSpec, predict_with_threshold, replay
from favmac.export import new_patient_sets, stream_sets
from favmac.provenance import provenance
from favmac.recalibration import (
    CLIP,
    Recalibration,
    calibration_error,
    check_recalibrate,
    fit_recalibration,
    recalibration_of,
    recalibration_report,
    reliability,
)
from favmac.runspec import SettingsError, read_settings_json


def _stream(seed, n=600, k=6, temperature=4.0):
    """True probabilities q, labels y ~ Bernoulli(q), and an under-confident p (logit q / temperature)."""
    rng = np.random.RandomState(seed)
    q = 1 / (1 + np.exp(-(rng.randn(n, k) * 2 - 2)))
    y = rng.rand(n, k) < q
    p = 1 / (1 + np.exp(-np.log(q / (1 - q)) / temperature))
    return p, y, AdditiveValue(rng.rand(k) * 5 + 0.5), AdditiveCost()


def _logit(p):
    c = np.clip(p, CLIP, 1 - CLIP)
    return np.log(c) - np.log1p(-c)


# ---------------------------------------------------------------------- the maps themselves
def _irls(x, y, iterations=100):
    """Independent reference: iteratively reweighted least squares for the maximum-likelihood logistic fit
    of y on [1, x] (no penalty), each step a weighted least-squares solve of the working response."""
    design = np.c_[np.ones(len(x)), x]
    beta = np.zeros(2)
    for _ in range(iterations):
        mu = 1 / (1 + np.exp(-design @ beta))
        w = mu * (1 - mu)
        z = design @ beta + (y - mu) / w
        root = np.sqrt(w)
        beta = np.linalg.lstsq(design * root[:, None], z * root, rcond=None)[0]
    return beta[1], beta[0]


@pytest.mark.parametrize("seed", range(8))
def test_platt_is_the_unpenalized_maximum_likelihood_fit(seed):
    # random folds: sizes 60..2,000, prevalences from rare to common, calibrated to badly tempered
    rng = np.random.RandomState(seed)
    n, k = rng.choice([60, 150, 500, 2000]), 5
    logit_q = rng.uniform(-4, 0.5, k) + rng.randn(n, k) * rng.uniform(0.5, 2.5, k)
    y = rng.rand(n, k) < 1 / (1 + np.exp(-logit_q))
    p = 1 / (1 + np.exp(-logit_q * rng.uniform(0.2, 3, k) - rng.randn(k)))
    maps = fit_recalibration(p, y, "platt")
    for code in np.flatnonzero(~maps.fallback):
        x = _logit(p[:, code])
        assert x[y[:, code]].min() < x[~y[:, code]].max()  # not separated: the maximum exists
        slope, intercept = _irls(x, y[:, code].astype(float))
        assert maps.slope[code] == pytest.approx(slope, rel=1e-8, abs=1e-8)
        assert maps.intercept[code] == pytest.approx(intercept, rel=1e-8, abs=1e-8)


def test_platt_equals_scikit_learn_without_penalty_not_its_default():
    from sklearn.linear_model import LogisticRegression

    p, y, _, _ = _stream(0, n=800, k=4)
    maps = fit_recalibration(p, y, "platt")
    for k in range(4):
        x = _logit(p[:, k])[:, None]
        ref = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(x, y[:, k])
        assert maps.slope[k] == pytest.approx(ref.coef_[0, 0], rel=1e-7)
        assert maps.intercept[k] == pytest.approx(ref.intercept_[0], abs=1e-7)
        default = LogisticRegression().fit(x, y[:, k])  # L2 penalty C = 1.0: not docs/method.md's fit
        assert abs(default.coef_[0, 0] - maps.slope[k]) > 1e-4
    # under-confident by temperature 4: the fitted slope undoes it
    assert np.all(np.abs(maps.slope - 4) < 1)


@pytest.mark.parametrize("seed", range(4))
def test_platt_score_equations_hold_on_the_fold(seed):
    # the maximum-likelihood fit's two score equations: the mapped fold prevalence is the observed one,
    # and the residuals are orthogonal to logit p
    p, y, _, _ = _stream(seed, n=1000, k=6, temperature=0.5)
    maps = fit_recalibration(p, y, "platt")
    fitted = maps.apply(p)
    assert fitted.mean(axis=0) == pytest.approx(y.mean(axis=0), abs=1e-10)
    assert ((y - fitted) * _logit(p)).mean(axis=0) == pytest.approx(np.zeros(6), abs=1e-9)


def test_platt_separated_fold_uses_platts_targets_and_stays_finite():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.RandomState(1)
    p = np.r_[rng.rand(500) * 0.5, 0.5 + rng.rand(5) * 0.5][:, None]
    y = np.r_[np.zeros(500), np.ones(5)][:, None]
    maps = fit_recalibration(p, y, "platt")
    assert np.isfinite(maps.slope[0]) and not maps.fallback[0]
    out = maps.apply([[0.99], [0.1]])[:, 0]
    assert 0.5 < out[0] < 1 and 0 < out[1] < 0.05
    # exactly the unpenalized fit of Platt's targets (each row as y = 1 with weight t, y = 0 with 1 - t)
    x = _logit(p[:, 0])
    target = np.where(y[:, 0] > 0, 6 / 7, 1 / 502)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(
            np.r_[x, x][:, None], np.r_[np.ones(len(x)), np.zeros(len(x))], sample_weight=np.r_[target, 1 - target])
    assert maps.slope[0] == pytest.approx(ref.coef_[0, 0], rel=1e-7)
    assert maps.intercept[0] == pytest.approx(ref.intercept_[0], abs=1e-7)
    # a quasi-separated fold (one tie at the cut) is separated too; one overlapping pair is not
    tied = p.copy()
    tied[0, 0] = tied[500:, 0].min()
    assert np.isfinite(fit_recalibration(tied, y, "platt").slope[0])
    crossed = p.copy()
    crossed[0, 0] = 0.999
    slope, intercept = _irls(_logit(crossed[:, 0]), y[:, 0])
    assert fit_recalibration(crossed, y, "platt").slope[0] == pytest.approx(slope, rel=1e-8)


def test_platt_separated_backwards_maps_to_the_prevalence():
    p = np.r_[np.full(20, 0.9), np.full(80, 0.2)][:, None]
    y = np.r_[np.zeros(20), np.ones(80)][:, None]
    maps = fit_recalibration(p, y, "platt")
    assert maps.fallback_codes == ["0"]
    assert maps.apply([[0.5]])[0, 0] == pytest.approx(0.8)


def _tested_reference(p, y, level=0.05):
    """platt_tested by hand: per code, the likelihood-ratio statistic of the identity map against the
    independent IRLS Platt fit (or the prevalence where there is no fit), and the kept map (slope, intercept)."""
    out = []
    for k in range(p.shape[1]):
        x, labels = _logit(p[:, k]), y[:, k].astype(float)
        identity = 1 / (1 + np.exp(-x))
        if 0 < labels.sum() < len(labels):
            slope, intercept = _irls(x, labels)
            fitted = 1 / (1 + np.exp(-(slope * x + intercept)))
        else:
            slope = intercept = None
            fitted = np.full(len(x), labels.mean())
        with np.errstate(divide="ignore"):
            loglik = lambda g: np.where(labels > 0, np.log(g), np.log1p(-g)).sum()  # noqa: E731
            ratio = 2 * (loglik(fitted) - loglik(identity))
        out.append((ratio, (1.0, 0.0) if ratio < -2 * math.log(level) else (slope, intercept)))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_platt_tested_keeps_p_unless_the_likelihood_ratio_test_rejects_it(seed):
    rng = np.random.RandomState(seed)
    n, k = 400, 6
    logit_q = rng.uniform(-3, 0, k) + 1.5 * rng.randn(n, k)
    y = rng.rand(n, k) < 1 / (1 + np.exp(-logit_q))
    # codes 0-2 calibrated, 3 slightly shifted, 4 tempered, 5 strongly shifted
    distort = np.array([[1, 0], [1, 0], [1, 0], [1, 0.25], [0.4, 0], [1, 1.5]])
    p = 1 / (1 + np.exp(-(logit_q * distort[:, 0] + distort[:, 1])))
    maps = fit_recalibration(p, y, "platt_tested")
    platt = fit_recalibration(p, y, "platt")
    for code, (ratio, (slope, intercept)) in enumerate(_tested_reference(p, y)):
        assert abs(ratio - 5.991) > 1e-6  # clear of the cut, so the decision is not a float accident
        assert maps.slope[code] == pytest.approx(slope, rel=1e-8)
        assert maps.intercept[code] == pytest.approx(intercept, rel=1e-8, abs=1e-8)
        if slope != 1.0 or intercept != 0.0:
            assert (maps.slope[code], maps.intercept[code]) == (platt.slope[code], platt.intercept[code])
    assert maps.slope[4] == platt.slope[4] and maps.slope[5] == platt.slope[5]  # large distortions: rejected
    kept = maps.apply(p)[:, (maps.slope == 1) & (maps.intercept == 0)]
    assert np.array_equal(kept, p[:, (maps.slope == 1) & (maps.intercept == 0)])  # a kept code keeps its p exactly


def test_platt_tested_on_a_fallback_code_tests_the_prevalence():
    rng = np.random.RandomState(3)
    p = np.c_[np.full(300, 0.002), rng.rand(300) * 0.6 + 0.2, rng.rand(300)]
    y = np.c_[np.zeros(300, bool), np.zeros(300, bool), rng.rand(300) < p[:, 2]]
    maps = fit_recalibration(p, y, "platt_tested", codes=["rare", "absent", "C"])
    # "rare": no positive, expected 0.6 of one: p kept; "absent": p ~ 0.5, none in 300: the prevalence 0
    assert maps.fallback_codes == ["absent"]
    out = maps.apply(p[:3])
    assert out[:, 0] == pytest.approx(p[:3, 0]) and np.all(out[:, 1] == 0)
    assert Recalibration.from_dict(json.loads(json.dumps(maps.to_dict()))) == maps


def test_platt_tested_repairs_a_tempered_classifier_like_platt():
    p, y, _, _ = _stream(2, n=1000, k=6)  # temperature 4: every code rejected
    assert fit_recalibration(p, y, "platt_tested").to_dict()["maps"] == fit_recalibration(p, y, "platt").to_dict()["maps"]


def test_platt_hand_case_symmetric_fold_gives_the_identity_direction():
    # p and 1 - p mirrored, labels mirrored: the intercept is 0 by symmetry
    p = np.array([[0.2], [0.4], [0.6], [0.8]] * 25)
    y = np.array([[0], [1], [0], [1]] * 25)
    y[::4] = 0
    maps = fit_recalibration(np.r_[p, 1 - p], np.r_[y, 1 - y], "platt")
    assert maps.intercept[0] == pytest.approx(0, abs=1e-9)
    assert maps.slope[0] > 0
    assert maps.apply([[0.5]])[0, 0] == pytest.approx(0.5)


def _pav(p, y):
    """Literal pool-adjacent-violators on the distinct p (ties averaged): the fitted value at each distinct p."""
    xs = np.unique(p)
    blocks = [[float(y[p == x].sum()), float((p == x).sum()), [x]] for x in xs]
    i = 0
    while i < len(blocks) - 1:
        if blocks[i][0] / blocks[i][1] > blocks[i + 1][0] / blocks[i + 1][1]:
            a, b = blocks[i], blocks.pop(i + 1)
            blocks[i] = [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
            i = max(i - 1, 0)
        else:
            i += 1
    return {x: s / n for s, n, members in blocks for x in members}


def test_isotonic_hand_case_and_ties():
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.5] * 10)[:, None]
    y = np.array([0, 1, 0, 1, 0, 1] * 10)[:, None]
    maps = fit_recalibration(p, y, "isotonic")
    got = maps.apply(np.array([[0.1], [0.2], [0.3], [0.4], [0.5]]))[:, 0]
    # 0.2/0.3 pooled to 1/2; the tie at 0.5 is one point of weight 2 and value 1/2, pooled with 0.4: (1 + 1) / 3
    assert got.tolist() == pytest.approx([0.0, 0.5, 0.5, 2 / 3, 2 / 3])


@pytest.mark.parametrize("seed", range(5))
def test_isotonic_equals_a_literal_pav_at_the_fold_points(seed):
    rng = np.random.RandomState(seed)
    p = np.round(rng.rand(300, 3), 2)  # many ties
    y = rng.rand(300, 3) < p ** 2
    maps = fit_recalibration(p, y, "isotonic")
    for k in range(3):
        ref = _pav(p[:, k], y[:, k])
        xs = np.array(sorted(ref))
        assert maps.apply(np.repeat(xs[:, None], 3, axis=1))[:, k] == pytest.approx([ref[x] for x in xs], abs=1e-12)
    # non-decreasing between and beyond the knots
    grid = np.repeat(np.linspace(0, 1, 501)[:, None], 3, axis=1)
    assert np.all(np.diff(maps.apply(grid), axis=0) >= 0)


def test_fallback_codes_map_to_the_fold_prevalence():
    rng = np.random.RandomState(2)
    p = rng.rand(200, 4)
    y = rng.rand(200, 4) < p
    y[:, 1] = False  # never occurs
    y[:, 2] = True  # always occurs
    y[:, 3] = rng.rand(200) < 1 - p[:, 3]  # the classifier is backwards: negative slope
    for method in ("platt", "isotonic"):
        maps = fit_recalibration(p, y, method, codes=["A", "B", "C", "D"])
        out = maps.apply(rng.rand(20, 4))
        assert np.all(out[:, 1] == 0) and np.all(out[:, 2] == 1)
        expected = ["B", "C", "D"] if method == "platt" else ["B", "C"]
        assert maps.fallback_codes == expected
    assert np.all(fit_recalibration(p, y, "platt").apply(rng.rand(5, 4))[:, 3] == pytest.approx(y[:, 3].mean()))


@pytest.mark.parametrize("method", ["platt", "isotonic", "platt_tested"])
def test_serialization_round_trip_through_json(method):
    p, y, _, _ = _stream(3, n=400)
    y[:, 0] = False
    maps = fit_recalibration(p, y, method, codes=[f"C{k}" for k in range(6)])
    again = Recalibration.from_dict(json.loads(json.dumps(maps.to_dict())))
    assert again == maps
    new = _stream(4, n=300)[0]
    assert np.array_equal(again.apply(new), maps.apply(new))
    assert again.fallback_codes == ["C0"]


def test_from_dict_refuses_bad_maps_naming_the_entry():
    maps = fit_recalibration(*_stream(5, n=300)[:2], "isotonic").to_dict()
    bad = json.loads(json.dumps(maps))
    bad["maps"][2]["y"] = list(reversed(bad["maps"][2]["y"]))
    with pytest.raises(ValueError, match=r"recalibration_maps.maps\[2\]: x and y must be non-decreasing"):
        Recalibration.from_dict(bad)
    platt = fit_recalibration(*_stream(5, n=300)[:2], "platt").to_dict()
    platt["maps"][0]["slope"] = -1.0
    with pytest.raises(ValueError, match=r"maps\[0\].slope: must be >= 0"):
        Recalibration.from_dict(platt)
    platt["maps"][0]["slope"] = float("nan")
    with pytest.raises(ValueError, match="finite"):
        Recalibration.from_dict(platt)
    with pytest.raises(ValueError, match="6 maps for 2 codes"):
        Recalibration.from_dict(maps, codes=["a", "b"])


# ---------------------------------------------------------------------- bad input
def test_bad_fold_sizes_name_the_setting():
    p, y, v, c = _stream(6, n=300)
    with pytest.raises(ValueError, match="recalibrate: R = 49 .* at least 50"):
        replay(p, y, v, c, [1.0], recalibrate=49)
    with pytest.raises(ValueError, match=r"recalibrate: R = 250 .*\(300 - 100 = 200\)"):
        replay(p, y, v, c, [1.0], recalibrate=250, burn_in=100)
    with pytest.raises(ValueError, match="window >= recalibrate"):
        replay(p, y, v, c, [1.0], recalibrate=100, window=80)
    with pytest.raises(ValueError, match="window >= recalibrate"):
        FavMac(v, c, 1.0, recalibrate=100, window=80)
    with pytest.raises(ValueError, match="recalibration: expected one of platt, isotonic"):
        replay(p, y, v, c, [1.0], recalibrate=100, recalibration="beta")
    with pytest.raises(ValueError, match="whole number"):
        check_recalibrate(100.5)
    with pytest.raises(SettingsError, match="recalibrate R = 10 .* at least 50"):
        RunSpec(recalibrate=10).validate(3, 500)
    with pytest.raises(SettingsError, match="leave no patient to predict"):
        RunSpec(recalibrate=400, burn_in=100).validate(3, 500)
    with pytest.raises(SettingsError, match="window must hold at least R"):
        RunSpec(recalibrate=100, window=50).validate(3, 500)
    with pytest.raises(SettingsError, match="recalibration expected one of platt, isotonic, .*; got .beta."):
        RunSpec(recalibrate=100, recalibration="beta").validate(3, 500)


def test_predict_before_the_fold_is_complete_raises():
    p, y, v, c = _stream(7, n=200)
    fm = FavMac(v, c, 1.0, recalibrate=100)
    fm.update(p[:60], y[:60])
    assert fm.n_fold == 60 and fm.recalibration_maps is None and fm.n_calibration == 0
    with pytest.raises(ValueError, match="60 given so far"):
        fm.predict(p[100])
    fm.update(p[60:130], y[60:130])  # the batch crosses the end of the fold
    assert fm.n_fold == 100 and fm.n_calibration == 30
    assert fm.recalibration_maps == fit_recalibration(p[:100], y[:100])
    assert fm.predict(p[150]).shape == (6,)


# ---------------------------------------------------------------------- the split
@pytest.mark.parametrize("method", ["platt", "isotonic", "platt_tested"])
def test_maps_are_fitted_on_the_fold_only(method):
    p, y, v, c = _stream(8, n=500)
    first = replay(p, y, v, c, [1.0], recalibrate=150, recalibration=method, burn_in=20, score="price")
    y2 = y.copy()
    y2[150:] = ~y2[150:]  # every later label changes
    second = replay(p, y2, v, c, [1.0], recalibrate=150, recalibration=method, burn_in=20, score="price")
    assert first.settings["recalibration_maps"] == second.settings["recalibration_maps"]
    fm = FavMac(v, c, 1.0, recalibrate=150, recalibration=method).update(p, y2)
    assert fm.recalibration_maps == recalibration_of(first)
    assert recalibration_of(first) == fit_recalibration(p[:150], y[:150], method)


def test_the_fold_never_joins_calibration():
    p, y, v, c = _stream(9, n=500)
    res = replay(p, y, v, c, [0.8, 1.5], recalibrate=120, burn_in=30, score="price", patient_ids=np.arange(500))
    maps = recalibration_of(res)
    plain = replay(maps.apply(p[120:]), y[120:], v, c, [0.8, 1.5], burn_in=30, score="price")
    assert np.array_equal(res.thresholds, plain.thresholds)
    assert np.array_equal(res.final_thresholds, plain.final_thresholds)
    assert np.array_equal(res.selected, plain.selected)
    assert res.burn_in == 150 and res.n_steps == 350 and res.patient_ids[0] == 150
    fm = FavMac(v, c, 0.8, recalibrate=120, score="price").update(p, y)
    assert fm.n_calibration == 380 and fm.threshold == res.final_thresholds[0]
    assert res.settings["recalibrate"] == 120 and res.settings["recalibration"] == "platt_tested"  # the default map


@pytest.mark.parametrize("method", ["platt", "isotonic", "platt_tested"])
@pytest.mark.parametrize("delta", [None, 0.2])
@pytest.mark.parametrize("score", ["cost", "price"])
def test_replay_equals_the_favmac_loop(method, delta, score):
    p, y, v, c = _stream(10, n=400)
    res = replay(p, y, v, c, [0.6, 1.4], delta=delta, recalibrate=100, recalibration=method, burn_in=25, score=score)
    for t, target in enumerate([0.6, 1.4]):
        fm = FavMac(v, c, target, delta=delta, recalibrate=100, recalibration=method, score=score)
        fm.update(p[:125], y[:125])
        for n in range(125, 400):
            assert fm.threshold == res.thresholds[t, n - 125]
            assert np.array_equal(fm.predict(p[n]), res.selected[t, n - 125])
            fm.update(p[n], y[n])
        assert fm.threshold == res.final_thresholds[t]


def test_replay_equals_the_loop_with_segments_and_adaptive_target():
    p, y, v, c = _stream(11, n=400)
    groups = np.where(np.arange(400) % 3 == 0, "a", "b")
    res = replay(p, y, v, c, [1.0], recalibrate=100, burn_in=40, score="price", groups=groups, adaptive_rate=0.05)
    fm = FavMac(v, c, 1.0, recalibrate=100, score="price", adaptive_rate=0.05)
    fm.update(p[:140], y[:140], group=groups[:140], adapt=False)
    for n in range(140, 400):
        assert fm.threshold_for(groups[n]) == res.thresholds[0, n - 140]
        assert np.array_equal(fm.predict(p[n], group=groups[n]), res.selected[0, n - 140])
        fm.update(p[n], y[n], group=groups[n])
    assert res.group_sizes == {"a": 100, "b": 200}  # rows 100..399 only: the fold is no segment's calibration


@pytest.mark.parametrize("method", ["platt", "isotonic", "platt_tested"])
def test_guarantees_hold_over_many_orderings(method):
    """Exchangeable stream, recalibration on: mean cost <= c and violation rate <= delta over 150 orderings."""
    p, y, v, c = _stream(12, n=2000, k=8)
    target, delta, orderings = 1.0, 0.1, 150
    costs, violations = [], []
    for seed in range(orderings):
        order = np.random.RandomState(seed).permutation(2000)[:400]
        exp = replay(p[order], y[order], v, c, [target], recalibrate=100, recalibration=method, burn_in=99,
                     score="price")
        costs.append(exp.cost[0, -1])  # one patient per ordering: exchangeable exactly
        vio = replay(p[order], y[order], v, c, [target], delta=delta, recalibrate=100, recalibration=method,
                     burn_in=99, score="cost")
        violations.append(vio.violations[0, -1])
    costs, violations = np.array(costs), np.array(violations)
    # whole-stream means are tighter; the per-ordering last patient is the exact statement
    assert costs.mean() <= target + 3 * costs.std() / math.sqrt(orderings)
    assert violations.mean() <= delta + 3 * math.sqrt(delta * (1 - delta) / orderings)


def test_guarantee_on_the_whole_stream_mean():
    p, y, v, c = _stream(13, n=3000, k=8)
    means = []
    for seed in range(40):
        order = np.random.RandomState(seed).permutation(3000)
        res = replay(p[order], y[order], v, c, [0.5, 1.5], recalibrate=500, burn_in=200, score="price")
        means.append(res.cost.mean(axis=1) - res.targets)
    means = np.array(means)
    assert np.all(means.mean(axis=0) <= 3 * means.std(axis=0) / math.sqrt(len(means)))


# ---------------------------------------------------------------------- new patients, export, settings
def test_new_patients_use_the_stored_maps(tmp_path):
    p, y, v, c = _stream(14, n=500)
    res = replay(p, y, v, c, [1.0], recalibrate=100, burn_in=400, score="price")
    assert res.n_steps == 0
    new = pd.DataFrame(_stream(15, n=50)[0], columns=[f"C{k}" for k in range(6)],
                       index=[f"N{i}" for i in range(50)])
    frame = new_patient_sets(new, res, v, c)
    maps = res.settings["recalibration_maps"]
    expected = predict_with_threshold(new.to_numpy(), v, c, res.final_thresholds[0], score="price", recalibration=maps)
    assert frame["n_codes"].tolist() == expected.sum(axis=1).tolist()
    raw = predict_with_threshold(new.to_numpy(), v, c, res.final_thresholds[0], score="price")
    assert not np.array_equal(raw, expected)  # the maps matter on under-confident data
    mapped = recalibration_of(res).apply(new.to_numpy())
    assert frame["expected_value"].to_numpy() == pytest.approx((expected * mapped * v.weights_for(6)).sum(axis=1))


def test_stream_export_uses_the_maps():
    p, y, v, c = _stream(16, n=400)
    res = replay(p, y, v, c, [1.0], recalibrate=100, burn_in=50, score="price")
    frame = stream_sets(res, p, y, v, c)
    mapped = recalibration_of(res).apply(p[150:])
    assert len(frame) == 250
    assert frame["cost_proxy"].to_numpy() == pytest.approx(((1 - mapped) * res.selected[0]).sum(axis=1))


def test_settings_file_and_provenance_carry_the_maps():
    p, y, v, c = _stream(17, n=400)
    spec = RunSpec(targets=(1.0,), recalibrate=100, recalibration="isotonic").validate(6, 400)
    res = replay(p, y, *spec.build(), list(spec.targets), recalibrate=spec.recalibrate,
                 recalibration=spec.recalibration, codes=[f"C{k}" for k in range(6)])
    raw = spec.to_json([f"C{k}" for k in range(6)], extras={"recalibration_maps": res.settings["recalibration_maps"]})
    loaded = read_settings_json(raw, codes=[f"C{k}" for k in range(6)])
    assert loaded.spec.recalibrate == 100 and loaded.spec.recalibration == "isotonic" and not loaded.notes
    assert Recalibration.from_dict(loaded.extras["recalibration_maps"], codes=[f"C{k}" for k in range(6)]) == \
        recalibration_of(res)
    doc = provenance(spec, recalibration=recalibration_of(res))
    assert doc["settings"]["run"]["recalibrate"] == 100
    assert doc["settings"]["recalibration_maps"] == res.settings["recalibration_maps"]


def test_cli_replay_and_predict_with_recalibration(tmp_path):
    from favmac.cli import main

    p, y, _, _ = _stream(18, n=300, k=3)
    wide = pd.DataFrame({"patient_id": [f"P{i}" for i in range(300)]})
    for k in range(3):
        wide[f"prob_C{k}"], wide[f"label_C{k}"] = p[:, k], y[:, k].astype(int)
    wide.to_csv(tmp_path / "cal.csv", index=False)
    new = pd.DataFrame({"patient_id": ["N1", "N2"], "C0": [0.6, 0.4], "C1": [0.5, 0.5], "C2": [0.3, 0.7]})
    new.to_csv(tmp_path / "new.csv", index=False)
    out = tmp_path / "sets.csv"
    assert main(["predict", "--calibration", str(tmp_path / "cal.csv"), "--new", str(tmp_path / "new.csv"),
                 "--target", "0.5", "--recalibrate", "100", "--out", str(out)]) == 0
    record = json.loads((tmp_path / "sets.csv.provenance.json").read_text())
    assert record["settings"]["run"]["recalibrate"] == 100
    assert [m["code"] for m in record["settings"]["recalibration_maps"]["maps"]] == ["C0", "C1", "C2"]
    assert main(["replay", "--calibration", str(tmp_path / "cal.csv"), "--targets", "0.5", "--recalibrate", "100",
                 "--recalibration", "isotonic", "--burn-in", "20", "--out", str(tmp_path / "r.csv")]) == 0
    assert pd.read_csv(tmp_path / "r.csv")["position"].min() == 120
    assert main(["replay", "--calibration", str(tmp_path / "cal.csv"), "--targets", "0.5", "--recalibrate", "30",
                 "--out", str(tmp_path / "r.csv")]) == 2
    assert main(["calibrate", "--data", str(tmp_path / "cal.csv"), "--targets", "0.5", "--recalibrate", "30",
                 "--scheduler", "synchronous"]) == 2


def test_cli_predict_with_platt_tested_stores_maps_that_reload(tmp_path):
    from favmac.cli import main

    p, y, _, _ = _stream(19, n=400, k=3)
    p[:, 0] = 1 / (1 + np.exp(-_logit(p[:, 0]) * 4))  # code C0 calibrated again
    wide = pd.DataFrame({"patient_id": [f"P{i}" for i in range(400)]})
    for k in range(3):
        wide[f"prob_C{k}"], wide[f"label_C{k}"] = p[:, k], y[:, k].astype(int)
    wide.to_csv(tmp_path / "cal.csv", index=False)
    pd.DataFrame({"patient_id": ["N1"], "C0": [0.6], "C1": [0.5], "C2": [0.3]}).to_csv(tmp_path / "new.csv", index=False)
    assert main(["predict", "--calibration", str(tmp_path / "cal.csv"), "--new", str(tmp_path / "new.csv"),
                 "--target", "0.5", "--recalibrate", "200", "--recalibration", "platt_tested",
                 "--out", str(tmp_path / "sets.csv")]) == 0
    record = json.loads((tmp_path / "sets.csv.provenance.json").read_text())
    stored = Recalibration.from_dict(record["settings"]["recalibration_maps"])
    assert stored == fit_recalibration(p[:200], y[:200], "platt_tested", codes=["C0", "C1", "C2"])
    assert stored.method == "platt_tested" and (stored.slope[0], stored.intercept[0]) == (1.0, 0.0)  # C0 kept
    assert stored.slope[1] != 1.0 and stored.slope[2] != 1.0  # C1, C2 (temperature 4) rejected


# ---------------------------------------------------------------------- figures for the Data page
def test_calibration_error_and_reliability():
    p, y, _, _ = _stream(19, n=3000, k=3, temperature=4.0)
    before = calibration_error(p[1000:], y[1000:], codes=["A", "B", "C"])
    maps = fit_recalibration(p[:1000], y[:1000])
    after = calibration_error(maps.apply(p[1000:]), y[1000:], codes=["A", "B", "C"])
    assert before["n"].tolist() == [2000] * 3 and before["positives"].tolist() == y[1000:].sum(axis=0).tolist()
    assert np.all(after["ece"] < before["ece"] / 2)
    curve = reliability(p, y, codes=["A", "B", "C"], groups=np.arange(3000) % 2)
    assert set(curve["segment"]) == {"0", "1"}
    assert curve.groupby(["segment", "code"])["n"].sum().tolist() == [1500] * 6
    one = curve[(curve["segment"] == "0") & (curve["code"] == "A")]
    rows = np.arange(0, 3000, 2)
    index = np.minimum((p[rows, 0] * 10).astype(int), 9)
    for _, row in one.iterrows():
        assert row["rate"] == pytest.approx(y[rows, 0][index == row["bin"]].mean())


def test_recalibration_report_is_out_of_fold():
    p, y, _, _ = _stream(20, n=1500, k=3)
    y[:500, 2] = False  # never in the fold
    maps, table = recalibration_report(p, y, 500, codes=["A", "B", "C"])
    assert maps == fit_recalibration(p[:500], y[:500], codes=["A", "B", "C"])
    assert table["n"].tolist() == [1000] * 3 and table["fold_positives"].tolist()[2] == 0
    assert table["fallback"].tolist() == [False, False, True]
    assert table["ece_after"].tolist() == pytest.approx(
        calibration_error(maps.apply(p[500:]), y[500:])["ece"].tolist())
    assert table["ece_after"][0] < table["ece_before"][0]


def test_favmac_with_fitted_maps_applies_them_from_the_start():
    p, y, v, c = _stream(21, n=400)
    maps = fit_recalibration(p[:100], y[:100])
    fm = FavMac(v, c, 1.0, recalibration=maps, score="price").update(p[100:300], y[100:300])
    plain = FavMac(v, c, 1.0, score="price").update(maps.apply(p[100:300]), y[100:300])
    assert fm.n_fold == 0 and fm.threshold == plain.threshold
    assert np.array_equal(fm.predict(p[300:]), plain.predict(maps.apply(p[300:])))
    with pytest.raises(ValueError, match="leave recalibrate=None"):
        FavMac(v, c, 1.0, recalibration=maps, recalibrate=100)


# ---------------------------------------------------------------------- the distributed engine
@pytest.mark.parametrize("kind", ["dask_frame", "parquet_files"])
@pytest.mark.parametrize("delta", [None, 0.2])
def test_distributed_calibrate_equals_favmac_with_the_fold(tmp_path, kind, delta):
    dd = pytest.importorskip("dask.dataframe")
    from favmac.distributed import calibrate

    p, y, v, c = _stream(22, n=700, k=4)
    frame = pd.DataFrame({"patient_id": [f"P{i}" for i in range(700)]})
    for k in range(4):
        frame[f"prob_C{k}"], frame[f"label_C{k}"] = p[:, k], y[:, k].astype(int)
    if kind == "dask_frame":
        source = dd.from_pandas(frame, npartitions=4)  # 175 rows each: the fold ends inside the second
    else:
        for i in range(3):  # sorted by name: the fold ends inside part1
            frame.iloc[i * 250:(i + 1) * 250].to_parquet(tmp_path / f"part{i}.parquet")
        source = str(tmp_path / "*.parquet")
    for method in ("platt", "isotonic"):
        got, details = calibrate(source, v, c, [0.8, 1.5], delta=delta, score="price", recalibrate=300,
                                 recalibration=method, return_details=True, scheduler="synchronous")
        want = [FavMac(v, c, t, delta=delta, score="price", recalibrate=300, recalibration=method).update(p, y).threshold
                for t in (0.8, 1.5)]
        assert got.tolist() == want
        assert details["n_patients"] == 400
        assert Recalibration.from_dict(details["recalibration_maps"]) == fit_recalibration(
            p[:300], y[:300], method, codes=[f"C{k}" for k in range(4)])
    with pytest.raises(ValueError, match=r"recalibrate: R = 800 .*\(700 - 0 = 700\)"):
        calibrate(source, v, c, [1.0], recalibrate=800, scheduler="synchronous")


def test_cli_calibrate_and_predict_on_dask_carry_the_maps(tmp_path):
    pytest.importorskip("dask.dataframe")
    from favmac.cli import main

    p, y, _, _ = _stream(23, n=400, k=3)
    wide = pd.DataFrame({"patient_id": [f"P{i}" for i in range(400)]})
    for k in range(3):
        wide[f"prob_C{k}"], wide[f"label_C{k}"] = p[:, k], y[:, k].astype(int)
    (tmp_path / "cal").mkdir()
    wide.to_parquet(tmp_path / "cal" / "a.parquet")
    new = pd.DataFrame({"patient_id": [f"N{i}" for i in range(30)]})
    new_p = _stream(24, n=30, k=3)[0]
    for k in range(3):
        new[f"C{k}"] = new_p[:, k]
    new.to_parquet(tmp_path / "new.parquet")
    settings = tmp_path / "settings.json"
    assert main(["calibrate", "--data", str(tmp_path / "cal"), "--targets", "0.5", "--recalibrate", "100",
                 "--scheduler", "synchronous", "--settings-out", str(settings)]) == 0
    doc = json.loads(settings.read_text())
    assert doc["settings"]["recalibrate"] == 100 and doc["settings"]["recalibration_maps"]["n_fold"] == 100
    assert main(["predict", "--engine", "dask", "--settings", str(settings), "--target", "0.5",
                 "--new", str(tmp_path / "new.parquet"), "--scheduler", "synchronous", "--out", str(tmp_path / "out")]) == 0
    written = pd.read_parquet(tmp_path / "out").sort_values("patient_id")
    fm = FavMac(AdditiveValue(), AdditiveCost(), 0.5, score="price", recalibrate=100).update(p, y)  # --value tp
    want = fm.predict(new_p[np.argsort([f"N{i}" for i in range(30)])]).sum(axis=1)
    assert written["n_codes"].tolist() == want.tolist()
