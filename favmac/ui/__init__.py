"""FavMac Studio: the Streamlit glue around the ``favmac`` library.

* ``services`` — pure functions behind the pages (no Streamlit; unit-tested directly).
* ``figures``  — plotly figure builders (Okabe-Ito palette, axis titles with units).
* ``state``    — the documented ``st.session_state`` keys and the actions that change them.
* ``widgets``  — small ``show_*`` functions that draw recurring pieces of the pages.
* ``bootstrap``— ``page_setup(title)``, the first call of every page.

The library core (``favmac/*.py``) never imports this package.
"""
