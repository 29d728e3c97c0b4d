"""A session's first run: title and first controls first, tables and charts in the next run.

``favmac.ui.bootstrap.draw_rest_later`` ends a fresh session's first run of a page with tables
or charts right after its first controls; a timer in the browser reruns the page
``REST_DELAY`` seconds later. AppTest runs no timers: ``open_page(..., first_run_only=True)``
shows the first run, and ``at.run()`` is what the timer does.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from app_helpers import assert_clean, go, open_page

from favmac.ui import bootstrap

# page: (a control drawn by the first run, element kinds that only the next run draws)
DEFERRED = {
    "home": (("page_link", None), ("metric",)),
    "data": (("radio", "sample_choice"), ("plotly_chart", "dataframe", "arrow_data_frame")),
    # the form's value and cost and its Apply button; its guarantee inputs (the right column) next run
    "value_cost": (("button", "apply_settings"), ("number_input", "selectbox", "checkbox", "info")),
    "online": (("button", "play"), ("metric", "progress", "select_slider")),
    "patients": (("radio", "patient_source"), ("selectbox", "text_input", "plotly_chart", "metric", "dataframe", "arrow_data_frame")),
    "export": (("download_button", "download_settings"), ("file_uploader", "dataframe", "arrow_data_frame")),
    "validity": (("button", "run_validity"), ("number_input",)),
}


def notes(at) -> list[str]:
    return [c.value for c in at.caption if c.value == bootstrap.REST_NOTE]


def menu_notes(at) -> list[str]:
    return [c.value for c in at.sidebar.caption if c.value == bootstrap.MENU_NOTE]


def summary(at) -> bool:
    return any(m.value == "**Dataset**" for m in at.sidebar.markdown)


def count(at, kinds) -> int:
    return sum(len(at.get(kind)) for kind in kinds)


@pytest.mark.parametrize("name", list(DEFERRED))
def test_first_run_draws_the_controls_then_the_next_run_the_rest(name):
    (kind, key), later = DEFERRED[name]
    at = open_page(name, first_run_only=True)
    assert_clean(at)
    assert at.session_state["_rest_pending"] is True
    assert notes(at) == [bootstrap.REST_NOTE]
    if key is None:  # Home: its first control is the menu
        assert at.sidebar.get(kind)
    else:
        assert [e for e in at.get(kind) if e.proto.id and key in e.proto.id], f"{kind} {key} not drawn by the first run"
    # the menu: Home's first control; on the other pages it comes with the rest (a note in its place)
    assert len(at.sidebar.get("page_link")) == (8 if name == "home" else 0)
    assert menu_notes(at) == ([] if name == "home" else [bootstrap.MENU_NOTE])
    # the dataset summary comes with the rest
    assert not summary(at)
    assert count(at, later) == 0

    at.run()  # what the browser's timer does REST_DELAY seconds later
    assert_clean(at)
    assert "_rest_pending" not in at.session_state
    assert notes(at) == [] and menu_notes(at) == []
    assert count(at, later) > 0
    assert len(at.sidebar.get("page_link")) == 8
    assert summary(at)


@pytest.mark.parametrize("name", ["tradeoffs"])
def test_pages_without_tables_or_charts_draw_all_but_the_sidebar_at_once(name):
    at = open_page(name, first_run_only=True)
    assert_clean(at)
    assert notes(at) == [] and at.get("form")
    assert at.session_state["_rest_pending"] is True and menu_notes(at) == [bootstrap.MENU_NOTE]
    assert not at.sidebar.get("page_link") and not summary(at)
    at.run()  # the timer: menu and summary
    assert "_rest_pending" not in at.session_state and menu_notes(at) == [] and summary(at)
    assert len(at.sidebar.get("page_link")) == 8


def test_value_and_cost_first_run_draws_value_and_cost_inside_the_form():
    at = open_page("value_cost", first_run_only=True)
    assert at.radio(key="value_kind") and at.radio(key="cost_kind") and at.text_area(key="formula")
    assert not [r for r in at.radio if r.key in ("control", "universe", "score")]
    at.run()
    assert {r.key for r in at.radio} >= {"value_kind", "cost_kind", "control", "universe", "score"}
    assert at.number_input(key="target").value == at.session_state["settings"]["target"]
    at.number_input(key="target").set_value(2.0)
    at.button(key="apply_settings").click().run()
    assert_clean(at)
    assert at.session_state["settings"]["target"] == 2.0


def test_later_runs_of_the_session_draw_the_whole_page():
    at = open_page("home")
    go(at, "data")
    assert notes(at) == [] and at.get("plotly_chart")
    go(at, "patients")
    assert notes(at) == [] and at.get("plotly_chart")


def test_using_a_control_before_the_timer_draws_the_whole_page():
    at = open_page("data", first_run_only=True)
    at.radio(key="sample_choice").set_value("digits")
    at.button(key="load_sample").click().run()
    assert_clean(at)
    assert at.session_state["dataset"].n_codes == 10
    assert notes(at) == [] and at.get("plotly_chart")
    assert "_rest_pending" not in at.session_state


def test_the_benchmark_knows_the_note():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    import bench_first_visit

    assert bootstrap.REST_NOTE.startswith(bench_first_visit.REST_NOTE)
