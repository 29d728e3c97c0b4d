"""favmac.ui.settings_form: the form's dict, its RunSpec, adaptation to new data, the settings JSON."""
from __future__ import annotations

import json

import numpy as np
import pytest
from ui_fixtures import CODES, weights_frame

from favmac.functions import AdditiveValue, FormulaError
from favmac.runspec import SETTINGS_FORMAT, SettingsError
from favmac import tradeoffs
from favmac.ui import settings_form as form


def test_default_settings_are_valid_and_target_is_three_percent():
    s = form.default_settings(4000, 35)
    assert form.validate_settings(s, 35, 4000) == s
    assert s["target"] == 1.05 and s["burn_in"] == 1000
    digits = form.default_settings(300, 10)
    assert digits["target"] == pytest.approx(0.3)  # 3 % of 10 FP
    assert form.default_target(10, True, pct=10.0) == pytest.approx(1.1)  # whole numbers move 0.1 off
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
    s = {**form.default_settings(4000, 35), **change}
    with pytest.raises(SettingsError, match=words):
        form.validate_settings(s, 35, 4000)


def test_validate_settings_compiles_formula():
    s = {**form.default_settings(100, 3), "value_kind": "formula", "formula": "sum_hits(v) +"}
    with pytest.raises(FormulaError):
        form.validate_settings(s, 3, 100)
    s["formula"] = "sum_hits(v) * 2"
    assert form.validate_settings(s, 3, 100)["formula"] == "sum_hits(v) * 2"


def test_window_zero_or_empty_means_none():
    s = form.default_settings(100, 3)
    for empty in (None, "", 0):
        assert form.validate_settings({**s, "window": empty}, 3, 100)["window"] is None
    assert form.validate_settings({**s, "window": 50}, 3, 100)["window"] == 50


def test_adapt_settings_to_new_data():
    s = {**form.default_settings(4000, 12), "universe": "full", "burn_in": 1000, "target": 50.0}
    adapted, notes = form.adapt_settings(s, 300, 35, np.ones(35))
    assert adapted["universe"] == "ratio" and adapted["burn_in"] == 100 and adapted["target"] == 1.05
    # issue 33: the 4,000-patient settings recalibrated by default; 300 patients are too few, so it is turned off
    assert len(notes) == 4 and adapted["recalibrate"] is None and any("Recalibration turned off" in n for n in notes)


def test_adapt_settings_keeps_target_percent_when_cmax_changes():
    s = {**form.default_settings(4000, 35), "target": 7.0}  # 20 % of 35
    adapted, notes = form.adapt_settings(s, 3000, 10, np.ones(10), old_cmax=35.0)
    assert adapted["target"] == pytest.approx(2.1)  # 20 % of 10 = 2, off the integer
    same, notes = form.adapt_settings(s, 3000, 35, np.ones(35), old_cmax=35.0)
    assert same["target"] == 7.0 and notes == []


def test_value_cost_and_cmax():
    w = np.array([1.0, 2.0, 3.0])
    s = form.default_settings(10, 3)
    spec = form.to_spec(s, w)
    assert spec.c_max(3) == 3.0
    assert form.to_spec({**s, "cost_kind": "weighted_fp"}, w).c_max(3) == 6.0
    assert isinstance(form.to_spec({**s, "value_kind": "tp"}, w).build()[0], AdditiveValue)
    value, cost = spec.build()
    assert value.weights.tolist() == [1.0, 2.0, 3.0]
    assert cost.weights is None
    assert tradeoffs.value_max(value, 3) == 6.0
    assert form.target_percent(3.5, 35) == pytest.approx(10.0)


def test_settings_json_round_trip_and_weights():
    s = form.default_settings(100, 3)
    s["target"] = 1.7
    raw = form.settings_to_json(s, weights_frame(), "toy")
    doc = json.loads(raw)
    assert doc["format"] == SETTINGS_FORMAT and doc["weights"] == {"A": 1.0, "B": 2.0, "C": 3.0}
    back, weights, notes = form.settings_from_json(raw, form.default_settings(100, 3), CODES, 100)
    assert back == s and weights == {"A": 1.0, "B": 2.0, "C": 3.0} and notes == []


def test_settings_json_other_codes_keep_weights_and_unknown_fields_noted():
    doc = {"format": SETTINGS_FORMAT, "version": 1, "settings": {"target": 2.0, "colour": "red"}, "weights": {"A": 1}}
    back, weights, notes = form.settings_from_json(json.dumps(doc).encode(), form.default_settings(100, 3), CODES, 100)
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
    with pytest.raises(SettingsError, match=words):
        form.settings_from_json(raw, form.default_settings(100, 3), CODES, 100)


def test_run_key_changes_with_what_matters():
    s = form.default_settings(100, 3)
    w = np.ones(3)

    def key_of(data, weights, settings):
        return form.run_key(data, form.to_spec(settings, weights))

    key = key_of("data", w, s)
    assert key == key_of("data", w, dict(s))
    assert key != key_of("data", w, {**s, "target": 0.2})
    assert key != key_of("other", w, s)
    assert key != key_of("data", np.array([1.0, 1.0, 2.0]), s)
    assert key == key_of("data", w, {**s, "grid": {"n_targets": 3}})  # grid does not affect a replay
    assert key == key_of("data", w, {**s, "formula": "sum_hits(v)"})  # the formula matters only for a formula value


# --------------------------------------------------------------------------- weights & uploads


def test_formula_preview():
    text = form.formula_preview("sum_hits(v)", np.array([1.0, 2.0, 3.0]), [0.1, 0.2, 0.3], [1, 0, 1], CODES)
    assert "A, C" in text and "V = 4" in text
    with pytest.raises(FormulaError):
        form.formula_preview("nope(", np.ones(3), [0.1] * 3, [0] * 3, CODES)


# --------------------------------------------------------------------------- figures
