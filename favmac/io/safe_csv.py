"""Writing CSV that spreadsheets open safely: formula cells neutralized, no float noise.

Text cells (and header names) starting with ``= + - @`` or a tab/carriage return get a
leading single quote so spreadsheets show them as text instead of running them; numbers,
negative ones included, stay numbers. Invisible format characters (Unicode category Cf: the
bidirectional embeddings, overrides and isolates such as U+202E, the direction marks, zero-width
spaces and joiners, the BOM) become a visible ``[U+202E]`` marker, as the app shows them
(``favmac.ui.text``): a cell can neither display in another order than it is written nor look
like another value. Floats are written with at most 12 significant digits, so ``0.1 + 0.2``
exports as ``0.3`` rather than ``0.30000000000000004``.
"""
from __future__ import annotations

import re
import sys
import unicodedata
from functools import lru_cache

import numpy as np
import pandas as pd

__all__ = ["FLOAT_FORMAT", "FORMULA_START", "format_characters", "neutralize", "neutralize_frame", "show_format",
           "to_safe_csv"]

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

# 12 significant digits: far below float noise (~1e-16 relative), far above what a user reads.
FLOAT_FORMAT = "%.12g"


@lru_cache(maxsize=1)
def format_characters() -> re.Pattern:
    """A pattern matching any one character of Unicode category Cf (format), from Python's own
    Unicode tables (built once, at the first export: about 0.3 s).

    >>> bool(format_characters().search("P1\u202e")), bool(format_characters().search("HCC18"))
    (True, False)
    """
    ranges, start = [], None
    for code in range(sys.maxunicode + 2):
        is_format = code <= sys.maxunicode and unicodedata.category(chr(code)) == "Cf"
        if is_format and start is None:
            start = code
        elif not is_format and start is not None:
            ranges.append(re.escape(chr(start)) + ("-" + re.escape(chr(code - 1)) if code - 1 > start else ""))
            start = None
    return re.compile("[" + "".join(ranges) + "]")


def show_format(text: str) -> str:
    """``text`` with each invisible format character (category Cf) written as a ``[U+XXXX]`` marker.

    >>> show_format("Diabetes\u202e snoitacilpmoc")
    'Diabetes[U+202E] snoitacilpmoc'
    """
    return format_characters().sub(lambda m: f"[U+{ord(m.group()):04X}]", text)


def neutralize(value):
    """A text cell made safe for spreadsheets; non-text values are returned unchanged.

    Examples
    --------
    >>> neutralize("=SUM(A1)"), neutralize("-2"), neutralize(-2), neutralize("a\\rb"), neutralize("a\\u2066b")
    ("'=SUM(A1)", "'-2", -2, 'a\\nb', 'a[U+2066]b')
    """
    if not isinstance(value, str):
        return value
    value = show_format(value)
    if value.startswith(FORMULA_START):
        value = "'" + value
    if "\r" in value:
        # With "\n" line endings the csv writer quotes cells holding "\n" but not a lone "\r",
        # which other readers would take for a line break.
        value = value.replace("\r\n", "\n").replace("\r", "\n")
    return value


def _neutralize_column(col: pd.Series) -> pd.Series:
    """Vectorized :func:`neutralize` over a text (or mixed object) column; non-text cells stay."""
    try:
        text = col.str
    except AttributeError:  # an object column without any strings (e.g. lists, numbers)
        return col
    risky = text.startswith(FORMULA_START) | text.contains("\r", regex=False) | text.contains(format_characters())
    risky = risky.fillna(False).astype(bool).to_numpy()
    if not risky.any():
        return col
    out = col.astype(object)
    out.iloc[np.flatnonzero(risky)] = [neutralize(v) for v in col.to_numpy(dtype=object)[risky]]
    return out


def neutralize_frame(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` whose text cells, text index values and column names have each been passed through
    :func:`neutralize`; numbers stay numbers. For a table any tool can save as CSV as it is shown (the app's tables:
    Streamlit's own "Download as CSV" writes cells verbatim).

    >>> neutralize_frame(pd.DataFrame({"id": ["=1+1", "a"], "x": [-1, 2]})).to_dict("list")
    {'id': ["'=1+1", 'a'], 'x': [-1, 2]}
    """
    out = df.copy()
    for j in range(out.shape[1]):
        col = out.iloc[:, j]
        if isinstance(col.dtype, pd.CategoricalDtype):
            col = col.astype(object)
        if pd.api.types.is_string_dtype(col) or pd.api.types.is_object_dtype(col):
            out.isetitem(j, _neutralize_column(col))
    out.columns = [neutralize(c) for c in out.columns]
    if pd.api.types.is_string_dtype(out.index) or pd.api.types.is_object_dtype(out.index):
        out.index = out.index.map(neutralize).rename(neutralize(out.index.name))
    return out


def _format_object_floats(col: pd.Series) -> pd.Series:
    """Float cells of a mixed object column written like float columns (``float_format`` skips them)."""
    if pd.api.types.infer_dtype(col, skipna=True) not in ("floating", "mixed-integer-float", "mixed"):
        return col
    is_float = np.fromiter((isinstance(v, (float, np.floating)) and np.isfinite(v) for v in col), bool, len(col))
    if not is_float.any():
        return col
    out = col.astype(object)
    out.iloc[np.flatnonzero(is_float)] = [FLOAT_FORMAT % v for v in col.to_numpy(dtype=object)[is_float]]
    return out


def to_safe_csv(df: pd.DataFrame, *, index: bool | None = None) -> bytes:
    """CSV bytes (UTF-8) with spreadsheet-formula injection neutralized and floats rounded.

    Text cells (and header names) starting with ``= + - @`` or a tab/carriage return get
    a leading single quote so spreadsheets show them as text; carriage returns inside text
    become newlines (quoted); invisible format characters become ``[U+XXXX]`` markers. Numeric columns stay numeric (-0.5 stays -0.5); floats are
    written with at most 12 significant digits (``%.12g``: whole floats lose their ``.0``),
    integer columns as integers.

    Parameters
    ----------
    df : DataFrame
        The table to write.
    index : bool, optional (keyword only)
        Write the index; default: only when it has a name (e.g. ``patient_id``). This function writes no file: it
        returns the bytes (``Path("sets.csv").write_bytes(to_safe_csv(df))``), so ``to_safe_csv(df, "sets.csv")``
        is a TypeError rather than a silent no-op.

    Returns
    -------
    bytes
        The CSV, ``\\n`` line endings.

    Examples
    --------
    >>> to_safe_csv(pd.DataFrame({"code": ["=HYPERLINK(1)", "HCC18"], "x": [-0.5, 0.1 + 0.2]}))
    b"code,x\\n'=HYPERLINK(1),-0.5\\nHCC18,0.3\\n"
    """
    if index is None:
        index = df.index.name is not None or any(n is not None for n in df.index.names[1:])
    out = df.copy()
    for column in out.columns:
        col = out[column]
        if pd.api.types.is_string_dtype(col) or pd.api.types.is_object_dtype(col):
            out[column] = _format_object_floats(_neutralize_column(col))
    out.columns = [neutralize(str(c)) for c in out.columns]
    if index:
        out.index = out.index.map(neutralize)
        if out.index.name is not None:
            out.index.name = neutralize(str(out.index.name))
    return out.to_csv(index=index, lineterminator="\n", float_format=FLOAT_FORMAT).encode("utf-8")
