"""Trade-offs: the default grid is decided from the data; your range in cost per 100 charts; old settings files."""
from __future__ import annotations

import json

import numpy as np
from app_helpers import assert_clean, go, open_additive, open_page, settle_jobs, shown

from favmac import target_grid


def grid_caption(at) -> str:
    return next(shown(c.value) for c in at.caption if "evenly spaced" in shown(c.value))


def test_the_default_grid_covers_the_budgets_the_data_makes_informative():
    at = open_page("tradeoffs")
    assert_clean(at)
    low, high = at.number_input(key="grid_low"), at.number_input(key="grid_high")
    assert low.value is None and high.value is None  # empty: decided from the data
    assert low.label == "Lowest target (false flags per 100 charts)"
    at.pills(key="grid_methods").set_value(["FavMac (price)"])
    at.button(key="run_tradeoffs").click().run()
    at = settle_jobs(at)
    assert_clean(at)
    targets = at.session_state["tradeoffs"]["targets"]
    target = at.session_state["settings"]["target"]
    assert len(targets) == 11 and target in targets and targets[0] < 0.1 and targets[-1] < 5  # not 5-50 % of C_max = 1.75-17.5
    text = grid_caption(at)
    assert text.startswith(f"11 targets from {targets[0] * 100:g} to {targets[-1] * 100:g} false flags per 100 charts, evenly spaced on a log scale")
    assert "burn-in patients" in text and f"plus your target c = {target:g}" in text


def test_your_range_is_kept_in_its_cost_and_an_old_settings_file_keeps_its_percent_grid():
    at = open_additive("tradeoffs")
    at.number_input(key="grid_low").set_value(20.0)
    at.number_input(key="grid_high").set_value(200.0)
    at.number_input(key="grid_n").set_value(2)
    at.pills(key="grid_methods").set_value(["CRC"])
    at.button(key="run_tradeoffs").click().run()
    at = settle_jobs(at)
    assert_clean(at)
    np.testing.assert_allclose(at.session_state["tradeoffs"]["targets"], [0.2, 1.05, 2.1])  # 2 moved 0.1 off the integer
    assert "from your lowest to your highest" in grid_caption(at)
    # another cost: the numbers were false flags, so the data decides again, and the page says so
    go(at, "value_cost")
    at.radio(key="cost_kind").set_value("weighted_fp")
    at.button(key="apply_settings").click().run()
    at = go(at, "tradeoffs")
    assert_clean(at)
    assert at.number_input(key="grid_low").value is None
    assert "set for another cost (fp)" in " ".join(shown(c.value) for c in at.caption)
    # a settings file written before the automatic grid: its % of C_max grid, as it was
    settings = {"grid": {"low_pct": 10.0, "high_pct": 30.0, "n_targets": 3, "methods": ["CRC"]}, "cost_kind": "fp"}
    go(at, "export")
    raw = json.dumps({"format": "favmac-studio-settings", "version": 1, "settings": settings}).encode()
    at.file_uploader(key="upload_settings").set_value(("old.json", raw, "application/json"))
    at.run()
    assert_clean(at)
    at = go(at, "tradeoffs")
    assert at.session_state["settings"]["grid"]["percent"]
    assert (at.number_input(key="grid_low").value, at.number_input(key="grid_high").value) == (350.0, 1050.0)
    at.button(key="run_tradeoffs").click().run()  # left as shown: still 10-30 % of C_max
    at = settle_jobs(at)
    expected = target_grid.tradeoff_targets(35.0, 10, 30, 3, True, include=at.session_state["settings"]["target"])
    np.testing.assert_allclose(at.session_state["tradeoffs"]["targets"], expected)
    assert "10–30 % of C_max" in grid_caption(at)


def test_a_bad_range_is_refused_and_nothing_changes():
    at = open_page("tradeoffs")
    before = dict(at.session_state["settings"]["grid"])
    at.number_input(key="grid_low").set_value(300.0)
    at.number_input(key="grid_high").set_value(100.0)
    at.button(key="run_tradeoffs").click().run()
    assert not at.exception
    assert any("must be below the highest" in shown(e.value) for e in at.error), [e.value for e in at.error]
    assert at.session_state["settings"]["grid"] == before and at.session_state["tradeoffs"] is None
