"""Tables and their column layouts: a CSV or Parquet source as a checked table, and which columns hold what.

:func:`parse_table` reads bytes into ``(frame, rows, file)``; :func:`column_names` reads a header
alone; :func:`column_layout` is the one statement of which columns of a header are the codes'
probabilities and labels (the long and wide layouts), the segment column and the member context.
"""
from __future__ import annotations

import io
from dataclasses import dataclass

import pandas as pd

from .csv_parsing import (
    ID_COLUMN,
    UNNAMED,
    check_code_names,
    check_id_column,
    check_not_binary,
    csv_header,
    decode_text,
    header_names,
    header_sample,
    parse_csv,
    read_bytes,
    source_name,
    text_encoding,
)
from .errors import DataError, join_few, plural
from .parquet import is_parquet, parse_parquet
from .text_columns import SEGMENT_COLUMN, check_not_code_columns, is_member_column, no_segment_column, segment_list

__all__ = ["parse_table", "column_names", "read_table", "ColumnLayout", "column_layout", "compare_codes", "looks_wide",
           "wide_columns", "codes_of"]


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


def codes_of(frame, file, layout):
    codes = [c for c in frame.columns if c != ID_COLUMN]
    if not codes:
        raise DataError(
            f"there are no code columns besides {ID_COLUMN}.", file=file, row=1,
            fix=f"A {layout} file has patient_id followed by one column per code (e.g. HCC18).",
        )
    check_code_names(codes, file)
    return codes


def wide_columns(columns):
    """(prob_codes, label_codes, other_columns) of a possibly wide header."""
    prob = [c[5:] for c in columns if c.startswith("prob_")]
    label = [c[6:] for c in columns if c.startswith("label_")]
    other = [c for c in columns if c != ID_COLUMN and not c.startswith(("prob_", "label_"))]
    return prob, label, other


def looks_wide(columns) -> bool:
    prob, label, other = wide_columns(columns)
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
    """The codes of a header and the column holding each, by the layout rules of docs/method.md "Input files".

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
    asked = segment_list(segment_column)
    for column in asked:
        if column not in names:
            raise no_segment_column(column, file)
    check_not_code_columns(asked, names, file)
    present = asked or ([SEGMENT_COLUMN] if SEGMENT_COLUMN in names else [])
    segment = present[0] if present else None
    rest = [c for c in names if c != ID_COLUMN and c not in present and not c.startswith(UNNAMED)
            and not is_member_column(c)]
    prob_codes, label_codes, other = wide_columns(rest)
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
    if wide:
        _refuse_reserved_codes(found, file)
    if codes is not None:
        codes = [str(c) for c in codes]
        compare_codes(codes, codes_from, found, file,
                       fix=f"Every file needs exactly the codes of {codes_from} (in any column order).")
        found = codes
    return ColumnLayout(
        codes=list(found),
        prob_columns=[f"prob_{c}" if wide else c for c in found],
        label_columns=[f"label_{c}" for c in found] if labelled else None,
        segment=segment,
    )


def _refuse_reserved_codes(codes, file) -> None:
    """A wide file's code named like a column with another meaning (``patient_id``, ``segment``, ``cms_cell``,
    ``known_codes``, ``known_<code>``): the probabilities layout (new patients, a program's batches) could not
    hold it as a code column."""
    for code in codes:
        if code in (ID_COLUMN, SEGMENT_COLUMN) or is_member_column(code):
            raise DataError(
                f"the code {code!r} (column prob_{code}) has the name of a reserved column: in a probabilities or "
                f"new-patient file a column named {code!r} is "
                + ("the patient id" if code == ID_COLUMN else "the segment labels" if code == SEGMENT_COLUMN
                   else "the member context of the payment value") + ", not a code.",
                file=file, row=1, column=f"prob_{code}",
                fix=f"Rename the code (prob_{code} and label_{code}), e.g. to {code.upper()}_CODE.",
            )


def compare_codes(codes_a, file_a, codes_b, file_b, fix):
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
