"""Value & cost offers the unsupported payment (RADV exposure) as a cost with the payment value only."""
from __future__ import annotations

from app_helpers import assert_clean, open_page, shown


def test_value_and_cost_chooses_the_unsupported_payment_with_its_unit():
    at = open_page("value_cost")
    assert at.radio(key="value_kind").value == "cms_payment"
    assert "Unsupported payment (RADV exposure)" in at.radio(key="cost_kind").options
    at.radio(key="cost_kind").set_value("cms_unsupported").run()  # a person picks the cost, then types the target
    at.number_input(key="target").set_value(0.05)
    at.button(key="apply_settings").click().run()
    assert_clean(at)
    settings = at.session_state["settings"]
    assert settings["cost_kind"] == "cms_unsupported" and settings["target"] == 0.05
    captions = " ".join(shown(c.value) for c in at.caption)
    assert "Unsupported payment: the target is in RAF of unsupported payment per chart" in captions
    assert "C_max) is 15.38" in captions  # the bound over the sample's cells, in RAF
    assert "Target c = 0.05 RAF of unsupported payment" in captions
    at.text_input(key="pay_base_rate").input("11000")
    at.button(key="apply_settings").click().run()
    assert_clean(at)
    assert "dollars of unsupported payment" in " ".join(shown(c.value) for c in at.caption)


def test_other_values_do_not_offer_it():
    at = open_page("value_cost")
    at.radio(key="value_kind").set_value("weighted_tp").run()
    assert "Unsupported payment (RADV exposure)" not in at.radio(key="cost_kind").options
    assert_clean(at)


def test_the_target_keeps_its_percentage_of_c_max_when_the_cost_changes():
    """1.05 false flags of C_max 35 is 3 %: the unsupported payment's target becomes 3 % of its own
    C_max (15.379 RAF on the sample), and back; nothing is saved until Apply."""
    at = open_page("value_cost")
    saved = dict(at.session_state["settings"])
    assert (saved["cost_kind"], saved["target"]) == ("fp", 1.05)
    at.radio(key="cost_kind").set_value("cms_unsupported").run()
    assert_clean(at)
    assert at.number_input(key="target").value == 0.46
    assert at.session_state["settings"] == saved
    at.radio(key="cost_kind").set_value("weighted_fp").run()
    assert at.number_input(key="target").value == round(0.46 / 15.379 * 19.59, 2)
    at.radio(key="cost_kind").set_value("fp").run()
    assert at.number_input(key="target").value == 1.05
    assert not at.warning, [w.value for w in at.warning]
    at.radio(key="cost_kind").set_value("cms_unsupported").run()
    at.button(key="apply_settings").click().run()
    assert_clean(at)
    assert (at.session_state["settings"]["cost_kind"], at.session_state["settings"]["target"]) == ("cms_unsupported", 0.46)
