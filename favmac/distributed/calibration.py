"""Exact calibration and prediction over data too large for one process, on Dask.

The final thresholds of FavMac over a calibration set are a weighted order statistic of
per-patient points (SPEC, "Distributed calibration"), so they split over partitions:

1. every partition turns its patients into points — (key, integer weight) for expected-cost
   control, the scores T_i with weight 1 for violation control — and returns exact integer
   histograms over the keys' ordered 64-bit patterns (the top 20 bits first);
2. the coordinator adds the histograms, finds for every target the bucket where
   F(b) = total weight of keys <= b crosses M (or the k-th largest T_i), and
3. asks the partitions again, inside the crossing buckets only: either the next 22 bits
   (a bucket still holding many points) or the exact distinct keys with their summed weights,
   until one key remains. The SPEC's edge rules (+inf, -inf) are applied on the way.

Nothing is approximate and nothing depends on the partition order: weights are integers at
the cost's decimal scale (``favmac.thresholds.ExactCosts``). Sums are int64 while they
provably fit (below ``INT64_LIMIT`` = 2^62: a partition's points sum to at most
rows x C_max x scale, and the coordinator switches to Python integers before a running sum
could reach the limit), Python integers otherwise. No
partition ever materializes more than one batch of rows; the data is read once per pass
(two passes in practice, a third only when a 20-bit bucket holds more than
``EXACT_LIMIT`` points).

Input is checked by favmac.io's rules and wording (CSV files are parsed with its public
helpers); duplicate patient ids across the whole source are found exactly without gathering
them (``_Runner.run_checking_ids``: a dask hash ``value_counts`` in the first pass's graph,
then the real ids of the few repeated hashes).

Work runs on any Dask scheduler: the local default, a scheduler name ("threads",
"processes", "synchronous"), a ``distributed.Client`` or a scheduler address
("tcp://host:8786").

Examples
--------
>>> import numpy as np, pandas as pd, dask.dataframe as dd
>>> from favmac import AdditiveValue, AdditiveCost
>>> frame = pd.DataFrame({"patient_id": ["a", "b", "c"], "prob_X": [0.9, 0.2, 0.6],
...                       "label_X": [1, 0, 0], "prob_Y": [0.5, 0.5, 0.1], "label_Y": [0, 1, 0]})
>>> calibrate(dd.from_pandas(frame, npartitions=2), AdditiveValue(), AdditiveCost(), [1.0, 1.5]).tolist()
[1.3, inf]
"""
from __future__ import annotations

import csv
import math
import operator
import os
import shutil
import sys
import uuid
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

# The library's calibration pieces, input checks and export table, imported in one place.
from ..export import chosen_sets
from ..io import ID_COLUMN, DataError
from ..io.csv_parsing import (
    check_delimiter,
    check_not_binary,
    finish_frame,
    header_names,
    numeric_block,
    patient_ids,
    raise_ragged_row,
)
from ..io.errors import LIST_LIMIT, plural
from ..io.parquet import as_text
from ..replay import method_name
from ..segments import check_group_labels, group_rows, too_small_reason
from ..thresholds import (
    INT64_LIMIT,
    ExactCosts,
    calibration_points,
    expected_margin,
    rank_edge,
    violation_rank,
    violation_scores,
)
from ..universe import candidate_sets, check_score, check_universe

__all__ = ["EXACT_LIMIT", "calibrate", "predict", "source_codes", "list_pieces", "ordered_bits", "key_of_bits"]

EXACT_LIMIT = 4_000_000  # a crossing bucket with at most this many points is enumerated exactly
ID_CHECK_BATCH = 10_000  # repeated id hashes whose rows one id-only pass fetches
BATCH_ROWS = 32_768  # rows a worker holds at once
PIECE_ROWS = 250_000  # Parquet row groups are grouped into tasks of about this many rows
_WIDTHS = (20, 22, 22)  # bits of the ordered key pattern resolved at each depth (sum 64)
_LIMB_BITS = 26  # integer weights are summed in 26-bit limbs so float bincounts stay exact
_SAFE = INT64_LIMIT
_SIGN = np.uint64(1 << 63)
_PARQUET = (".parquet", ".pq", ".parq")
_CSV = (".csv", ".csv.gz", ".csv.bz2", ".csv.zip", ".csv.xz")
_LOCAL_SCHEDULERS = ("threads", "threading", "processes", "multiprocessing", "synchronous", "single-threaded", "sync")


# ============================================================================ ordered keys


def ordered_bits(keys) -> np.ndarray:
    """uint64 patterns that sort like the float64 ``keys`` (-0.0 is mapped to 0.0).

    Non-negative floats order like their bits; negative ones are bit-flipped, and the sign bit
    is set on the non-negative ones so they come after. -inf and +inf land at the ends.

    >>> ordered_bits([-np.inf, -1.0, -0.0, 0.0, 1.0, np.inf]).argsort().tolist()
    [0, 1, 2, 3, 4, 5]
    >>> int(ordered_bits([-0.0])[0]) == int(ordered_bits([0.0])[0])
    True
    """
    keys = np.asarray(keys, dtype=np.float64) + 0.0  # -0.0 + 0.0 == +0.0
    if np.isnan(keys).any():
        raise ValueError("a calibration key is NaN")
    bits = keys.view(np.uint64)
    return np.where(bits & _SIGN, ~bits, bits | _SIGN)


def key_of_bits(pattern: int) -> float:
    """The float64 whose ordered pattern (see ``ordered_bits``) is ``pattern``.

    >>> key_of_bits(int(ordered_bits([2.5])[0]))
    2.5
    """
    pattern = np.uint64(pattern)
    bits = pattern ^ _SIGN if pattern & _SIGN else ~pattern
    return float(np.array([bits], dtype=np.uint64).view(np.float64)[0])


