"""The unsupported payment (docs/method.md "CMS-HCC payment value") as the calibrated cost: favmac.costs.

Thresholds against the literal oracle (tests/oracle.py, with the cost computed by hccinfhir's
own pipeline), replay against a FavMac loop, the guarantees over many orderings, exact integer
costs with payment adjustments and dollars, C_max, and the refusals.
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import pytest

from favmac import AdditiveCost, CmsHccCost, CmsHccValue, FavMac, bind_rows, predict_with_threshold, replay
from favmac.costs import SetCosts, exact_costs
from tests import oracle
from tests.test_cms_payment import _demographics, hccinfhir_raf

# HCC221 removes 222 and 223 with a lower coefficient (the tables are not monotone there),
# 37/38 a diabetes family, 226 heart failure (DIABETES_HF_V28), 280 lung (HF_CHR_LUNG_V28)
HCCS = ["37", "38", "221", "222", "226", "280"]
CODES = [f"HCC{h}" for h in HCCS]


def _cohort(seed, n, cell="CNA", known_rate=0.15, grid=4):
    rng = np.random.RandomState(seed)
    probs = rng.randint(0, grid + 1, size=(n, len(CODES))) / grid  # coarse: ties, p = 0 and p = 1
    labels = rng.rand(n, len(CODES)) < probs
    known = rng.rand(n, len(CODES)) < known_rate
    return probs, labels, known


def _cost_fn(known_row, cell):
    """C(S; y) by hccinfhir's pipeline: RAF(B ∪ (S \\ y)) - RAF(B), as the exact 3-decimal Fraction."""
    demo = _demographics(cell)
    base = {HCCS[k] for k in np.flatnonzero(known_row)}

    @functools.lru_cache(maxsize=None)
    def cost_fn(S, y):
        false = {HCCS[k] for k in S if not y[k]}
        raf = hccinfhir_raf(base | false, demo, "V28", 2026) - hccinfhir_raf(base, demo, "V28", 2026)
        return Fraction(round(raf * 1000), 1000)
    return cost_fn


def _value_fn(value):
    @functools.lru_cache(maxsize=None)
    def value_fn(S, y):
        mask = np.zeros(len(CODES), dtype=bool)
        mask[list(S)] = True
        return float(value(mask, np.array(y)))
    return value_fn


def _same(got, want):
    if math.isinf(want):
        return got == want
    return got == pytest.approx(want, rel=1e-12, abs=1e-15)  # a key's last bits follow its summation order


@pytest.mark.parametrize("score,delta,universe", [("price", None, "ratio"), ("cost", None, "ratio"),
                                                  ("cost", 0.2, "ratio"), ("price", 0.2, "ratio"),
                                                  ("cost", None, "prob"), ("cost", None, "full")])
def test_thresholds_equal_the_oracle(score, delta, universe):
    """One member context per patient (the oracle's cost_fn is per patient): a shared cell, no known codes
    in the FavMac loop's calibration, several targets (one at 0: -inf edges; one at C_max: +inf)."""
    probs, labels, _ = _cohort(3 + (delta is not None) + 2 * (score == "price"), 8)
    value = CmsHccValue(CODES, segment="CND")
    cost = CmsHccCost(value)
    cost_fn, value_fn = _cost_fn(np.zeros(len(CODES), bool), "CND"), _value_fn(value)
    c_max = 3.5
    for target in (0.0001, 0.3, 3.5):
        fm = FavMac(value, cost, target, delta=delta, universe=universe, score=score, c_max=c_max, n_codes=len(CODES))
        for n in range(len(probs) + 1):
            if n in (0, 4, 8):
                cal = [(probs[i], tuple(labels[i])) for i in range(n)]
                if delta is None:
                    want = oracle.expected_threshold(cal, None, None, target, universe, c_max=c_max, score=score,
                                                     value_fn=value_fn, cost_fn=cost_fn)
                else:
                    want = oracle.violation_threshold(cal, None, None, target, delta, universe, score=score,
                                                      value_fn=value_fn, cost_fn=cost_fn)
                assert _same(fm.threshold, want), (n, target, fm.threshold, want)
                if n < len(probs):  # each side with its own threshold (a key's last bits are its own)
                    chosen = fm.predict(probs[n])
                    expect = oracle.predict(probs[n], None, None, want, universe, score=score, value_fn=value_fn,
                                            cost_fn=cost_fn)
                    assert sorted(np.flatnonzero(chosen).tolist()) == sorted(expect)
            if n < len(probs):
                fm.update(probs[n], labels[n])


