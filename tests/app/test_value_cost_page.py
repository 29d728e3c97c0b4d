"""Value & cost page: the settings form validates on submit and stores plain settings."""
from __future__ import annotations

import pytest
from app_helpers import assert_clean, open_page, shown


def submit(at):
    return at.button(key="apply_settings").click().run()


def test_submit_updates_settings_and_shows_percent_of_cmax():
    at = open_page("value_cost")
    at.number_input(key="target").set_value(7.1)
    at.radio(key="control").set_value("violation").run()  # δ is editable once violation control is chosen
    at.number_input(key="delta").set_value(0.2)
    at.radio(key="universe").set_value("prob")
    at.number_input(key="burn_in").set_value(500)
    at.checkbox(key="use_window").check().run()
    at.number_input(key="window").set_value(800)
    submit(at)
    assert_clean(at)
    s = at.session_state["settings"]
    assert (s["target"], s["control"], s["delta"], s["universe"], s["burn_in"], s["window"]) == (pytest.approx(7.1), "violation", pytest.approx(0.2), "prob", 500, 800)
    info = " ".join(i.value for i in at.info)
    assert "at most 20 % of charts with more than 7.1 false flags" in info  # the promise in plain words
    assert any("20.3 %" in c.value for c in at.caption)  # 7.1 of C_max = 35 false flags


def test_values_are_not_stored_before_submit():
    at = open_page("value_cost")
    at.number_input(key="target").set_value(9.9).run()
    assert at.session_state["settings"]["target"] != pytest.approx(9.9)


def test_invalid_formula_is_reported_and_settings_unchanged():
    at = open_page("value_cost")
    before = dict(at.session_state["settings"])
    at.radio(key="value_kind").set_value("formula").run()
    at.text_area(key="formula").set_value("sum_hits(v) +")
    submit(at)
    assert any("formula" in e.value.lower() for e in at.error)
    assert at.session_state["settings"]["value_kind"] == before["value_kind"]

    at.text_area(key="formula").set_value("no_such_function(v)")
    submit(at)
    assert any("no_such_function" in shown(e.value) for e in at.error)
    assert at.session_state["settings"]["value_kind"] == before["value_kind"]


def test_valid_formula_is_saved_and_previewed():
    at = open_page("value_cost")
    at.radio(key="value_kind").set_value("formula").run()
    at.text_area(key="formula").set_value("sum_hits(v) + 0.5 * n_hits")
    submit(at)
    assert_clean(at)
    assert at.session_state["settings"]["value_kind"] == "formula"
    assert any("V =" in c.value for c in at.caption)


def test_full_universe_offered_only_for_small_k():
    at = open_page("value_cost")
    assert not any(o.startswith("Every combination") for o in at.radio(key="universe").options)  # 35 codes
    at.switch_page("pages/1_Data.py").run()
    at.radio(key="sample_choice").set_value("digits")
    at.button(key="load_sample").click().run()
    at.switch_page("pages/2_Value_and_cost.py").run()
    assert any(o.startswith("Every combination") for o in at.radio(key="universe").options)  # 10 codes
    at.radio(key="universe").set_value("full")
    submit(at)
    assert_clean(at)
    assert at.session_state["settings"]["universe"] == "full"
    assert at.session_state["settings"]["score"] == "cost"  # the full universe has no price score
    assert any("no price score" in c.value for c in at.caption)


def test_zero_target_is_refused():
    at = open_page("value_cost")
    at.number_input(key="target").set_value(0.0)
    submit(at)
    assert any("target must be > 0" in e.value for e in at.error)


def test_score_choice_is_explained_and_saved():
    at = open_page("value_cost")
    radio = at.radio(key="score")
    assert radio.value == "price"  # the default (docs/score_comparison.md)
    assert at.session_state["settings"]["score"] == "price"
    labels = " ".join(radio.options)
    assert "spend the false-flag budget where each flag is most likely to pay off, across all patients" in labels
    assert "give every patient the same false-flag budget (the paper's rule)" in labels
    radio.set_value("cost")
    submit(at)
    assert_clean(at)
    assert at.session_state["settings"]["score"] == "cost"
    assert at.radio(key="score").value == "cost"


def test_score_follows_the_control_unless_the_user_picks_one():
    """favmac.scores.default_score through the form: a score left as shown follows the control."""
    at = open_page("value_cost")
    at.radio(key="control").set_value("violation")
    submit(at)
    assert_clean(at)
    assert at.session_state["settings"]["score"] == "cost" and at.radio(key="score").value == "cost"
    at.radio(key="score").set_value("price")
    submit(at)
    assert at.session_state["settings"]["score"] == "price"
    at.radio(key="control").set_value("expected")
    submit(at)
    assert at.session_state["settings"]["score"] == "price" and at.radio(key="score").value == "price"
