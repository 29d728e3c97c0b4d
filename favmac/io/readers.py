"""The input files FavMac works on, read into validated tables.

Layouts (``../shared/SPEC.md``, "Input files"), each as CSV or Parquet:

* **probabilities** — ``patient_id`` then one column per code (the header is the code),
  values in [0, 1];
* **labels** — the same layout, values 0/1; matched to the probabilities by id, not row;
* **wide** — one file with ``patient_id`` then ``prob_<code>`` and ``label_<code>`` per code;
* **weights** — columns ``code``, ``weight`` (>= 0) and an optional ``description``.

Calibration and new-patient files may carry one text column of segment labels (a plan,
region or provider; :mod:`favmac.segments`): by default a column named ``segment``, or the
column given as ``segment_column``. It is not a code; :attr:`Dataset.groups` holds it.
Several groupings: ``segment_column`` may be a list of columns (plan, age band, ...); each
becomes one grouping of :attr:`Dataset.groupings` (``groups`` is the first).

A calibration file may say when each patient's labels arrived (:mod:`favmac.arrivals`):
``label_available_column`` names a column of stream positions (integers: the labels
arrive right after the prediction at that position, >= the patient's own row position,
counted from 0 in file order) or of dates. Dates need a ``predicted_at`` column of dates
(the day each patient was predicted; the file in that order): a label dated D joins the
calibration data of the first patient predicted at or after D, i.e. its position is that
patient's position minus one (a label dated on its own patient's day, or later but before
any other prediction, arrives right after its own prediction); a date before the patient's
own ``predicted_at`` is refused. :attr:`Dataset.label_available_at` holds the positions.

Every malformed input raises :class:`~favmac.io.errors.DataError`, whose message names the
file, the row (counted as a spreadsheet shows it: the header is row 1) or column, the
problem and the fix. Codes may come in a different column order between files.

All readers are pure functions of the bytes they are given, so callers may cache them on
the file contents. Checks are vectorized: 100,000 patients x 35 codes load in about a second.
"""
from __future__ import annotations

import hashlib
import io
import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .csv_parsing import (
    ID_COLUMN,
    UNNAMED,
    check_code_names,
    check_not_binary,
    csv_header,
    decode_text,
    header_names,
    header_sample,
    text_encoding,
    check_id_column,
    numeric_block,
    parse_csv,
    patient_ids,
    read_bytes,
    source_name,
)
from .errors import DataError, join_few, plural
from .parquet import is_parquet, parse_parquet

__all__ = [
    "SEGMENT_COLUMN",
    "CELL_COLUMN",
    "KNOWN_CODES_COLUMN",
    "ColumnLayout",
    "Dataset",
    "column_layout",
    "column_names",
    "file_digests",
    "load_calibration",
    "load_new_patients",
    "load_new_patients_segmented",
    "member_context",
    "take_members",
    "parse_table",
    "read_labels",
    "read_probabilities",
    "read_table",
    "read_weights",
    "read_wide",
    "segment_labels",
]


#: The column name read as segment labels when no other is chosen.
SEGMENT_COLUMN = "segment"
#: Member-context columns for the CMS-HCC payment value (:mod:`favmac.payment`): the coefficient
#: cell of each member, and the codes already on the record (``known_codes``, ";"-joined, or one
#: 0/1 ``known_<code>`` column per code).
CELL_COLUMN = "cms_cell"
KNOWN_CODES_COLUMN = "known_codes"
_MEMBER_TEXT = (CELL_COLUMN, KNOWN_CODES_COLUMN)
#: The column of prediction dates that date-valued label arrivals are placed against.
PREDICTED_AT_COLUMN = "predicted_at"


@dataclass
class Dataset:
    """Probabilities and (optionally) labels of the same patients and codes.

    ``probs`` is indexed by ``patient_id`` (text) with one float64 column per code;
    ``labels`` has the same index and columns (int8 0/1) or is None; ``groups`` is the
    segment label of each patient (object array, rows as ``probs``) or None.
    """

    probs: pd.DataFrame
    labels: pd.DataFrame | None = None
    name: str = "data"
    groups: np.ndarray | None = None
    segment_column: str | None = None
    attributes: pd.DataFrame | None = None
    sources: dict | None = None  # file name -> SHA-256 of its bytes (for provenance)
    members: dict | None = None  # CMS member context: {"cells": (N,) or None, "known": (N, K) bool or None}
    groupings: dict | None = None  # segment column -> labels (N,), in the order asked; groups is the first
    label_available_at: np.ndarray | None = None  # (N,) int64 arrival positions (label_available_column)
    label_available_column: str | None = None  # the column label_available_at was read from
    rows: np.ndarray | None = None  # (N,) each patient's row in its file (header = row 1), for messages about patients

    def segment_columns(self) -> list[str]:
        """Columns that can serve as segments: the segment column(s) read, then the kept text columns."""
        out = [] if self.segment_column is None else [self.segment_column]
        out += [c for c in self.groupings or () if c not in out]
        if self.attributes is not None:
            out += [c for c in self.attributes.columns if c not in out]
        return out

    def segments(self, column: str) -> np.ndarray:
        """Segment labels (object array, rows as ``probs``) from ``column``; DataError for a missing label."""
        if column == self.segment_column and self.groups is not None:
            return self.groups
        if self.groupings and column in self.groupings:  # read with several segment columns
            return self.groupings[column]
        if self.attributes is None or column not in self.attributes.columns:
            raise DataError(f"there is no column named {column!r} to read the segments from.", file=self.name,
                            fix="Choose one of: " + (", ".join(self.segment_columns()) or "(none; add a segment column)"))
        values = self.attributes[column]
        missing = values.isna() | (values.astype(str).str.strip() == "")
        if missing.any():
            i = int(np.argmax(missing.to_numpy()))
            raise DataError(f"patient {values.index[i]!r} has no label in this column.", file=self.name, column=column,
                            row=None if self.rows is None else int(self.rows[i]),
                            fix="Give every patient a segment, or choose another column.")
        return np.array([str(v).strip() for v in values], dtype=object)

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


