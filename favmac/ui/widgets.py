"""Small drawing functions shared by the pages (each draws one recurring piece of the current
session, :func:`favmac.ui.session.current`)."""
from __future__ import annotations

import streamlit as st

from favmac.runspec import SettingsError
from favmac.ui import settings_form
from favmac.ui.navigation import DATA, PAGES
from favmac.ui.session import current
from favmac.ui.text import md

_LEVELS = {"error": st.error, "warning": st.warning, "success": st.success, "info": st.info}


def show_menu() -> None:
    """Sidebar menu (studio.py hides st.navigation's own list so every page shows this one)."""
    with st.sidebar:
        st.markdown("### FavMac Studio")
        for entry in PAGES:
            st.page_link(entry.path, label=entry.title, icon=entry.icon)


def show_sidebar_summary() -> None:
    """Current dataset and settings, in the sidebar of every page.

    Drawn into a placeholder kept in the session (``Session.summary_slot``) so that an action
    later in the same run (Apply, an edited weight) redraws it with
    :func:`refresh_sidebar_summary` instead of leaving it one run behind.
    """
    with st.sidebar:
        st.divider()
        slot = st.empty()
    current().summary_slot = slot
    _draw_summary(slot)


def refresh_sidebar_summary() -> None:
    """Redraw the sidebar summary of this run (no-op before ``show_sidebar_summary``)."""
    slot = current().summary_slot
    if slot is not None:
        _draw_summary(slot)


def _draw_summary(slot) -> None:
    ss = current()
    with slot.container():
        st.markdown("**Dataset**")
        if not ss.has_dataset:
            st.caption("No data loaded.")
            return
        ds = ss.dataset
        new = ss.new_patients
        st.caption(
            f"{md(ds.name)}  \n{ds.n_patients:,} patients × {ds.n_codes} codes  \n"
            f"New patients: {'none' if new is None else f'{len(new):,}'}  \n"
            f"Weights: {md(ss.weights_source or '—')}"
        )
        st.markdown("**Settings**")
        try:
            rows = settings_form.settings_summary(ss.settings, ss.c_max())
        except SettingsError as err:
            st.caption(f"Settings need attention: {md(err)}")
            return
        st.caption("  \n".join(f"{label}: {md(text)}" for label, text in rows))


def show_message(area: str) -> None:
    """Draw the stored message of ``area`` (if any)."""
    message = (current().messages or {}).get(area)
    if message:
        level, text = message
        _LEVELS.get(level, st.info)(md(text))  # messages quote file names and cells: never Markdown


def require_dataset() -> None:
    """Stop the page with a pointer to the Data page when no data is loaded."""
    if not current().has_dataset:
        show_message("calibration")
        st.warning("No calibration data is loaded. Load a sample or upload your files on the Data page.")
        st.page_link(DATA.path, label="Go to Data", icon=DATA.icon)
        st.stop()


def show_settings_line() -> None:
    """One caption line with the settings that produced the page's numbers."""
    ss = current()
    rows = settings_form.settings_summary(ss.settings, ss.c_max())
    st.caption(" · ".join(f"{label}: {md(text)}" for label, text in rows))
