"""The Trade-offs grid decided from the data (favmac/target_grid.py; the page's caption and form: favmac/ui/tradeoff_grid.py): the value curve against a
brute force, the range's edge cases, the targets, the grid settings and the bundled sample."""
from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from favmac import io as fio
from favmac.functions import AdditiveCost, AdditiveValue, bind_rows
from favmac.io.dataset import Dataset
from favmac.runspec import RunSpec, SettingsError
from favmac import target_grid
from favmac.ui import payment_view, settings_form, tradeoff_grid as tg

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"


def dataset(probs, labels, members=None) -> Dataset:
    probs = np.asarray(probs, dtype=float)
    ids = pd.Index([f"p{i}" for i in range(len(probs))], name="patient_id")
    codes = [f"C{k}" for k in range(probs.shape[1])]
    return Dataset(pd.DataFrame(probs, index=ids, columns=codes),
                   pd.DataFrame(np.asarray(labels, dtype=np.int8), index=ids, columns=codes), members=members)


def brute_curve(probs, labels, v, w):
    """Every (patient, code) flag as a tuple, sorted by docs/method.md's ratio rule with ties by position."""
    flags = []
    n, k = probs.shape
    for i in range(n):
        for j in range(k):
            num, den = probs[i, j] * v[i, j], (1 - probs[i, j]) * w[i, j]
            key = num / den if den > 0 else (math.inf if num > 0 else -math.inf)
            flags.append((-key, i * k + j, labels[i, j] * v[i, j], (1 - labels[i, j]) * w[i, j], i))
    flags.sort()
    return [f[2] for f in flags], [f[3] for f in flags], [f[4] for f in flags]


@pytest.mark.parametrize("seed", range(20))
def test_budget_curve_is_the_pooled_ratio_order(seed):
    rng = np.random.default_rng(seed)
    n, k = rng.integers(1, 12), rng.integers(1, 6)
    probs = rng.choice([0.0, 0.1, 0.5, 0.9, 1.0], size=(n, k))  # ties, p = 0 and p = 1
    labels = rng.integers(0, 2, size=(n, k))
    v, w = rng.choice([0.0, 0.5, 2.0], size=k), rng.choice([0.0, 1.0, 3.0], size=k)
    gain, spend, who = target_grid.budget_curve(probs, labels, AdditiveValue(v), AdditiveCost(w))
    want = brute_curve(probs, labels, np.broadcast_to(v, (n, k)), np.broadcast_to(w, (n, k)))
    np.testing.assert_array_equal(gain, want[0])
    np.testing.assert_array_equal(spend, want[1])
    np.testing.assert_array_equal(who, want[2])


@lru_cache(maxsize=1)
def hcc():
    ds = fio.load_calibration(SAMPLES / "hcc_calibration.csv")
    weights = fio.read_weights(SAMPLES / "hcc_weights.csv", ds.codes)["weight"].to_numpy(float)
    settings = settings_form.default_settings(ds.n_patients, ds.n_codes, weights)
    settings.update(payment_view.payment_defaults(ds.codes))
    return ds, weights, settings


def test_a_non_additive_value_and_cost_are_taken_code_by_code_per_patient():
    """The payment value and the unsupported payment: each code alone on each member's record (cell, known codes)."""
    ds, weights, settings = hcc()
    spec = settings_form.to_spec({**settings, "cost_kind": "cms_unsupported"}, weights)
    value, cost = spec.build(ds.codes, ds.members)
    rows = slice(0, 40)
    p, y = ds.prob_array()[rows], ds.label_array()[rows]
    v_rows, c_rows = bind_rows(value, rows), bind_rows(cost, rows)
    v, w = np.zeros(p.shape), np.zeros(p.shape)
    for i in range(p.shape[0]):
        for k in range(p.shape[1]):
            one = np.zeros(p.shape[1], dtype=bool)
            one[k] = True
            v[i, k] = bind_rows(v_rows, i)(one, one)
            w[i, k] = bind_rows(c_rows, i)(one, np.zeros_like(one))
    assert (v == 0).any() and (v > 0).any()  # codes already on a record add nothing
    gain, spend, who = target_grid.budget_curve(p, y, v_rows, c_rows)
    want = brute_curve(p, y, v, w)
    np.testing.assert_allclose(gain, want[0])
    np.testing.assert_allclose(spend, want[1])


