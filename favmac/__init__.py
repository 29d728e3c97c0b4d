"""FavMac: value-maximizing prediction sets with conformal cost control, updated online.

Lin, Trivedi, Xiao, Sun, "Fast Online Value-Maximizing Prediction Sets with Conformal
Cost Control", ICML 2023 — implemented exactly as the project's SPEC decides every edge case.
"""
import importlib

from ._version import __version__

# ``replay`` is both a submodule and a function: importing the submodule anywhere would set
# the package attribute to the module, so the function is bound here, eagerly (numpy only).
from .replay import ReplayOptions, predict_with_threshold, replay

# Other public names and the submodule that defines each. They are imported on first use (PEP 562
# module __getattr__), so ``import favmac`` and ``favmac --help`` do not pay for pandas,
# scipy, numba or hccinfhir until a feature needs them.
_EXPORTS = {
    "BASELINE_CONTROLS": "baselines",
    "classwise": "baselines",
    "crc": "baselines",
    "fpcp": "baselines",
    "inner_set": "baselines",
    "rcps": "baselines",
    "FavMac": "controller",
    "CMS_MODELS": "io",
    "CMS_SEGMENTS": "io",
    "DataError": "io",
    "Dataset": "io",
    "cms_hcc_weights": "io",
    "load_calibration": "io",
    "load_new_patients": "io",
    "read_labels": "io",
    "read_probabilities": "io",
    "read_weights": "io",
    "read_wide": "io",
    "to_safe_csv": "io",
    "AdditiveCost": "functions",
    "AdditiveValue": "functions",
    "FormulaError": "functions",
    "FormulaValue": "functions",
    "bind_rows": "functions",
    "CmsHccValue": "payment",
    "CmsHccCost": "payment",
    "compare_methods": "metrics",
    "protocol_table": "metrics",
    "summarize": "metrics",
    "chosen_sets": "export",
    "new_patient_sets": "export",
    "stream_sets": "export",
    "METHODS": "methods",
    "get_method": "methods",
    "run_method": "methods",
    "RunSpec": "runspec",
    "SettingsError": "runspec",
    "Recalibration": "recalibration",
    "fit_recalibration": "recalibration",
    "QuantileTree": "quantile_tree",
    "QuantileTreeError": "quantile_tree",
    "ReplayResult": "result",
    "MAX_FULL_CODES": "universe",
    "UNIVERSES": "universe",
    "candidate_sets": "universe",
    "greedy_order": "universe",
}

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
    "bind_rows",
    "CmsHccValue",
    "CmsHccCost",
    "MAX_FULL_CODES",
    "QuantileTree",
    "QuantileTreeError",
    "ReplayOptions",
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
    "Recalibration",
    "fit_recalibration",
]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        try:  # a submodule, e.g. favmac.thresholds after a bare ``import favmac``
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
