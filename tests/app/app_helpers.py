"""Helpers shared by the AppTest suite of FavMac Studio.

A deep link (a browser opening ``/Data`` directly) runs only that page's script in a fresh
session; ``AppTest.from_file(studio.py).switch_page(page)`` before the first ``run()`` does
exactly that. (``AppTest.from_file(page)`` would instead treat the page as the app's
entrypoint, where the shared menu's links to ``studio.py`` cannot resolve.)
"""
from __future__ import annotations

import sys
from pathlib import Path

from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from favmac.ui.session import Session  # noqa: E402

REST_PENDING = Session.rest_pending.key

APP = REPO / "studio.py"  # the router (app.py is the st.App server around it)
SAMPLES = REPO / "sample_data"
PAGES = {
    "home": "pages/0_Home.py",
    "data": "pages/1_Data.py",
    "value_cost": "pages/2_Value_and_cost.py",
    "online": "pages/3_Online_session.py",
    "tradeoffs": "pages/4_Trade-offs.py",
    "patients": "pages/5_Patients.py",
    "export": "pages/6_Export.py",
    "validity": "pages/7_Validity.py",
    "programs": "pages/8_Programs.py",
}
TIMEOUT = 300  # a first replay may compile numba kernels (tests/conftest.py compiles the main ones first)


def open_page(name: str, *, first_run_only: bool = False) -> AppTest:
    """A fresh session whose first request is a deep link to page ``name`` (already run).

    A session's first run leaves the sidebar to a timer in the browser that reruns the page
    (``favmac.ui.bootstrap.page_setup``); AppTest runs no timers, so this reruns the page as that
    timer would (``first_run_only=True``: not, to look at the first run itself).
    """
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    if name != "home":
        at.switch_page(PAGES[name])
    at.run()
    if not first_run_only and REST_PENDING in at.session_state and at.session_state[REST_PENDING]:
        at.run()
    return at


def n_predicted(at: AppTest, n_patients: int) -> int:
    """How many of ``n_patients`` the session predicts: all but the recalibration fold (the settings'
    ``recalibrate``, on by default for a stream of at least 3,000 patients) and the burn-in after it."""
    settings = at.session_state["settings"]
    return n_patients - int(settings.get("recalibrate") or 0) - int(settings["burn_in"])


def n_streamed(at: AppTest, n_patients: int) -> int:
    """How many of ``n_patients`` calibrate or are predicted: all but the recalibration fold."""
    return n_patients - int(at.session_state["settings"].get("recalibrate") or 0)


def go(at: AppTest, name: str) -> AppTest:
    """Navigate an existing session to page ``name`` (state carries over)."""
    return at.switch_page(PAGES[name]).run()


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def shown(text: str) -> str:
    """What the browser shows for Markdown ``text`` that went through ``favmac.ui.text.md``."""
    import re

    return re.sub(r"\\(.)", r"\1", str(text))


def settle_jobs(at: AppTest, timeout: float = TIMEOUT) -> AppTest:
    """Wait for the session's background jobs (a browser's progress fragment reruns the page when
    one ends; AppTest does not run timed fragments), then run the page again."""
    jobs = dict(at.session_state["jobs"]) if "jobs" in at.session_state else {}
    if not jobs:
        return at
    for job in jobs.values():
        assert job.wait(timeout), f"{job!r} did not finish in {timeout} s"
    return at.run()


def open_additive(name: str) -> AppTest:
    """A fresh session on page ``name`` with the additive value (risk-weighted TP), not the HCC
    sample's default CMS-HCC payment value: for tests that compare with ``AdditiveValue``."""
    at = open_page("value_cost")
    at.radio(key="value_kind").set_value("weighted_tp")
    at.button(key="apply_settings").click().run()
    return at if name == "value_cost" else go(at, name)
