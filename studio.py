"""FavMac Studio — the router. ``app.py`` serves it: start with ``streamlit run app.py``.

Every URL (``/``, ``/Data``, ``/Online_session``, ...) runs this file, which hands over to the
page's script; each page calls ``favmac.ui.bootstrap.page_setup`` first, so a deep link works
on a fresh session. The sidebar menu is drawn by ``page_setup`` (the built-in one is hidden).
"""
import streamlit as st

from favmac.ui.navigation import PAGES

pages = [st.Page(p.path, title=p.title, icon=p.icon, url_path=p.url_path or None, default=not p.url_path) for p in PAGES]
st.navigation(pages, position="hidden").run()
