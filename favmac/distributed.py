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

import math
import os
import shutil
import sys
import uuid
from dataclasses import dataclass

import numpy as np
import pandas as pd

# The library's calibration pieces, input checks and export table, imported in one place.
from .export import chosen_sets
from .io import ID_COLUMN, DataError
from .io.csv_parsing import numeric_block
from .replay import method_name
from .segments import check_group_labels, group_rows
from .thresholds import (
    INT64_LIMIT,
    ExactCosts,
    calibration_points,
    expected_margin,
    rank_edge,
    violation_rank,
    violation_scores,
)
from .universe import candidate_sets, check_score, check_universe

__all__ = ["EXACT_LIMIT", "calibrate", "predict", "source_codes", "list_pieces", "ordered_bits", "key_of_bits"]

EXACT_LIMIT = 4_000_000  # a crossing bucket with at most this many points is enumerated exactly
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
        if not found and not any(ch in item for ch in "*?["):
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
            with fs.open(path, "rb", compression="infer") as handle:
                header = handle.readline().decode("utf-8-sig", errors="replace").rstrip("\r\n")
            if not header.strip():
                raise DataError("the file is empty.", file=path, row=1, fix="Export the data again with a header row.")
            if "," not in header:
                for sep, name in ((";", "semicolons (;)"), ("\t", "tabs"), ("|", "vertical bars (|)")):
                    if sep in header:
                        raise DataError(f"the columns are separated by {name}, not commas.", file=path, row=1,
                                        fix="Save it as comma-separated CSV.")
            columns[path] = [c.strip().strip('"').strip() for c in header.split(",")]
            pieces.append(Piece("csv", path, path))
    return pieces, columns


def _codes_of_columns(columns, file, labelled: bool, codes=None, segment=None) -> list[str]:
    """The codes of a wide (or, unlabelled, probabilities-layout) file, checked against ``codes``."""
    names = list(columns)
    if ID_COLUMN not in names:
        raise DataError(f"there is no {ID_COLUMN} column.", file=file, row=1,
                        fix=f"The first column must be {ID_COLUMN}, then prob_<code> and label_<code> per code.")
    if segment is not None and segment not in names:
        raise DataError(f"there is no segment column {segment!r}.", file=file, row=1,
                        fix="Every file needs the segment column (e.g. the plan or region of each patient).")
    rest = [c for c in names if c not in (ID_COLUMN, segment) and not c.startswith("__")]  # "__index_level_0__" etc.
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


def _numeric(frame: pd.DataFrame, columns, file, first_row: int, kind: str) -> np.ndarray:
    """The ``columns`` of a batch as floats, checked by favmac.io's rules (rows numbered from the file's start)."""
    rows = np.arange(first_row + 2, first_row + 2 + len(frame))  # header = row 1, as favmac.io numbers rows
    return numeric_block(frame, list(columns), rows, file, kind)


def _batches(piece: Piece, wanted: list[str], text_columns=(ID_COLUMN,)):
    """Yield (first_row, pandas frame) batches of a piece, reading only ``wanted`` columns
    (``text_columns`` of a CSV stay text: ids and segment labels such as "007")."""
    import fsspec

    if piece.kind == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        with fsspec.open(piece.path, "rb") as handle:
            reader = pq.ParquetFile(handle)
            row = piece.first_row
            for batch in reader.iter_batches(batch_size=BATCH_ROWS, row_groups=list(piece.row_groups), columns=wanted):
                # Ids stay Arrow strings (null checks and output need no Python objects).
                names = [n for n in batch.schema.names if n != ID_COLUMN]
                frame = pa.RecordBatch.from_arrays([batch.column(n) for n in names], names=names).to_pandas()
                ids = batch.column(ID_COLUMN)
                frame[ID_COLUMN] = pd.Series(pd.arrays.ArrowExtensionArray(ids), index=frame.index)
                yield row, frame
                row += len(frame)
        return
    with fsspec.open(piece.path, "rb", compression="infer") as handle:
        header = handle.readline().decode("utf-8-sig", errors="replace").rstrip("\r\n")
        names = [c.strip().strip('"').strip() for c in header.split(",")]
        reader = pd.read_csv(handle, header=None, names=names, usecols=wanted, dtype={c: str for c in text_columns},
                             chunksize=BATCH_ROWS, skip_blank_lines=True)
        row = 0
        try:
            for frame in reader:
                yield row, frame
                row += len(frame)
        except (pd.errors.ParserError, ValueError) as err:
            raise DataError(f"the file cannot be read as CSV ({err}).", file=piece.file) from None


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

    def arrays(self, frame, file, first_row):
        """(probabilities, labels, segment labels or None) of a batch, checked."""
        probs = _numeric(frame, [f"prob_{c}" for c in self.codes], file, first_row, "probability")
        labels = _numeric(frame, [f"label_{c}" for c in self.codes], file, first_row, "label")
        _check_ids(frame, file, first_row)
        return probs, labels, _segment_labels(frame, self.segment, file, first_row)

    def points(self, probs, labels):
        """Per point set: (keys, integer weights) per patient row — (N, M) for expected control,
        (N,) scores with weight 1 per bound for violation control. Zero weights are dropped later."""
        cands = candidate_sets(probs, self.value, self.cost, self.universe)
        realized = self.costs.realized(cands, labels.astype(bool))
        if self.expected:
            return [calibration_points(cands, realized, self.score)]
        return [(violation_scores(cands, realized, bound, self.score), np.ones(len(probs), dtype=np.int64))
                for bound in self.bounds]


