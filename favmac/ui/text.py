"""User text on screen, shown as written: never as Markdown, never as plotly HTML.

Streamlit renders Markdown in ``st.markdown``, ``st.caption``, ``st.error``/``warning``/``info``/
``success``, widget labels and metric labels; plotly renders a small HTML subset (``<a href>``,
``<b>``, ``<br>``) in titles, tick labels and hover text. Anything that came from a user — patient
ids, code names, file names, descriptions, a cell quoted in an error — passes through
:func:`md` (for Streamlit) or :func:`plain_html` (for plotly) before it is shown.

>>> md("[click me](https://x) __import__")
'\\\\[click me\\\\]\\\\(https\\\\://x\\\\) \\\\_\\\\_import\\\\_\\\\_'
>>> plain_html("<a href='x'>hi</a>")
'&lt;a href=&#x27;x&#x27;&gt;hi&lt;/a&gt;'
"""
from __future__ import annotations

import html
import re

__all__ = ["md", "plain_html"]

# CommonMark lets a backslash escape any ASCII punctuation; these are the ones that start
# Markdown (links, emphasis, code, headings, lists, tables, LaTeX $, Streamlit's :color[...]).
_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~$:=])")


def md(text) -> str:
    """``text`` with every Markdown-active character backslash-escaped (shown literally).

    Newlines become spaces, so a cell can never start a heading, list or table of its own.
    """
    return _SPECIAL.sub(r"\\\1", str(text).replace("\r", " ").replace("\n", " "))


def plain_html(text) -> str:
    """``text`` with ``<``, ``>``, ``&`` and quotes as entities, for plotly titles and labels."""
    return html.escape(str(text), quote=True)
