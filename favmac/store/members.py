"""The member context of a batch of patients: segment (grouping) columns, CMS cells, known codes.

A program keeps, for every patient it is given, the per-patient columns the readers accept beside
the probabilities (:mod:`favmac.io.readers`): text columns that can serve as segments (``plan``,
``age_band``, ...), the CMS-HCC coefficient cell (``cms_cell``) and the codes already on the record
(``known_codes`` as ";"-joined text, or one 0/1 ``known_<code>`` column per code). They are kept
whether or not the current settings use them, so a later settings version may group by a column the
first one ignored.

:func:`batch_members` reads them from what a caller has at hand: a DataFrame of those columns
(rows as the batch), or a dict of column -> values, which may also use the readers' own
:attr:`favmac.io.Dataset.members` keys ``"cells"`` ((n,) names) and ``"known"`` ((n, K) bool).

>>> m = batch_members({"plan": ["A", "B"], "cells": ["CNA", "INS"]}, 2, ["HCC18", "HCC19"], batch="predict batch 1")
>>> m.columns["plan"].tolist(), m.cells.tolist(), m.known is None
(['A', 'B'], ['CNA', 'INS'], True)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..io.errors import DataError

__all__ = ["BatchMembers", "batch_members", "by_patient_id", "dataset_members", "labels_of"]

_CELL_KEYS = ("cells", "cms_cell")


@dataclass
class BatchMembers:
    """The member context of n patients: ``columns`` (name -> (n,) text labels), ``cells`` ((n,) cell
    names or None) and ``known`` ((n, K) bool or None)."""

    columns: dict
    cells: np.ndarray | None = None
    known: np.ndarray | None = None

    @classmethod
    def empty(cls, n: int) -> "BatchMembers":
        return cls({}, None, None)

    def take(self, rows) -> "BatchMembers":
        """The context of the patients ``rows`` (an index array or slice)."""
        return BatchMembers({name: labels[rows] for name, labels in self.columns.items()},
                            None if self.cells is None else self.cells[rows],
                            None if self.known is None else self.known[rows])

    def for_value(self, n: int, default_cell: str) -> dict:
        """The ``members`` dict :meth:`favmac.runspec.RunSpec.build` takes: a patient without a cell gets
        ``default_cell`` (the settings' ``cms_segment``, what a value built without cells uses)."""
        cells = self.cells
        if cells is not None:
            cells = np.where(cells == "", default_cell, cells).astype(object)
        return {"cells": cells, "known": self.known}

    @staticmethod
    def concatenate(parts: list, n_codes: int) -> "BatchMembers":
        """The context of several batches stacked in order; a column, cell or known code that a batch
        lacks is "" (no label), "" (no cell) or False (none known) for its patients."""
        sizes = [part_size for _, part_size in parts]
        names = []
        for part, _ in parts:
            names += [name for name in part.columns if name not in names]
        columns = {name: np.concatenate([part.columns.get(name, np.full(size, "", dtype=object))
                                         for (part, _), size in zip(parts, sizes)]).astype(object)
                   for name in names}
        cells = known = None
        if any(part.cells is not None for part, _ in parts):
            cells = np.concatenate([part.cells if part.cells is not None else np.full(size, "", dtype=object)
                                    for (part, _), size in zip(parts, sizes)]).astype(object)
        if any(part.known is not None for part, _ in parts):
            known = np.concatenate([part.known if part.known is not None else np.zeros((size, n_codes), dtype=bool)
                                    for (part, _), size in zip(parts, sizes)])
        return BatchMembers(columns, cells, known)


def labels_of(members: BatchMembers, column: str, *, batch: str, first_row: int = 0) -> np.ndarray:
    """The segment labels of ``column`` (text, none empty), or a DataError naming the batch, the row and
    the column where the column is missing or a label is empty."""
    labels = members.columns.get(column)
    if labels is None:
        raise DataError(f"there is no member column {column!r} (the settings group patients by it).", file=batch,
                        column=column, fix="Give that column for every patient (members=...), or choose settings "
                        "without it.")
    empty = np.flatnonzero(labels == "")
    if len(empty):
        raise DataError("this patient has no segment label.", file=batch, row=int(empty[0]) + 2 + first_row, column=column,
                        fix="Give every patient a label in this column (e.g. its plan or region).")
    return labels


def _rows(n: int) -> np.ndarray:
    return np.arange(2, n + 2)  # spreadsheet rows: the header is row 1


def by_patient_id(values, ids, batch: str, column: str | None = None, what: str = "the member context"):
    """A DataFrame or Series of a batch's rows (member context, probabilities, labels) in the batch's order: rows matched by patient id when its index
    holds the batch's ``ids`` (in any order), by position when its index is no patient's (a default 0..n-1
    index); an index naming some of the batch's patients and others is refused, naming one of the others."""
    index = getattr(values, "index", None)
    if ids is None or index is None or not hasattr(values, "iloc") or type(index).__name__ == "RangeIndex":
        return values
    keys = [str(k).strip() for k in index]
    wanted = {str(p): i for i, p in enumerate(ids)}
    if len(set(keys)) == len(keys) and set(keys) == set(wanted):
        at = {k: i for i, k in enumerate(keys)}
        return values.iloc[[at[str(p)] for p in ids]]
    if any(k in wanted for k in keys):
        other = next((k for k in keys if k not in wanted), None)
        problem = (f"names {other!r}, not a patient of the batch" if other is not None
                   else "names a patient twice")
        raise DataError(f"{what} is indexed by patient id, but its index {problem}.", file=batch,
                        column=column, fix=f"Index {what} by the batch's patient ids (each once), or give "
                        "its rows in the batch's order with a default index.")
    return values


def batch_members(members, n: int, codes, *, batch: str, ids=None) -> BatchMembers:
    """The checked member context of a batch of ``n`` patients (see the module docstring).

    With the batch's ``ids``, a DataFrame (or a Series in the dict) indexed by patient id is matched to the
    patients by id, in any order; otherwise (a default index, plain arrays) rows are in the batch's order.

    Every problem is a :class:`~favmac.io.DataError` naming ``batch``, the row (as a spreadsheet of the
    batch shows it: the first patient is row 2) and the column: a column of the wrong length, a cell that is not a CMS-HCC coefficient cell, a known code that is not one of
    ``codes``.
    """
    codes = [str(c) for c in codes]
    if members is None:
        return BatchMembers({})
    if hasattr(members, "columns") and hasattr(members, "to_dict"):  # a DataFrame
        frame = by_patient_id(members, ids, batch)
        if len(frame) != n:
            raise DataError(f"the member context has {len(frame)} rows for {n} patients.", file=batch,
                            fix="Give one row of member columns per patient, in the batch's order.")
        items = [(str(c), frame[c].to_numpy(dtype=object)) for c in frame.columns]
    elif isinstance(members, dict):
        items = [(str(k), v) for k, v in members.items()]
    else:
        raise DataError(f"members must be a DataFrame or a dict of columns; got {type(members).__name__}.", file=batch)
    from ..io.text_columns import is_member_column, member_context

    columns, raw = {}, {"file": batch, "rows": _rows(n)}
    known = None
    for name, values in items:
        if name == "known":
            if values is None:
                continue
            arr = np.asarray(values)
            if arr.shape != (n, len(codes)) or not np.all((arr == 0) | (arr == 1)):
                raise DataError(f"known must be an (n, K) = ({n}, {len(codes)}) array of 0/1 (the codes already on "
                                f"each patient's record, in the program's code order); got shape {arr.shape}.",
                                file=batch, column="known")
            known = arr.astype(bool)
            continue
        if values is None:
            continue
        values = by_patient_id(values, ids, batch, name)
        arr = np.asarray(values, dtype=object).reshape(-1) if not isinstance(values, np.ndarray) else values
        if len(arr) != n:
            raise DataError(f"the member column has {len(arr)} values for {n} patients.", file=batch, column=name,
                            fix="Give one value per patient, in the batch's order.")
        if name in _CELL_KEYS:
            raw["cells"] = [None if v is None or (isinstance(v, float) and v != v) else v for v in arr.tolist()]
            columns["cms_cell"] = np.array(["" if v is None else str(v).strip().upper() for v in raw["cells"]],
                                           dtype=object)  # also a segment column (per-cell guarantees), as the readers keep it
        elif name == "known_codes":
            raw["known_codes"] = [None if v is None or (isinstance(v, float) and v != v) else v for v in arr.tolist()]
        elif is_member_column(name):  # known_<code>
            values01 = np.asarray(arr, dtype=object)
            bad = [i for i, v in enumerate(values01.tolist()) if v not in (0, 1, True, False, "0", "1", 0.0, 1.0)]
            if bad:
                raise DataError(f"{values01[bad[0]]!r} is not 0 or 1.", file=batch, row=int(_rows(n)[bad[0]]), column=name,
                                fix="A known_<code> column holds 1 where the code is already on the record, else 0.")
            raw.setdefault("known_columns", {})[name[len("known_"):]] = np.array([int(float(v)) for v in values01.tolist()])
        else:
            columns[name] = np.array(["" if v is None or (isinstance(v, float) and v != v) else str(v).strip()
                                      for v in arr.tolist()], dtype=object)  # checked where a setting uses it
    context = member_context(raw if len(raw) > 2 else None, codes)
    cells = None if context is None else context["cells"]
    if context is not None and context["known"] is not None:
        known = context["known"] if known is None else (known | context["known"])
    return BatchMembers(columns, cells, known)


def dataset_members(dataset) -> dict:
    """The member context of a loaded :class:`favmac.io.Dataset`, as a program keeps it (the app's Programs
    page and ``favmac program create`` both call this): its grouping columns, the other text columns read
    beside the probabilities, the CMS cells and the known codes (``"cells"``/``"known"``)."""
    members = {}
    if dataset.groupings:
        members.update({str(name): np.asarray(labels, dtype=object) for name, labels in dataset.groupings.items()})
    elif dataset.groups is not None and dataset.segment_column:
        members[str(dataset.segment_column)] = np.asarray(dataset.groups, dtype=object)
    if dataset.attributes is not None:
        for column in dataset.attributes.columns:
            members.setdefault(str(column), dataset.attributes[column].to_numpy(dtype=object))
    if dataset.members:
        members["cells"], members["known"] = dataset.members.get("cells"), dataset.members.get("known")
    return members