def _check_ids(frame, file, first_row) -> None:
    missing = np.flatnonzero(frame[ID_COLUMN].isna().to_numpy())
    if len(missing):
        raise DataError("the patient id is empty.", file=file, row=first_row + int(missing[0]) + 2, column=ID_COLUMN,
                        fix="Every row needs a patient id.")


def _segment_labels(frame, segment, file, first_row):
    """The batch's segment labels as text (favmac.segments' rule), or None without segments."""
    if segment is None:
        return None
    try:
        return check_group_labels(np.asarray(frame[segment], dtype=object), len(frame), name=segment)
    except ValueError:
        values = frame[segment]
        empty = np.flatnonzero(values.isna().to_numpy() | (values.astype(str).str.strip() == "").to_numpy())
        raise DataError("the segment label is empty.", file=file, row=first_row + int(empty[0]) + 2, column=segment,
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
    """Fold batches ``rows`` (iterable of (file, first_row, frame)) into one pass's results.

    Point sets are keyed by (group, s): group None is every patient, a segment label its
    patients only; s indexes the model's point sets (one per violation bound). ``request``
    is None for the first pass (a top-level histogram per point set) or a dict from point-set
    key to a list of regions (depth, prefix, exact) to histogram one level deeper
    (exact=False) or to enumerate as distinct patterns with summed weights (exact=True).

    Returns ``(patients per group, results)``: the first pass gives one sparse histogram
    (ids, sums, counts) per key, later passes one per requested region.
    """
    n_rows: dict = {None: 0}
    size = 1 << _WIDTHS[0]
    dense = {}  # the pooled sets: dense 20-bit histograms [sums, counts]
    sparse: dict = {}  # segment sets (few points each): sparse histograms per batch
    partial = {key: [[] for _ in regions] for key, regions in (request or {}).items()}
    for file, first_row, frame in rows:
        probs, labels, groups = model.arrays(frame, file, first_row)
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
        return n_rows, out
    return n_rows, {key: [_merge(parts) for parts in per_region] for key, per_region in partial.items()}


def _sparse(ids: np.ndarray, weights: np.ndarray):
    """(sorted unique ids, exact summed weights, counts) of a batch's points."""
    unique, inverse = np.unique(ids, return_inverse=True)
    return unique, _group_sum(inverse, weights, len(unique)), np.bincount(inverse, minlength=len(unique)).astype(np.int64)


def _piece_pass(piece: Piece, model: _Model, request):
    text = (ID_COLUMN,) if model.segment is None else (ID_COLUMN, model.segment)
    return _pass_rows(model, ((piece.file, row, frame) for row, frame in _batches(piece, model.wanted, text)), request)


def _frame_pass(frame: pd.DataFrame, name: str, model: _Model, request):
    _codes_of_columns(frame.columns, name, True, model.codes, model.segment)
    starts = range(0, max(len(frame), 1), BATCH_ROWS)
    return _pass_rows(model, ((name, start, frame.iloc[start : start + BATCH_ROWS]) for start in starts), request)


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

    def tasks(self, function, *args):
        import dask

        if self.frame is not None:
            parts = self.frame.to_delayed()
            return [dask.delayed(_frame_pass, pure=False)(part, f"partition {i}", *args) for i, part in enumerate(parts)]
        # pure=False: files may change between calls, so results are never reused by key
        return [dask.delayed(function, pure=False)(piece, *args) for piece in self.pieces]

    def run(self, tasks):
        import dask

        if self._client is not None:
            futures = self._client.compute(tasks)
            if self.progress:
                from distributed import progress

                progress(futures)
            return self._client.gather(futures)
        if self.progress:
            from dask.diagnostics import ProgressBar

            with ProgressBar(out=sys.stderr):  # stdout may carry results (the CLI prints thresholds there)
                return list(dask.compute(*tasks, scheduler=self.scheduler))
        return list(dask.compute(*tasks, scheduler=self.scheduler))


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
        label other than 0/1; the message names the file, the row (header = row 1) and the
        column.

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
        results = runner.run(runner.tasks(_piece_pass, model, None))
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
            delta=None, method=None, segment=None, scheduler=None, progress=False):
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
    scheduler, progress : as in :func:`calibrate`

    Returns
    -------
    int
        Number of patients written.
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
                        universe=universe, score=score, segment=segment)
            import dask

            if runner.frame is not None:
                tasks = [dask.delayed(_predict_frame, pure=False)(part, f"partition {i}", i, value, cost, runner.codes, info, staging)
                         for i, part in enumerate(runner.frame.to_delayed())]
            else:
                tasks = [dask.delayed(_predict_piece, pure=False)(piece, i, value, cost, runner.codes, info, staging)
                         for i, piece in enumerate(runner.pieces)]
            written = sum(runner.run(tasks))
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


