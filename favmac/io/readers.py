"""The input files FavMac works on, read into validated tables.

Layouts (docs/method.md, "Input files"), each as CSV or Parquet:

* **probabilities** — ``patient_id`` then one column per code (the header is the code),
  values in [0, 1];
* **labels** — the same layout, values 0/1; matched to the probabilities by id, not row;
* **wide** — one file with ``patient_id`` then ``prob_<code>`` and ``label_<code>`` per code;
* **weights** — columns ``code``, ``weight`` (>= 0) and an optional ``description``.

Calibration and new-patient files may carry one text column of segment labels (a plan,
region or provider; :mod:`favmac.segments`): by default a column named ``segment``, or the
column given as ``segment_column`` (:mod:`favmac.io.text_columns`). It is not a code;
:attr:`~favmac.io.dataset.Dataset.groups` holds it. Several groupings: ``segment_column`` may be a
list of columns (plan, age band, ...); each becomes one grouping of ``Dataset.groupings``
(``groups`` is the first).

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

import numpy as np
import pandas as pd

from .arrival_columns import PREDICTED_AT_COLUMN, arrivals_not_segments, take_arrivals
from .csv_parsing import ID_COLUMN, numeric_block, patient_ids, read_bytes, source_name
from .dataset import Dataset, dataset_name
from .errors import DataError, join_few, plural
from .layouts import codes_of, column_layout, compare_codes, looks_wide, parse_table, wide_columns
from .text_columns import (
    MEMBER_TEXT,
    SEGMENT_COLUMN,
    cell_text,
    check_segments_agree,
    member_context,
    segment_list,
    take_members,
    take_segment,
    take_segments,
    with_cells,
)

__all__ = ["read_probabilities", "read_labels", "read_wide", "probabilities_table", "labels_table", "load_calibration",
           "load_new_patients", "load_new_patients_segmented", "file_digests"]


def _layout_frame(frame, rows, file, kind) -> pd.DataFrame:
    ids = patient_ids(frame, rows, file)
    if kind == "label" and looks_wide(frame.columns):
        raise DataError(
            "this is a wide file (prob_<code> and label_<code> columns), not a labels file.",
            file=file, row=1, fix="Upload it alone as the calibration file, without a separate labels file.",
        )
    codes = codes_of(frame, file, "probabilities" if kind == "probability" else "labels")
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
    return probabilities_table(source, name, None)[0]


def probabilities_table(source, name, segment_column, label_available_column=None, check_segments=None, other_text=()):
    """Probabilities frame, segment labels ({column: labels} or None), label arrivals (or None)
    and file rows of a probabilities file. ``check_segments(groups, ids, file)`` sees the segments first.
    ``other_text``: further text columns (not codes) to read as text and keep in ``probs.attrs["other_text"]``
    ({column: labels}) rather than refuse as non-numeric probabilities."""
    text = (ID_COLUMN, *MEMBER_TEXT, *(segment_list(segment_column) or [SEGMENT_COLUMN]),
            *([label_available_column, PREDICTED_AT_COLUMN] if label_available_column else []))
    frame, rows, file = parse_table(source, name, text_columns=(*text, *(c for c in other_text if c not in text)))
    other = {c: _as_text(frame[c]) for c in other_text if c in frame.columns and c not in text}
    frame = frame.drop(columns=list(other))
    frame, groups = take_segments(frame, rows, file, segment_column)
    arrivals_not_segments(label_available_column, groups, file)
    if check_segments is not None and groups:
        check_segments(groups, patient_ids(frame, rows, file), file)
    frame, arrivals = take_arrivals(frame, rows, file, label_available_column)
    cells = cell_text(frame, groups)
    frame, members = take_members(frame, rows, file)
    if looks_wide(frame.columns):
        raise DataError(
            "this is a wide file (prob_<code> and label_<code> columns), not a probabilities file.",
            file=file, row=1,
            fix="Upload it as a single calibration file, or keep only patient_id and the probability columns.",
        )
    probs = _layout_frame(frame, rows, file, "probability")
    probs.attrs["members"] = member_context(members, probs.columns)
    probs.attrs["cell_text"] = cells
    probs.attrs["other_text"] = other
    return probs, groups, arrivals, np.asarray(rows)


def _as_text(column) -> list:
    """A column's cells as text labels (None where empty; a whole float without its ".0")."""
    return column.astype(object).where(column.notna(), None).map(
        lambda v: v if v is None else (str(int(v)) if isinstance(v, float) and v.is_integer() else str(v))).tolist()


def read_labels(source, name=None) -> pd.DataFrame:
    """Read a labels file (CSV or Parquet): the probabilities layout with 0/1 values. Returns int8 columns.

    A ``segment`` column is ignored here (segments are read from the probabilities file).
    """
    return labels_table(source, name, [SEGMENT_COLUMN])


