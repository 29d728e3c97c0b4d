"""Number formats for display: enough decimals to show a value as it is, one format per column.

>>> decimals_needed([1.5, 1.501])
3
>>> column_format([1.5, 1.501, float("inf")])
'%.3f'
>>> input_format(0.3397)
'%.4f'
"""
from __future__ import annotations

import math

__all__ = ["column_format", "decimals_needed", "input_format"]


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


def column_format(values, at_least: int = 0, at_most: int = 6) -> str:
    """A printf format (for ``st.column_config.NumberColumn``) shared by a whole column, so
    1.5 and 1.501 show as 1.500 and 1.501 rather than 1.5 and 1.501."""
    return f"%.{max(at_least, decimals_needed(values, at_most))}f"


def input_format(value: float, at_least: int = 3, at_most: int = 6) -> str:
    """The format of a number input showing ``value`` unrounded (0.3397, not 0.340)."""
    return column_format([value], at_least, at_most)
