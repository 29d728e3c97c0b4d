"""A session's first run: the page's controls, with the sidebar (menu and summary), charts and
tables in the next run.

``favmac.ui.bootstrap.page_setup`` is the app's one first-visit mechanism, the same for every
page: a fresh session's first run leaves the sidebar to a timer in the browser that reruns the
page ``REST_DELAY`` seconds later, and during that first run ``widgets.chart`` / ``table`` /
``editor`` draw a note where their element will be. AppTest runs no timers:
``open_page(..., first_run_only=True)`` shows the first run, and ``at.run()`` is what the timer does.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from app_helpers import PAGES, REPO, assert_clean, go, open_page

from favmac.ui import bootstrap, widgets

# page: a control the first run draws (kind, key)
FIRST_CONTROL = {
    "home": ("page_link", None),
    "data": ("radio", "sample_choice"),
    "value_cost": ("button", "apply_settings"),
    "online": ("button", "play"),
    "tradeoffs": ("button", "run_tradeoffs"),
    "patients": ("radio", "patient_source"),
    "export": ("download_button", "download_settings"),
    "validity": ("button", "run_validity"),
    "programs": ("text_input", "program_new_name"),
}


HEAVY = ("plotly_chart", "dataframe", "arrow_data_frame")  # elements whose front-end code is large


def heavy(at) -> int:
    return sum(len(at.get(kind)) for kind in HEAVY)


def later_notes(at) -> int:
    return sum(c.value == widgets.LATER_NOTE for c in at.caption)


def menu_notes(at) -> list[str]:
    return [c.value for c in at.sidebar.caption if c.value == bootstrap.MENU_NOTE]


def summary(at) -> bool:
    return any(m.value == "**Dataset**" for m in at.sidebar.markdown)


def test_every_page_is_listed():
    assert set(FIRST_CONTROL) == set(PAGES)


# The Online session reruns itself once its replay is ready (here at once: the tests wait for jobs),
# and that run, a session's second, draws the sidebar.
@pytest.mark.parametrize("name", [name for name in FIRST_CONTROL if name != "online"])
def test_first_run_draws_the_page_then_the_next_run_the_sidebar(name):
    kind, key = FIRST_CONTROL[name]
    at = open_page(name, first_run_only=True)
    assert_clean(at)
    assert at.session_state["_rest_pending"] is True
    assert [e for e in at.get(kind) if key is None or (e.proto.id and key in e.proto.id)], f"{kind} {key} not drawn by the first run"
    assert not at.sidebar.get("page_link") and menu_notes(at) == [bootstrap.MENU_NOTE] and not summary(at)
    assert heavy(at) == 0
    notes = later_notes(at)
    if name in ("data", "patients"):
        assert notes > 0  # where the charts and tables will be

    at.run()  # what the browser's timer does REST_DELAY seconds later
    assert_clean(at)
    assert "_rest_pending" not in at.session_state
    assert menu_notes(at) == [] and summary(at)
    assert len(at.sidebar.get("page_link")) == len(PAGES)
    assert later_notes(at) == 0 and (heavy(at) > 0 or notes == 0)  # every note became its chart or table


def test_online_session_rerun_for_its_replay_draws_the_sidebar():
    at = open_page("online", first_run_only=True)
    assert_clean(at)
    assert at.session_state["_page_runs"] == 2 and "_rest_pending" not in at.session_state
    assert at.button(key="play") and not at.button(key="play").disabled
    assert menu_notes(at) == [] and summary(at) and len(at.sidebar.get("page_link")) == len(PAGES)


def test_no_page_branches_on_the_first_run():
    """The first-visit mechanism lives in page_setup only: no page asks whether it is a first run."""
    for path in PAGES.values():
        source = (REPO / path).read_text()
        assert "first_run" not in source and "draw_rest_later" not in source and "REST_NOTE" not in source, path


def test_later_runs_of_the_session_draw_the_sidebar_at_once():
    at = open_page("home")
    go(at, "data")
    assert menu_notes(at) == [] and at.get("plotly_chart") and summary(at)
    go(at, "patients")
    assert menu_notes(at) == [] and at.get("plotly_chart") and summary(at)


def test_using_a_control_before_the_timer_draws_the_whole_page():
    at = open_page("data", first_run_only=True)
    at.radio(key="sample_choice").set_value("digits")
    at.button(key="load_sample").click().run()
    assert_clean(at)
    assert at.session_state["dataset"].n_codes == 10
    assert menu_notes(at) == [] and at.get("plotly_chart") and summary(at)
    assert "_rest_pending" not in at.session_state
    assert "Digits" in " ".join(c.value for c in at.sidebar.caption)  # the summary shows the sample just loaded


def test_the_benchmark_knows_the_note():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    import bench_first_visit

    assert bootstrap.MENU_NOTE.startswith(bench_first_visit.MENU_NOTE)
