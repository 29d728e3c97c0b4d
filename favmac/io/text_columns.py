"""The text columns of an input file that are not codes: segment labels and the payment value's member context.

Calibration and new-patient files may carry segment labels (a plan, region or provider;
:mod:`favmac.segments`): by default a column named ``segment``, or the column(s) given as
``segment_column`` (several = several groupings). The CMS-HCC payment value (:mod:`favmac.payment`)
reads each member's coefficient cell (``cms_cell``) and the codes already on the record
(``known_codes``, ";"-joined, or one 0/1 ``known_<code>`` column per code). The readers
(:mod:`favmac.io.readers`) and the distributed engine (batch by batch) take them out of a table by
these rules; every malformed cell is a :class:`~favmac.io.errors.DataError` naming file, row and column.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .csv_parsing import numeric_block
from .errors import DataError, join_few

__all__ = ["SEGMENT_COLUMN", "CELL_COLUMN", "KNOWN_CODES_COLUMN", "MEMBER_TEXT", "segment_labels", "segment_list",
           "take_segment", "take_segments", "no_segment_column", "check_not_code_columns", "check_segments_agree",
           "is_member_column", "take_members", "member_context", "cell_text", "with_cells"]


#: The column name read as segment labels when no other is chosen.
SEGMENT_COLUMN = "segment"


#: Member-context columns for the CMS-HCC payment value (:mod:`favmac.payment`): the coefficient
#: cell of each member, and the codes already on the record (``known_codes``, ";"-joined, or one
#: 0/1 ``known_<code>`` column per code).
CELL_COLUMN = "cms_cell"


KNOWN_CODES_COLUMN = "known_codes"


MEMBER_TEXT = (CELL_COLUMN, KNOWN_CODES_COLUMN)


def segment_list(segment_column) -> list:
    """The segment columns asked for: [] (none: a ``segment`` column is read if present), or the names."""
    if segment_column is None:
        return []
    return [segment_column] if isinstance(segment_column, str) else [str(c) for c in segment_column]


def no_segment_column(column, file) -> DataError:
    return DataError(
        f"there is no column named {column!r} to read the segments from.", file=file, row=1,
        fix=f"Add a {column} column (one text label per patient, e.g. a plan or region) "
        "or choose another segment column.",
    )


def take_segment(frame, rows, file, column, required: bool, *, members: bool = True):
    """Remove the segment column from ``frame``; return ``(frame, labels or None)``.

    Missing labels are refused, naming the row; ``required`` refuses a file without the column.
    A member-context column (``cms_cell``: :func:`is_member_column`) used as the segment stays in
    ``frame`` while ``members`` is True: it is also each patient's cell, which :func:`take_members`
    reads (as the distributed engine does).
    """
    if column not in frame.columns:
        if required:
            raise no_segment_column(column, file)
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


def check_segments_agree(groupings, probs_ids, taken, p_file, l_file) -> None:
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


def take_segments(frame, rows, file, segment_column):
    """Remove the segment column(s) from ``frame``; return ``(frame, {column: labels} or None)``.

    ``segment_column`` None reads a ``segment`` column when present; a name or list of names
    requires each (several = several groupings).
    """
    columns = segment_list(segment_column)
    if len(set(columns)) != len(columns):
        raise DataError(f"the segment column {join_few([c for c in columns if columns.count(c) > 1][:1])} is "
                        "given twice.", file=file, fix="Name each segment column once.")
    check_not_code_columns(columns, [str(c) for c in frame.columns], file)
    groupings = {}
    for column in columns or [SEGMENT_COLUMN]:
        frame, labels = take_segment(frame, rows, file, column, required=bool(columns))
        if labels is not None:
            groupings[column] = labels
    return frame, groupings or None


def is_member_column(name: str) -> bool:
    """A member-context column of the payment value (``cms_cell``, ``known_codes``, ``known_<code>``): not a code."""
    return name in MEMBER_TEXT or name.startswith("known_")


def cell_text(frame, segments) -> list | None:
    """The ``cms_cell`` column as text (None where empty), before :func:`take_members` checks and
    removes it, or None without the column or when it was read as a segment column already."""
    if CELL_COLUMN not in frame.columns or (segments and CELL_COLUMN in segments):
        return None
    return frame[CELL_COLUMN].astype(object).where(frame[CELL_COLUMN].notna(), None).tolist()


def with_cells(attributes, cells, ids):
    """``attributes`` plus the ``cms_cell`` text (a candidate segment column: per-cell guarantees;
    it stays each member's cell for the payment value), or ``attributes`` unchanged."""
    if cells is None:
        return attributes
    column = pd.Series(cells, index=pd.Index(ids), dtype=object, name=CELL_COLUMN)
    return column.to_frame() if attributes is None else attributes.assign(**{CELL_COLUMN: column.to_numpy()})


def take_members(frame, rows, file):
    """Remove the member-context columns (``cms_cell``, ``known_codes``, ``known_<code>``); return
    ``(frame, raw)`` where ``raw`` is None or what :func:`member_context` checks against the codes."""
    known_columns = [c for c in frame.columns if is_member_column(c) and c not in MEMBER_TEXT]
    present = [c for c in MEMBER_TEXT if c in frame.columns] + known_columns
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
