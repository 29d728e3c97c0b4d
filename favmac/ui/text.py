"""User text on screen, shown as written: never as Markdown, never as plotly HTML.

Streamlit renders Markdown in ``st.markdown``, ``st.caption``, ``st.error``/``warning``/``info``/
``success``, widget labels and metric labels; plotly renders a small HTML subset (``<a href>``,
``<b>``, ``<br>``) in titles, tick labels and hover text. Anything that came from a user — patient
ids, code names, file names, descriptions, a cell quoted in an error — passes through
:func:`md` (for Streamlit) or :func:`plain_html` (for plotly) before it is shown.

>>> print(md("[click me](https://x) __import__"))
\\[click me\\](https\\://x) \\_\\_import\\_\\_
>>> plain_html("<a href='x'>hi</a>")
'&lt;a href=&#x27;x&#x27;&gt;hi&lt;/a&gt;'
"""
from __future__ import annotations

import html
import re

__all__ = ["md", "plain_html"]

# CommonMark lets a backslash escape any ASCII punctuation. Escaped everywhere: what starts
# links, emphasis, code, autolinks, strikethrough, tables and LaTeX. A colon is escaped unless a
# space follows ("row 7: ..." stays as is), which breaks "https://" autolinks and Streamlit's
# ":red[...]" / ":material/...:" directives; "www." loses its dot for the same reason.
_SPECIAL = re.compile(r"([\\`*_\[\]<~$|]|:(?=\S)|(?<=www)\.)", re.IGNORECASE)
# Only at the very start of the text (newlines are removed): headings, lists, quotes, rules.
_LEADING = re.compile(r"^(\s*)([#>+=-]|\d+(?=[.)](\s|$)))")


def md(text) -> str:
    """``text`` with every Markdown-active character backslash-escaped (shown literally).

    Newlines become spaces, so a cell can never start a heading, list or table of its own.
    """
    text = _SPECIAL.sub(r"\\\1", str(text).replace("\r", " ").replace("\n", " "))
    return _LEADING.sub(lambda m: m.group(1) + (m.group(2) + "\\" if m.group(2)[0].isdigit() else "\\" + m.group(2)), text, count=1)


def plain_html(text) -> str:
    """``text`` with ``<``, ``>``, ``&`` and quotes as entities, for plotly titles and labels."""
    return html.escape(str(text), quote=True)