# --------------------------------------------------------------------------- tables


def parse_table(source, name=None, text_columns=(ID_COLUMN,)):
    """Parse a CSV or Parquet source into ``(frame, rows, file)``.

    Parquet is chosen by the ``PAR1`` signature or a ``.parquet``/``.pq`` name, CSV
    otherwise; see :func:`~favmac.io.csv_parsing.parse_csv` for the triple.
    """
    file = source_name(source, name)
    data = read_bytes(source, file)
    if is_parquet(data, file):
        return (*parse_parquet(data, file, text_columns), file)
    return parse_csv(data, file, text_columns)


def _no_segment_column(column, file) -> DataError:
    return DataError(
        f"there is no column named {column!r} to read the segments from.", file=file, row=1,
        fix=f"Add a {column} column (one text label per patient, e.g. a plan or region) "
        "or choose another segment column.",
    )


def _take_segment(frame, rows, file, column, required: bool, *, members: bool = True):
    """Remove the segment column from ``frame``; return ``(frame, labels or None)``.

    Missing labels are refused, naming the row; ``required`` refuses a file without the column.
    A member-context column (``cms_cell``: :func:`is_member_column`) used as the segment stays in
    ``frame`` while ``members`` is True: it is also each patient's cell, which :func:`take_members`
    reads (as the distributed engine does).
    """
    if column not in frame.columns:
        if required:
            raise _no_segment_column(column, file)
        return frame, None
    labels = segment_labels(frame[column], rows, file, column)
    return (frame if members and is_member_column(column) else frame.drop(columns=column)), labels


def segment_labels(values, rows, file, column) -> np.ndarray:
    """A segment column's labels as stripped text (object array); a missing or blank label is refused.

    ``rows`` are the spreadsheet row numbers of ``values`` (for the message). The readers and the
    distributed engine (batch by batch) read segment labels with this one rule.

    >>> segment_labels(pd.Series([" East", "7"]), np.array([2, 3]), "p.csv", "plan").tolist()
    ['East', '7']
    """
    values = pd.Series(values)
    text = values.astype(object).where(values.notna(), None).tolist()
    for i, label in enumerate(text):
        if label is None or not str(label).strip():
            raise DataError(
                "this patient has no segment label.", file=file, row=int(rows[i]), column=column,
                fix="Give every patient a segment (e.g. its plan or region), or turn segments off.",
            )
    return np.array([str(label).strip() for label in text], dtype=object)


def is_member_column(name: str) -> bool:
    """A member-context column of the payment value (``cms_cell``, ``known_codes``, ``known_<code>``): not a code."""
    return name in _MEMBER_TEXT or name.startswith("known_")


def _cell_text(frame, segments) -> list | None:
    """The ``cms_cell`` column as text (None where empty), before :func:`take_members` checks and
    removes it, or None without the column or when it was read as a segment column already."""
    if CELL_COLUMN not in frame.columns or (segments and CELL_COLUMN in segments):
        return None
    return frame[CELL_COLUMN].astype(object).where(frame[CELL_COLUMN].notna(), None).tolist()


def _with_cells(attributes, cells, ids):
    """``attributes`` plus the ``cms_cell`` text (a candidate segment column: per-cell guarantees;
    it stays each member's cell for the payment value), or ``attributes`` unchanged."""
    if cells is None:
        return attributes
    column = pd.Series(cells, index=pd.Index(ids), dtype=object, name=CELL_COLUMN)
    return column.to_frame() if attributes is None else attributes.assign(**{CELL_COLUMN: column.to_numpy()})


def take_members(frame, rows, file):
    """Remove the member-context columns (``cms_cell``, ``known_codes``, ``known_<code>``); return
    ``(frame, raw)`` where ``raw`` is None or what :func:`member_context` checks against the codes."""
    known_columns = [c for c in frame.columns if is_member_column(c) and c not in _MEMBER_TEXT]
    present = [c for c in _MEMBER_TEXT if c in frame.columns] + known_columns
    if not present:
        return frame, None
    raw = {"file": file, "rows": np.asarray(rows)}
    if CELL_COLUMN in frame.columns:
        raw["cells"] = frame[CELL_COLUMN].astype(object).where(frame[CELL_COLUMN].notna(), None).tolist()
    if KNOWN_CODES_COLUMN in frame.columns:
        raw["known_codes"] = frame[KNOWN_CODES_COLUMN].astype(object).where(frame[KNOWN_CODES_COLUMN].notna(), None).tolist()
    if known_columns:
        raw["known_columns"] = {c[len("known_"):]: numeric_block(frame, [c], rows, file, "label")[:, 0] for c in known_columns}
    return frame.drop(columns=present), raw


def member_context(raw, codes) -> dict | None:
    """The checked member context of a file: ``{"cells": (N,) names or None, "known": (N, K) bool or None}``.

    A cell that is not a CMS-HCC coefficient cell, or a known code that is not one of the data's
    ``codes``, is a DataError naming the file, row and column.
    """
    if raw is None:
        return None
    from ..payment_tables import CELL_NAMES

    file, rows, codes = raw["file"], raw["rows"], [str(c) for c in codes]
    out = {"cells": None, "known": None}
    if "cells" in raw:
        cells = []
        for i, cell in enumerate(raw["cells"]):
            key = "" if cell is None else str(cell).strip().upper()
            if key not in CELL_NAMES:
                raise DataError("this member has no CMS-HCC coefficient cell (the cell is empty)." if not key else
                                f"{cell!r} is not a CMS-HCC coefficient cell.", file=file, row=int(rows[i]),
                                column=CELL_COLUMN, fix=f"Use one of {', '.join(CELL_NAMES)} for every member.")
            cells.append(key)
        out["cells"] = np.array(cells, dtype=object)
    if "known_codes" in raw or "known_columns" in raw:
        position = {c: k for k, c in enumerate(codes)}
        known = np.zeros((len(rows), len(codes)), dtype=bool)
        for code, column in raw.get("known_columns", {}).items():
            if code not in position:
                raise DataError(f"the column known_{code} names a code that is not in the data.", file=file, row=1,
                                column=f"known_{code}", fix=f"Name known_<code> columns after the data's codes "
                                f"(e.g. known_{codes[0]}), or drop the column.")
            known[:, position[code]] = column.astype(bool)
        for i, text in enumerate(raw.get("known_codes", [])):
            for code in ([] if text is None else [c.strip() for c in str(text).split(";") if c.strip()]):
                if code not in position:
                    raise DataError(f"known code {code!r} is not one of the data's codes.", file=file,
                                    row=int(rows[i]), column=KNOWN_CODES_COLUMN,
                                    fix="List known codes by their column names, separated by ';' (e.g. "
                                    f"{';'.join(codes[:2])}).")
                known[i, position[code]] = True
        out["known"] = known
    return out


