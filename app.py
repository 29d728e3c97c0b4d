"""FavMac Studio. Start with: streamlit run app.py

This file is the server: Streamlit's ``st.App`` running the router ``studio.py`` (which hands
every URL to its page), with routes that serve the pages' HTML so a deep link (``/Data``, ...)
connects at once (``favmac.ui.server``).
"""
import streamlit as st

from favmac.ui.navigation import PAGES
from favmac.ui.server import page_routes

app = st.App("studio.py", routes=page_routes(p.url_path for p in PAGES))
