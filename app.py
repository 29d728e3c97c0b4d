"""FavMac Studio. Start with: streamlit run app.py

This file is the server: Streamlit's ``st.App`` running the router ``studio.py`` (which hands
every URL to its page), with routes that serve the pages' HTML so a deep link (``/Data``, ...)
connects at once; a start-up hook that turns Nagle's algorithm off on the server's socket (a
small response on a kept-alive connection no longer waits about 40 ms); and a middleware that
answers Streamlit's front-end files from memory (``favmac.ui.server``).
"""
import streamlit as st

from favmac.ui.navigation import PAGES
from favmac.ui.server import lifespan, middleware, page_routes

app = st.App("studio.py", routes=page_routes(p.url_path for p in PAGES), lifespan=lifespan, middleware=middleware())