def _segment_list(segment_column) -> list:
    """The segment columns asked for: [] (none: a ``segment`` column is read if present), or the names."""
    if segment_column is None:
        return []
    return [segment_column] if isinstance(segment_column, str) else [str(c) for c in segment_column]


def _code_column_as_segment(column, file, what) -> DataError:
    return DataError(f"the segment column {column!r} is {what}, not a column of segment labels.", file=file, row=1,
                     column=column, fix="Name the column that holds each patient's segment (e.g. its plan or region), "
                     "or turn segments off.")


def check_not_code_columns(columns, names, file) -> None:
    """Refuse a segment column that is a wide file's ``prob_<code>`` or ``label_<code>`` column (its
    twin is in ``names``): its numbers would silently become segment labels and the code would vanish."""
    for column in columns:
        for prefix, twin, what in (("prob_", "label_", "probability"), ("label_", "prob_", "label")):
            code = column[len(prefix):]
            if column.startswith(prefix) and twin + code in names:
                raise _code_column_as_segment(column, file, f"the {what} column of code {code!r}")


def _check_segments_agree(groupings, probs_ids, taken, p_file, l_file) -> None:
    """A segment column that the labels file also has must hold the same label for every patient in both
    files; a probabilities file's code column named as the segment column does not (a probability against 0/1)."""
    for column, (ids, values, rows) in taken.items():
        if column not in groupings:
            continue
        ours = pd.Series(groupings[column], index=probs_ids).reindex(ids).to_numpy()
        differ = np.flatnonzero(pd.notna(ours) & (ours != values))  # a patient of one file only is refused later
        if len(differ):
            i = int(differ[0])
            raise DataError(
                f"the segment column {column!r} holds {str(values[i])!r} for patient {str(ids[i])!r} here but "
                f"{str(ours[i])!r} in {p_file}: a column of both files is either a code (a probability there, a 0/1 "
                "label here), which is not a segment column, or segment labels, which must agree.",
                file=l_file, row=int(rows[i]), column=column,
                fix="Name the column that holds each patient's segment (e.g. its plan or region), or turn segments off.")


def _take_segments(frame, rows, file, segment_column):
    """Remove the segment column(s) from ``frame``; return ``(frame, {column: labels} or None)``.

    ``segment_column`` None reads a ``segment`` column when present; a name or list of names
    requires each (several = several groupings).
    """
    columns = _segment_list(segment_column)
    if len(set(columns)) != len(columns):
        raise DataError(f"the segment column {join_few([c for c in columns if columns.count(c) > 1][:1])} is "
                        "given twice.", file=file, fix="Name each segment column once.")
    check_not_code_columns(columns, [str(c) for c in frame.columns], file)
    groupings = {}
    for column in columns or [SEGMENT_COLUMN]:
        frame, labels = _take_segment(frame, rows, file, column, required=bool(columns))
        if labels is not None:
            groupings[column] = labels
    return frame, groupings or None


def _arrivals_not_segments(column, groupings, file) -> None:
    """The label-arrival column cannot also be a segment column (it was taken as one first, and would then
    be reported missing)."""
    if column is not None and column in (groupings or {}):
        raise DataError(f"the column {column!r} is the segment column; it cannot also say when labels arrived.",
                        file=file, row=1, column=column,
                        fix="Name the column of label-arrival positions or dates, or leave the label-arrival column unset.")


def _take_arrivals(frame, rows, file, column):
    """Remove the label-arrival column (and a ``predicted_at`` column) from ``frame``; return
    ``(frame, positions (N,) int64 or None)`` as the module docstring says."""
    if column is None:
        return frame, None
    if column not in frame.columns:
        raise DataError(f"there is no column named {column!r} to read the label arrivals from.", file=file, row=1,
                        fix="Add a column with the stream position (or the date) at which each patient's labels "
                        "arrived, or leave the label-arrival column unset.")
    values = frame[column].astype(object).where(frame[column].notna(), None)
    text = ["" if v is None else str(v).strip() for v in values.tolist()]
    for i, cell in enumerate(text):
        if not cell:
            raise DataError("this patient has no label-arrival position or date.", file=file, row=int(rows[i]),
                            column=column, fix="Write the stream position (or date) at which its labels arrived; a "
                            "label still pending at the end of the stream can be any position >= the number of patients.")
    frame = frame.drop(columns=column)
    numbers = pd.to_numeric(pd.Series(text), errors="coerce")
    if numbers.notna().all():
        whole = numbers == np.floor(numbers)
        if not whole.all():
            i = int(np.argmax(~whole.to_numpy()))
            raise DataError(f"{text[i]!r} is not a whole stream position.", file=file, row=int(rows[i]), column=column,
                            fix="Write label arrivals as whole positions (0 = the first patient) or as dates.")
        # any position >= the number of patients means "after the stream ends"; huge ones (1e300) are
        # held at 2**62 so they fit int64 (and a huge negative one at -1: before every patient's own)
        positions = numbers.clip(lower=-1, upper=2.0**62).to_numpy(dtype=np.int64)
    elif numbers.notna().any():  # positions in some rows, something else in others: name the odd one out
        if numbers.notna().sum() <= numbers.isna().sum():
            i = int(np.argmax(numbers.notna().to_numpy()))
            problem = f"{text[i]!r} is a stream position, while most rows of the column give dates or other text."
        else:
            i = int(np.argmax(numbers.isna().to_numpy()))
            problem = f"{text[i]!r} is not a whole stream position, while other rows of the column give positions."
        raise DataError(problem, file=file, row=int(rows[i]), column=column,
                        fix="Write every label arrival as a whole position (0 = the first patient), or every one as a date.")
    else:
        positions, frame = _arrival_dates(frame, rows, file, column, text)
    early = positions < np.arange(len(positions))
    if early.any():
        i = int(np.argmax(early))
        raise DataError(f"the labels arrive at position {text[i]}, before the patient's own position {i}.",
                        file=file, row=int(rows[i]), column=column,
                        fix="A label arrives after its patient's prediction: use a position >= the patient's row "
                        "position (0 = the first patient), or the date the labels came back.")
    return frame, positions


