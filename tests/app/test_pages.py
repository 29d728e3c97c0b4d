"""Every page runs on the sample data, works as a deep link, and keeps state across pages."""
from __future__ import annotations

import pytest
from app_helpers import PAGES, assert_clean, go, open_page


@pytest.mark.parametrize("name", list(PAGES))
def test_page_runs_as_deep_link_on_sample_data(name):
    at = open_page(name)  # fresh session: nothing from app.py has run
    assert_clean(at)
    ds = at.session_state["dataset"]
    assert ds.n_patients == 4000 and ds.n_codes == 35  # bundled HCC sample loaded by page_setup
    assert at.session_state["new_patients"] is not None
    sidebar_text = " ".join(m.value for m in at.sidebar.markdown) + " ".join(c.value for c in at.sidebar.caption)
    assert "4,000 patients" in sidebar_text and "Target c" in sidebar_text


def test_home_explains_and_links_every_page():
    at = open_page("home")
    text = " ".join(m.value for m in at.markdown)
    assert "on average" in text and "δ" in text
    labels = " ".join(link.proto.label for link in at.main.get("page_link"))
    for label in ("Data", "Value & cost", "Online session", "Trade-offs", "Patients", "Export"):
        assert label in labels


def test_page_switches_keep_state():
    at = open_page("value_cost")
    at.number_input(key="target").set_value(2.1)
    at.button(key="apply_settings").click().run()
    assert at.session_state["settings"]["target"] == pytest.approx(2.1)
    for name in ("online", "data", "patients", "home", "value_cost"):
        go(at, name)
        assert_clean(at)
        assert at.session_state["settings"]["target"] == pytest.approx(2.1)
    # the form shows the saved value again after coming back
    assert at.number_input(key="target").value == pytest.approx(2.1)


def test_loaded_sample_survives_navigation():
    at = open_page("data")
    at.radio(key="sample_choice").set_value("digits")
    at.button(key="load_sample").click().run()
    assert at.session_state["dataset"].n_codes == 10
    go(at, "online")
    assert_clean(at)
    go(at, "export")
    assert_clean(at)
    assert at.session_state["dataset"].n_codes == 10
    assert at.session_state["dataset_key"].startswith("sample:digits")


def test_two_sessions_do_not_share_data():
    first, second = open_page("data"), open_page("data")
    first.radio(key="sample_choice").set_value("digits")
    first.button(key="load_sample").click().run()
    go(second, "value_cost")
    second.number_input(key="target").set_value(5.1)
    second.button(key="apply_settings").click().run()
    second.run()
    assert first.session_state["dataset"].n_codes == 10
    assert second.session_state["dataset"].n_codes == 35
    assert first.session_state["settings"]["target"] != second.session_state["settings"]["target"]
    # objects from the shared parse cache are copies, never the same object
    assert first.session_state["weights"] is not second.session_state["weights"]
