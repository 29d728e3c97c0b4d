"""Sources: the files (paths, globs, folders, fsspec URLs) or dask DataFrame the engine reads.

Everything here is favmac.io's rules applied one piece and one batch at a time: each file's
header is judged by :func:`favmac.io.column_layout` (the wide and probabilities layouts, the
segment column, the codes every file must share), a CSV's text encoding by
:func:`favmac.io.text_encoding` and its header by ``csv_header``, and the rows by
``finish_frame`` (blank rows skipped but counted, unnamed columns empty), so a message names
the same file, row and column as the in-memory readers would.
"""
from __future__ import annotations

import csv
import os
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..io.csv_parsing import (
    ID_COLUMN,
    check_not_binary,
    csv_header,
    decode_text,
    finish_frame,
    header_names,
    header_sample,
    raise_ragged_row,
    text_encoding,
)
from ..io.errors import DataError
from ..io.parquet import as_text, data_columns
from ..io.layouts import column_layout
from ..io.text_columns import segment_labels as io_segment_labels

__all__ = ["BATCH_ROWS", "PIECE_ROWS", "Piece", "list_pieces", "source_codes", "checked_source", "batches",
           "rows_of", "segment_columns", "segment_labels", "is_dask_frame"]

BATCH_ROWS = 32_768  # rows a worker holds at once
PIECE_ROWS = 250_000  # Parquet row groups are grouped into tasks of about this many rows
_PARQUET = (".parquet", ".pq", ".parq")
_CSV = (".csv", ".csv.gz", ".csv.bz2", ".csv.zip", ".csv.xz")


@dataclass(frozen=True)
class Piece:
    """One task's share of the data: Parquet row groups or one CSV file.

    ``first_row`` is the 0-based index of the piece's first patient within its file, so
    errors can name the row (numbered as a spreadsheet shows a CSV: header = row 1).
    """

    kind: str  # "parquet" or "csv"
    path: str
    file: str
    row_groups: tuple = ()
    first_row: int = 0
    encoding: str = "utf-8-sig"  # a CSV's text encoding (favmac.io.text_encoding of its first bytes)
    columns: tuple = ()  # the file's column names (stripped; pandas' index columns left out)


def _kind_of(path: str) -> str:
    lower = path.lower()
    if lower.endswith(_PARQUET):
        return "parquet"
    if lower.endswith(_CSV):
        return "csv"
    raise DataError(
        "the file is neither Parquet nor CSV.", file=path,
        fix="Name the files *.parquet (or *.pq) or *.csv.",
    )


def _expand(source) -> tuple[object, list[str]]:
    """(filesystem, sorted file paths) for a path, glob, folder or list of them."""
    import fsspec

    items = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    if not items:
        raise DataError("no input files were given.", fix="Give a path, a glob such as 'claims/*.parquet' or a list of files.")
    fs = None
    paths: list[str] = []
    for item in items:
        item = os.fspath(item)
        item_fs, _, found = fsspec.core.get_fs_token_paths(item)
        fs = fs or item_fs
        magic = any(ch in item for ch in "*?[")
        if magic:  # fsspec expands '*' but not every pattern ('part-0000[01].parquet'): glob it ourselves
            found = sorted(item_fs.glob(fsspec.core.url_to_fs(item)[1]))
        elif not found:
            found = [item]
        if not found:
            raise DataError("the pattern matches no file.", file=item, fix="Check the path and the pattern.")
        for path in found:
            if item_fs.isdir(path):
                inside = sorted(p for p in item_fs.find(path) if p.lower().endswith(_PARQUET + _CSV))
                if not inside:
                    raise DataError("the folder holds no .parquet or .csv file.", file=path)
                paths.extend(inside)
            elif not item_fs.exists(path):
                raise DataError("the file does not exist.", file=path, fix="Check the path.")
            else:
                paths.append(path)
    kinds = {_kind_of(p) for p in paths}
    if len(kinds) > 1:
        raise DataError("the inputs mix Parquet and CSV files.", file=paths[0], fix="Give files of one format.")
    return fs, paths