def labels_table(source, name, columns, taken: dict | None = None):
    """The labels frame; the segment (and label-arrival) ``columns``, if present, are left out (into
    ``taken``, when given: column -> (patient ids, labels, rows))."""
    frame, rows, file = parse_table(source, name, text_columns=(ID_COLUMN, *columns))
    found = {}
    for column in columns:
        frame, found[column] = take_segment(frame, rows, file, column, required=False, members=False)
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
    text = (ID_COLUMN, *MEMBER_TEXT, *(segment_list(segment_column) or [SEGMENT_COLUMN]),
            *([label_available_column, PREDICTED_AT_COLUMN] if label_available_column else []))
    frame, rows, file = parse_table(source, name, text_columns=text)
    ids = patient_ids(frame, rows, file)
    frame, groupings = take_segments(frame, rows, file, segment_column)
    arrivals_not_segments(label_available_column, groupings, file)
    frame, arrivals = take_arrivals(frame, rows, file, label_available_column)
    cells = cell_text(frame, groupings)
    frame, members = take_members(frame, rows, file)
    prob_codes, label_codes, other = wide_columns(frame.columns)
    attributes = None
    if other and keep_columns and (prob_codes or label_codes):
        attributes = pd.DataFrame({c: _as_text(frame[c]) for c in other})
        attributes.index = ids
        frame = frame.drop(columns=other)
    if keep_columns:
        attributes = with_cells(attributes, cells, ids)
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
        name=name or dataset_name(file),
        groups=None if groupings is None else next(iter(groupings.values())),
        segment_column=None if groupings is None else next(iter(groupings)),
        attributes=attributes,
        members=member_context(members, prob_codes),
        groupings=groupings,
        label_available_at=arrivals,
        label_available_column=None if arrivals is None else label_available_column,
        rows=np.asarray(rows),
    )


def load_calibration(probs_source, labels_source=None, *, name=None, segment_column=None,
                     keep_columns: bool = True, label_available_column=None) -> Dataset:
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
        Keep other text columns (an ``age_band`` not used as a grouping: the app, the CLI and the library
        accept them alike; default True) as text in :attr:`Dataset.attributes`, candidate segment columns:
        a wide file's columns that are not ``prob_<code>`` / ``label_<code>``, a probabilities file's columns
        the labels file does not have and that are not all numbers (a number column missing from the labels
        file is a code the labels lack, and refused as such). Both layouts: keep a ``cms_cell`` column's text
        there too (a candidate segment column; it is still each member's cell, :attr:`Dataset.members`).
        False: such columns are refused.
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
    labels = labels_table(labels_source, None, [*(segment_list(segment_column) or [SEGMENT_COLUMN]),
                                                *([label_available_column] if label_available_column else [])], taken)
    other_text = ()
    if keep_columns:  # columns only the probabilities file has: text columns unless they hold only numbers
        from .layouts import column_names

        taken_names = {ID_COLUMN, *MEMBER_TEXT, *(segment_list(segment_column) or [SEGMENT_COLUMN]),
                       *([label_available_column, PREDICTED_AT_COLUMN] if label_available_column else [])}
        names = column_names(probs_source)
        other_text = () if looks_wide(names) else tuple(  # a wide file given as probabilities: refused below as such
            c for c in names if c not in set(labels.columns) and c not in taken_names and not c.startswith("known_"))
    probs, groupings, arrivals, rows = probabilities_table(
        probs_source, None, segment_column, label_available_column,
        check_segments=lambda groups, ids, _: check_segments_agree(groups, ids, taken, p_file, l_file), other_text=other_text)
    other = probs.attrs.pop("other_text", {})
    numeric = [c for c, cells in other.items() if _all_numbers(cells)]
    if numeric:  # a code the labels file lacks: refused below, as without keep_columns
        probs, groupings, arrivals, rows = probabilities_table(
            probs_source, None, segment_column, label_available_column,
            other_text=tuple(c for c in other_text if c not in numeric))
        other = probs.attrs.pop("other_text", {})
    compare_codes(
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
    attributes = pd.DataFrame(other, index=probs.index, dtype=object) if other else None
    return Dataset(probs=probs, labels=aligned.astype(np.int8), name=str(name) if name else dataset_name(source_name(probs_source, None)),
                   attributes=with_cells(attributes, cells, probs.index) if keep_columns else None,
                   groups=None if groupings is None else next(iter(groupings.values())),
                   segment_column=None if groupings is None else next(iter(groupings)),
                   sources=file_digests(probs_source, labels_source), groupings=groupings,
                   label_available_at=arrivals, members=probs.attrs.pop("members", None),
                   label_available_column=None if arrivals is None else label_available_column,
                   rows=rows)


def _all_numbers(cells) -> bool:
    """Whether every non-empty cell reads as a number (then the column is a code, not a text column)."""
    values = [c for c in cells if c is not None and str(c).strip()]
    return bool(values) and bool(pd.to_numeric(pd.Series(values), errors="coerce").notna().all())


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


def load_new_patients_segmented(source, codes, name=None, *, segment_column=None, text_columns=()):
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
    text_columns : sequence of str, optional
        Other text columns the file may hold (the calibration data's candidate segment columns, e.g. an
        ``age_band`` not used here): read as text and left out of the probabilities instead of refused as
        unknown codes.

    Returns
    -------
    (DataFrame, ndarray, dict or None)
        The probabilities (as :func:`load_new_patients`) and one segment label per row (None
        when the file has no segment column); with several columns, ``{column: labels}`` in
        the order asked (also in ``frame.attrs["groupings"]``).
    """
    columns = segment_list(segment_column)
    read_as_text = (ID_COLUMN, *(columns or [SEGMENT_COLUMN]), *MEMBER_TEXT)
    others = [c for c in text_columns if c not in read_as_text and c not in set(map(str, codes))]
    frame, rows, file = parse_table(source, name, text_columns=(*read_as_text, *others))
    frame = frame.drop(columns=[c for c in others if c in frame.columns])
    if len(columns) > 1:  # several groupings
        frame, groupings = take_segments(frame, rows, file, columns)
        layout = column_layout(frame.columns, file, labelled=False, codes=codes)  # the segment columns are out
        groups = None
    else:
        column = columns[0] if columns else SEGMENT_COLUMN
        segment_column = columns[0] if columns else None
        layout = column_layout(frame.columns, file, labelled=False, segment_column=segment_column, codes=codes)
        frame, groups = take_segment(frame, rows, file, column, required=segment_column is not None)
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
