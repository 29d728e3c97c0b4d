"""The risk-weights table of the app (index code; columns weight, description) and its checks."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from favmac.runspec import SettingsError
from favmac.validation import MAX_WEIGHT


def unit_weights(codes) -> pd.DataFrame:
    """Weight 1 for every code (the table shown when no weights were given)."""
    return pd.DataFrame({"weight": 1.0, "description": ""}, index=pd.Index(list(codes), name="code"))


def weight_array(weights: pd.DataFrame, codes) -> np.ndarray:
    """The weights of ``codes`` in data order, as floats; raises SettingsError for gaps."""
    missing = [c for c in codes if c not in weights.index]
    if missing:
        raise SettingsError("weights", f"missing: no risk weight for code(s) {', '.join(map(str, missing[:5]))}; "
                            "upload weights for every code")
    arr = weights.loc[list(codes), "weight"].to_numpy(dtype=float)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > MAX_WEIGHT):
        bad = [c for c, w in zip(codes, arr) if not (math.isfinite(w) and 0 <= w <= MAX_WEIGHT)]
        raise SettingsError("weights", f"must be numbers >= 0 and <= {MAX_WEIGHT:,.0f}; check code(s) {', '.join(map(str, bad[:5]))}")
    return arr


def descriptions(weights: pd.DataFrame, codes) -> list[str]:
    """Description of each code (empty text when the weights table has none)."""
    if "description" not in weights.columns:
        return ["" for _ in codes]
    col = weights["description"]
    return ["" if c not in col.index or pd.isna(col.get(c)) else str(col.get(c)) for c in codes]


def weights_for_codes(weights: pd.DataFrame | None, codes) -> tuple[pd.DataFrame, str | None]:
    """Keep ``weights`` if it covers every code (reordered); otherwise unit weights and a note."""
    if weights is not None and all(c in weights.index for c in codes):
        return weights.loc[list(codes)].copy(), None
    return unit_weights(codes), "The loaded weights do not cover these codes; every code now weighs 1 until you upload weights."