def test_realized_costs_are_exact_integers_with_adjustments_and_dollars():
    probs, labels, known = _cohort(5, 30)
    value = CmsHccValue(CODES, known=known, normalization=1.045, coding_intensity=0.059, base_rate=11_000)
    cost = CmsHccCost(value)
    costs = exact_costs(cost, len(CODES))
    assert isinstance(costs, SetCosts)
    unit = Fraction(941, 1000) / Fraction(1045, 1000) * 11_000 / 1000  # dollars per raw integer
    assert cost.unit == unit and costs.scale == unit.denominator and costs.scale % 19 == 0  # not a power of ten
    sets = np.random.RandomState(1).rand(30, len(CODES)) < 0.5
    exact_ints = costs.set_costs(sets, labels)
    for i in range(30):
        hits = {HCCS[k] for k in np.flatnonzero(sets[i] & ~labels[i])}
        base = {HCCS[k] for k in np.flatnonzero(known[i])}
        demo = _demographics("CNA")
        raw = Fraction(round((hccinfhir_raf(base | hits, demo, "V28", 2026) - hccinfhir_raf(base, demo, "V28", 2026)) * 1000))
        assert Fraction(int(exact_ints[i]), costs.scale) == raw * unit
        assert float(cost.take(i)(sets[i], labels[i])) == pytest.approx(float(raw * unit), rel=1e-12)
    # a target in dollars is compared exactly: C > c iff the integer exceeds floor(c * scale)
    assert costs.bound(raw * unit) == int(exact_ints[-1]) and costs.bound(raw * unit - Fraction(1, 10**9)) < int(exact_ints[-1])
    assert costs.bound(150.25) == 150.25 * costs.scale // 1


def test_c_max_bounds_every_cost_of_every_member():
    """raw_max() >= C(S; y) for every S, y and known codes of the cells held (brute force over all sets)."""
    value = CmsHccValue(CODES, cells=["CNA", "INS", "CPD"])
    cost = CmsHccCost(value)
    top = cost.raw_max()
    subsets = ((np.arange(2 ** len(CODES))[:, None] >> np.arange(len(CODES))) & 1).astype(bool)
    largest = 0
    for row in range(3):
        one = CmsHccValue(CODES, segment=["CNA", "INS", "CPD"][row])
        raf = np.rint(one.raf(subsets) * 1000).astype(int)
        largest = max(largest, int(raf.max() - raf.min()))
    assert top >= largest and top <= 2 * largest
    assert float(SetCosts(cost).c_max) == top / 1000
    assert float(SetCosts(cost, c_max=2.5).c_max) == 2.5


@pytest.mark.parametrize("score,delta", [("price", None), ("cost", None), ("cost", 0.2)])
def test_replay_equals_a_favmac_loop_with_member_context(score, delta):
    probs, labels, known = _cohort(11, 70)
    cells = np.random.RandomState(2).choice(["CNA", "CFA", "INS"], len(probs))
    value = CmsHccValue(CODES, cells=cells, known=known, base_rate=1000)
    cost = CmsHccCost(value)
    targets = [20.0, 150.5]
    res = replay(probs, labels, value, cost, targets, burn_in=15, score=score, delta=delta)
    assert res.settings["c_max"] == float(exact_costs(cost, len(CODES)).c_max)
    for t, target in enumerate(targets):
        fm = FavMac(value, cost, target, delta=delta, score=score)
        fm.update(probs[:15], labels[:15], value=bind_rows(value, slice(0, 15)))
        for n in range(15, len(probs)):
            assert fm.threshold == res.thresholds[t, n - 15]
            chosen = fm.predict(probs[n], value=value.take(n))
            np.testing.assert_array_equal(chosen, res.chosen.masks(t)[n - 15])
            assert res.cost[t, n - 15] == pytest.approx(float(cost.take(n)(chosen, labels[n])), rel=1e-12)
            assert res.exceeds[t, n - 15] == (res.cost[t, n - 15] > target)
            fm.update(probs[n], labels[n], value=value.take(n))
        final = predict_with_threshold(probs[:5], value.take(slice(0, 5)), cost.take(slice(0, 5)),
                                       res.final_thresholds[t], score=score, delta=delta)
        np.testing.assert_array_equal(final, fm.predict(probs[:5], value=value.take(slice(0, 5))))


