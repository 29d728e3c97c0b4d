"""Small drawing functions shared by the pages (each draws one recurring piece)."""
from __future__ import annotations

import streamlit as st

from favmac.ui import services, state

PAGES = (
    ("app.py", "Home", ":material/home:"),
    ("pages/1_Data.py", "Data", ":material/table_view:"),
    ("pages/2_Value_and_cost.py", "Value & cost", ":material/tune:"),
    ("pages/3_Online_session.py", "Online session", ":material/play_circle:"),
    ("pages/4_Trade-offs.py", "Trade-offs", ":material/insights:"),
    ("pages/5_Patients.py", "Patients", ":material/person_search:"),
    ("pages/6_Export.py", "Export", ":material/download:"),
)

PAGE_HELP = {
    "Data": "Pick a bundled sample or upload your calibration stream, new patients and risk weights.",
    "Value & cost": "Say what a good set is worth and what a false flag costs; set the target.",
    "Online session": "Replay the stream patient by patient and watch the cost stay under the target.",
    "Trade-offs": "Compare FavMac with the baselines across a range of targets.",
    "Patients": "Inspect one patient's probabilities, the greedy order and where the threshold cut it.",
    "Export": "Download the chosen sets and the settings; restore settings from a file.",
}

_LEVELS = {"error": st.error, "warning": st.warning, "success": st.success, "info": st.info}


def show_menu() -> None:
    """Sidebar navigation (replaces Streamlit's automatic page list, which would say 'app')."""
    with st.sidebar:
        st.markdown("### FavMac Studio")
        for path, label, icon in PAGES:
            st.page_link(path, label=label, icon=icon)


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
            rows = services.settings_summary(ss["settings"], state.c_max())
        except services.SettingsError as err:
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
        st.page_link("pages/1_Data.py", label="Go to Data", icon=":material/table_view:")
        st.stop()


def show_settings_line() -> None:
    """One caption line with the settings that produced the page's numbers."""
    rows = services.settings_summary(state.settings(), state.c_max())
    st.caption(" · ".join(f"{label}: {text}" for label, text in rows))
