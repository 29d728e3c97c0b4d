"""FavMac Studio: the Streamlit glue around the ``favmac`` library.

No Streamlit (plain functions, unit-tested directly):

* ``samples``       — the bundled sample datasets, uploaded-bytes wrapper, content fingerprints.
* ``weights_view``  — the risk-weights table (checks, descriptions, unit weights).
* ``settings_form`` — the settings form's dict and its bridge to ``favmac.runspec.RunSpec``.
* ``data_views``    — prevalence and reliability tables of the Data page.
* ``playback``      — the Online session: its replay, running series and playback state machine.
* ``tradeoffs``     — the Trade-offs page's comparison table over ``favmac.tradeoffs`` (the library's comparison).
* ``tradeoff_grid`` — the Trade-offs grid's caption and form over ``favmac.target_grid`` (the library's targets).
* ``patients``      — one patient's codes, the greedy cut and the chosen set's numbers.
* ``navigation``    — the page table (file, title, icon, URL path) used by ``studio.py`` and the menu,
  and ``EXPLAIN``, one-line explanations of C_max, universe, burn-in, exchangeable.
* ``figures``       — plotly figure builders (Okabe-Ito palette, axis titles with units).
* ``text``          — ``md`` / ``md_frame`` (Markdown, st.table) and ``plain_html`` (plotly): user text (ids, codes,
  segment values, file names, descriptions, formulas, cells) shown literally; direction controls made visible.
* ``formats``       — number formats: one per table column, enough digits in inputs.
* ``validity``      — the Validity page's histogram and per-segment table.

Streamlit (module imports only go down this list; ``tests/ui/test_ui_imports.py`` checks there is no cycle):

* ``server``    — the two labelled workarounds ``app.py`` (an ``st.App``) adds to Streamlit's server:
  the pages' HTML, so a deep link (``/Data``) connects at once, and the start-up hook that turns
  Nagle's algorithm off on the server's socket.
* ``session``   — ``Session``: the typed view of ``st.session_state``, one attribute per documented
  key, and the values derived from them (``spec()``, ``c_max()``, ``online_key()``).
* ``parsing``   — file parsing, cached on the file bytes.
* ``auth``      — ``current_identity()``: the acting user of this session (local mode: ``favmac.access.LOCAL_USER``).
* ``store``     — the server's one store (``st.cache_resource``; ``$FAVMAC_STORE``), acting as the session's user, and
  the message naming the URL when it cannot be reached.
* ``workspace`` — what the session runs on (data files, weights, settings), saved in the user's store workspace by
  every action that changes it.
* ``actions``   — what the user's actions do to the session: sample, uploads, weights, settings, restore.
* ``workspace_restore`` — binds each page run to the user's workspace; a fresh session (reload, deep link) restores it.
* ``workspace_uploads`` — a file chosen but never handed to a widget (the page changed mid-upload): the pages wait
  for it or say so and stop (a labelled workaround around Streamlit's uploaded-file manager).
* ``programs``  — the Programs page's logic: create from the session, predict / label uploads, settings versions,
  the timeline figure, status tiles, the audit trail's filter and files.
* ``jobs``      — the long computations: runs as plain functions of (dataset, RunSpec) (the online
  replay, the trade-off comparison, the validity check, the export build), ``Job`` (a background
  thread with its progress) and the session's memoised runs (``online``, ``tradeoffs``, ``exports``, ``validity``).
* ``widgets``   — small ``show_*`` functions that draw recurring pieces of the pages (menu, sidebar summary, messages).
* ``guarantees`` — the Segments / adaptive target / provenance pieces of the pages.
* ``bootstrap`` — ``page_setup(title)``, the first call of every page (config, defaults, sidebar,
  the one first-visit mechanism); returns the ``Session``.

The library (every favmac module outside ``favmac/ui/``) never imports this package (``tests/test_architecture.py``).
"""