def test_segments_windows_and_adaptive_target_equal_the_loop():
    probs, labels, known = _cohort(13, 60)
    value = CmsHccValue(CODES, known=known, normalization=1.045)  # scale 209 x 10^k: the adaptive rule's lcm
    cost = CmsHccCost(value)
    groups = np.array(["a", "b"])[np.arange(len(probs)) % 2]
    seg = replay(probs, labels, value, cost, [0.3], burn_in=10, groups=groups, window=20)
    ada = replay(probs, labels, value, cost, [0.3], burn_in=10, adaptive_rate=0.05)
    fms = {g: FavMac(value, cost, 0.3, window=20) for g in "ab"}
    fm = FavMac(value, cost, 0.3, adaptive_rate=0.05)
    for n in range(len(probs)):
        one = value.take(n)
        if n >= 10:
            assert fms[groups[n]].threshold == seg.thresholds[0, n - 10]
            assert fm.threshold == ada.thresholds[0, n - 10]
            assert float(fm.current_target) == ada.adaptive_targets[0, n - 10]
        fms[groups[n]].update(probs[n], labels[n], value=one)
        fm.update(probs[n], labels[n], value=one, adapt=n >= 10)


def test_guarantees_over_many_orderings():
    """E[C] <= c (expected control) and P(C > c) <= delta (violation control), over 40 orderings."""
    probs, labels, known = _cohort(17, 160, known_rate=0.1, grid=10)
    value = CmsHccValue(CODES, known=known)
    cost = CmsHccCost(value)
    target, delta = 0.08, 0.2
    means, rates = [], []
    for seed in range(40):
        perm = np.random.RandomState(seed).permutation(len(probs))
        v = value.take(perm)
        c = cost.take(perm)
        expected = replay(probs[perm], labels[perm], v, c, [target], burn_in=100)
        violation = replay(probs[perm], labels[perm], v, c, [target], burn_in=100, delta=delta)
        means.append(expected.cost[0, 0])  # the first predicted patient: exchangeable with the calibration
        rates.append(violation.exceeds[0, 0])
        means.extend(expected.cost[0, 1:5])
        rates.extend(violation.exceeds[0, 1:5])
    assert np.mean(means) <= target + 2 * np.std(means) / math.sqrt(len(means))
    assert np.mean(rates) <= delta + 2 * math.sqrt(delta * (1 - delta) / len(rates))
    assert np.mean(means) > 0  # the cost is spent, not avoided


def test_baselines_and_distributed_refuse_it_by_name():
    from favmac import classwise, crc

    probs, labels, known = _cohort(19, 40)
    value = CmsHccValue(CODES, known=known)
    for method in (classwise, crc):
        with pytest.raises(ValueError, match="baselines need an additive cost.*CmsHccCost"):
            method(probs, labels, value, CmsHccCost(value), [0.5], burn_in=10)
    with pytest.raises(TypeError, match="built from a CmsHccValue"):
        CmsHccCost(AdditiveCost())


def test_runspec_round_trip_build_and_refusals():
    from favmac.runspec import RunSpec, SettingsError

    codes = ["HCC37", "HCC226", "HCC280"]
    spec = RunSpec(value_kind="cms_payment", cost_kind="cms_unsupported", targets=(250.0,), base_rate=11000,
                   normalization=1.045).validate(3, 10)
    again = RunSpec.from_json(spec.to_json(codes), codes=codes)
    assert again == spec and again.to_dict()["cost_kind"] == "cms_unsupported"
    members = {"cells": np.array(["CNA", "INS"]), "known": None}
    value, cost = again.build(codes, members)
    assert isinstance(cost, CmsHccCost) and cost.value is value and cost.units == "dollars"
    assert again.c_max(3, codes, members) == float(exact_costs(cost, 3).c_max)
    with pytest.raises(SettingsError, match="cost_kind cms_unsupported .* choose value_kind cms_payment"):
        RunSpec(value_kind="weighted_tp", cost_kind="cms_unsupported", weights=(1.0, 1.0, 1.0)).validate(3, 10)
    with pytest.raises(SettingsError, match="needs the data's codes"):
        spec.c_max(3)