def list_pieces(source, rows_per_piece: int = PIECE_ROWS):
    """The tasks a file set splits into, and the column names of every file.

    Parameters
    ----------
    source : str, os.PathLike or list of them
        A path, a glob (``'claims/*.parquet'``), a folder or a list; local or any fsspec URL.
    rows_per_piece : int
        Parquet row groups are grouped into tasks of about this many rows; a CSV file is one task.

    Returns
    -------
    pieces : list of Piece
    columns : dict
        File path -> list of (stripped) column names, in file order.
    """
    fs, paths = _expand(source)
    pieces, columns = [], {}
    for path in paths:
        kind = _kind_of(path)
        if kind == "parquet":
            import pyarrow.parquet as pq

            try:
                with fs.open(path, "rb") as handle:
                    meta = pq.ParquetFile(handle).metadata
            except Exception as err:  # noqa: BLE001 - any reader failure is a bad file
                raise DataError(f"the file cannot be read as Parquet ({err}).", file=path) from None
            names = data_columns(meta.schema.column(i).name for i in range(meta.num_columns))
            columns[path] = names
            groups, rows, first = [], 0, 0
            for g in range(meta.num_row_groups):
                groups.append(g)
                rows += meta.row_group(g).num_rows
                if rows >= rows_per_piece or g == meta.num_row_groups - 1:
                    pieces.append(Piece("parquet", path, path, tuple(groups), first, columns=tuple(names)))
                    first += rows
                    groups, rows = [], 0
        else:
            encoding, names = _csv_header(fs, path)
            columns[path] = names
            pieces.append(Piece("csv", path, path, encoding=encoding, columns=tuple(names)))
    return pieces, columns


def _csv_header(fs, path: str) -> tuple[str, list[str]]:
    """(text encoding, header names) of a CSV file, judged from its header row by favmac.io's
    rules (``check_not_binary``, ``text_encoding``, ``csv_header``)."""
    with fs.open(path, "rb", compression="infer") as handle:
        sample, more = header_sample(handle.read)  # the whole header row: a wide file's would be cut at 64 KB
    check_not_binary(sample, path)
    encoding = text_encoding(sample, truncated=more)
    return encoding, csv_header(decode_text(sample, encoding), path)


def checked_source(source, labelled: bool, codes=None, segment=None):
    """(pieces or None for a dask DataFrame, codes) with every file's header checked.

    The first file (or the frame) gives the codes unless ``codes`` are given; every later
    file must hold the same ones (:func:`favmac.io.column_layout`). With ``codes`` given,
    their order (the calibration's) wins over the files' column order.
    """
    if is_dask_frame(source):
        found = column_layout(list(source.columns), "the dask DataFrame", labelled=labelled, segment_column=segment,
                              codes=codes, codes_from="the calibration data").codes
        return None, found
    pieces, columns = list_pieces(source)
    first = next(iter(columns))
    found = column_layout(columns[first], first, labelled=labelled, segment_column=segment, codes=codes).codes
    for path, names in columns.items():
        column_layout(names, path, labelled=labelled, segment_column=segment, codes=found,
                      codes_from="the calibration data" if codes is not None else first)
    return pieces, found


def source_codes(source, labelled: bool = True, segment=None) -> list[str]:
    """The codes of a file set or dask DataFrame (the first file's order), every header checked.

    Parameters
    ----------
    source : as in :func:`favmac.distributed.calibrate`
    labelled : bool
        True: the wide layout (``prob_<code>`` and ``label_<code>``); False: also accept the
        probabilities layout (``patient_id`` and one column per code).
    segment : str, optional
        A segment column every file must have (it is not a code).

    Returns
    -------
    list of str
    """
    return checked_source(source, labelled, segment=segment)[1]


