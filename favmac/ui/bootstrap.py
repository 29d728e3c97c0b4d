"""``page_setup``: the first call of every page, so any page works as a deep link."""
from __future__ import annotations

import streamlit as st

from favmac.ui import state, widgets


def page_setup(title: str) -> None:
    """Page config, session-state defaults (sample data if nothing is loaded) and the sidebar.

    Every page calls this first; nothing relies on ``app.py`` having run.
    """
    st.set_page_config(page_title=f"{title} · FavMac Studio", page_icon=":material/fact_check:", layout="wide")
    state.init_state()
    widgets.show_menu()
    widgets.show_sidebar_summary()