def _predict_rows(rows, value, cost, codes, info, path):
    """Choose sets for batches ``rows`` of (file, first_row, frame); write them to ``path``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    written = 0
    try:
        for file, first_row, frame, prob_cols in rows:
            probs = _numeric(frame, prob_cols, file, first_row, "probability")
            _check_ids(frame, file, first_row)
            segments = _segment_labels(frame, info["segment"], file, first_row)
            threshold, notes = info["threshold"], None
            if segments is not None:
                threshold = np.array([info["threshold"].get(label, -math.inf) for label in segments])
                notes = ["" if label in info["threshold"] else f"segment {label!r} is not in the calibration data "
                         "(0 calibration patients), so its set is empty" for label in segments]
            cands = candidate_sets(probs, value, cost, info["universe"])
            selected = cands.masks(cands.choose(threshold, info["score"]))
            table = chosen_sets(frame[ID_COLUMN].astype(str).to_numpy(dtype=object), probs, selected, threshold,
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
    return written


def _predict_piece(piece, index, value, cost, codes, info, staging):
    fs_columns = list_pieces([piece.path])[1][piece.path] if piece.kind == "csv" else None
    if fs_columns is None:
        import fsspec
        import pyarrow.parquet as pq

        with fsspec.open(piece.path, "rb") as handle:
            fs_columns = list(pq.ParquetFile(handle).schema_arrow.names)
    wanted, prob_cols = _predict_columns(fs_columns, codes, info["segment"])
    path = os.path.join(staging, f"part-{index:05d}.parquet")
    text = (ID_COLUMN,) if info["segment"] is None else (ID_COLUMN, info["segment"])
    rows = ((piece.file, row, frame, prob_cols) for row, frame in _batches(piece, wanted, text))
    return _predict_rows(rows, value, cost, codes, info, path)


def _predict_frame(frame, name, index, value, cost, codes, info, staging):
    _codes_of_columns(frame.columns, name, False, codes, info["segment"])
    wanted, prob_cols = _predict_columns(list(frame.columns), codes, info["segment"])
    path = os.path.join(staging, f"part-{index:05d}.parquet")
    starts = range(0, len(frame), BATCH_ROWS)
    return _predict_rows(((name, s, frame.iloc[s : s + BATCH_ROWS], prob_cols) for s in starts), value, cost, codes, info, path)