def test_informative_range_reads_the_curve_at_its_shares():
    # one code per patient, p = 0.9 (true) then p = 0.5 (false) ...: the value arrives in steps
    probs = np.array([[0.9, 0.6, 0.3]] * 10)
    labels = np.array([[1, 0, 1]] * 10)
    value, cost = AdditiveValue([1.0, 1.0, 9.0]), AdditiveCost()
    # order: code 0 (ratio 9), code 2 (27/7 = 3.86), code 1 (1.5); value 1 then 9: 10 % of 10 is the first flag (no cost),
    # 80 % needs code 2 (no cost either): the curve saturates without a false flag
    out = target_grid.informative_range(probs, labels, value, cost, c_max=3.0, burn_in=10)
    assert out["reason"].startswith("the burn-in patients' most likely codes bring 80 %") and out["low"] is None
    labels = np.array([[1, 0, 0]] * 5 + [[0, 0, 1]] * 5)
    out = target_grid.informative_range(probs, labels, value, cost, c_max=3.0, burn_in=10)
    # order of the 30 flags: code 0 of each patient (5 true: value 5, 5 false: cost 5), then code 2 (45 value, 5 cost)
    # 80 % of 50 is reached at the 5th true code 2, after all code 0 flags and some code 2: budget (5 + 0..5) / 10
    assert out["high_from"] == "data" and 0.5 <= out["high"] <= 1.0 and out["saturation"] == out["high"]
    assert out["low_from"] == "slack" and out["low"] == pytest.approx(2 * 3.0 / 11)  # 10 % arrives earlier, inside the slack


def test_informative_range_edge_cases():
    probs, labels = np.full((50, 2), 0.5), np.zeros((50, 2))
    value, cost = AdditiveValue(), AdditiveCost()
    assert "no true code" in target_grid.informative_range(probs, labels, value, cost, 2.0, 50)["reason"]
    assert "no burn-in patients" in target_grid.informative_range(probs[:0], labels[:0], value, cost, 2.0, 0)["reason"]
    assert "C_max is 0" in target_grid.informative_range(probs, labels, value, cost, 0.0, 50)["reason"]
    assert "C_max is inf" in target_grid.informative_range(probs, labels, value, cost, math.inf, 50)["reason"]
    # a value curve that saturates only near C_max is capped at HIGH_CAP x C_max
    rng = np.random.default_rng(1)
    probs = rng.uniform(0.01, 0.99, size=(400, 4))
    labels = rng.random((400, 4)) < 0.1
    out = target_grid.informative_range(probs, labels, value, cost, 4.0, 400)
    assert out["high_from"] == "cap" and out["high"] == 2.0 and out["saturation"] > 2.0
    # tiny burn-in: a target below 2 C_max / (N + 1) flags nothing at first, so the range collapses
    out = target_grid.informative_range(probs[:3], np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1]]), value, cost, 4.0, 3)
    assert out["low"] is None and "with 3 burn-in patients" in out["reason"]
    # violation control reads the (1 - delta) quantile of the patients' costs, with no slack floor
    out = target_grid.informative_range(probs, labels, value, cost, 4.0, 400, delta=0.1)
    assert out["low_from"] in ("data", "span") and out["high"] <= 2.0


def test_log_targets_round_space_and_keep_integer_costs_off_whole_numbers():
    assert target_grid.log_targets(2 * 35 / 1001, 3.939, 10, True, 35) == [0.07, 0.11, 0.17, 0.27, 0.42, 0.66, 1.1, 1.6, 2.5, 3.9]
    assert target_grid.log_targets(1, 1.2, 5, False, 35) == [1.0, 1.05, 1.1, 1.15, 1.2]  # 2 digits would merge them
    assert target_grid.log_targets(1, 35, 3, True, 35) == [1.1, 5.9, 35.0]  # C_max itself is not moved
    # violation control, integer costs: c and floor(c) + 0.1 allow the same sets
    assert target_grid.log_targets(0.05, 5, 10, True, 35, per_chart=True) == [0.1, 1.1, 2.1, 3.1, 4.1, 5.1]
    assert target_grid.log_targets(0.05, 30, 5, True, 35, per_chart=True) == [0.1, 1.1, 6.1, 30.1]  # too many whole numbers: the floors


def test_grid_settings_validate_with_the_field_and_the_fix():
    assert target_grid.validate_grid({})["low"] is None and target_grid.validate_grid({})["n_targets"] == 10
    for bad, words in (({"low": 0}, "grid.low (a trade-off target, cost per chart) must be above 0"),
                       ({"high": -1}, "grid.high"), ({"low": "abc"}, "grid.low must be a number"),
                       ({"high": float("inf")}, "grid.high must be finite"), ({"low": 2, "high": 1}, "must be below the highest"),
                       ({"unit": 3, "low": 1}, "grid.unit"), ({"unit": "![x](http://h/)", "low": 1}, "grid.unit .the cost the lowest and highest target are in. must be one of fp, weighted_fp"), ({"percent": "yes"}, "grid.percent"),
                       ({"low_pct": 60, "high_pct": 50}, "lowest < highest"), ({"n_targets": 1}, "between 2 and 50"),
                       ({"methods": ["Nope"]}, "unknown method")):
        with pytest.raises(SettingsError, match=words.replace("(", r"\(").replace(")", r"\)")):
            target_grid.validate_grid(bad)
    with pytest.raises(SettingsError, match="grid must be an object"):
        target_grid.restore_grid({}, [1, 2])
    assert target_grid.validate_grid({"unit": "fp"})["unit"] is None  # no numbers: nothing to be in a unit