# ============================================================================ exact sums


def _group_sum(ids: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    """Exact per-id sums of integer ``weights`` (ids in [0, size)).

    int64 weights are cut into 26-bit limbs and each limb is bincounted in float64, exact
    while a call adds fewer than 2^27 values; the result is int64 when it provably fits
    (count x max weight < 2^62), else an object array of Python ints.
    """
    if len(ids) >= 2**27:  # keep every float64 limb sum below 2^53
        half = len(ids) // 2
        return _add(_group_sum(ids[:half], weights[:half], size), _group_sum(ids[half:], weights[half:], size))
    if weights.dtype == object or (len(weights) and int(weights.max()) * len(weights) >= _SAFE):
        out = np.zeros(size, dtype=object)
        np.add.at(out, ids, weights.astype(object))
        return out
    weights = weights.astype(np.int64, copy=False)
    out = np.zeros(size, dtype=np.int64)
    shift = 0
    mask = (1 << _LIMB_BITS) - 1
    while True:
        limb = weights & mask
        if limb.any():
            out += np.bincount(ids, weights=limb, minlength=size).astype(np.int64) << shift
        weights = weights >> _LIMB_BITS
        shift += _LIMB_BITS
        if not weights.any():
            return out


def _add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a + b exactly: int64 while both stay below 2^62, Python ints once either might not."""
    if a.dtype == object or b.dtype == object or (len(a) and (int(a.max()) >= _SAFE or int(b.max()) >= _SAFE)):
        return a.astype(object) + b.astype(object)
    return a + b


def _merge(parts):
    """Merge sparse histograms [(ids, sums, counts)] into one with sorted unique ids."""
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    ids = np.concatenate([p[0] for p in parts])
    object_sums = any(p[1].dtype == object for p in parts)
    sums = np.concatenate([p[1].astype(object) if object_sums else p[1] for p in parts])
    counts = np.concatenate([p[2] for p in parts])
    unique, inverse = np.unique(ids, return_inverse=True)
    return unique, _group_sum(inverse, sums, len(unique)), np.bincount(inverse, weights=counts, minlength=len(unique)).astype(np.int64)


def _cumsum(sums: np.ndarray, start: int) -> np.ndarray:
    """start + running sums, exact (int64 while the total fits, Python ints otherwise)."""
    if sums.dtype != object and start + int(sums.sum(dtype=object)) < _SAFE:
        return start + np.cumsum(sums, dtype=np.int64)
    return start + np.cumsum(sums.astype(object))


# ============================================================================ sources


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
    encoding: str = "utf-8-sig"  # a CSV's text encoding (utf-8-sig, utf-16 or cp1252, as favmac.io decodes)


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
            columns[path] = [meta.schema.column(i).name for i in range(meta.num_columns)]
            groups, rows, first = [], 0, 0
            for g in range(meta.num_row_groups):
                groups.append(g)
                rows += meta.row_group(g).num_rows
                if rows >= rows_per_piece or g == meta.num_row_groups - 1:
                    pieces.append(Piece("parquet", path, path, tuple(groups), first))
                    first += rows
                    groups, rows = [], 0
        else:
            encoding, names = _csv_header(fs, path)
            columns[path] = names
            pieces.append(Piece("csv", path, path, encoding=encoding))
    return pieces, columns


def _csv_header(fs, path: str) -> tuple[str, list[str]]:
    """(text encoding, header names) of a CSV file, checked as favmac.io checks a whole file.

    Only the first 64 KB are read: binary files, an empty file or first row and another
    delimiter than commas are refused; a byte-order mark, Windows or old-Mac line endings and
    spaces around names are tolerated; a duplicate name is refused (favmac.io's
    ``header_names``; unnamed columns get placeholders that must stay empty).
    """
    with fs.open(path, "rb", compression="infer") as handle:
        sample = handle.read(65536)
    check_not_binary(sample, path)
    encoding = _encoding_of(sample, truncated=len(sample) == 65536)
    text = sample.decode(encoding, errors="replace")
    if not text.strip():
        raise DataError("the file is empty.", file=path,
                        fix="Expected a CSV with a header row (patient_id, then the code columns) and one row per patient.")
    first_line = text.replace("\r\n", "\n").replace("\r", "\n").split("\n", 1)[0]
    if not first_line.strip():
        raise DataError("the first row is empty.", file=path, row=1,
                        fix="The header (patient_id, then the code columns) must be on row 1.")
    check_delimiter(first_line, path)
    return encoding, header_names(next(csv.reader([first_line])), path)


def _encoding_of(sample: bytes, truncated: bool = False) -> str:
    """The encoding favmac.io's ``decode_text`` would use, judged from a file's first bytes
    (``truncated``: the file goes on, so a character may be cut at the sample's end).

    >>> _encoding_of(b"\\xef\\xbb\\xbfpatient_id"), _encoding_of(b"\\xff\\xfep\\x00"), _encoding_of(b"id,caf\\xe9")
    ('utf-8-sig', 'utf-16', 'cp1252')
    """
    if sample.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    try:
        sample.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        if not truncated or err.start < len(sample) - 3:  # not just a character cut at the sample's end
            return "cp1252"
    return "utf-8-sig"


def _codes_of_columns(columns, file, labelled: bool, codes=None, segment=None) -> list[str]:
    """The codes of a wide (or, unlabelled, probabilities-layout) file, checked against ``codes``."""
    names = list(columns)
    if ID_COLUMN not in names:
        raise DataError(f"there is no {ID_COLUMN} column.", file=file, row=1,
                        fix=f"The first column must be {ID_COLUMN}, then prob_<code> and label_<code> per code.")
    if segment is not None and segment not in names:
        raise DataError(f"there is no segment column {segment!r}.", file=file, row=1,
                        fix="Every file needs the segment column (e.g. the plan or region of each patient).")
    # "__index_level_0__" etc.; "\x00unnamed<n>": a CSV column without a name, checked empty on reading
    rest = [c for c in names if c not in (ID_COLUMN, segment) and not c.startswith(("__", "\x00unnamed"))]
    prob = [c[5:] for c in rest if c.startswith("prob_")]
    label = [c[6:] for c in rest if c.startswith("label_")]
    other = [c for c in rest if not c.startswith(("prob_", "label_"))]
    if not labelled and not prob and not label:
        prob, other = other, []  # the probabilities layout: one column per code
    if other:
        raise DataError(f"the column {other[0]!r} is neither {ID_COLUMN} nor prob_<code> / label_<code>.",
                        file=file, row=1, column=other[0],
                        fix="In a wide file every column after patient_id is named prob_<code> or label_<code>.")
    if labelled or label:
        for have, want, have_prefix, want_prefix in ((prob, label, "prob_", "label_"), (label, prob, "label_", "prob_")):
            missing = [c for c in have if c not in set(want)]
            if missing:
                raise DataError(f"there is no matching {want_prefix}{missing[0]} column.", file=file, row=1,
                                column=f"{have_prefix}{missing[0]}",
                                fix="A wide file needs both prob_<code> and label_<code> for every code.")
    if not prob:
        raise DataError("the file has no code columns.", file=file, row=1,
                        fix="Add prob_<code> and label_<code> columns, one pair per code.")
    if codes is not None and sorted(prob) != sorted(codes):
        extra = [c for c in prob if c not in set(codes)]
        missing = [c for c in codes if c not in set(prob)]
        detail = "; ".join(part for part in (
            f"codes not in the first file: {', '.join(extra[:5])}" if extra else "",
            f"missing codes: {', '.join(missing[:5])}" if missing else "") if part)
        raise DataError(f"the codes differ from the first file's ({detail}).", file=file, row=1,
                        column=None, fix="Every file must hold the same codes (their column order may differ).")
    return prob


def _checked_source(source, labelled: bool, codes=None, segment=None):
    """(pieces or None for a dask DataFrame, codes) with every file's header checked."""
    if _is_dask_frame(source):
        found = _codes_of_columns(list(source.columns), "the dask DataFrame", labelled, codes, segment)
        return None, list(codes) if codes is not None else found
    pieces, columns = list_pieces(source)
    first = next(iter(columns))
    found = _codes_of_columns(columns[first], first, labelled, codes, segment)
    for path, names in columns.items():
        _codes_of_columns(names, path, labelled, found, segment)
    # with ``codes`` given, their order (the calibration's) wins over the files' column order
    return pieces, list(codes) if codes is not None else found


def source_codes(source, labelled: bool = True, segment=None) -> list[str]:
    """The codes of a file set or dask DataFrame (the first file's order), every header checked.

    Parameters
    ----------
    source : as in :func:`calibrate`
    labelled : bool
        True: the wide layout (``prob_<code>`` and ``label_<code>``); False: also accept the
        probabilities layout (``patient_id`` and one column per code).
    segment : str, optional
        A segment column every file must have (it is not a code).

    Returns
    -------
    list of str
    """
    return _checked_source(source, labelled, segment=segment)[1]


def _batches(piece: Piece, wanted: list[str], text_columns=(ID_COLUMN,)):
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


def _rows_of(item, name: str, wanted: list[str], text_columns):
    """(file, rows, frame) batches of a Piece, or of a dask partition (a pandas frame named ``name``,
    rows numbered within the partition from 2)."""
    if isinstance(item, Piece):
        for rows, frame in _batches(item, wanted, text_columns):
            yield item.file, rows, frame
        return
    for start in range(0, len(item), BATCH_ROWS):
        frame = item.iloc[start : start + BATCH_ROWS]
        yield name, np.arange(start + 2, start + 2 + len(frame)), frame


def _id_hashes(ids) -> np.ndarray:
    """64-bit hashes of stripped patient ids (pandas' fixed-key SipHash: the same in every process)."""
    return pd.util.hash_array(np.asarray(ids, dtype=object))


# ============================================================================ the model


@dataclass(frozen=True)
class _Model:
    """Everything a worker needs to turn rows into points (small and picklable)."""

    value: object
    cost: object
    universe: str
    score: str
    codes: tuple
    costs: ExactCosts
    bounds: tuple  # violation control: distinct integer bounds floor(c * scale); () for expected control
    segment: str | None = None  # column of group labels: every group is also calibrated on its own

    @property
    def wanted(self) -> list[str]:
        """The columns a pass reads."""
        extra = [] if self.segment is None else [self.segment]
        return [ID_COLUMN] + extra + [f"prob_{c}" for c in self.codes] + [f"label_{c}" for c in self.codes]

    @property
    def expected(self) -> bool:
        return not self.bounds

    @property
    def n_sets(self) -> int:
        return max(1, len(self.bounds))

    def arrays(self, frame, file, rows, hash_ids: bool = True):
        """(probabilities, labels, segment labels or None, id hashes or None) of a batch, checked by
        favmac.io's rules (the ids are checked on the first pass only, with ``hash_ids``)."""
        probs = numeric_block(frame, [f"prob_{c}" for c in self.codes], rows, file, "probability")
        labels = numeric_block(frame, [f"label_{c}" for c in self.codes], rows, file, "label")
        hashes = _id_hashes(patient_ids(frame, rows, file)) if hash_ids else None
        return probs, labels, _segment_labels(frame, self.segment, file, rows), hashes

    def points(self, probs, labels):
        """Per point set: (keys, integer weights) per patient row — (N, M) for expected control,
        (N,) scores with weight 1 per bound for violation control. Zero weights are dropped later."""
        cands = candidate_sets(probs, self.value, self.cost, self.universe)
        realized = self.costs.realized(cands, labels.astype(bool))
        if self.expected:
            return [calibration_points(cands, realized, self.score)]
        return [(violation_scores(cands, realized, bound, self.score), np.ones(len(probs), dtype=np.int64))
                for bound in self.bounds]


def _segment_labels(frame, segment, file, rows):
    """The batch's segment labels as text (favmac.segments' rule), or None without segments."""
    if segment is None:
        return None
    try:
        return check_group_labels(np.asarray(frame[segment], dtype=object), len(frame), name=segment)
    except ValueError:
        values = frame[segment]
        empty = np.flatnonzero(values.isna().to_numpy() | (values.astype(str).str.strip() == "").to_numpy())
        raise DataError("the segment label is empty.", file=file, row=int(rows[empty[0]]), column=segment,
                        fix="Every patient needs a segment label.") from None


# ============================================================================ one pass over a piece


def _select(patterns: np.ndarray, depth: int, prefix: int) -> np.ndarray:
    """Mask of the patterns whose top sum(_WIDTHS[:depth]) bits equal ``prefix``."""
    used = sum(_WIDTHS[:depth])
    if used == 0:
        return np.ones(len(patterns), dtype=bool)
    return (patterns >> np.uint64(64 - used)) == np.uint64(prefix)


def _bucket(patterns: np.ndarray, depth: int) -> np.ndarray:
    """The next _WIDTHS[depth] bits after a depth-``depth`` prefix, as int64 bucket ids."""
    used = sum(_WIDTHS[: depth + 1])
    ids = patterns >> np.uint64(64 - used)
    return (ids & np.uint64((1 << _WIDTHS[depth]) - 1)).astype(np.int64)


def _pass_rows(model: _Model, rows, request):
    """Fold batches ``rows`` (iterable of (file, row numbers, frame)) into one pass's results.

    Point sets are keyed by (group, s): group None is every patient, a segment label its
    patients only; s indexes the model's point sets (one per violation bound). ``request``
    is None for the first pass (a top-level histogram per point set) or a dict from point-set
    key to a list of regions (depth, prefix, exact) to histogram one level deeper
    (exact=False) or to enumerate as distinct patterns with summed weights (exact=True).

    Returns ``(patients per group, results)``: the first pass gives one sparse histogram
    (ids, sums, counts) per key, later passes one per requested region. The first pass
    appends a third item, the 64-bit hashes of the patient ids (for the duplicate check).
    """
    n_rows: dict = {None: 0}
    size = 1 << _WIDTHS[0]
    dense = {}  # the pooled sets: dense 20-bit histograms [sums, counts]
    sparse: dict = {}  # segment sets (few points each): sparse histograms per batch
    partial = {key: [[] for _ in regions] for key, regions in (request or {}).items()}
    hashes = []
    for file, row_numbers, frame in rows:
        probs, labels, groups, id_hashes = model.arrays(frame, file, row_numbers, hash_ids=request is None)
        if request is None:
            hashes.append(id_hashes)
        n_rows[None] += len(probs)
        if not len(probs):
            continue
        per_row = model.points(probs, labels)
        selections = [(None, slice(None))] + (group_rows(groups) if groups is not None else [])
        for group, selected in selections:
            if group is not None:
                n_rows[group] = n_rows.get(group, 0) + len(selected)
            for s, (keys, weights) in enumerate(per_row):
                keys, weights = keys[selected], weights[selected]
                keep = weights > 0
                patterns, weights = ordered_bits(keys[keep]), weights[keep]
                key = (group, s)
                if request is None:
                    ids = _bucket(patterns, 0)
                    if group is None:
                        sums, counts = dense.get(key, (np.zeros(size, np.int64), np.zeros(size, np.int64)))
                        dense[key] = (_add(sums, _group_sum(ids, weights, size)), counts + np.bincount(ids, minlength=size))
                    else:
                        sparse.setdefault(key, []).append(_sparse(ids.astype(np.uint64), weights))
                    continue
                for r, (depth, prefix, exact_mode) in enumerate(request.get(key, ())):
                    mask = _select(patterns, depth, prefix)
                    if mask.any():
                        chosen = patterns[mask]
                        ids = chosen if exact_mode else _bucket(chosen, depth).astype(np.uint64)
                        partial[key][r].append(_sparse(ids, weights[mask]))
    if request is None:
        out = {key: _merge(parts) for key, parts in sparse.items()}
        for key, (sums, counts) in dense.items():
            nz = np.flatnonzero(counts)
            out[key] = (nz.astype(np.uint64), sums[nz], counts[nz])
        return n_rows, out, _hash_series(hashes)
    return n_rows, {key: [_merge(parts) for parts in per_region] for key, per_region in partial.items()}


def _sparse(ids: np.ndarray, weights: np.ndarray):
    """(sorted unique ids, exact summed weights, counts) of a batch's points."""
    unique, inverse = np.unique(ids, return_inverse=True)
    return unique, _group_sum(inverse, weights, len(unique)), np.bincount(inverse, minlength=len(unique)).astype(np.int64)


def _hash_series(parts) -> pd.Series:
    return pd.Series(np.concatenate(parts) if parts else np.zeros(0, np.uint64), dtype=np.uint64, name="id_hash")


def _piece_pass(item, name: str, model: _Model, request):
    """One pass over a Piece or a dask partition (see ``_pass_rows``)."""
    if not isinstance(item, Piece):
        _codes_of_columns(item.columns, name, True, model.codes, model.segment)
    text = (ID_COLUMN,) if model.segment is None else (ID_COLUMN, model.segment)
    return _pass_rows(model, _rows_of(item, name, model.wanted, text), request)


def _rows_with_ids(item, name: str, wanted: list[str], text_columns, candidates: np.ndarray):
    """[(id, file, row)] of the rows whose id hash is among ``candidates`` (sorted uint64)."""
    found = []
    for file, rows, frame in _rows_of(item, name, wanted, text_columns):
        ids = patient_ids(frame, rows, file)
        hit = np.isin(_id_hashes(ids), candidates)
        found.extend((pid, file, int(row)) for pid, row in zip(ids[hit], rows[hit]))
    return found


# ============================================================================ scheduling


class _Runner:
    """Runs one function over every piece on the chosen Dask scheduler."""

    def __init__(self, source, scheduler, progress: bool, labelled: bool, codes=None, segment=None):
        self.scheduler = scheduler
        self.progress = progress
        self._client = None
        self._own_client = False
        self.frame = source if _is_dask_frame(source) else None
        self.pieces, self.codes = _checked_source(source, labelled, codes, segment)

    def __enter__(self):
        scheduler = self.scheduler
        if scheduler is not None and not isinstance(scheduler, str):
            self._client = scheduler  # a distributed.Client (or anything with .compute/.gather)
        elif isinstance(scheduler, str) and scheduler not in _LOCAL_SCHEDULERS:
            from distributed import Client

            self._client = Client(scheduler)
            self._own_client = True
        return self

    def __exit__(self, *exc):
        if self._own_client:
            self._client.close()

    def items(self):
        """(item, name) per task: a Piece and its file, or a dask partition and "partition <i>"."""
        if self.frame is not None:
            return [(part, f"partition {i}") for i, part in enumerate(self.frame.to_delayed())]
        return [(piece, piece.file) for piece in self.pieces]

    def tasks(self, function, *args):
        """One delayed ``function(item, name, *args)`` per item (see ``items``)."""
        import dask

        # pure=False: files may change between calls, so results are never reused by key
        return [dask.delayed(function, pure=False)(item, name, *args) for item, name in self.items()]

    def run(self, tasks, extra=None):
        """The results of ``tasks`` (a list of delayed), and with ``extra`` (one dask collection)
        also its result, computed in the same graph: ``(results, extra result)``."""
        import dask

        wanted = list(tasks) + ([] if extra is None else [extra])
        with warnings.catch_warnings():
            # delayed tasks and a dask-expr collection in one graph: dask warns that it materializes the expression
            warnings.filterwarnings("ignore", message="Computing mixed collections", category=UserWarning)
            if self._client is not None:
                futures = self._client.compute(wanted)
                if self.progress:
                    from distributed import progress

                    progress(futures)
                out = list(self._client.gather(futures))
            elif self.progress:
                from dask.diagnostics import ProgressBar

                with ProgressBar(out=sys.stderr):  # stdout may carry results (the CLI prints thresholds there)
                    out = list(dask.compute(*wanted, scheduler=self.scheduler))
            else:
                out = list(dask.compute(*wanted, scheduler=self.scheduler))
        return out if extra is None else (out[:-1], out[-1])

    def run_checking_ids(self, tasks, text_columns):
        """Run tasks whose results end with a pandas Series of id hashes; return the results
        without it, after checking that no patient id occurs twice in the whole source.

        The check is exact and never gathers the ids: the hashes stay on the workers and a
        dask ``value_counts`` with ``split_out`` (a hash shuffle; dask's p2p shuffle on a
        cluster) finds the hashes seen more than once, in the same graph as ``tasks`` (the
        data is read once). Only when such hashes exist does a second, id-only pass fetch the
        rows holding them, and the real ids are compared on the coordinator, so a 64-bit hash
        collision between different ids is never reported.
        """
        import dask
        import dask.dataframe as dd

        heads = [dask.delayed(operator.getitem, pure=False)(task, slice(None, -1)) for task in tasks]
        hashes = [dask.delayed(operator.getitem, pure=False)(task, -1) for task in tasks]
        counts = dd.from_delayed(hashes, meta=pd.Series([], dtype=np.uint64, name="id_hash"), verify_meta=False)
        counts = counts.value_counts(split_out=max(1, math.ceil(len(tasks) / 16)))
        results, repeated = self.run(heads, counts[counts > 1])
        repeated = np.sort(repeated.index.to_numpy(dtype=np.uint64))
        for start in range(0, len(repeated), ID_CHECK_BATCH):
            candidates = repeated[start : start + ID_CHECK_BATCH]
            found = self.run(self.tasks(_rows_with_ids, [ID_COLUMN], text_columns, candidates))
            _raise_duplicate_ids([hit for part in found for hit in part])
        return [tuple(result) for result in results]


def _raise_duplicate_ids(hits) -> None:
    """Raise a DataError for the ids among ``hits`` [(id, file, row)] (in reading order) seen twice or more."""
    where: dict = {}
    second: dict = {}  # id -> position in reading order of its second occurrence
    for position, (pid, file, row) in enumerate(hits):
        where.setdefault(pid, []).append((file, row))
        if len(where[pid]) == 2:
            second[pid] = position
    repeated = [(pid, where[pid]) for pid in sorted(second, key=second.get)]
    if not repeated:
        return
    shown = "; ".join(f"{pid!r} ({', '.join(f'{file} row {row}' for file, row in places[:LIST_LIMIT])})"
                      for pid, places in repeated[:LIST_LIMIT])
    more = f"; and {len(repeated) - LIST_LIMIT} more" if len(repeated) > LIST_LIMIT else ""
    file, row = repeated[0][1][1]
    raise DataError(f"{plural(len(repeated), 'patient id')} {'appears' if len(repeated) == 1 else 'appear'} more than "
                    f"once: {shown}{more}.", file=file, row=row, column=ID_COLUMN,
                    fix="Each patient must have exactly one row across all the files.")


def _is_dask_frame(source) -> bool:
    try:
        import dask.dataframe as dd
    except ImportError:  # pragma: no cover
        return False
    return isinstance(source, dd.DataFrame)


# ============================================================================ calibrate


def calibrate(source, value, cost, targets, *, delta=None, universe="ratio", score="cost", c_max=None,
              segment=None, scheduler=None, progress=False, return_details=False):
    """Final FavMac thresholds over a very large labelled data set, computed exactly on Dask.

    The result equals ``FavMac(value, cost, c, delta=delta, universe=universe,
    c_max=c_max)`` fed every row (in any order) and read through ``.threshold``, for every
    target c.

    Parameters
    ----------
    source : str, os.PathLike, list of them, or dask.dataframe.DataFrame
        Parquet or CSV files in the wide layout (``patient_id``, ``prob_<code>``,
        ``label_<code>``; codes in the first file's column order, the same codes in every
        file): a path, a glob such as ``'claims/*.parquet'``, a folder, a list, or any fsspec
        URL (``s3://...``); or a dask DataFrame with those columns.
    value, cost : value and cost functions (favmac.functions)
    targets : float or sequence of float
        Target costs c, in the cost's own units.
    delta : float or None
        None: expected-cost control; a float in (0, 1): violation control.
    universe : {"ratio", "prob", "value", "full"}
    score : {"cost", "price"}
        What the threshold is on (SPEC, "The score a threshold is on"); "price" needs a
        greedy universe.
    c_max : float, optional
        Largest possible cost (default: the sum of the cost weights).
    segment : str, optional
        A column of group labels (plan, region, provider; SPEC "Segments"): every segment is
        also calibrated on its own patients, as ``FavMac.threshold_for(label)`` after
        ``update(p, y, group=labels)``.
    scheduler : None, str or distributed.Client
        None: dask's local default (threads); a local scheduler name ("threads", "processes",
        "synchronous"); a ``distributed.Client``; or a scheduler address such as
        ``"tcp://10.0.0.5:8786"`` (a client is opened for the call and closed after).
    progress : bool
        Show dask's progress bar (``dask.diagnostics.ProgressBar`` locally,
        ``distributed.progress`` on a cluster) for every pass.
    return_details : bool
        Also return a dict with ``n_patients``, ``codes``, ``passes``, the exact ``c_max`` and,
        with ``segment``, ``segment_sizes`` (label -> patients).

    Returns
    -------
    ndarray of float, shape (T,)
        The thresholds (may be +inf or -inf, per the SPEC's edge rules). With ``segment``,
        ``(thresholds, by_segment)`` where ``by_segment`` maps each label to its (T,) array.
        With ``return_details``, the details dict is appended to the returned tuple.

    Raises
    ------
    DataError
        A file (or partition) with missing columns, codes that differ from the first file's,
        or a missing, non-numeric, NaN or infinite cell, a probability outside [0, 1] or a
        label other than 0/1; a missing patient id or one seen twice in the whole source; a
        CSV fault favmac.io refuses (empty file, another delimiter, a ragged row, ...). The
        message names the file, the row (header = row 1, blank CSV rows counted) and the column.

    Notes
    -----
    Weights are the increments of each patient's running maximum of realized cost, as
    integers at the cost's decimal scale (violation control: weight 1 per patient). They
    are summed as int64 while a sum provably stays below 2^62 and as Python ints beyond,
    so the result is exact and independent of the partitioning.
    """
    scalar = np.ndim(targets) == 0
    targets = [float(t) for t in np.atleast_1d(np.asarray(targets, dtype=float))]
    if any(not math.isfinite(t) for t in targets):
        raise ValueError(f"targets must be finite, got {targets}")
    if delta is not None and not 0 < float(delta) < 1:
        raise ValueError(f"delta must be in (0, 1) or None, got {delta!r}")
    check_score(score, universe)
    with _Runner(source, scheduler, progress, labelled=True, segment=segment) as runner:
        n_codes = len(runner.codes)
        check_universe(universe, n_codes)
        costs = ExactCosts.of(cost, n_codes, c_max)
        bounds = () if delta is None else tuple(sorted({costs.bound(t) for t in targets}))
        model = _Model(value, cost, universe, score, tuple(runner.codes), costs, bounds, segment)
        text = (ID_COLUMN,) if segment is None else (ID_COLUMN, segment)
        results = runner.run_checking_ids(runner.tasks(_piece_pass, model, None), text)
        sizes: dict = {}
        for counts, _ in results:
            for group, n in counts.items():
                sizes[group] = sizes.get(group, 0) + n
        top_keys = {key for _, hists in results for key in hists}
        top = {key: _merge([hists[key] for _, hists in results if key in hists]) for key in top_keys}
        # Per (group, target): (point-set key, the integer F must exceed), or an edge answer.
        searches, answers = {}, {}
        for group, n_patients in sizes.items():
            for t, target in enumerate(targets):
                if delta is None:
                    margin = expected_margin(target, costs.c_max, n_patients)
                    scaled = margin * costs.scale
                    search = ((group, 0), scaled.numerator // scaled.denominator) if margin >= 0 else -math.inf
                else:
                    k = violation_rank(delta, n_patients)
                    edge = rank_edge(k, n_patients)  # the k-th largest T_i unless k is out of range
                    search = ((group, bounds.index(costs.bound(target))), n_patients - k) if math.isnan(edge) else edge
                if isinstance(search, tuple):
                    searches[group, t] = search
                else:
                    answers[group, t] = search
        # state per search: (point-set key, need, depth, prefix, exact, weight below the region)
        state = {}
        empty = (np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, np.int64))
        for search, (key, need) in searches.items():
            ids, sums, counts = top.get(key, empty)
            if (int(sums.sum(dtype=object)) if len(sums) else 0) <= need:
                answers[search] = math.inf  # F never exceeds M
                continue
            state[search] = _descend(key, need, 0, 0, 0, ids, sums, counts)
        passes = 1
        while state:
            regions: dict = {}
            for key, _, depth, prefix, exact_mode, _ in state.values():
                regions.setdefault(key, set()).add((depth, prefix, exact_mode))
            regions = {key: sorted(found) for key, found in regions.items()}
            results = runner.run(runner.tasks(_piece_pass, model, regions))
            passes += 1
            merged = {key: [_merge([hists[key][i] for _, hists in results]) for i in range(len(regions[key]))]
                      for key in regions}
            for search in list(state):
                key, need, depth, prefix, exact_mode, below = state[search]
                ids, sums, counts = merged[key][regions[key].index((depth, prefix, exact_mode))]
                if exact_mode:
                    answers[search] = key_of_bits(int(ids[_crossing(_cumsum(sums, below), need)]))
                    del state[search]
                else:
                    state[search] = _descend(key, need, depth, prefix, below, ids, sums, counts)

    def thresholds_of(group):
        values = np.array([answers[group, t] for t in range(len(targets))], dtype=float)
        return values[0] if scalar else values

    out = thresholds_of(None)
    if segment is not None:
        out = (out, {group: thresholds_of(group) for group in sorted(g for g in sizes if g is not None)})
    if return_details:
        details = {"n_patients": sizes[None], "codes": list(runner.codes), "passes": passes, "c_max": costs.c_max,
                   "scale": costs.scale}
        if segment is not None:
            details["segment_sizes"] = {g: n for g, n in sorted((g, n) for g, n in sizes.items() if g is not None)}
        return (*out, details) if segment is not None else (out, details)
    return out


def _crossing(cum: np.ndarray, need: int) -> int:
    """Index of the first running sum above ``need``."""
    if cum.dtype != object:
        return int(np.searchsorted(cum, need, side="right"))
    return next(i for i, v in enumerate(cum) if v > need)


def _descend(key, need, depth, prefix, below, ids, sums, counts):
    """The next region to ask for: the bucket of this histogram where F crosses ``need``."""
    cum = _cumsum(sums, below)
    j = _crossing(cum, need)
    new_below = below if j == 0 else int(cum[j - 1])
    new_prefix = (prefix << _WIDTHS[depth]) | int(ids[j])
    new_depth = depth + 1
    exact_mode = int(counts[j]) <= EXACT_LIMIT or new_depth == len(_WIDTHS) - 1
    # The region at new_depth is either enumerated exactly or histogrammed one level deeper.
    return (key, need, new_depth, new_prefix, exact_mode, new_below)


# ============================================================================ predict


def predict(source, value, cost, thresholds, out, *, universe="ratio", score="cost", codes=None, target=None,
            delta=None, method=None, segment=None, segment_sizes=None, c_max=None, scheduler=None, progress=False):
    """Choose the code set of every patient in a large unlabelled file set; write Parquet parts.

    Parameters
    ----------
    source : str, os.PathLike, list of them, or dask.dataframe.DataFrame
        Parquet or CSV files with ``patient_id`` and one column per code (the probabilities
        layout) or ``prob_<code>`` columns (a wide file; label columns are ignored).
    value, cost : value and cost functions
    thresholds : float, or dict of segment label -> float with ``segment``
        The threshold T (e.g. from :func:`calibrate`); with ``segment``, each segment's own
        (the second item :func:`calibrate` returns with ``segment``). A segment missing from
        the dict gets T = -inf (the empty set; it had no calibration patient), with a note.
    out : str
        Output folder; one ``part-NNNNN.parquet`` per task is written into it. It is filled
        only when every partition succeeded (written to a temporary folder, then renamed).
    universe, score : as in :func:`calibrate`
    codes : list of str, optional
        The calibration codes; every file must hold exactly these (any column order).
    target, delta, method : optional
        Copied into the output columns (as the CLI's CSV export does).
    segment : str, optional
        Column of segment labels; adds the export's ``segment`` and ``note`` columns.
    segment_sizes : dict, optional
        Segment label -> calibration patients (``details["segment_sizes"]`` of
        :func:`calibrate`). A segment whose threshold is -inf (too few patients for the target)
        then gets ``favmac.segments.too_small_reason`` as its note, as the in-memory export
        writes it; without the sizes the note says the threshold is -inf.
    c_max : float, optional
        The calibration's C_max (default: the sum of the cost weights), for that note.
    scheduler, progress : as in :func:`calibrate`

    Returns
    -------
    int
        Number of patients written.

    Raises
    ------
    DataError
        For the faults :func:`calibrate` refuses (labels are not read) and a patient id seen
        twice in the whole file set; nothing is written then.
    """
    check_score(score, universe)
    if segment is None:
        threshold = float(thresholds)
    else:
        if not isinstance(thresholds, dict):
            raise ValueError("thresholds: with segment=..., give a dict of segment label -> threshold")
        threshold = {str(label).strip(): float(t) for label, t in thresholds.items()}
    if any(math.isnan(t) for t in (threshold.values() if segment is not None else [threshold])):
        raise ValueError("thresholds: a threshold is NaN")
    out = os.fspath(out)
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise ValueError(f"out: {out!r} already exists and is not an empty folder")
    parent = os.path.dirname(os.path.abspath(out))
    staging = os.path.join(parent, f".{os.path.basename(out)}.partial-{uuid.uuid4().hex[:8]}")
    os.makedirs(staging)
    try:
        with _Runner(source, scheduler, progress, labelled=False, codes=codes, segment=segment) as runner:
            check_universe(universe, len(runner.codes))
            info = dict(threshold=threshold, method=method or method_name(universe, score), target=target, delta=delta,
                        universe=universe, score=score, segment=segment,
                        notes=_segment_notes(threshold, segment_sizes, target, delta,
                                             ExactCosts.of(cost, len(runner.codes), c_max).c_max)
                        if segment is not None else {})
            import dask

            tasks = [dask.delayed(_predict_item, pure=False)(item, name, index, value, cost, runner.codes, info, staging)
                     for index, (item, name) in enumerate(runner.items())]
            text = (ID_COLUMN,) if segment is None else (ID_COLUMN, segment)
            written = sum(count for (count,) in runner.run_checking_ids(tasks, text))
        if os.path.isdir(out):
            os.rmdir(out)
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return written


def _predict_columns(names, codes, segment=None):
    """(column names to read, prob column per code) for a probabilities or wide file."""
    prob_layout = any(c.startswith("prob_") for c in names)
    prob_cols = [f"prob_{c}" if prob_layout else c for c in codes]
    return [ID_COLUMN] + ([] if segment is None else [segment]) + prob_cols, prob_cols


def _segment_notes(thresholds: dict, sizes, target, delta, c_max) -> dict:
    """Segment label -> the export's note for each calibrated segment with T = -inf (empty sets).

    The wording is the in-memory export's (``favmac.export``): ``favmac.segments.too_small_reason``
    when the segment's calibration size is known.
    """
    notes = {}
    for label, threshold in thresholds.items():
        if threshold != -math.inf:
            continue
        n = None if sizes is None else {str(k).strip(): v for k, v in sizes.items()}.get(label)
        why = None
        if n is not None and target is not None:
            why = too_small_reason(int(n), target, c_max, delta)
        if why is None:
            why = "its calibrated threshold is -inf (too few calibration patients for the target), so every set is empty"
        notes[label] = f"segment {label!r}: {why}"
    return notes


def _predict_rows(rows, value, cost, codes, info, path, prob_cols):
    """Choose sets for batches ``rows`` of (file, row numbers, frame); write them to ``path``.

    Returns ``(patients written, id hashes)``.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    written = 0
    hashes = []
    missing_note = "segment {!r} is not in the calibration data (0 calibration patients), so its set is empty"
    try:
        for file, row_numbers, frame in rows:
            probs = numeric_block(frame, prob_cols, row_numbers, file, "probability")
            ids = patient_ids(frame, row_numbers, file)
            hashes.append(_id_hashes(ids))
            segments = _segment_labels(frame, info["segment"], file, row_numbers)
            threshold, notes = info["threshold"], None
            if segments is not None:
                threshold = np.array([info["threshold"].get(label, -math.inf) for label in segments])
                notes = [info["notes"].get(label, "") if label in info["threshold"] else missing_note.format(label)
                         for label in segments]
            cands = candidate_sets(probs, value, cost, info["universe"])
            selected = cands.masks(cands.choose(threshold, info["score"]))
            table = chosen_sets(ids.to_numpy(dtype=object), probs, selected, threshold,
                                codes=codes, value=value, cost=cost, method=info["method"],
                                target=math.nan if info["target"] is None else float(info["target"]),
                                delta=info["delta"], universe=info["universe"], score=info["score"],
                                segments=segments, notes=notes)
            arrow = pa.Table.from_pandas(table, preserve_index=False)
            if writer is None:
                writer = pq.ParquetWriter(path, arrow.schema)
            writer.write_table(arrow)
            written += len(table)
    finally:
        if writer is not None:
            writer.close()
    return written, _hash_series(hashes)


def _predict_item(item, name, index, value, cost, codes, info, staging):
    """Write the chosen sets of one Piece or dask partition as ``part-<index>.parquet``."""
    if isinstance(item, Piece):
        if item.kind == "csv":
            names = list_pieces([item.path])[1][item.path]
        else:
            import fsspec
            import pyarrow.parquet as pq

            with fsspec.open(item.path, "rb") as handle:
                names = list(pq.ParquetFile(handle).schema_arrow.names)
    else:
        _codes_of_columns(item.columns, name, False, codes, info["segment"])
        names = list(item.columns)
    wanted, prob_cols = _predict_columns(names, codes, info["segment"])
    path = os.path.join(staging, f"part-{index:05d}.parquet")
    text = (ID_COLUMN,) if info["segment"] is None else (ID_COLUMN, info["segment"])
    return _predict_rows(_rows_of(item, name, wanted, text), value, cost, codes, info, path, prob_cols)
