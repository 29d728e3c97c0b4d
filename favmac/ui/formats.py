"""Number formats for display: enough decimals to show a value as it is, one format per column.

>>> decimals_needed([1.5, 1.501])
3
>>> column_format([1.5, 1.501, float("inf")])
'%.3f'
>>> fixed([0.432, 1.0, float("nan")], 3)
['0.432', '1.000', '—']
"""
from __future__ import annotations

import math

__all__ = ["INPUT_FORMAT", "blank_missing", "column_format", "decimals_needed", "fixed", "significant_decimals"]

# Number inputs whose value may come from anywhere (a restored file, 3 % of C_max): six
# significant digits, trailing zeros dropped — 0.3397 shows as 0.3397, not 0.340. The format must
# not depend on the value: a widget whose format changes between runs is a new widget.
INPUT_FORMAT = "%.6g"


def decimals_needed(values, at_most: int = 6) -> int:
    """Fewest decimals (0..``at_most``) that write every finite value in ``values`` exactly,
    or as exactly as ``at_most`` decimals allow."""
    need = 0
    for v in values:
        v = float(v)
        if not math.isfinite(v):
            continue
        while need < at_most and not math.isclose(round(v, need), v, rel_tol=1e-12, abs_tol=10.0 ** -(at_most + 3)):
            need += 1
    return need


def significant_decimals(values, digits: int = 3) -> int:
    """Decimals that show the smallest non-zero finite magnitude in ``values`` with ``digits``
    significant digits (negative when whole numbers already have more; as for 1 without such a value).

    >>> significant_decimals([0.00381, 0.012, 0.0]), significant_decimals([12.5, 250.0]), significant_decimals([])
    (5, 1, 2)
    """
    magnitudes = [abs(float(v)) for v in values if v is not None and math.isfinite(float(v)) and float(v) != 0]
    return digits - 1 - math.floor(math.log10(min(magnitudes, default=1.0)))


def column_format(values, at_least: int = 0, at_most: int = 6) -> str:
    """A printf format (for ``st.column_config.NumberColumn``) shared by a whole column, so
    1.5 and 1.501 show as 1.500 and 1.501 rather than 1.5 and 1.501."""
    return f"%.{max(at_least, decimals_needed(values, at_most))}f"


def blank_missing(frame):
    """``frame`` for an ``st.dataframe`` preview of a CSV: a column with missing numbers (an
    empty CSV cell, e.g. δ under expected-cost control) becomes text with an empty cell where
    the CSV has one, instead of the grid's "None".

    >>> import pandas as pd
    >>> blank_missing(pd.DataFrame({"delta": [float("nan"), 0.1], "n": [1, 2]}))["delta"].tolist()
    ['', '0.1']
    """
    out = frame.copy()
    for column in out.columns:
        values = out[column]
        if values.dtype.kind == "f" and values.isna().any():
            out[column] = ["" if v != v else f"{v:.6g}" for v in values]
    return out


def fixed(values, decimals: int, suffix: str = "") -> list[str]:
    """``values`` as text with exactly ``decimals`` decimals (NaN or None as "—"), for static tables.

    ``st.table`` prints floats with its own precision (a 3-decimal 0.432 shows as 0.4320); text
    shows as written.
    """
    return ["—" if v is None or v != v else f"{float(v):.{decimals}f}{suffix}" for v in values]
