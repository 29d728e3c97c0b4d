"""FavMac: value-maximizing prediction sets with conformal cost control, updated online.

Lin, Trivedi, Xiao, Sun, "Fast Online Value-Maximizing Prediction Sets with Conformal
Cost Control", ICML 2023 — implemented exactly as the project's docs/method.md decides every edge case.
"""
from ._lazy import lazy_exports
from ._version import __version__

# ``replay`` is both a subpackage (favmac/replay/) and a function: importing the subpackage anywhere would set
# the package attribute to the module, so the function is bound here, eagerly (numpy only).
from .replay import predict_with_threshold, replay, replay_spec

# Other public names and the submodule that defines each: the one list of them (__all__ is these
# and the two above). They are imported on first use (favmac._lazy), so ``import favmac`` and
# ``favmac --help`` do not pay for pandas, scipy, numba or hccinfhir until a feature needs them.
_EXPORTS = {
    "BASELINE_CONTROLS": "baselines",
    "classwise": "baselines",
    "crc": "baselines",
    "fpcp": "baselines",
    "inner_set": "baselines",
    "rcps": "baselines",
    "FavMac": "controller",
    "open_store": "store",
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
    "bind_rows": "protocols",
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

__getattr__, __dir__, __all__ = lazy_exports(globals(), _EXPORTS,
                                             eager=("predict_with_threshold", "replay", "replay_spec"), submodules=True)
