"""Small drawing functions shared by the pages (each draws one recurring piece of the current
session, :func:`favmac.ui.session.current`)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from favmac.io.safe_csv import neutralize
from favmac.runspec import SettingsError
from favmac.ui import settings_form
from favmac.ui.formats import decimals_needed, significant_decimals
from favmac.ui.navigation import DATA, PAGES
from favmac.ui.session import current
from favmac.ui.text import md, sheet_frame

_LEVELS = {"error": st.error, "warning": st.warning, "success": st.success, "info": st.info}
# Where a chart or table will be, during a session's first page run (favmac.ui.bootstrap.page_setup).
LATER_NOTE = "Loading…"


def first_page_run() -> bool:
    """True during the session's first page run, which ``bootstrap.page_setup`` ends with a rerun
    0.3 s later (the app's one first-visit mechanism): its charts and tables come with that rerun.

    Why: Streamlit's front end holds back the elements that reach it together with one whose
    code is still loading (plotly's is 4.7 MB), so a page's first controls waited for its charts'
    code (docs/first_visit.md, "Branch `s-ui`").
    """
    return (current().page_runs or 0) <= 1


def chart(figure, *, key: str, where=st) -> None:
    """``where.plotly_chart(figure, key=key)``; in the session's first page run a note instead."""
    if first_page_run():
        where.caption(LATER_NOTE)
    else:
        where.plotly_chart(figure, key=key)


def table(frame, *, where=st, **kwargs) -> None:
    """``where.dataframe(frame, **kwargs)``; in the session's first page run a note instead. Number
    columns the page gives no ``column_config`` for are drawn by :func:`number_formats`. Cells a
    spreadsheet would run as a formula are shown as the CSV exports write them
    (:func:`favmac.ui.text.sheet_frame`), so the table toolbar's "Download as CSV" and a copy to the
    clipboard are as safe as the app's own download buttons."""
    if first_page_run():
        where.caption(LATER_NOTE)
        return
    frame = sheet_frame(frame)
    given = dict(kwargs.pop("column_config", None) or {})
    if isinstance(frame, pd.DataFrame):
        given = {neutralize(c): config for c, config in given.items()}
        given = {**{c: st.column_config.NumberColumn(format=f) for c, f in number_formats(frame).items() if c not in given}, **given}
    where.dataframe(frame, column_config=given or None, **kwargs)


#: Integer columns that are names or labels, not amounts: drawn as they are (no thousands separator).
_NOT_AMOUNTS = ("id", "year", "seed", "rank")


def number_formats(frame: pd.DataFrame, rows: int = 2000) -> dict:
    """printf formats of ``frame``'s number columns, so a column reads the same on every row: counts
    with thousands separators (``4,000``), decimals as many as the column's values need (at most six,
    and at most what three significant digits of its smallest non-zero value need), the same for every
    row: ``4.70`` under ``7.17``, not ``4.7``; ``0`` as ``0.000`` beside ``0.186``. Decided on the first
    ``rows`` rows. Integer columns named like an id, a year, a seed or a rank keep the grid's own format.

    >>> number_formats(pd.DataFrame({"patients": [4000, 12], "error": [7.17, 4.7], "value": [0.0, 0.186], "patient_id": [7, 8]}))
    {'patients': '%,d', 'error': '%,.2f', 'value': '%,.3f'}
    """
    out = {}
    for column in frame.columns:
        if not isinstance(column, str) or frame.columns.tolist().count(column) > 1:  # a key names one column
            continue
        values = frame[column].head(rows)
        kind = values.dtype.kind
        if kind in "iu" and not str(column).lower().endswith(_NOT_AMOUNTS):
            out[column] = "%,d"
        elif kind == "f":
            out[column] = number_format(values)
    return out


def number_format(values) -> str:
    """The printf format :func:`number_formats` gives a column of floats ``values`` (thousands separators;
    the decimals the values need, at most six and at most three significant digits of the smallest).

    >>> number_format([0.00006012, 0.05]), number_format([1.184, 551.8, 13.0])
    ('%,.6f', '%,.2f')
    """
    finite = np.abs(np.asarray(values, dtype=float))
    finite = finite[np.isfinite(finite)]
    return f"%,.{min(decimals_needed(finite, at_most=6), max(2, significant_decimals(finite)))}f"


def tiles(items, where=st) -> None:
    """Metric tiles in one row, each as wide as its label and value: ``items`` are
    ``(label, value, help)`` (help None for none). Equal columns cut a long label with "…" (the
    unsupported payment's "Unsupported $ per 100 charts" beside "Payment captured per patient");
    here no label is cut, the spare width goes between the tiles, and a narrow window wraps the
    row instead of squeezing it."""
    row = where.container(horizontal=True, horizontal_alignment="distribute", gap="small")
    for label, value, help_text in items:
        row.metric(label, value, help=help_text, width="content")


def editor(frame, **kwargs):
    """``st.data_editor(frame, **kwargs)`` (the edited table); in the session's first page run a note
    instead, and ``frame`` unedited. Formula-like cells are shown neutralized as :func:`table` shows
    them (the editor's toolbar downloads a CSV too); every cell the user left as shown comes back as
    it was in ``frame``, so only real edits change the table."""
    if first_page_run():
        st.caption(LATER_NOTE)
        return frame
    shown = sheet_frame(frame)
    edited = st.data_editor(shown, **kwargs)
    return edited if shown is frame else unshown(edited, shown, frame)


def unshown(edited: pd.DataFrame, shown: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """``edited`` (the editor's result for ``shown``, :func:`favmac.ui.text.sheet_frame` of ``frame``)
    with the headers, index labels and untouched cells of ``frame``: neutralizing is for the screen
    and the toolbar's CSV, not an edit.

    >>> frame = pd.DataFrame({"w": [1.0, 2.0], "d": ["=x", "=y"]}, index=["=A", "B"])
    >>> edited = sheet_frame(frame).assign(w=[1.0, 3.0], d=["'=x", "new"])
    >>> unshown(edited, sheet_frame(frame), frame).to_dict("index")
    {'=A': {'w': 1.0, 'd': '=x'}, 'B': {'w': 3.0, 'd': 'new'}}
    """
    out = edited.copy()
    out.columns = [dict(zip(shown.columns, frame.columns)).get(c, c) for c in edited.columns]
    same_rows = min(len(out), len(frame))
    if out.index[:same_rows].equals(shown.index[:same_rows]):
        out.index = frame.index[:same_rows].append(out.index[same_rows:])
    for before, after in zip(shown.columns, frame.columns):
        if after not in out.columns or out[after].dtype != object and not pd.api.types.is_string_dtype(out[after].dtype):
            continue
        kept = (out[after].iloc[:same_rows].to_numpy(dtype=object) == shown[before].iloc[:same_rows].to_numpy(dtype=object))
        if kept.any():
            cells = out[after].to_numpy(dtype=object, copy=True)
            cells[:same_rows][kept] = frame[after].iloc[:same_rows].to_numpy(dtype=object)[kept]
            out[after] = pd.Series(cells, index=out.index, dtype=frame[after].dtype)
    return out


def show_menu() -> None:
    """Sidebar menu (studio.py hides st.navigation's own list so every page shows this one)."""
    with st.sidebar:
        st.markdown("### FavMac Studio")
        for entry in PAGES:
            st.page_link(entry.path, label=entry.title, icon=entry.icon)


def show_sidebar_summary() -> None:
    """Current dataset and settings, in the sidebar of every page.

    Drawn into a placeholder kept in the session (``Session.summary_slot``) so that an action
    later in the same run (Apply, an edited weight) redraws it with
    :func:`refresh_sidebar_summary` instead of leaving it one run behind.
    """
    with st.sidebar:
        st.divider()
        slot = st.empty()
    current().summary_slot = slot
    _draw_summary(slot)


def refresh_sidebar_summary() -> None:
    """Redraw the sidebar summary of this run (no-op before ``show_sidebar_summary``)."""
    slot = current().summary_slot
    if slot is not None:
        _draw_summary(slot)


def _draw_summary(slot) -> None:
    ss = current()
    with slot.container():
        st.markdown("**Dataset**")
        if not ss.has_dataset:
            st.caption("No data loaded.")
            return
        ds = ss.dataset
        new = ss.new_patients
        st.caption(
            f"{md(ds.name)}  \n{ds.n_patients:,} patients × {ds.n_codes} codes  \n"
            f"New patients: {'none' if new is None else f'{len(new):,}'}  \n"
            f"Weights: {md(ss.weights_source or '—')}"
        )
        st.markdown("**Settings**")
        try:
            rows = settings_form.settings_summary(ss.settings, ss.c_max())
        except SettingsError as err:
            st.caption(f"Settings need attention: {md(err)}")
            return
        st.caption("  \n".join(f"{label}: {md(text)}" for label, text in rows))


def show_message(area: str) -> None:
    """Draw the stored message of ``area`` (if any)."""
    message = (current().messages or {}).get(area)
    if message:
        level, text = message
        _LEVELS.get(level, st.info)(md(text))  # messages quote file names and cells: never Markdown


def require_dataset() -> None:
    """Stop the page with a pointer to the Data page when no data is loaded."""
    if not current().has_dataset:
        show_message("calibration")
        st.warning("No calibration data is loaded. Load a sample or upload your files on the Data page.")
        st.page_link(DATA.path, label="Go to Data", icon=DATA.icon)
        st.stop()


def show_settings_line() -> None:
    """One caption line with the settings that produced the page's numbers."""
    ss = current()
    rows = settings_form.settings_summary(ss.settings, ss.c_max())
    st.caption(" · ".join(f"{label}: {md(text)}" for label, text in rows))
