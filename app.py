"""FavMac Studio. Start with: streamlit run app.py

This file is the server: Streamlit's ``st.App`` running the router ``studio.py`` (which hands
every URL to its page), with two labelled workarounds from ``favmac.ui.server``: routes that
serve the pages' HTML so a deep link (``/Data``, ...) connects at once, and a start-up hook that
turns Nagle's algorithm off on the server's socket (a small response on a kept-alive connection
no longer waits about 40 ms). ``favmac.ui.boundary.BoundaryMiddleware`` sits in front of
Streamlit's routes: downloads and uploads only for the browser session that made them, no public
``/_stcore/metrics``, security headers. Sign-in (``favmac.ui.auth``) is decided from the secrets.
The start-up hook (``favmac.ui.bootstrap.studio_lifespan``) also reads the bundled sample in the
background, so the first visitor's page does not wait for it.
"""
import streamlit as st
from starlette.middleware import Middleware

from favmac.ui.bootstrap import studio_lifespan
from favmac.ui.boundary import BoundaryMiddleware
from favmac.ui.navigation import PAGES
from favmac.ui.server import page_routes, url_prefix

app = st.App("studio.py", routes=page_routes(p.url_path for p in PAGES), lifespan=studio_lifespan,
             middleware=[Middleware(BoundaryMiddleware, prefix=url_prefix(), pages=[p.url_path for p in PAGES])])
