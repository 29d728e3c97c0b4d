"""Deprecated location: the exact-number helpers live in :mod:`favmac.thresholds` (no logic here)."""
from .thresholds import common_scale, decimal_places, exact, scaled_int  # noqa: F401  (re-export)

__all__ = ["exact", "decimal_places", "scaled_int", "common_scale"]
