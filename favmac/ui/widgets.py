"""Small drawing functions shared by the pages (each draws one recurring piece)."""
from __future__ import annotations

import streamlit as st

from favmac.runspec import SettingsError
from favmac.ui import settings_form, state
from favmac.ui.navigation import DATA, PAGES

_LEVELS = {"error": st.error, "warning": st.warning, "success": st.success, "info": st.info}


def show_menu() -> None:
    """Sidebar menu (app.py hides st.navigation's own list so every page shows this one)."""
    with st.sidebar:
        st.markdown("### FavMac Studio")
        for entry in PAGES:
            st.page_link(entry.path, label=entry.title, icon=entry.icon)


def show_sidebar_summary() -> None:
    """Current dataset and settings, in the sidebar of every page."""
    ss = st.session_state
    with st.sidebar:
        st.divider()
        st.markdown("**Dataset**")
        if not state.has_dataset():
            st.caption("No data loaded.")
            return
        ds = ss["dataset"]
        new = ss.get("new_patients")
        st.caption(
            f"{ds.name}  \n{ds.n_patients:,} patients × {ds.n_codes} codes  \n"
            f"New patients: {'none' if new is None else f'{len(new):,}'}  \n"
            f"Weights: {ss.get('weights_source', '—')}"
        )
        st.markdown("**Settings**")
        try:
            rows = settings_form.settings_summary(ss["settings"], state.c_max())
        except SettingsError as err:
            st.caption(f"Settings need attention: {err}")
            return
        st.caption("  \n".join(f"{label}: {text}" for label, text in rows))


def show_message(area: str) -> None:
    """Draw the stored message of ``area`` (if any)."""
    message = st.session_state.get("messages", {}).get(area)
    if message:
        level, text = message
        _LEVELS.get(level, st.info)(text)


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
    st.caption(" · ".join(f"{label}: {text}" for label, text in rows))