def _dates(values, file, rows, column):
    # utc=True: cells with different UTC offsets (or some with one, some without) compare on one clock
    # (dates without an offset are read as UTC) instead of failing in pandas
    parsed = pd.to_datetime(pd.Series(values), errors="coerce", format="mixed", utc=True)
    if parsed.isna().any():
        i = int(np.argmax(parsed.isna().to_numpy()))
        raise DataError("the cell is empty." if not str(values[i]).strip() else
                        f"{values[i]!r} is neither a stream position nor a date.", file=file, row=int(rows[i]),
                        column=column, fix="Write whole positions (0 = the first patient) or dates such as 2024-03-31.")
    # nanosecond timestamps span 1677-09-21 .. 2262-04-11; a date outside would wrap around silently
    outside = ((parsed < pd.Timestamp.min.tz_localize("UTC")) | (parsed > pd.Timestamp.max.tz_localize("UTC"))).to_numpy()
    if outside.any():
        i = int(np.argmax(outside))
        raise DataError(f"the date {values[i]!r} is outside the years 1678 to 2261 that dates can cover here.",
                        file=file, row=int(rows[i]), column=column, fix="Check the year (e.g. 2024-03-31, not 1024-03-31).")
    return parsed.dt.tz_convert(None).to_numpy(dtype="datetime64[ns]")


def _arrival_dates(frame, rows, file, column, text):
    """Positions of date-valued label arrivals, against the ``predicted_at`` column (see the module docstring)."""
    arrived = _dates(text, file, rows, column)  # a cell that is no date is named before predicted_at is asked for
    if PREDICTED_AT_COLUMN not in frame.columns:
        raise DataError(f"the label arrivals in {column!r} are dates, so each patient's prediction date is needed.",
                        file=file, row=1, column=column,
                        fix=f"Add a {PREDICTED_AT_COLUMN} column (the date each patient was predicted, rows in that "
                        "order), or give the arrivals as stream positions.")
    raw = frame[PREDICTED_AT_COLUMN].astype(object).where(frame[PREDICTED_AT_COLUMN].notna(), None)
    predicted = _dates(["" if v is None else str(v).strip() for v in raw.tolist()], file, rows, PREDICTED_AT_COLUMN)
    backwards = predicted[1:] < predicted[:-1]
    if backwards.any():
        i = int(np.argmax(backwards)) + 1
        raise DataError("the prediction dates go backwards here; the rows are the stream, in prediction order.",
                        file=file, row=int(rows[i]), column=PREDICTED_AT_COLUMN,
                        fix=f"Sort the file by {PREDICTED_AT_COLUMN}.")
    before = arrived < predicted
    if before.any():
        i = int(np.argmax(before))
        raise DataError(f"the labels arrive on {text[i]}, before the patient was predicted.", file=file,
                        row=int(rows[i]), column=column, fix="A label arrives on or after its patient's prediction date.")
    first_at_or_after = np.searchsorted(predicted, arrived, side="left")
    positions = np.maximum(first_at_or_after - 1, np.arange(len(arrived))).astype(np.int64)
    return positions, frame.drop(columns=PREDICTED_AT_COLUMN)


def column_names(source, name=None) -> list[str]:
    """A CSV or Parquet file's column names (stripped), from its header alone: the Parquet schema,
    or a CSV's header row (however wide), by the rules of :func:`parse_table` (a caller picks which optional
    columns to ask a reader for, e.g. the segment or label-arrival columns a file has).

    >>> column_names(b"patient_id, plan ,A\\n007,P1,0.5\\n")
    ['patient_id', 'plan', 'A']
    """
    file = source_name(source, name)
    data = read_bytes(source, file)
    if is_parquet(data, file):
        import pyarrow.parquet as pq

        from .parquet import data_columns

        try:
            names = pq.ParquetFile(io.BytesIO(data)).schema_arrow.names
        except Exception as err:  # noqa: BLE001 - any reader failure is a bad file
            raise DataError(f"the file cannot be read as Parquet ({err}).", file=file) from None
        return header_names(data_columns(names), file)
    sample, more = header_sample(io.BytesIO(data).read)  # through the whole header row, however wide
    check_not_binary(sample, file)
    return [c for c in csv_header(decode_text(sample, text_encoding(sample, truncated=more)), file)
            if not c.startswith(UNNAMED)]


def read_table(source, name=None) -> pd.DataFrame:
    """A CSV or Parquet file as a DataFrame, ``patient_id`` (if present) as text, no other checks.

    Blank rows and empty unnamed columns are dropped; structural faults (binary data,
    no rows, duplicate column names, ragged rows) raise :class:`DataError`.

    Examples
    --------
    >>> read_table(b"patient_id,A\\n007,0.5\\n").to_dict("list")
    {'patient_id': ['007'], 'A': [0.5]}
    """
    return parse_table(source, name)[0]


# --------------------------------------------------------------------------- layouts