def test_an_old_settings_file_keeps_its_percent_grid_and_a_new_one_round_trips():
    ds, weights, settings = hcc()
    old = json.loads(settings_form.settings_to_json(settings, pd.DataFrame({"weight": weights}, index=ds.codes), "hcc"))
    old["settings"]["grid"] = {"low_pct": 10.0, "high_pct": 30.0, "n_targets": 3, "methods": ["CRC"]}  # as the app wrote it before
    restored, _, _ = settings_form.settings_from_json(json.dumps(old).encode(), settings, ds.codes, ds.n_patients, weights)
    grid = restored["grid"]
    assert grid["percent"] and (grid["low_pct"], grid["high_pct"], grid["n_targets"]) == (10.0, 30.0, 3)
    spec = settings_form.to_spec(restored, weights)
    plan = target_grid.grid_plan(grid, spec, ds, 35.0, True, include=restored["target"])
    np.testing.assert_array_equal(plan.targets, target_grid.tradeoff_targets(35.0, 10, 30, 3, True, include=restored["target"]))
    assert plan.how == "percent" and "10–30 % of C_max" in tg.grid_caption(plan, "false flags")
    # the form shows the range per 100 charts; left as shown it stays a percent grid, changed it is stored per chart
    shown = tg.form_values(grid, plan)
    assert (shown["low"], shown["high"]) == (350.0, 1050.0)
    assert tg.grid_from_form(grid, shown, 350.0, 1050.0, 4, ["CRC"], "fp")["percent"]
    mine = tg.grid_from_form(grid, shown, 20.0, 1050.0, 4, ["CRC"], "fp")
    assert not mine["percent"] and (mine["low"], mine["high"], mine["unit"]) == (0.2, 10.5, "fp")
    assert tg.grid_from_form(grid, shown, None, None, 4, ["CRC"], "fp")["low"] is None  # emptied: from the data
    # a grid of the new form survives the settings file
    new = {**restored, "grid": target_grid.validate_grid(mine)}
    raw = settings_form.settings_to_json(new, pd.DataFrame({"weight": weights}, index=ds.codes), "hcc")
    again, _, _ = settings_form.settings_from_json(raw, settings, ds.codes, ds.n_patients, weights)
    assert again["grid"] == new["grid"]
    bad = {**old, "settings": {**old["settings"], "grid": {"low": -2}}}
    with pytest.raises(SettingsError, match="grid.low"):
        settings_form.settings_from_json(json.dumps(bad).encode(), settings, ds.codes, ds.n_patients, weights)


def test_the_bundled_sample_gets_the_budgets_where_the_choice_matters():
    ds, weights, settings = hcc()
    spec = settings_form.to_spec(settings, weights)
    plan = target_grid.grid_plan(settings["grid"], spec, ds, 35.0, True, include=settings["target"])
    assert plan.how == "data" and (plan.low_from, plan.high_from) == ("slack", "data")
    assert plan.low == pytest.approx(2 * 35 / 1001)
    assert len(plan.targets) == 11 and settings["target"] in plan.targets
    assert 0.05 < plan.targets[0] < 0.1 and 3 < plan.targets[-1] < 5  # not 1.75-17.5 (5-50 % of C_max)
    assert all(t != math.floor(t) for t in plan.targets)  # integer cost: no whole-number target
    caption = tg.grid_caption(plan, "false flags")
    assert caption.startswith("11 targets from 7 to 390 false flags per 100 charts, evenly spaced on a log scale")
    hints = tg.form_values(settings["grid"], plan)  # the empty inputs say what the data chose
    assert (hints["low"], hints["low_hint"], hints["high_hint"]) == (None, "from the data: 7", "from the data: 390")
    # the risk-weighted cost and the unsupported payment get their own ranges, in their own units
    weighted = target_grid.grid_plan(settings["grid"], spec.replace(cost_kind="weighted_fp"), ds, spec.replace(cost_kind="weighted_fp").c_max(35),
                            False, include=settings["target"])
    assert weighted.how == "data" and weighted.high < plan.high
    unsupported = spec.replace(cost_kind="cms_unsupported", base_rate=11000.0)
    cmax = unsupported.c_max(ds.n_codes, ds.codes, ds.members)
    dollars = target_grid.grid_plan(settings["grid"], unsupported, ds, cmax, False)
    assert dollars.how == "data" and 100 < dollars.targets[0] < dollars.targets[-1] < cmax / 2
    # violation control with integer costs: k + 0.1 targets only
    violation = target_grid.grid_plan(settings["grid"], spec.replace(control="violation"), ds, 35.0, True)
    assert all(round(t - math.floor(t), 9) == 0.1 for t in violation.targets)


