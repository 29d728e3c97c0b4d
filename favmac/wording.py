"""How the library words a number in the text it returns (a caption, a note, a reason): :func:`plain_number`.

The app's own units and labels (:mod:`favmac.ui.units`) word numbers with the same function.
"""
from __future__ import annotations

import math

__all__ = ["plain_number"]


def plain_number(x: float, digits: int = 4) -> str:
    """``digits`` significant digits for a caption, never in exponent form from 1e-4 up
    (whole numbers with thousands separators from 1,000).

    >>> plain_number(84580.0), plain_number(169169.3), plain_number(0.46), plain_number(15.379), plain_number(1030.2, 3)
    ('84,580', '169,169', '0.46', '15.38', '1,030')
    """
    x = float(x)
    if math.isfinite(x) and abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"
