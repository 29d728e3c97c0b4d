"""favmac.ui.services and favmac.ui.figures without Streamlit."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from favmac.functions import AdditiveCost, AdditiveValue, FormulaError
from favmac.result import ReplayResult
from favmac.ui import figures, services

CODES = ["A", "B", "C"]


def weights_frame(values=(1.0, 2.0, 3.0)):
    return pd.DataFrame({"weight": list(values), "description": ["alpha", "beta", "=gamma"]}, index=pd.Index(CODES, name="code"))


def toy_result():
    # 2 targets x 4 steps x 3 codes, burn-in 2
    selected = np.zeros((2, 4, 3), dtype=bool)
    selected[0, :, 0] = True
    selected[1, 1:, :2] = True
    cost = np.array([[0.0, 1.0, 1.0, 0.0], [2.0, 0.0, 1.0, 3.0]])
    value = np.array([[1.0, 0.0, 1.0, 2.0], [1.0, 1.0, 0.0, 0.0]])
    thresholds = np.array([[np.inf, 1.0, 0.5, 0.5], [-np.inf, 2.0, 2.0, 1.5]])
    return ReplayResult("FavMac (ratio)", np.array([0.5, 1.5]), None, 2, thresholds, selected, cost, value,
                        codes=CODES, patient_ids=np.array(["p2", "p3", "p4", "p5"], dtype=object), final_thresholds=np.array([0.4, 1.4]))


# --------------------------------------------------------------------------- settings


def test_default_settings_are_valid_and_target_is_three_percent():
    s = services.default_settings(4000, 35)
    assert services.validate_settings(s, 35, 4000) == s
    assert s["target"] == 1.05 and s["burn_in"] == 1000
    digits = services.default_settings(300, 10)
    assert digits["target"] == pytest.approx(0.3)  # 3 % of 10 FP
    assert services.default_target(10, True, pct=10.0) == pytest.approx(1.1)  # whole numbers move 0.1 off
    assert digits["burn_in"] == 100


@pytest.mark.parametrize(
    "change, words",
    [
        ({"value_kind": "dollars"}, "value_kind"),
        ({"target": 0}, "target must be > 0"),
        ({"target": "abc"}, "target must be a number"),
        ({"delta": 1.0}, "delta"),
        ({"universe": "full"}, "at most 14 codes"),
        ({"burn_in": 4000}, "burn_in"),
        ({"burn_in": 2.5}, "whole number"),
        ({"window": -5}, "window"),
        ({"grid": {"low_pct": 60, "high_pct": 50}}, "lowest < highest"),
        ({"grid": {"methods": ["Magic"]}}, "unknown method"),
    ],
)
def test_validate_settings_names_the_field(change, words):
    s = {**services.default_settings(4000, 35), **change}
    with pytest.raises(services.SettingsError, match=words):
        services.validate_settings(s, 35, 4000)


def test_validate_settings_compiles_formula():
    s = {**services.default_settings(100, 3), "value_kind": "formula", "formula": "sum_hits(v) +"}
    with pytest.raises(FormulaError):
        services.validate_settings(s, 3, 100)
    s["formula"] = "sum_hits(v) * 2"
    assert services.validate_settings(s, 3, 100)["formula"] == "sum_hits(v) * 2"


def test_window_zero_or_empty_means_none():
    s = services.default_settings(100, 3)
    for empty in (None, "", 0):
        assert services.validate_settings({**s, "window": empty}, 3, 100)["window"] is None
    assert services.validate_settings({**s, "window": 50}, 3, 100)["window"] == 50


def test_adapt_settings_to_new_data():
    s = {**services.default_settings(4000, 12), "universe": "full", "burn_in": 1000, "target": 50.0}
    adapted, notes = services.adapt_settings(s, 300, 35, np.ones(35))
    assert adapted["universe"] == "ratio" and adapted["burn_in"] == 100 and adapted["target"] == 1.05
    assert len(notes) == 3


def test_adapt_settings_keeps_target_percent_when_cmax_changes():
    s = {**services.default_settings(4000, 35), "target": 7.0}  # 20 % of 35
    adapted, notes = services.adapt_settings(s, 3000, 10, np.ones(10), old_cmax=35.0)
    assert adapted["target"] == pytest.approx(2.1)  # 20 % of 10 = 2, off the integer
    same, notes = services.adapt_settings(s, 3000, 35, np.ones(35), old_cmax=35.0)
    assert same["target"] == 7.0 and notes == []


def test_value_cost_and_cmax():
    w = np.array([1.0, 2.0, 3.0])
    s = services.default_settings(10, 3)
    assert services.c_max(s, w) == 3.0
    assert services.c_max({**s, "cost_kind": "weighted_fp"}, w) == 6.0
    assert isinstance(services.build_value({**s, "value_kind": "tp"}, w), AdditiveValue)
    assert services.build_value(s, w).weights.tolist() == [1.0, 2.0, 3.0]
    assert services.build_cost(s, w).weights is None
    assert services.value_max(services.build_value(s, w), 3) == 6.0
    assert services.target_percent(3.5, 35) == pytest.approx(10.0)


def test_settings_json_round_trip_and_weights():
    s = services.default_settings(100, 3)
    s["target"] = 1.7
    raw = services.settings_to_json(s, weights_frame(), "toy")
    doc = json.loads(raw)
    assert doc["format"] == services.SETTINGS_FORMAT and doc["weights"] == {"A": 1.0, "B": 2.0, "C": 3.0}
    back, weights, notes = services.settings_from_json(raw, services.default_settings(100, 3), CODES, 100)
    assert back == s and weights == {"A": 1.0, "B": 2.0, "C": 3.0} and notes == []


def test_settings_json_other_codes_keep_weights_and_unknown_fields_noted():
    doc = {"format": services.SETTINGS_FORMAT, "version": 1, "settings": {"target": 2.0, "colour": "red"}, "weights": {"A": 1}}
    back, weights, notes = services.settings_from_json(json.dumps(doc).encode(), services.default_settings(100, 3), CODES, 100)
    assert back["target"] == 2.0 and weights is None
    assert any("colour" in n for n in notes) and any("do not cover" in n for n in notes)


@pytest.mark.parametrize(
    "raw, words",
    [
        (b"\xff\xfe", "not UTF-8"),
        (b"[1, 2", "not valid JSON"),
        (b"[]", "not a FavMac Studio settings file"),
        (b'{"format": "favmac-studio-settings", "version": 9, "settings": {}}', "version"),
        (b'{"format": "favmac-studio-settings", "version": 1}', 'no "settings"'),
        (b'{"format": "favmac-studio-settings", "version": 1, "settings": {}, "weights": {"A": -1, "B": 1, "C": 1}}', ">= 0"),
    ],
)
def test_settings_json_errors(raw, words):
    with pytest.raises(services.SettingsError, match=words):
        services.settings_from_json(raw, services.default_settings(100, 3), CODES, 100)


def test_run_key_changes_with_what_matters():
    s = services.default_settings(100, 3)
    w = np.ones(3)
    key = services.run_key("data", w, s)
    assert key == services.run_key("data", w, dict(s))
    assert key != services.run_key("data", w, {**s, "target": 0.2})
    assert key != services.run_key("other", w, s)
    assert key != services.run_key("data", np.array([1.0, 1.0, 2.0]), s)
    assert key == services.run_key("data", w, {**s, "grid": {"n_targets": 3}})  # grid does not affect a replay


# --------------------------------------------------------------------------- weights & uploads


def test_weight_helpers():
    w = weights_frame()
    assert services.weight_array(w, ["C", "A"]).tolist() == [3.0, 1.0]
    with pytest.raises(services.SettingsError, match="no risk weight"):
        services.weight_array(w, ["A", "Z"])
    with pytest.raises(services.SettingsError, match=">= 0"):
        services.weight_array(weights_frame((1.0, -1.0, 2.0)), CODES)
    assert services.descriptions(w, ["B", "Z"]) == ["beta", ""]
    kept, note = services.weights_for_codes(w, ["B", "A"])
    assert kept.index.tolist() == ["B", "A"] and note is None
    ones, note = services.weights_for_codes(w, ["X"])
    assert ones["weight"].tolist() == [1.0] and "weighs 1" in note


def test_named_bytes_and_content_key():
    nb = services.NamedBytes(b"abc", "f.csv")
    assert nb.name == "f.csv" and nb.getvalue() == b"abc" and nb.read() == b"abc"
    assert services.content_key(b"ab", b"c") != services.content_key(b"a", b"bc")
    assert services.content_key(b"x", None) == services.content_key(b"x", b"")


# --------------------------------------------------------------------------- data views


def test_reliability_bins_pool_codes():
    probs = np.array([[0.05, 0.95], [0.15, 0.85], [0.05, 0.95]])
    labels = np.array([[0, 1], [1, 1], [0, 0]])
    bins = services.reliability_bins(probs, labels, n_bins=10)
    assert bins["count"].sum() == 6
    first = bins.iloc[0]
    assert (first["bin_low"], first["count"], first["observed"]) == (0.0, 2, 0.0)
    last = bins.iloc[-1]
    assert last["count"] == 2 and last["observed"] == 0.5 and last["mean_prob"] == pytest.approx(0.95)
    assert services.reliability_bins(np.array([[1.0]]), np.array([[1]]))["bin_high"].iloc[0] == 1.0


def test_prevalence_table_sorted():
    probs = np.array([[0.1, 0.9, 0.5], [0.3, 0.7, 0.5]])
    labels = np.array([[0, 1, 1], [0, 1, 0]])
    table = services.prevalence_table(probs, labels, CODES)
    assert table["code"].tolist() == ["B", "C", "A"]
    assert table["mean_prob"].tolist() == pytest.approx([0.8, 0.5, 0.2])


# --------------------------------------------------------------------------- online session


def test_running_series_and_metrics():
    series = services.running_series(toy_result(), target_index=1)
    assert series["position"].tolist() == [2, 3, 4, 5]
    assert series["mean_cost"].tolist() == pytest.approx([2.0, 1.0, 1.0, 1.5])
    assert series["violation_rate"].tolist() == pytest.approx([1.0, 0.5, 1 / 3, 0.5])
    m = services.session_metrics(series, 2)
    assert m == {"seen": 2, "threshold": 2.0, "mean_cost": 1.0, "mean_value": 1.0, "violation_rate": 0.5}
    assert services.session_metrics(series, 0)["seen"] == 0


def test_downsample_index_keeps_ends_and_bounds_points():
    idx = services.downsample_index(100_000, 2000)
    assert len(idx) <= 2000 and idx[0] == 0 and idx[-1] == 99_999
    assert np.all(np.diff(idx) > 0)
    assert services.downsample_index(10, 2000).tolist() == list(range(10))


@pytest.mark.parametrize("speed, expected", [(1, 1.0), (5, 0.5), (10_000, 0.5)])
def test_playback_interval(speed, expected):
    assert services.playback_interval(speed) == expected


def test_advance_position_follows_the_clock():
    assert services.advance_position(10, 3000, 100, 0.5) == 60
    assert services.advance_position(10, 3000, 100, 1.3) == 140  # slow redraw: skip, do not slow down
    assert services.advance_position(10, 3000, 1, 0.1) == 11  # always at least one patient
    assert services.advance_position(10, 3000, 100, 60.0) == 210  # at most two seconds after a stall
    assert services.advance_position(2990, 3000, 10_000, 0.5) == 3000


def test_recent_patients_newest_first():
    labels = np.array([[1, 0, 0]] * 6)
    table = services.recent_patients(toy_result(), labels, position=3, n=2)
    assert table["patient_id"].tolist() == ["p4", "p3"]
    assert table["selected_codes"].tolist() == ["A", "A"]
    assert table["true_codes"].tolist() == ["A", "A"]
    assert services.recent_patients(toy_result(), labels, position=0).empty


def test_format_threshold():
    assert services.format_threshold(float("inf")) == "+∞"
    assert services.format_threshold(float("-inf")) == "−∞"
    assert services.format_threshold(float("nan")) == "—"
    assert services.format_threshold(1.23456) == "1.23"


# --------------------------------------------------------------------------- trade-offs


def test_tradeoff_targets():
    np.testing.assert_allclose(services.tradeoff_targets(35, 5, 50, 10, True),
                               [1.75, 3.5, 5.25, 7.1, 8.75, 10.5, 12.25, 14.1, 15.75, 17.5])
    np.testing.assert_allclose(services.tradeoff_targets(10, 10, 50, 5, False), [1, 2, 3, 4, 5])
    np.testing.assert_allclose(services.tradeoff_targets(10, 10, 50, 5, True), [1.1, 2.1, 3.1, 4.1, 5.1])  # the paper's grid


def test_method_applicability_follows_library():
    expected = services.method_applicability({"control": "expected"})
    violation = services.method_applicability({"control": "violation"})
    assert expected["RCPS"] and not expected["CRC"] and not expected["ClassWise"]
    assert violation["CRC"] and violation["ClassWise"] and not violation["RCPS"]
    assert all(expected[m] is None and violation[m] is None for m in services.FAVMAC_METHODS)


def test_run_tradeoffs_small_stream():
    rng = np.random.RandomState(0)
    probs = rng.uniform(size=(120, 4))
    labels = (rng.uniform(size=(120, 4)) < probs).astype(int)
    s = {**services.default_settings(120, 4), "burn_in": 40}
    targets = services.tradeoff_targets(4, 10, 40, 3, True)
    seen = []
    out = services.run_tradeoffs(probs, labels, list("wxyz"), [f"p{i}" for i in range(120)], np.ones(4), s, targets,
                                 ["FavMac (ratio)", "InnerSet", "RCPS"], progress=seen.append)
    assert set(out["points"]["method"]) == {"FavMac (ratio)", "InnerSet"}
    assert list(out["skipped"]) == ["RCPS"]
    assert len(out["points"]) == 2 * len(targets)
    assert seen and seen[-1] == pytest.approx(1.0) and all(a <= b for a, b in zip(seen, seen[1:]))
    assert list(out["table"].columns) == list(services.COMPARISON_COLUMNS.values())


# --------------------------------------------------------------------------- patients & export


def test_proxies_additive_and_formula_agree():
    probs = np.array([[0.2, 0.5, 0.9], [0.1, 0.1, 0.1]])
    selected = np.array([[True, False, True], [False, False, False]])
    v, c = AdditiveValue([1.0, 2.0, 3.0]), AdditiveCost(None)
    vhat, chat = services.proxies(v, c, selected, probs)
    assert vhat.tolist() == pytest.approx([0.2 + 2.7, 0.0]) and chat.tolist() == pytest.approx([0.8 + 0.1, 0.0])
    s = {**services.default_settings(10, 3), "value_kind": "formula", "formula": "sum_hits(v)"}
    formula = services.build_value(s, np.array([1.0, 2.0, 3.0]))
    vhat_f, _ = services.proxies(formula, c, selected, probs)
    assert vhat_f.tolist() == pytest.approx(vhat.tolist())


def test_chosen_sets_frame_columns_and_values():
    probs = np.array([[0.2, 0.5, 0.9], [0.1, 0.1, 0.1]])
    selected = np.array([[True, False, True], [False, False, False]])
    labels = np.array([[1, 0, 0], [0, 0, 0]])
    frame = services.chosen_sets_frame(["x", "y"], probs, selected, [0.7, np.inf], CODES, ["alpha", "beta", "=gamma"],
                                       AdditiveValue(None), AdditiveCost(None), "FavMac (ratio)", services.default_settings(10, 3), labels=labels)
    assert list(frame.columns) == ["patient_id", "codes", "descriptions", "expected_value", "cost_proxy", "threshold",
                                   "realized_value", "realized_cost", "method", "settings"]
    assert frame["codes"].tolist() == ["A;C", ""]
    assert frame["descriptions"].tolist() == ["alpha; =gamma", ""]
    assert frame["realized_value"].tolist() == [1.0, 0.0] and frame["realized_cost"].tolist() == [1.0, 0.0]
    assert np.isinf(frame["threshold"].iloc[1])
    assert "target=" in frame["settings"].iloc[0] and "formula" not in frame["settings"].iloc[0]


def test_calibration_export_uses_stream_after_burn_in():
    r = toy_result()
    probs = np.full((6, 3), 0.5)
    labels = np.zeros((6, 3), dtype=int)
    frame = services.calibration_export(r, probs, labels, ["a", "b", "c"], AdditiveValue(None), AdditiveCost(None),
                                        services.default_settings(6, 3), target_index=1)
    assert frame["patient_id"].tolist() == ["p2", "p3", "p4", "p5"]
    assert frame["codes"].tolist() == ["", "A;B", "A;B", "A;B"]
    assert frame["threshold"].tolist() == [-np.inf, 2.0, 2.0, 1.5]


def test_patient_codes_status_and_greedy_cut():
    frame = services.patient_codes([0.9, 0.2, 0.6], [1, 1, 0], [True, False, True], CODES, weights_frame(), order=[0, 2, 1])
    assert frame["code"].tolist() == ["A", "C", "B"]
    assert frame["status"].tolist() == [services.STATUS_TP, services.STATUS_FP, services.STATUS_FN]
    unlabelled = services.patient_codes([0.9, 0.2, 0.6], None, [True, False, False], CODES, weights_frame())
    assert unlabelled["status"].tolist() == [services.STATUS_SELECTED, services.STATUS_NOT_SELECTED, services.STATUS_NOT_SELECTED]
    explain = pd.DataFrame({"rank": [1, 2, 3], "code": CODES, "chat": [0.1, 0.5, 1.2], "selected": [True, True, True]})
    assert services.greedy_cut(explain, 0.5)["selected"].tolist() == [True, False, False]
    assert services.greedy_cut(explain, float("inf"))["selected"].all()


def test_patient_summary():
    out = services.patient_summary([True, False, True], [0.9, 0.2, 0.6], [1, 1, 0], AdditiveValue(None), AdditiveCost(None))
    assert out == {"n_selected": 2, "vhat": pytest.approx(1.5), "chat": pytest.approx(0.5), "value": 1.0, "cost": 1.0}


def test_formula_preview():
    text = services.formula_preview("sum_hits(v)", np.array([1.0, 2.0, 3.0]), [0.1, 0.2, 0.3], [1, 0, 1], CODES)
    assert "A, C" in text and "V = 4" in text
    with pytest.raises(FormulaError):
        services.formula_preview("nope(", np.ones(3), [0.1] * 3, [0] * 3, CODES)


# --------------------------------------------------------------------------- figures


def test_figures_have_titles_units_and_palette():
    series = services.running_series(toy_result())
    figs = [
        figures.threshold_figure(series, "false positives"),
        figures.cost_figure(series, "expected", 0.5, 0.1, "false positives"),
        figures.cost_figure(series, "violation", 0.5, 0.1, "false positives"),
        figures.value_figure(series, "true positives"),
        figures.reliability_figure(services.reliability_bins(np.array([[0.2, 0.8]]), np.array([[0, 1]]))),
        figures.prevalence_figure(services.prevalence_table(np.array([[0.2, 0.8]]), np.array([[0, 1]]), ["A", "B"])),
    ]
    for fig in figs:
        assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
        assert fig.layout.title.text
        for trace in fig.data:
            color = getattr(getattr(trace, "line", None), "color", None) or getattr(getattr(trace, "marker", None), "color", None)
            if isinstance(color, str):
                assert color in figures.OKABE_ITO.values() or color == "#C8C8C8"
    # infinite thresholds are not drawn but are counted in the legend
    thr = figs[0]
    assert np.isnan(thr.data[0].y[0]) and "±∞" in thr.data[1].name


def test_tradeoff_figures_hover_and_guarantee_line():
    points = services.tradeoff_points(
        {"FavMac (ratio)": pd.DataFrame({"method": "x", "target": [1.0, 2.0], "mean_value": [1.0, 2.0], "mean_cost": [0.9, 1.8],
                                         "excess_cost": [-0.1, -0.2], "violation_freq": [0.2, 0.3]}),
         "InnerSet": pd.DataFrame({"method": "y", "target": [1.0, 2.0], "mean_value": [0.5, 0.6], "mean_cost": [0.1, 0.2],
                                   "excess_cost": [-0.9, -1.8], "violation_freq": [0.0, 0.0]})},
        cmax=10.0, vscale=10.0)
    assert set(points["method"]) == {"FavMac (ratio)", "InnerSet"}
    assert points["target_pct"].tolist() == [10.0, 20.0, 10.0, 20.0]
    fig = figures.tradeoff_figure(points, "FP", "TP")
    assert [t.name for t in fig.data] == ["FavMac (ratio)", "InnerSet"]
    assert "target c" in fig.data[0].hovertemplate and fig.data[0].marker.symbol != fig.data[1].marker.symbol
    guarantee = figures.guarantee_figure(points, "expected", 0.1, "FP", "TP")
    line = guarantee.data[-1]  # drawn last, on top of the curves
    assert line.name.startswith("Guarantee") and list(line.x) == list(line.y) and line.legendrank == 1
    violation = figures.guarantee_figure(points, "violation", 0.1, "FP", "TP")
    assert list(violation.data[-1].y) == [0.1, 0.1]


def test_patient_figure_uses_pattern_and_colour():
    frame = services.patient_codes([0.9, 0.2, 0.6], [1, 1, 0], [True, False, True], CODES, weights_frame())
    fig = figures.patient_figure(frame, "Patient x")
    names = [t.name for t in fig.data]
    assert names == [services.STATUS_TP, services.STATUS_FP, services.STATUS_FN]
    patterns = [t.marker.pattern.shape for t in fig.data]
    assert len(set(patterns)) == 3  # not colour alone
    assert "risk weight" in fig.data[0].hovertemplate


def test_estimate_replay_seconds_scales_with_stream_length():
    rng = np.random.RandomState(1)
    probs = rng.uniform(size=(200, 3))
    labels = (rng.uniform(size=(200, 3)) < probs).astype(int)
    s = {**services.default_settings(200, 3), "burn_in": 50}
    seconds = services.estimate_replay_seconds(probs, labels, np.ones(3), s, n_sample=10)
    assert 0 < seconds < 60


def test_first_informative_step_points_at_a_caught_code():
    import numpy as np
    from favmac import ReplayResult

    selected = np.zeros((1, 3, 2), bool)
    selected[0, 2, 1] = True
    labels = np.array([[0, 0], [1, 1], [0, 0], [0, 1]], bool)  # burn-in 1: steps are rows 1..3
    result = ReplayResult("m", np.array([1.0]), None, 1, np.zeros((1, 3)), selected, np.zeros((1, 3)), np.zeros((1, 3)))
    assert services.first_informative_step(result, labels) == 2
    assert services.first_informative_step(result, np.zeros((4, 2), bool)) == 0


def test_first_informative_step_prefers_a_confident_catch():
    import numpy as np
    from favmac import ReplayResult

    selected = np.ones((1, 3, 1), bool)
    labels = np.ones((3, 1), bool)
    probs = np.array([[0.1], [0.7], [0.9]])
    result = ReplayResult("m", np.array([1.0]), None, 0, np.zeros((1, 3)), selected, np.zeros((1, 3)), np.zeros((1, 3)))
    assert services.first_informative_step(result, labels, probs) == 1
    assert services.first_informative_step(result, labels) == 0