def test_your_bounds_their_unit_and_c_max():
    ds, weights, settings = hcc()
    spec = settings_form.to_spec(settings, weights)
    grid = target_grid.validate_grid({"low": 0.2, "high": 2.0, "unit": "fp", "n_targets": 3})
    plan = target_grid.grid_plan(grid, spec, ds, 35.0, True)
    assert plan.targets.tolist() == [0.2, 0.63, 2.1] and (plan.low_from, plan.high_from) == ("yours", "yours")
    # set in false flags, now the cost is the risk-weighted one: decided from the data, and said
    other = target_grid.grid_plan(grid, spec.replace(cost_kind="weighted_fp"), ds, 19.59, False)
    assert other.low_from != "yours" and other.ignored and "set for another cost (fp)" in tg.grid_caption(other, "x")
    assert tg.form_values(grid, other)["low"] is None
    # above C_max: stops at C_max; a lowest at or above C_max is the data's
    high = target_grid.grid_plan(target_grid.validate_grid({"high": 50.0, "unit": "fp"}), spec, ds, 35.0, True)
    assert high.targets[-1] == 35.0 and high.high_from == "clipped" and "above C_max = 35" in tg.grid_caption(high, "x")
    assert tg.form_values(target_grid.validate_grid({"high": 50.0, "unit": "fp"}), high)["high"] == 3500.0  # the input's maximum
    low = target_grid.grid_plan(target_grid.validate_grid({"low": 40.0, "unit": "fp"}), spec, ds, 35.0, True)
    assert low.low_from != "yours" and "not below C_max" in tg.grid_caption(low, "x")
    # your lowest above the data's highest: the highest becomes ten times it
    up = target_grid.grid_plan(target_grid.validate_grid({"low": 10.0, "unit": "fp", "n_targets": 2}), spec, ds, 35.0, False)
    assert up.targets.tolist() == [10.0, 35.0] and up.high_from == "span"


def test_a_dataset_the_data_cannot_decide_falls_back_to_percent_of_c_max():
    probs = np.full((6, 3), 0.4)
    ds = dataset(probs, np.zeros((6, 3)))
    spec = RunSpec(burn_in=3, targets=(0.3,))
    grid = target_grid.default_grid()
    plan = target_grid.grid_plan(grid, spec, ds, 3.0, True, include=0.3)
    np.testing.assert_array_equal(plan.targets, target_grid.tradeoff_targets(3.0, 5, 50, 10, True, include=0.3))
    assert plan.how == "fallback" and "no true code" in tg.grid_caption(plan, "false flags")
    hint = tg.form_values(grid, plan)
    assert hint["low"] is None and hint["low_hint"] == "from the data: 15"
    # your highest only, the data undecided: the lowest is 5 % of C_max
    mine = target_grid.grid_plan(target_grid.validate_grid({"high": 2.0, "unit": "fp", "n_targets": 2}), spec, ds, 3.0, False)
    assert mine.targets.tolist() == [0.15, 2.0] and mine.low_from == "percent"


def test_data_range_remembers_by_content_and_matches_the_measurement():
    ds, weights, settings = hcc()
    spec = settings_form.to_spec(settings, weights)
    value, cost = spec.build(ds.codes, ds.members)
    rows = slice(0, spec.burn_in)
    direct = target_grid.informative_range(ds.prob_array()[rows], ds.label_array()[rows], value, cost, 35.0, spec.burn_in)
    assert target_grid.data_range(spec, ds, 35.0) == direct == target_grid.data_range(spec.replace(targets=(2.0,)), ds, 35.0)
    # other burn-in rows (the same shapes): measured again, not the remembered answer
    probs = ds.probs.copy()
    probs.iloc[:, 0] = 1.0 - probs.iloc[:, 0]
    other = Dataset(probs, ds.labels, members=ds.members)
    value2, cost2 = spec.build(other.codes, other.members)
    assert target_grid.data_range(spec, other, 35.0) == target_grid.informative_range(probs.to_numpy()[rows], ds.label_array()[rows], value2, cost2,
                                                                    35.0, spec.burn_in)
    assert len(target_grid._RANGES) <= target_grid.MAX_CACHED_RANGES