def _codes_of(frame, file, layout):
    codes = [c for c in frame.columns if c != ID_COLUMN]
    if not codes:
        raise DataError(
            f"there are no code columns besides {ID_COLUMN}.", file=file, row=1,
            fix=f"A {layout} file has patient_id followed by one column per code (e.g. HCC18).",
        )
    check_code_names(codes, file)
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


@dataclass(frozen=True)
class ColumnLayout:
    """What a file's header holds, by :func:`column_layout`."""

    codes: list  # the file's codes (in the order of the ``codes`` given, else in column order)
    prob_columns: list  # the column holding each code's probability
    label_columns: list | None  # each code's label column; None for new patients
    segment: str | None  # the segment column, if the header has one


def column_layout(columns, file, *, labelled: bool = True, segment_column=None, codes=None,
                  codes_from: str = "the calibration data") -> ColumnLayout:
    """The codes of a header and the column holding each, by the layout rules of SPEC "Input files".

    The one statement of those rules: :func:`read_wide` and :func:`load_new_patients` apply it
    to a whole file, the distributed engine (:mod:`favmac.distributed`) to each file's header.

    Parameters
    ----------
    columns : sequence of str
        The (stripped) column names, in file order.
    file : str
        Display name for messages.
    labelled : bool
        True: a wide calibration file (``patient_id``, then ``prob_<code>`` and ``label_<code>``
        for every code). False: new patients: a header whose columns besides ``patient_id`` are
        ``prob_<code>`` and possibly ``label_<code>`` ones is a wide file (the ``prob_`` columns
        hold the codes; labels are ignored); any other header is the probabilities layout
        (``patient_id``, then one column per code).
    segment_column : str or list of str, optional
        As for the readers: a column named ``segment``, if present, holds segment labels; a
        name given here must be present. Either way it is not a code. A list names several
        segment columns (several groupings): each must be present, none is a code, and
        ``ColumnLayout.segment`` is the first.
    codes : sequence of str, optional
        The codes expected (any column order); they are then the returned order.
    codes_from : str
        Where ``codes`` came from, for the message when they differ.

    Returns
    -------
    ColumnLayout

    Raises
    ------
    DataError
        No ``patient_id`` column; a missing segment column; a wide file with another column, a
        ``prob_<code>`` without its ``label_<code>`` or the reverse; no code columns; a code
        named with ';'; codes that differ from ``codes``. The message names the file, row 1 and
        the column. Unnamed CSV columns (:func:`~favmac.io.csv_parsing.header_names`' placeholders,
        which must be empty) are not codes.

    Examples
    --------
    >>> column_layout(["patient_id", "prob_A", "label_A"], "w.csv").prob_columns
    ['prob_A']
    >>> column_layout(["patient_id", "segment", "B", "A"], "n.csv", labelled=False, codes=["A", "B"]).prob_columns
    ['A', 'B']
    """
    names = [str(c) for c in columns]
    check_id_column(names, file)
    asked = _segment_list(segment_column)
    for column in asked:
        if column not in names:
            raise _no_segment_column(column, file)
    check_not_code_columns(asked, names, file)
    present = asked or ([SEGMENT_COLUMN] if SEGMENT_COLUMN in names else [])
    segment = present[0] if present else None
    rest = [c for c in names if c != ID_COLUMN and c not in present and not c.startswith(UNNAMED)
            and not is_member_column(c)]
    prob_codes, label_codes, other = _wide_columns(rest)
    wide = labelled or (bool(prob_codes) and not other)
    if labelled and other:
        if not prob_codes and not label_codes:
            raise DataError(
                "this file has no prob_<code> / label_<code> columns, so it holds no labels.",
                file=file, row=1,
                fix="A calibration file is either one wide file (patient_id, prob_<code>, label_<code>) "
                "or a probabilities file plus a separate labels file.",
            )
        raise DataError(
            f"the column {other[0]!r} is neither patient_id nor prob_<code> / label_<code>"
            + (f" ({len(other)} such columns: {join_few(other)})" if len(other) > 1 else "") + ".",
            file=file, row=1, column=other[0],
            fix="In a wide file every column after patient_id is named prob_<code> or label_<code>.",
        )
    if labelled:
        for have, want, have_prefix, want_prefix in ((prob_codes, label_codes, "prob_", "label_"),
                                                     (label_codes, prob_codes, "label_", "prob_")):
            wanted = set(want)  # once: a set per column made this O(K^2) (25,000 codes: minutes)
            missing = [c for c in have if c not in wanted]
            if missing:
                raise DataError(
                    f"there is no matching {want_prefix}{missing[0]} column"
                    + (f" (also missing: {join_few([want_prefix + c for c in missing[1:]])})" if len(missing) > 1 else "")
                    + ".",
                    file=file, row=1, column=f"{have_prefix}{missing[0]}",
                    fix="A wide file needs both prob_<code> and label_<code> for every code.",
                )
    found = prob_codes if wide else rest
    if not found:
        raise DataError(
            f"there are no code columns besides {ID_COLUMN}.", file=file, row=1,
            fix="A wide file has prob_<code> and label_<code> per code (e.g. prob_HCC18, label_HCC18)" if labelled
            else "A probabilities file has patient_id followed by one column per code (e.g. HCC18).",
        )
    if wide and not all(found):
        raise DataError("a column is named just 'prob_' with no code.", file=file, row=1, column="prob_",
                        fix="Name the columns prob_<code> and label_<code>, e.g. prob_HCC18.")
    check_code_names(found, file)
    if codes is not None:
        codes = [str(c) for c in codes]
        _compare_codes(codes, codes_from, found, file,
                       fix=f"Every file needs exactly the codes of {codes_from} (in any column order).")
        found = codes
    return ColumnLayout(
        codes=list(found),
        prob_columns=[f"prob_{c}" if wide else c for c in found],
        label_columns=[f"label_{c}" for c in found] if labelled else None,
        segment=segment,
    )


