"""``page_setup``: the first call of every page, so any page works as a deep link;
``draw_rest_later``: where a new session's first run of a page stops (menu, charts and tables
next run).

Imports only Streamlit and the page table at module level: ``state`` and ``widgets`` (numpy,
pandas, the library) are imported when the data is set up, so the Home page can draw its text
first.
"""
from __future__ import annotations

import threading
import time

import streamlit as st

from favmac.ui.navigation import PAGES

SUMMARY_SLOT = "_sidebar_summary_slot"  # session key of this run's sidebar-summary placeholder
PAGE_RUNS = "_page_runs"  # session key: page runs so far in this session (counted by page_setup)
REST_PENDING = "_rest_pending"  # session key: the first run stopped at draw_rest_later; its timer reruns the page
# Seconds between a session's first run (title, menu, first controls) and the run that draws the
# rest of the page (tables, charts): time for the browser to fetch the first controls' code.
REST_DELAY = 0.3
REST_NOTE = "Loading the rest of the page…"  # shown where the rest will be, until that run draws it
MENU_NOTE = "Loading the menu…"  # the same, in the sidebar where the menu will be

_WARM_UP = threading.Lock()
_warm_up_started = False


def page_setup(title: str, *, load_data: bool = True, menu_first: bool = False) -> None:
    """Page config, session-state defaults (sample data if nothing is loaded) and the sidebar.

    Every page calls this first; nothing relies on ``studio.py`` having run. The first call in a
    server process also starts :func:`warm_up` in the background.

    ``load_data=False`` (the Home page) draws the menu and leaves the data for
    :func:`load_data`, called once the page's own text is on screen: a first visit then shows
    the page before the sample is read (and pandas imported).

    On a session's first run the menu and the dataset summary come a moment later (the run
    :func:`draw_rest_later` describes, started here when the page does not start it itself):
    the browser renders the sidebar before the page, and fetching the page links' code first held
    a deep link's title and controls back by about 0.1 s (docs/first_visit.md). ``menu_first=True``
    (Home, whose first control is the menu) draws the menu at once.
    """
    ss = st.session_state
    ss[PAGE_RUNS] = ss.get(PAGE_RUNS, 0) + 1
    if ss[PAGE_RUNS] > 1:
        ss.pop(REST_PENDING, None)  # left over when the user moved on before the timer fired
    st.set_page_config(page_title=f"{title} · FavMac Studio", page_icon=":material/fact_check:", layout="wide")
    later = first_run() and not menu_first  # menu and summary come with the next run
    if later:
        with st.sidebar:
            _rerun_soon(MENU_NOTE)  # where the menu will be; its timer reruns the page with it
    else:
        show_menu()
    if load_data:
        from favmac.ui import state, widgets

        state.init_state()
        if not later:
            widgets.show_sidebar_summary()
    elif not later:
        with st.sidebar:
            st.divider()
            st.session_state[SUMMARY_SLOT] = st.empty()  # filled by load_data()
    _start_warm_up()


def show_menu() -> None:
    """Sidebar menu (studio.py hides st.navigation's own list so every page shows this one)."""
    with st.sidebar:
        st.markdown("### FavMac Studio")
        for entry in PAGES:
            st.page_link(entry.path, label=entry.title, icon=entry.icon)


def load_data() -> None:
    """The data half of ``page_setup(load_data=False)``: session defaults, then the sidebar summary."""
    from favmac.ui import state, widgets

    state.init_state()
    widgets.refresh_sidebar_summary()


def draw_rest_later(note: bool = True) -> None:
    """On the session's first page run, end the run here; the rest of the page comes a moment later.

    A first visit (a new browser tab or a deep link) has to fetch the front-end code of every
    kind of element the run draws, from this same server, before it can show them. Charts and
    data tables need the largest pieces (plotly's is 4.7 MB), controls drawn in the same run
    were seen to wait for them (the Patients page's patient box: about 2.4 s after the page
    connected, 0.6 s once the chart came in a later run), and the Python that builds them holds
    the GIL the server needs to send that code. So a page calls this after its title and first
    controls: the first run stops here (with a note where the rest will be) and the browser
    reruns the page ``REST_DELAY`` seconds later, a run that draws everything. Every later run
    of the session (widget changes, page switches) draws the whole page at once.

    ``note=False``: the page showed :data:`REST_NOTE` itself, where the rest will be (the note
    still comes here if this call has to start the timer).
    """
    if not first_run():
        return
    if st.session_state.get(REST_PENDING):  # page_setup's timer (the menu's) already runs
        if note:
            st.caption(REST_NOTE)
    else:
        _rerun_soon(REST_NOTE)
    st.stop()


def first_run() -> bool:
    """True during the session's first page run (a new tab or a deep link), the run that
    :func:`draw_rest_later` ends early. A page may leave out of it a control whose front-end code
    is large (a slider) when a control drawn beside it is what the visitor needs first."""
    return st.session_state.get(PAGE_RUNS, 0) <= 1


@st.fragment(run_every=REST_DELAY)
def _rerun_soon(note: str) -> None:
    """Drawn by the first run (a note); its first timer tick reruns the whole page. One per run."""
    ss = st.session_state
    if ss.get(REST_PENDING):
        ss.pop(REST_PENDING)
        st.rerun()
    ss[REST_PENDING] = True
    st.caption(note)


def warm_up(delay: float = 1.0) -> None:
    """Load the replay's compiled kernels (numba, cached on disk) on a 20-patient toy stream, so the
    first visitor's replay does not pay for it. Waits ``delay`` seconds first: the page that
    started it finishes drawing before the warm-up competes for the CPU."""
    time.sleep(delay)
    import numpy as np

    from favmac.methods import run_method
    from favmac.runspec import RunSpec

    rng = np.random.RandomState(0)
    probs = rng.random_sample((20, 3))
    labels = rng.random_sample((20, 3)) < probs
    for control in ("expected", "violation"):
        run_method(RunSpec(targets=(1.1,), burn_in=5, control=control), "FavMac (ratio)", probs, labels)


def _start_warm_up() -> None:
    global _warm_up_started
    with _WARM_UP:
        if _warm_up_started:
            return
        _warm_up_started = True
    threading.Thread(target=_quietly(warm_up), name="favmac warm-up", daemon=True).start()


def _quietly(fn):
    def run():
        try:
            fn()
        except Exception:  # noqa: BLE001 — a failed warm-up only means the first replay is slower
            pass

    return run
