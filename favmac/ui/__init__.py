"""FavMac Studio: the Streamlit glue around the ``favmac`` library.

No Streamlit (plain functions, unit-tested directly):

* ``samples``       — the bundled sample datasets, uploaded-bytes wrapper, content fingerprints.
* ``weights_view``  — the risk-weights table (checks, descriptions, unit weights).
* ``settings_form`` — the settings form's dict and its bridge to ``favmac.runspec.RunSpec``.
* ``data_views``    — prevalence and reliability tables of the Data page.
* ``playback``      — the Online session: its replay, running series and playback state machine.
* ``tradeoffs``     — the Trade-offs comparison over the method registry (``favmac.methods``).
* ``patients``      — one patient's codes, the greedy cut and the chosen set's numbers.
* ``navigation``    — the page table (file, title, icon, URL path) used by ``studio.py`` and the menu,
  and ``EXPLAIN``, one-line explanations of C_max, universe, burn-in, exchangeable.
* ``figures``       — plotly figure builders (Okabe-Ito palette, axis titles with units).
* ``text``          — ``md`` / ``md_frame`` (Markdown, st.table) and ``plain_html`` (plotly): user text (ids, codes,
  segment values, file names, descriptions, formulas, cells) shown literally; direction controls made visible.
* ``formats``       — number formats: one per table column, enough digits in inputs.
* ``jobs``          — ``Job``: a long computation in a background thread, with its progress.

Streamlit:

* ``state``     — the documented ``st.session_state`` keys and the actions that change them
  (including the background jobs a session keeps across page switches).
* ``widgets``   — small ``show_*`` functions that draw recurring pieces of the pages.
* ``server``    — the pages' HTML for ``app.py`` (an ``st.App``): it tells Streamlit's front end the
  server's address, so a deep link (``/Data``) connects at once; the start-up hook that turns
  Nagle's algorithm off on the server's socket; the middleware that answers Streamlit's
  front-end files from memory (starlette, no ``st`` calls).
* ``bootstrap`` — ``page_setup(title)``, the first call of every page; the sidebar menu;
  ``draw_rest_later()`` (a new session's first run stops after the first controls, the next
  draws the rest); the once-per-server warm-up of the replay kernels.

The library core (``favmac/*.py``) never imports this package.
"""
