"""Exact calibration and prediction over data too large for one process, on Dask."""
from .calibration import (  # noqa: F401
    BATCH_ROWS,
    EXACT_LIMIT,
    ID_CHECK_BATCH,
    PIECE_ROWS,
    Piece,
    calibrate,
    key_of_bits,
    list_pieces,
    ordered_bits,
    predict,
    source_codes,
)

__all__ = ["EXACT_LIMIT", "calibrate", "predict", "source_codes", "list_pieces", "ordered_bits", "key_of_bits"]
