"""FavMac: value-maximizing prediction sets with conformal cost control, updated online.

Lin, Trivedi, Xiao, Sun, "Fast Online Value-Maximizing Prediction Sets with Conformal
Cost Control", ICML 2023 — implemented exactly as the project's SPEC decides every edge case.
"""
from ._version import __version__
from .baselines import BASELINE_CONTROLS, classwise, crc, fpcp, inner_set, rcps
from .controller import FavMac
from .io import (
    CMS_MODELS,
    CMS_SEGMENTS,
    DataError,
    Dataset,
    cms_hcc_weights,
    load_calibration,
    load_new_patients,
    read_labels,
    read_probabilities,
    read_weights,
    read_wide,
    to_safe_csv,
)
from .functions import AdditiveCost, AdditiveValue, FormulaError, FormulaValue
from .metrics import compare_methods, protocol_table, summarize
from .export import chosen_sets, new_patient_sets, stream_sets
from .methods import METHODS, get_method, run_method
from .runspec import RunSpec, SettingsError
from .quantile_tree import QuantileTree, QuantileTreeError
from .replay import predict_with_threshold, replay
from .result import ReplayResult
from .universe import MAX_FULL_CODES, UNIVERSES, candidate_sets, greedy_order

__all__ = [
    "CMS_MODELS",
    "CMS_SEGMENTS",
    "DataError",
    "Dataset",
    "cms_hcc_weights",
    "load_calibration",
    "load_new_patients",
    "read_labels",
    "read_probabilities",
    "read_weights",
    "read_wide",
    "to_safe_csv",
    "BASELINE_CONTROLS",
    "classwise",
    "compare_methods",
    "crc",
    "fpcp",
    "inner_set",
    "protocol_table",
    "rcps",
    "summarize",
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
    "chosen_sets",
    "new_patient_sets",
    "stream_sets",
    "METHODS",
    "get_method",
    "run_method",
    "RunSpec",
    "SettingsError",
]
