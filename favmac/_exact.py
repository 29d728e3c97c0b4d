"""Exact arithmetic for thresholds: every number is read as the decimal it prints as.

Targets, deltas and weights come from forms and CSV files as decimals ("4.1", "0.331").
Reading them as those decimals — not as the nearest binary float — makes the SPEC's ties
exact: with c = 4.1 and N + 1 = 10, c(N+1) is exactly 41, so F(b) = 41 - C_max is a tie
(not "> M"), and delta = 0.1 with N + 1 = 20 gives k = 18. All sums of such numbers are
integers at a common scale 10^d, so comparisons need no tolerance.
"""
from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

__all__ = ["exact", "decimal_places", "scaled_int", "common_scale"]


@lru_cache(maxsize=4096)
def _float_to_fraction(x: float) -> Fraction:
    return Fraction(repr(x))


def exact(x) -> Fraction:
    """The exact rational a number stands for (floats by their shortest decimal repr).

    >>> exact(0.1) + exact(0.2) == exact(0.3)
    True
    >>> exact(4.1) * 10
    Fraction(41, 1)
    """
    if isinstance(x, Fraction):
        return x
    if isinstance(x, (int,)) and not isinstance(x, bool):
        return Fraction(x)
    if isinstance(x, Decimal):
        return Fraction(x)
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"expected a finite number, got {x!r}")
    if x.is_integer():
        return Fraction(int(x))
    return _float_to_fraction(x)


def decimal_places(x) -> int:
    """Smallest d with x * 10^d an integer; raises if x has no finite decimal expansion."""
    q = exact(x)
    den = q.denominator
    twos = (den & -den).bit_length() - 1
    rest = den >> twos
    fives = 0
    while rest % 5 == 0:
        rest //= 5
        fives += 1
    if rest != 1:
        raise ValueError(f"{q} has no finite decimal expansion")
    return max(twos, fives)


def common_scale(values) -> int:
    """10^d for the smallest d that makes every value an integer."""
    d = 0
    for v in values:
        d = max(d, decimal_places(v))
    return 10**d


def scaled_int(x, scale: int) -> int:
    """x * scale as an exact integer (scale must make it integral)."""
    q = exact(x) * scale
    if q.denominator != 1:
        raise ValueError(f"{x!r} is not a multiple of 1/{scale}")
    return q.numerator
