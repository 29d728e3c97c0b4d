"""Exact calibration and prediction over data too large for one process, on Dask.

The final FavMac thresholds over a very large calibration set are computed exactly
(docs/method.md "Distributed calibration": integer histograms over the keys' ordered bit patterns, never
an approximate quantile) and equal those of a ``FavMac`` fed every row. One module per idea:

* :mod:`~favmac.distributed.histograms` — ordered keys and exact sums: the histograms the
  partitions return, their exact addition and the bucket search;
* :mod:`~favmac.distributed.sources` — the files, globs, folders, URLs or dask DataFrame read,
  checked by favmac.io's rules (:func:`favmac.io.column_layout`, :func:`favmac.io.text_encoding`);
* :mod:`~favmac.distributed.runner` — the Dask scheduler or cluster client, and the exact
  duplicate-id check across the whole source;
* :mod:`~favmac.distributed.members` — the payment value's member context: each patient's CMS
  cell and known codes, read per batch by favmac.io's rules;
* :mod:`~favmac.distributed.calibration` — :func:`calibrate`;
* :mod:`~favmac.distributed.prediction` — :func:`predict`, the chosen sets as Parquet parts.

Examples
--------
>>> import pandas as pd, dask.dataframe as dd
>>> from favmac import AdditiveValue, AdditiveCost
>>> frame = pd.DataFrame({"patient_id": ["a", "b", "c"], "prob_X": [0.9, 0.2, 0.6],
...                       "label_X": [1, 0, 0], "prob_Y": [0.5, 0.5, 0.1], "label_Y": [0, 1, 0]})
>>> calibrate(dd.from_pandas(frame, npartitions=2), AdditiveValue(), AdditiveCost(), [1.0, 1.5], score="cost").tolist()
[1.3, inf]
"""
from .calibration import calibrate
from .histograms import EXACT_LIMIT, key_of_bits, ordered_bits
from .prediction import predict
from .runner import ID_CHECK_BATCH
from .sources import BATCH_ROWS, PIECE_ROWS, Piece, list_pieces, source_codes

__all__ = ["EXACT_LIMIT", "calibrate", "predict", "source_codes", "list_pieces", "ordered_bits", "key_of_bits",
           "BATCH_ROWS", "ID_CHECK_BATCH", "PIECE_ROWS", "Piece"]