def _layout_frame(frame, rows, file, kind) -> pd.DataFrame:
    ids = patient_ids(frame, rows, file)
    if kind == "label" and _looks_wide(frame.columns):
        raise DataError(
            "this is a wide file (prob_<code> and label_<code> columns), not a labels file.",
            file=file, row=1, fix="Upload it alone as the calibration file, without a separate labels file.",
        )
    codes = _codes_of(frame, file, "probabilities" if kind == "probability" else "labels")
    values = numeric_block(frame, codes, rows, file, kind)
    dtype = np.float64 if kind == "probability" else np.int8
    return pd.DataFrame(values.astype(dtype, copy=False), index=ids, columns=pd.Index(codes, dtype=object))


def read_probabilities(source, name=None) -> pd.DataFrame:
    """Read a probabilities file: ``patient_id`` then one column per code, values in [0, 1].

    Parameters
    ----------
    source : path, bytes or file-like
        The CSV or Parquet file (a Streamlit ``UploadedFile`` works too).
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
    return _read_probabilities(source, name, None)[0]


def _read_probabilities(source, name, segment_column, label_available_column=None, check_segments=None):
    """Probabilities frame, segment labels ({column: labels} or None), label arrivals (or None)
    and file rows of a probabilities file. ``check_segments(groups, ids, file)`` sees the segments first."""
    text = (ID_COLUMN, *_MEMBER_TEXT, *(_segment_list(segment_column) or [SEGMENT_COLUMN]),
            *([label_available_column, PREDICTED_AT_COLUMN] if label_available_column else []))
    frame, rows, file = parse_table(source, name, text_columns=text)
    frame, groups = _take_segments(frame, rows, file, segment_column)
    _arrivals_not_segments(label_available_column, groups, file)
    if check_segments is not None and groups:
        check_segments(groups, patient_ids(frame, rows, file), file)
    frame, arrivals = _take_arrivals(frame, rows, file, label_available_column)
    cells = _cell_text(frame, groups)
    frame, members = take_members(frame, rows, file)
    if _looks_wide(frame.columns):
        raise DataError(
            "this is a wide file (prob_<code> and label_<code> columns), not a probabilities file.",
            file=file, row=1,
            fix="Upload it as a single calibration file, or keep only patient_id and the probability columns.",
        )
    probs = _layout_frame(frame, rows, file, "probability")
    probs.attrs["members"] = member_context(members, probs.columns)
    probs.attrs["cell_text"] = cells
    return probs, groups, arrivals, np.asarray(rows)


def read_labels(source, name=None) -> pd.DataFrame:
    """Read a labels file (CSV or Parquet): the probabilities layout with 0/1 values. Returns int8 columns.

    A ``segment`` column is ignored here (segments are read from the probabilities file).
    """
    return _read_labels(source, name, [SEGMENT_COLUMN])


def _read_labels(source, name, columns, taken: dict | None = None):
    """The labels frame; the segment (and label-arrival) ``columns``, if present, are left out (into
    ``taken``, when given: column -> (patient ids, labels, rows))."""
    frame, rows, file = parse_table(source, name, text_columns=(ID_COLUMN, *columns))
    found = {}
    for column in columns:
        frame, found[column] = _take_segment(frame, rows, file, column, required=False, members=False)
    labels = _layout_frame(frame, rows, file, "label")
    if taken is not None:
        taken.update({c: (labels.index.to_numpy(), v, rows) for c, v in found.items() if v is not None})
    return labels


def read_wide(source, name=None, *, segment_column=None, keep_columns: bool = False,
              label_available_column=None) -> Dataset:
    """Read a wide calibration file: ``patient_id``, then ``prob_<code>`` and ``label_<code>`` per code.

    CSV or Parquet. The column order is free; codes follow the order of the ``prob_`` columns.
    An optional segment column (``segment``, or ``segment_column``, which is then required)
    becomes :attr:`Dataset.groups`. With ``keep_columns`` any other column (not a code) is
    kept as text in :attr:`Dataset.attributes` (candidate segment columns) instead of
    being refused. ``segment_column`` may be a list (several groupings); ``label_available_column``
    names the label-arrival column (module docstring).
    """
    text = (ID_COLUMN, *_MEMBER_TEXT, *(_segment_list(segment_column) or [SEGMENT_COLUMN]),
            *([label_available_column, PREDICTED_AT_COLUMN] if label_available_column else []))
    frame, rows, file = parse_table(source, name, text_columns=text)
    ids = patient_ids(frame, rows, file)
    frame, groupings = _take_segments(frame, rows, file, segment_column)
    _arrivals_not_segments(label_available_column, groupings, file)
    frame, arrivals = _take_arrivals(frame, rows, file, label_available_column)
    cells = _cell_text(frame, groupings)
    frame, members = take_members(frame, rows, file)
    prob_codes, label_codes, other = _wide_columns(frame.columns)
    attributes = None
    if other and keep_columns and (prob_codes or label_codes):
        attributes = pd.DataFrame({c: frame[c].astype(object).where(frame[c].notna(), None).map(
            lambda v: v if v is None else (str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)))
            for c in other})
        attributes.index = ids
        frame = frame.drop(columns=other)
    if keep_columns:
        attributes = _with_cells(attributes, cells, ids)
    layout = column_layout(frame.columns, file)  # the segment and arrival columns are out already
    if layout.segment is not None:  # a "segment" column beside the segment columns asked for
        raise DataError(f"the column {layout.segment!r} is neither patient_id nor prob_<code> / label_<code>.",
                        file=file, row=1, column=layout.segment,
                        fix="In a wide file every column after patient_id is named prob_<code> or label_<code>.")
    prob_codes = layout.codes
    probs = numeric_block(frame, ["prob_" + c for c in prob_codes], rows, file, "probability")
    labels = numeric_block(frame, ["label_" + c for c in prob_codes], rows, file, "label")
    columns = pd.Index(prob_codes, dtype=object)
    return Dataset(
        probs=pd.DataFrame(probs, index=ids, columns=columns),
        labels=pd.DataFrame(labels.astype(np.int8), index=ids, columns=columns.copy()),
        name=name or _stem(file),
        groups=None if groupings is None else next(iter(groupings.values())),
        segment_column=None if groupings is None else next(iter(groupings)),
        attributes=attributes,
        members=member_context(members, prob_codes),
        groupings=groupings,
        label_available_at=arrivals,
        label_available_column=None if arrivals is None else label_available_column,
        rows=np.asarray(rows),
    )


def _stem(file: str) -> str:
    return os.path.splitext(file)[0] or file


def _compare_codes(codes_a, file_a, codes_b, file_b, fix):
    set_a, set_b = set(codes_a), set(codes_b)  # once each, not per code (O(K^2) with 25,000 codes)
    extra = [c for c in codes_b if c not in set_a]
    missing = [c for c in codes_a if c not in set_b]
    if not extra and not missing:
        return
    parts = []
    if missing:
        parts.append(f"{plural(len(missing), 'code')} in {file_a} {'is' if len(missing) == 1 else 'are'} "
                     f"missing from {file_b}: {join_few(missing, quote=False, limit=10)}")
    if extra:
        parts.append(f"{file_b} has {plural(len(extra), 'unknown code')} not in {file_a}: "
                     f"{join_few(extra, quote=False, limit=10)}")
    raise DataError(
        "; ".join(parts) + ".", file=file_b, row=1,
        column=(missing or extra)[0], fix=fix,
    )


def load_calibration(probs_source, labels_source=None, *, name=None, segment_column=None,
                     keep_columns: bool = False, label_available_column=None) -> Dataset:
    """Load labelled calibration data from one wide file or a probabilities + labels pair.

    Parameters
    ----------
    probs_source : path, bytes or file-like
        The wide file (when ``labels_source`` is None) or the probabilities file; CSV or Parquet.
    labels_source : path, bytes or file-like, optional
        The labels file; patients are matched by ``patient_id`` (row order does not matter)
        and codes by column name (column order does not matter).
    name : str, optional
        Dataset name (default: the probabilities file's name without extension).
    segment_column : str or list of str, optional
        The column of segment labels (then required, in the wide or probabilities file).
        Without it a column named ``segment``, if present, is read as the segments. A list
        of columns gives several groupings (:attr:`Dataset.groupings`). A segment column the
        labels file also holds must give every patient the same label there (a code column of
        both files named as the segment column does not); a wide file's ``prob_<code>`` or
        ``label_<code>`` column is never a segment column.
    keep_columns : bool
        Wide files: keep other non-code columns as text in :attr:`Dataset.attributes`. Both
        layouts: keep a ``cms_cell`` column's text there too (a candidate segment column; it is
        still each member's cell, :attr:`Dataset.members`).
    label_available_column : str, optional
        The column saying when each patient's labels arrived (positions or dates; module
        docstring), in the wide or probabilities file: :attr:`Dataset.label_available_at`.

    Returns
    -------
    Dataset
        Rows in the probabilities file's order; labels aligned to it; ``groups`` the segments.
    """
    if labels_source is None:
        dataset = read_wide(probs_source, segment_column=segment_column, keep_columns=keep_columns,
                            label_available_column=label_available_column)
        if name:
            dataset.name = str(name)
        dataset.sources = file_digests(probs_source)
        return dataset
    p_file, l_file = source_name(probs_source, None), source_name(labels_source, None)
    if p_file == l_file:
        p_file, l_file = f"{p_file} (probabilities)", f"{l_file} (labels)"
    taken = {}
    labels = _read_labels(labels_source, None, [*(_segment_list(segment_column) or [SEGMENT_COLUMN]),
                                                *([label_available_column] if label_available_column else [])], taken)
    probs, groupings, arrivals, rows = _read_probabilities(
        probs_source, None, segment_column, label_available_column,
        check_segments=lambda groups, ids, _: _check_segments_agree(groups, ids, taken, p_file, l_file))
    _compare_codes(
        list(probs.columns), p_file, list(labels.columns), l_file,
        fix="Both files need the same code columns (in any order).",
    )
    only_probs = probs.index.difference(labels.index, sort=False)
    only_labels = labels.index.difference(probs.index, sort=False)
    if len(only_probs) or len(only_labels):
        parts = []
        if len(only_probs):
            parts.append(f"{plural(len(only_probs), 'patient id')} in {p_file} "
                         f"{'is' if len(only_probs) == 1 else 'are'} not in {l_file} (e.g. {join_few(only_probs)})")
        if len(only_labels):
            parts.append(f"{plural(len(only_labels), 'patient id')} in {l_file} "
                         f"{'is' if len(only_labels) == 1 else 'are'} not in {p_file} (e.g. {join_few(only_labels)})")
        raise DataError(
            "; ".join(parts) + ".", file=l_file, column=ID_COLUMN,
            fix="Both files must list exactly the same patients (in any order).",
        )
    aligned = labels.reindex(index=probs.index, columns=probs.columns)
    cells = probs.attrs.pop("cell_text", None)
    return Dataset(probs=probs, labels=aligned.astype(np.int8), name=str(name) if name else _stem(source_name(probs_source, None)),
                   attributes=_with_cells(None, cells, probs.index) if keep_columns else None,
                   groups=None if groupings is None else next(iter(groupings.values())),
                   segment_column=None if groupings is None else next(iter(groupings)),
                   sources=file_digests(probs_source, labels_source), groupings=groupings,
                   label_available_at=arrivals, members=probs.attrs.pop("members", None),
                   label_available_column=None if arrivals is None else label_available_column,
                   rows=rows)


def load_new_patients(source, codes, name=None) -> pd.DataFrame:
    """Read unlabelled patients (probabilities layout, CSV or Parquet) and order the columns as ``codes``.

    A wide file is accepted too: its ``prob_<code>`` columns are used and the labels ignored.
    A ``segment`` column is left out (:func:`load_new_patients_segmented` returns it).

    Returns
    -------
    DataFrame
        Index ``patient_id``, float64 columns exactly ``codes`` in that order.
    """
    return load_new_patients_segmented(source, codes, name)[0]


def load_new_patients_segmented(source, codes, name=None, *, segment_column=None):
    """:func:`load_new_patients` plus the patients' segment labels.

    Parameters
    ----------
    source : path, bytes or file-like
    codes : sequence of str
        The calibration data's codes.
    name : str, optional
    segment_column : str or list of str, optional
        The column of segment labels (then required); default: a ``segment`` column if present.
        A list of two or more columns reads several groupings (each required).

    Returns
    -------
    (DataFrame, ndarray, dict or None)
        The probabilities (as :func:`load_new_patients`) and one segment label per row (None
        when the file has no segment column); with several columns, ``{column: labels}`` in
        the order asked (also in ``frame.attrs["groupings"]``).
    """
    columns = _segment_list(segment_column)
    frame, rows, file = parse_table(source, name, text_columns=(ID_COLUMN, *(columns or [SEGMENT_COLUMN]),
                                                                *_MEMBER_TEXT))
    if len(columns) > 1:  # several groupings
        frame, groupings = _take_segments(frame, rows, file, columns)
        layout = column_layout(frame.columns, file, labelled=False, codes=codes)  # the segment columns are out
        groups = None
    else:
        column = columns[0] if columns else SEGMENT_COLUMN
        segment_column = columns[0] if columns else None
        layout = column_layout(frame.columns, file, labelled=False, segment_column=segment_column, codes=codes)
        frame, groups = _take_segment(frame, rows, file, column, required=segment_column is not None)
    frame, members = take_members(frame, rows, file)  # after the segments: a cms_cell segment is also the cells
    values = numeric_block(frame, layout.prob_columns, rows, file, "probability")
    probs = pd.DataFrame(values.astype(np.float64, copy=False), index=patient_ids(frame, rows, file),
                         columns=pd.Index(layout.codes, dtype=object))
    frame = probs
    frame.attrs["sources"] = file_digests(source, names=[file])
    frame.attrs["members"] = member_context(members, codes)  # CMS cells / known codes, rows as frame
    if len(columns) > 1:
        frame.attrs["groups"] = next(iter(groupings.values())).tolist()
        frame.attrs["groupings"] = {column: labels.tolist() for column, labels in groupings.items()}
        return frame, groupings
    frame.attrs["groups"] = None if groups is None else groups.tolist()
    return frame, groups


def file_digests(*sources, names=None) -> dict:
    """File name -> SHA-256 (hex) of each source's bytes, for provenance records.

    >>> file_digests(b"abc", names=["a.csv"])["a.csv"][:12]
    'ba7816bf8f01'
    """
    out = {}
    for i, source in enumerate(sources):
        file = names[i] if names is not None else source_name(source, None)
        if file in out:
            file = f"{file} ({i + 1})"
        out[file] = hashlib.sha256(read_bytes(source, file)).hexdigest()
    return out


def read_weights(source, codes=None, name=None) -> pd.DataFrame:
    """Read per-code weights: columns ``code``, ``weight`` (>= 0) and optional ``description``.

    Parameters
    ----------
    source : path, bytes or file-like
        CSV or Parquet.
    codes : list of str, optional
        The data's codes. Every one needs a weight; rows for other codes are ignored.
        The result follows this order. None keeps every row in file order.

    Returns
    -------
    DataFrame
        Index ``code`` (text); columns ``weight`` (float64) and ``description`` (text, "" if absent).
    """
    layout = "A weights file has the columns code, weight and optionally description, then one row per code."
    try:
        frame, rows, file = parse_table(source, name, text_columns=("code", "description"))
    except DataError as err:  # the generic fix speaks of patient_id and patients
        if err.problem.startswith(("the file is empty", "the first row is empty", "the file has a header row but no",
                                   "the file has column names but no")):
            raise DataError(err.problem, file=err.file, row=err.row, fix=layout) from None
        raise
    missing_cols = [c for c in ("code", "weight") if c not in frame.columns]
    if missing_cols:
        raise DataError(
            f"there is no {join_few(missing_cols)} column (found: {join_few(frame.columns)}).",
            file=file, row=1, fix=layout,
        )
    code_col = frame["code"].str.strip()
    blank = (code_col.isna() | (code_col == "")).to_numpy()
    if blank.any():
        raise DataError(
            f"{plural(int(blank.sum()), 'row')} {'has' if blank.sum() == 1 else 'have'} a weight but no code.",
            file=file, row=int(rows[np.argmax(blank)]), column="code", fix="Fill in the code or delete the row.",
        )
    code_index = pd.Index(code_col.to_numpy(dtype=object), name="code", dtype=object)
    dup = code_index.duplicated(keep=False)
    if dup.any():
        dup_codes = pd.unique(code_index[dup])
        raise DataError(
            f"{plural(len(dup_codes), 'code')} {'appears' if len(dup_codes) == 1 else 'appear'} more than once: "
            f"{join_few(dup_codes)}.",
            file=file, row=int(rows[dup][0]), column="code", fix="Give each code exactly one weight row.",
        )
    if codes is not None:
        codes = [str(c) for c in codes]
        known = set(code_index)  # once, not per code
        missing = [c for c in codes if c not in known]
        if missing:
            raise DataError(
                f"{plural(len(missing), 'code')} in the data {'has' if len(missing) == 1 else 'have'} no weight: "
                f"{join_few(missing, quote=False, limit=10)}.",
                file=file, column="code", fix="Add a row (code, weight) for each of them.",
            )
        position = code_index.get_indexer(codes)
        frame = frame.iloc[position]
        rows = rows[position]
        code_index = code_index[position]
    weights = numeric_block(frame.reset_index(drop=True), ["weight"], rows, file, "weight")[:, 0]
    if "description" in frame.columns:
        description = frame["description"].fillna("").str.strip().to_numpy(dtype=object)
    else:
        description = np.full(len(code_index), "", dtype=object)
    return pd.DataFrame({"weight": weights, "description": description}, index=code_index)
