"""Reading Parquet tables into the same checked frames the CSV parser gives.

A Parquet file is recognized by its ``.parquet``/``.pq`` name or its ``PAR1`` signature,
for paths and for uploaded bytes alike. Its columns follow the CSV layouts (``patient_id``
then one column per code, or ``prob_<code>``/``label_<code>``), and the readers apply the
same checks with the same messages. Row numbers count as in the table's CSV export (row 1
holds the column names, row 2 the first patient), so a message reads the same whichever
format the data came in. An index saved by pandas (``df.to_parquet()`` with ``patient_id``
as index) is read back as a column. Ids stored as integers become text (``7`` -> ``"7"``).

pyarrow is imported on first use, so ``import favmac`` stays fast.
"""
from __future__ import annotations

import io
import os
import re

import numpy as np
import pandas as pd

from .csv_parsing import ID_COLUMN, SAVE_AS_CSV, finish_frame, header_names
from .errors import DataError

__all__ = ["PARQUET_MAGIC", "PARQUET_SUFFIXES", "as_text", "data_columns", "is_parquet", "parse_parquet"]

PARQUET_MAGIC = b"PAR1"
PARQUET_SUFFIXES = (".parquet", ".pq")

_PANDAS_INDEX = re.compile(r"__index_level_\d+__")


def is_parquet(data: bytes, file: str = "") -> bool:
    """True if ``data`` starts with the Parquet signature or ``file`` has a Parquet suffix.

    Examples
    --------
    >>> is_parquet(b"PAR1...."), is_parquet(b"", "cohort.PQ"), is_parquet(b"patient_id,A\\n", "a.csv")
    (True, True, False)
    """
    return data[:4] == PARQUET_MAGIC or os.path.splitext(str(file))[1].lower() in PARQUET_SUFFIXES


def data_columns(names) -> list[str]:
    """A Parquet schema's column names without the index columns pandas adds (``__index_level_<n>__``).

    >>> data_columns(["patient_id", "prob_A", "__index_level_0__"])
    ['patient_id', 'prob_A']
    """
    return [c for c in names if not _PANDAS_INDEX.fullmatch(c)]


def parse_parquet(data: bytes, file: str, text_columns=(ID_COLUMN,)):
    """Parse Parquet bytes into ``(frame, rows)`` like :func:`~favmac.io.csv_parsing.parse_csv`.

    ``text_columns`` (if present) become text, with missing cells as NaN; other columns keep
    their stored types. Column names are stripped; duplicate names, values under an unnamed
    column and a table without rows are refused as in CSV.

    Raises
    ------
    DataError
        If the bytes are not a readable Parquet file, or for the structural faults above.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet_file = pq.ParquetFile(io.BytesIO(data))
        # pandas stores an unnamed, non-default index as __index_level_<n>__: not data.
        stored = data_columns(parquet_file.schema_arrow.names)
        names = header_names(stored, file)  # refuses duplicate names before pyarrow trips on them
        frame = parquet_file.read(columns=stored).to_pandas(ignore_metadata=True)
    except DataError:
        raise
    except (pa.ArrowException, OSError, ValueError, TypeError) as err:
        raise DataError(
            f"the file cannot be read as Parquet ({err}).", file=file,
            fix="Check that the file is complete (not truncated) and really Parquet, or " + SAVE_AS_CSV[0].lower() + SAVE_AS_CSV[1:],
        ) from None
    frame.columns = names
    for column in text_columns:
        if column in names:
            frame[column] = as_text(frame[column])
    return finish_frame(frame, file, no_rows="the file has column names but no data rows.")


def as_text(column: pd.Series) -> pd.Series:
    """A column as text (object dtype), missing cells as NaN; whole floats lose their ``.0``.

    Examples
    --------
    >>> as_text(pd.Series([7, 8])).tolist(), as_text(pd.Series([7.0, None, 1.5])).tolist()
    (['7', '8'], ['7', nan, '1.5'])
    """
    if pd.api.types.is_integer_dtype(column.dtype) and not column.hasnans:
        return column.astype(str).astype(object)
    if pd.api.types.infer_dtype(column, skipna=True) in ("string", "empty"):
        return column.astype(object).where(column.notna(), np.nan)
    values = column.to_numpy(dtype=object)
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
            out[i] = np.nan
        elif isinstance(value, (bytes, bytearray)):
            out[i] = bytes(value).decode("utf-8", errors="replace")
        elif isinstance(value, (float, np.floating)) and float(value).is_integer():
            out[i] = str(int(value))
        else:
            out[i] = str(value)
    return pd.Series(out, index=column.index, name=column.name, dtype=object)
