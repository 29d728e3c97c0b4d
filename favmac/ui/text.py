"""User text on screen, shown as written: never as Markdown, never as plotly HTML.

Streamlit renders Markdown in ``st.markdown``, ``st.caption``, ``st.error``/``warning``/``info``/
``success``, widget labels, metric labels and every cell (and index) of ``st.table``; plotly
renders a small HTML subset (``<a href>``, ``<b>``, ``<br>``, entities) and ``$...$`` LaTeX in
titles, legend names, tick labels and hover text. Anything that came from a user — patient ids,
code names, segment values, file names, descriptions, formulas, a cell quoted in an error —
passes through one of these before it is shown:

* :func:`md` — one piece of text inside Markdown (captions, messages, labels);
* :func:`md_frame` — a whole table for ``st.table`` (every text cell, the index, the headers);
* :func:`plain_html` — one piece of text inside a plotly figure (names, labels, hover text);
* :func:`sheet_frame` — a whole table for ``st.dataframe`` (``favmac.ui.widgets.table``): its
  toolbar's "Download as CSV" and a copy to the clipboard carry the cells as shown, so a cell a
  spreadsheet would run as a formula is shown as our CSV files write it, with a leading quote.

Direction-control characters (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C, see
``favmac.io.csv_parsing.BIDI_CONTROLS``) would make the text around them display in another
order than it is written; zero-width characters (U+200B-U+200D, U+2060, U+FEFF, the same
pattern) make two different values look the same. Ids and code names holding one are refused when a file is read; in
any other text every such character is shown as a visible marker, ``[U+202E]``.

>>> print(md("[click me](https://x) __import__").replace("\u2060", "<WJ>"))
\\[click me\\](https\\:<WJ>//x) \\_\\_import\\_\\_
>>> plain_html("<a href='x'>hi</a> \\"q\\" $x$")
'&lt;a href=\\'x\\'&gt;hi&lt;/a&gt; "q" &#36;x&#36;'
>>> print(md("P1\\u202e2"))
P1\\[U+202E\\]2
"""
from __future__ import annotations

import re

import pandas as pd

from favmac.io.csv_parsing import BIDI_CONTROLS
from favmac.io.safe_csv import FORMULA_START, neutralize, neutralize_frame

__all__ = ["md", "md_frame", "plain_html", "sheet_frame", "show_bidi"]

# CommonMark lets a backslash escape any ASCII punctuation. Escaped everywhere: what starts
# links, emphasis, code, autolinks, strikethrough, tables and LaTeX. A colon is escaped unless a
# space follows ("row 7: ..." stays as is), which breaks "https://" autolinks and Streamlit's
# ":red[...]" / ":material/...:" directives; "www." loses its dot for the same reason.
_SPECIAL = re.compile(r"([\\`*_\[\]<~$|]|:(?=\S)|(?<=www)\.)", re.IGNORECASE)
# Escapes are not enough for GFM's literal autolinks: Streamlit's remark-gfm finds them in the
# text *after* escapes and entities are decoded ("http\://host.x" still becomes a link). A WORD
# JOINER (U+2060, invisible, no line break) after "://", "www" and "@" breaks each pattern.
_AUTOLINK = re.compile(r"(?<=:)(?=//)|(?<=www)(?=\\?\.)|(?<=@)", re.IGNORECASE)  # after _SPECIAL: "www\."
_JOINER = "\u2060"
# Only at the very start of the text (newlines are removed): headings, lists, quotes, rules.
_LEADING = re.compile(r"^(\s*)([#>+=-]|\d+(?=[.)](\s|$)))")
# plotly's text markup: tags, entities, and "$" (a label between two "$" is typeset as LaTeX
# where MathJax is loaded). plotly decodes numeric entities only, so quotes stay as they are
# (html.escape's &quot; would be shown literally).
_PLOTLY = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "$": "&#36;"}
_PLOTLY_SPECIAL = re.compile("[&<>$]")


def show_bidi(text) -> str:
    """``text`` with every direction-control character replaced by a visible ``[U+XXXX]`` marker.

    >>> show_bidi("abc\\u202edef\\u2066")
    'abc[U+202E]def[U+2066]'
    """
    return BIDI_CONTROLS.sub(lambda m: f"[U+{ord(m.group()):04X}]", str(text))


def md(text) -> str:
    """``text`` with every Markdown-active character backslash-escaped (shown literally).

    Newlines become spaces, so a cell can never start a heading, list or table of its own;
    direction controls become visible markers (:func:`show_bidi`).
    """
    text = _SPECIAL.sub(r"\\\1", show_bidi(text).replace("\r", " ").replace("\n", " "))
    text = _AUTOLINK.sub(_JOINER, text)
    return _LEADING.sub(lambda m: m.group(1) + (m.group(2) + "\\" if m.group(2)[0].isdigit() else "\\" + m.group(2)), text, count=1)


def md_frame(frame):
    """A copy of ``frame`` for ``st.table``: text cells, index labels and headers through :func:`md`.

    ``st.table`` renders every cell as Markdown; numbers, booleans and missing values are kept.
    """
    def cell(v):
        return md(v) if isinstance(v, str) else v

    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or str(out[column].dtype) in ("string", "str"):
            out[column] = out[column].map(cell)
    out.index = out.index.map(cell)
    out.index.name = None if out.index.name is None else md(out.index.name)
    out.columns = [cell(c) for c in out.columns]
    return out


def _text_dtype(dtype) -> bool:
    return pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)


def _formula_like(values) -> "pd.Series":
    """Which of ``values`` (an Index or Series) are text that :func:`favmac.io.neutralize` changes."""
    text = pd.Series(values, dtype=object).astype(object)
    is_text = text.map(lambda v: isinstance(v, str)).astype(bool)
    if not is_text.any():
        return is_text
    shown = text.where(is_text, "")
    return is_text & (shown.str.startswith(FORMULA_START) | shown.str.contains("\r", regex=False))


def sheet_frame(frame):
    """``frame`` for ``st.dataframe`` with text cells, index labels and headers that a spreadsheet
    would run as a formula (``= + - @``, tab or carriage return first) neutralized as every CSV
    export writes them (:func:`favmac.io.neutralize`: a leading quote); ``frame`` itself when
    none is. The toolbar's "Download as CSV" and a copy of cells to the clipboard then carry no
    formula; the app's own download buttons stay the way to export. Numbers are kept.

    >>> sheet_frame(pd.DataFrame({"id": ["=HYPERLINK(1)", "P2"], "x": [-1.5, 2.0]})).to_dict("list")
    {'id': ["'=HYPERLINK(1)", 'P2'], 'x': [-1.5, 2.0]}
    """
    if not isinstance(frame, pd.DataFrame):
        return frame
    risky = (any(_formula_like(frame[c].to_numpy(dtype=object)).any() for c in frame.columns if _text_dtype(frame[c].dtype))
             or (_text_dtype(frame.index.dtype) and _formula_like(frame.index).any())
             or _formula_like(list(frame.columns)).any())
    return neutralize_frame(frame) if risky else frame


def plain_html(text) -> str:
    """``text`` for plotly titles, legend names, labels and hover text: ``& < > $`` as entities,
    direction controls as visible markers; quotes unchanged."""
    return _PLOTLY_SPECIAL.sub(lambda m: _PLOTLY[m.group()], show_bidi(text))
