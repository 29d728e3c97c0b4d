"""FavMac: value-maximizing prediction sets with conformal cost control, updated online.

Lin, Trivedi, Xiao, Sun, "Fast Online Value-Maximizing Prediction Sets with Conformal
Cost Control", ICML 2023 — implemented exactly as the project's SPEC decides every edge case.
"""
from .controller import FavMac
from .functions import AdditiveCost, AdditiveValue, FormulaError, FormulaValue
from .quantile_tree import QuantileTree, QuantileTreeError
from .replay import predict_with_threshold, replay
from .result import ReplayResult
from .universe import MAX_FULL_CODES, UNIVERSES, candidate_sets, greedy_order

__all__ = [
    "AdditiveCost",
    "AdditiveValue",
    "FavMac",
    "FormulaError",
    "FormulaValue",
    "MAX_FULL_CODES",
    "QuantileTree",
    "QuantileTreeError",
    "ReplayResult",
    "UNIVERSES",
    "candidate_sets",
    "greedy_order",
    "predict_with_threshold",
    "replay",
]