def batches(piece: Piece, wanted: list[str], text_columns=(ID_COLUMN,)):
    """Yield (rows, pandas frame) batches of a piece, ``rows`` being each frame row's spreadsheet
    row number in its file (header = row 1; blank CSV rows are skipped but counted, as favmac.io
    counts them). Parquet reads only ``wanted`` columns; ``text_columns`` stay text (ids and
    segment labels such as "007")."""
    import fsspec

    if piece.kind == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        with fsspec.open(piece.path, "rb") as handle:
            reader = pq.ParquetFile(handle)
            row = piece.first_row + 2
            for batch in reader.iter_batches(batch_size=BATCH_ROWS, row_groups=list(piece.row_groups), columns=wanted):
                # Text ids stay Arrow strings (the checks and the output need no Python objects).
                names = [n for n in batch.schema.names if n != ID_COLUMN]
                frame = (pa.RecordBatch.from_arrays([batch.column(n) for n in names], names=names).to_pandas()
                         if names else pd.DataFrame(index=pd.RangeIndex(batch.num_rows)))
                ids = batch.column(ID_COLUMN)
                if pa.types.is_string(ids.type) or pa.types.is_large_string(ids.type):
                    frame[ID_COLUMN] = pd.Series(pd.arrays.ArrowExtensionArray(ids), index=frame.index)
                else:  # integer ids etc.: text as favmac.io's Parquet reader makes it (7 -> "7")
                    frame[ID_COLUMN] = as_text(ids.to_pandas()).to_numpy()
                for column in text_columns:  # segment labels: text as favmac.io makes them (7.0 -> "7")
                    if column != ID_COLUMN and column in frame.columns:
                        frame[column] = as_text(frame[column])
                yield np.arange(row, row + len(frame)), frame
                row += len(frame)
        return
    # Text mode with universal newlines: \r\n and \r end lines; the encoding drops a byte-order mark.
    with fsspec.open(piece.path, "rt", compression="infer", encoding=piece.encoding, newline=None) as handle:
        names = header_names(next(csv.reader([handle.readline()])), piece.file)
        reader = pd.read_csv(handle, header=None, names=names, dtype={c: str for c in text_columns if c in names},
                             chunksize=BATCH_ROWS, skip_blank_lines=False, skipinitialspace=True, index_col=False)
        row = 2
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", pd.errors.ParserWarning)
                for frame in reader:
                    n = len(frame)
                    # favmac.io's rules: fully empty rows dropped (their numbers kept), unnamed columns must be empty
                    frame, rows = finish_frame(frame, piece.file, no_rows=None, first_row=row)
                    row += n
                    if len(frame):
                        yield rows, frame
        except (pd.errors.ParserError, pd.errors.ParserWarning) as err:
            with fsspec.open(piece.path, "rt", compression="infer", encoding=piece.encoding, newline="") as lines:
                raise_ragged_row(lines, len(names), piece.file, err)
        except DataError:
            raise
        except UnicodeDecodeError as err:
            raise DataError(f"the file cannot be decoded as {piece.encoding} text ({err.reason}).", file=piece.file,
                            fix="Save it as CSV UTF-8.") from None
        except ValueError as err:
            raise DataError(f"the file cannot be read as CSV ({err}).", file=piece.file) from None


def rows_of(item, name: str, wanted: list[str], text_columns):
    """(file, rows, frame) batches of a Piece, or of a dask partition (a pandas frame named ``name``,
    rows numbered within the partition from 2)."""
    if isinstance(item, Piece):
        for rows, frame in batches(item, wanted, text_columns):
            yield item.file, rows, frame
        return
    for start in range(0, len(item), BATCH_ROWS):
        frame = item.iloc[start : start + BATCH_ROWS]
        yield name, np.arange(start + 2, start + 2 + len(frame)), frame


def segment_columns(segment) -> tuple:
    """The segment columns of a ``segment`` argument: () for None, one name, or several (a list).

    >>> segment_columns(None), segment_columns("plan"), segment_columns(["plan", "age_band"])
    ((), ('plan',), ('plan', 'age_band'))
    """
    if segment is None:
        return ()
    return (segment,) if isinstance(segment, str) else tuple(str(c) for c in segment)


def segment_labels(frame, segment, file, rows):
    """The batch's segment labels as text (favmac.io's rule, ``favmac.io.text_columns.segment_labels``),
    or None without segments."""
    return None if segment is None else io_segment_labels(frame[segment], rows, file, segment)


def is_dask_frame(source) -> bool:
    """True for a dask DataFrame (False when dask is not installed)."""
    try:
        import dask.dataframe as dd
    except ImportError:  # pragma: no cover
        return False
    return isinstance(source, dd.DataFrame)
