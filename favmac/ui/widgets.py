"""Small drawing functions shared by the pages (each draws one recurring piece)."""
from __future__ import annotations

import streamlit as st

from favmac.runspec import SettingsError
from favmac.ui import settings_form, state
from favmac.ui.bootstrap import SUMMARY_SLOT
from favmac.ui.navigation import DATA
from favmac.ui.text import md

_LEVELS = {"error": st.error, "warning": st.warning, "success": st.success, "info": st.info}




def show_sidebar_summary() -> None:
    """Current dataset and settings, in the sidebar of every page.

    Drawn into a placeholder kept in ``st.session_state[SUMMARY_SLOT]`` so that an action later
    in the same run (Apply, a restored settings file, an upload) redraws it with
    :func:`refresh_sidebar_summary` instead of leaving it one run behind.
    """
    with st.sidebar:
        st.divider()
        slot = st.empty()
    st.session_state[SUMMARY_SLOT] = slot
    _draw_summary(slot)


def refresh_sidebar_summary() -> None:
    """Redraw the sidebar summary of this run (no-op before ``show_sidebar_summary``)."""
    slot = st.session_state.get(SUMMARY_SLOT)
    if slot is not None:
        _draw_summary(slot)


def _draw_summary(slot) -> None:
    ss = st.session_state
    with slot.container():
        st.markdown("**Dataset**")
        if not state.has_dataset():
            st.caption("No data loaded.")
            return
        ds = ss["dataset"]
        new = ss.get("new_patients")
        st.caption(
            f"{md(ds.name)}  \n{ds.n_patients:,} patients × {ds.n_codes} codes  \n"
            f"New patients: {'none' if new is None else f'{len(new):,}'}  \n"
            f"Weights: {md(ss.get('weights_source', '—'))}"
        )
        st.markdown("**Settings**")
        try:
            rows = settings_form.settings_summary(ss["settings"], state.c_max())
        except SettingsError as err:
            st.caption(f"Settings need attention: {md(err)}")
            return
        st.caption("  \n".join(f"{label}: {md(text)}" for label, text in rows))


def show_message(area: str) -> None:
    """Draw the stored message of ``area`` (if any)."""
    message = st.session_state.get("messages", {}).get(area)
    if message:
        level, text = message
        _LEVELS.get(level, st.info)(md(text))  # messages quote file names and cells: never Markdown


def require_dataset() -> None:
    """Stop the page with a pointer to the Data page when no data is loaded."""
    if not state.has_dataset():
        show_message("calibration")
        st.warning("No calibration data is loaded. Load a sample or upload your files on the Data page.")
        st.page_link(DATA.path, label="Go to Data", icon=DATA.icon)
        st.stop()


def show_settings_line() -> None:
    """One caption line with the settings that produced the page's numbers."""
    rows = settings_form.settings_summary(state.settings(), state.c_max())
    st.caption(" · ".join(f"{label}: {md(text)}" for label, text in rows))