def test_cli_replay_and_predict_with_the_unsupported_payment(tmp_path, capsys):
    """On the sample's first 80 members (their cells and known codes), in dollars."""
    import json
    from pathlib import Path

    import pandas as pd

    from favmac.cli import main
    from favmac.io import load_calibration

    sample = Path(__file__).parents[1] / "sample_data" / "hcc_calibration.csv"
    path = tmp_path / "cohort.csv"
    pd.read_csv(sample, dtype=str, keep_default_na=False).head(80).to_csv(path, index=False)
    data = load_calibration(path)
    cost = CmsHccCost(CmsHccValue(data.codes, cells=data.members["cells"], known=data.members["known"], base_rate=10_000))
    steps = tmp_path / "steps.csv"
    assert main(["replay", "--calibration", str(path), "--value", "cms-payment", "--cost", "unsupported-payment",
                 "--targets", "2500", "--burn-in", "20", "--base-rate", "10000", "--out", str(steps)]) == 0
    c_max = float(exact_costs(cost, data.n_codes).c_max)
    assert (f"FavMac (price): 80 patients x {data.n_codes} codes, burn-in 20, 60 predicted per target "
            f"(expected cost; C_max {c_max:g})") in capsys.readouterr().out
    record = json.loads((tmp_path / "steps.csv.provenance.json").read_text())["settings"]["run"]
    assert (record["cost_kind"], record["value_kind"], record["base_rate"]) == ("cms_unsupported", "cms_payment", 10000)
    new = tmp_path / "new.csv"
    new.write_text("patient_id,cms_cell,known_codes," + ",".join(data.codes) + "\n"
                   + "N1,CNA,," + ",".join(["0.5"] * data.n_codes) + "\n")
    sets = tmp_path / "sets.csv"
    assert main(["predict", "--calibration", str(path), "--value", "cms-payment", "--cost", "unsupported-payment",
                 "--target-percent", "5", "--new", str(new), "--out", str(sets)]) == 0
    assert "Wrote 1 patients" in capsys.readouterr().out
    assert sets.read_text().splitlines()[1].endswith(",RAF")  # the cost_units column
    assert main(["replay", "--calibration", str(path), "--cost", "unsupported-payment", "--targets", "0.3",
                 "--out", str(steps)]) == 2
    err = capsys.readouterr().err
    assert "--cost unsupported-payment" in err and "needs --value cms-payment" in err
    assert main(["calibrate", "--data", str(path), "--value", "cms-payment", "--cost", "unsupported-payment",
                 "--targets", "0.3"]) == 2
    assert "the Dask engine needs an additive cost" in capsys.readouterr().err


def test_compiled_joint_greedy_equals_the_numpy_reference():
    """cost_kernels (incremental, per family) against favmac.universe.joint_greedy (every code tried with both
    exact proxies): the same orders and proxies, except where a step's choice rests on gains of round-off
    size (a ratio of two near-zero increments), which the two summation orders may rank either way."""
    from favmac.universe import joint_greedy
    from tests.test_cms_payment import V28_CLUSTER

    codes = [f"HCC{h}" for h in V28_CLUSTER[:16]]
    rng = np.random.RandomState(23)
    n = 60
    probs = np.round(rng.rand(n, len(codes)) ** 2, 3)
    value = CmsHccValue(codes, cells=rng.choice(["CNA", "CPD", "INS"], n), known=rng.rand(n, len(codes)) < 0.1,
                        base_rate=1000)
    cost = CmsHccCost(value)
    order, vhat, chat = cost.joint_sequences(value, probs)
    ref_order, ref_vhat, ref_chat = joint_greedy(probs, value, cost)
    same = (order == ref_order).all(axis=1)
    assert same.mean() >= 0.9
    np.testing.assert_allclose(vhat[same], ref_vhat[same], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(chat[same], ref_chat[same], rtol=1e-9, atol=1e-9)
    for i in np.flatnonzero(~same):
        step = int(np.flatnonzero(order[i] != ref_order[i])[0])
        chosen = np.zeros(len(codes), dtype=bool)
        chosen[order[i, :step]] = True
        for k in (order[i, step], ref_order[i, step]):
            trial = chosen.copy()
            trial[k] = True
            gains = [float(f.take(i).proxy(trial, probs[i]) - f.take(i).proxy(chosen, probs[i])) for f in (value, cost)]
            assert min(abs(g) for g in gains) <= 1e-6, (i, step, k, gains)  # dollars: 1e-9 RAF
    assert cost.joint_sequences(CmsHccValue(codes), probs[:1]) is None  # another value: the numpy path
