"""Predict: the chosen code set of every patient in a large unlabelled file set, written as Parquet parts.

Each task reads one piece (or dask partition) batch by batch, chooses every patient's set with
the library's ``candidate_sets`` at the given threshold(s) and writes the export table of the
app and the CLI (:func:`favmac.export.chosen_sets`) as one ``part-NNNNN.parquet``. The parts go
into a hidden staging folder that is renamed to ``out`` only when every task succeeded and no
patient id repeats (:meth:`favmac.distributed.runner.Runner.run_checking_ids`).
"""
from __future__ import annotations

import math
import os
import shutil
import uuid

import numpy as np

from ..export import chosen_sets
from ..io.csv_parsing import ID_COLUMN, numeric_block, patient_ids
from ..io.layouts import column_layout
from ..replay import method_name
from ..segments import smallest_group_thresholds, too_small_reason
from ..thresholds import ExactCosts
from ..universe import DEFAULT_UNIVERSE
from ..functions import false_flag_weights
from ..scores import check_score, default_score
from ..universe import candidate_sets, check_universe
from .members import member_context_of
from .runner import Runner, hash_series, id_hashes
from .sources import Piece, rows_of, segment_columns, segment_labels

__all__ = ["predict"]


def predict(source, value, cost, thresholds, out, *, universe=DEFAULT_UNIVERSE, score=None, codes=None, target=None,
            delta=None, method=None, segment=None, segment_sizes=None, c_max=None, scheduler=None, progress=False,
            recalibration=None):
    """Choose the code set of every patient in a large unlabelled file set; write Parquet parts.

    Parameters
    ----------
    source : str, os.PathLike, list of them, or dask.dataframe.DataFrame
        Parquet or CSV files with ``patient_id`` and one column per code (the probabilities
        layout) or ``prob_<code>`` columns (a wide file; label columns are ignored); with the
        payment value also ``cms_cell`` / ``known_codes`` / ``known_<code>`` columns.
    value, cost : value and cost functions
        A :class:`favmac.payment.CmsHccValue` (as for :func:`~favmac.distributed.calibrate`:
        over ``codes``, no per-patient context) is bound to each patient's cell and known codes
        read from the files; the sets equal ``FavMac.predict(p, value=...)`` row for row.
    thresholds : float, or dict of segment label -> float with ``segment``
        The threshold T (e.g. from :func:`~favmac.distributed.calibrate`); with ``segment``,
        each segment's own (the second item calibrate returns with ``segment``). A segment
        missing from the dict gets T = -inf (the empty set; it had no calibration patient),
        with a note. With several segment columns: ``{column: {label: T}}``, and each
        patient's T is the smallest of its groups' (:func:`favmac.segments.smallest_group_thresholds`;
        ``segment`` reads ``plan=A; band=x`` and ``note`` names the binding grouping or why
        the set is empty), as the in-memory ``favmac.export.new_patient_sets``.
    out : str
        Output folder; one ``part-NNNNN.parquet`` per task is written into it. It is filled
        only when every partition succeeded (written to a temporary folder, then renamed).
    universe, score : as in :func:`~favmac.distributed.calibrate`
        The default score, :func:`favmac.scores.default_score` of ``universe``, ``delta``, ``target``
        and the cost, is the one :func:`~favmac.distributed.calibrate` uses: give both the same ``delta``
        and target.
    codes : list of str, optional
        The calibration codes; every file must hold exactly these (any column order).
    target, delta, method : optional
        Copied into the output columns (as the CLI's CSV export does).
    segment : str or list of str, optional
        Column(s) of segment labels; adds the export's ``segment`` and ``note`` columns.
    segment_sizes : dict, optional
        Segment label -> calibration patients (``details["segment_sizes"]`` of
        :func:`~favmac.distributed.calibrate`). A segment whose threshold is -inf (too few
        patients for the target) then gets ``favmac.segments.too_small_reason`` as its note, as the in-memory export
        writes it; without the sizes the note says the threshold is -inf. With several segment
        columns: ``{column: {label: patients}}``.
    c_max : float, optional
        The calibration's C_max (default: the sum of the cost weights), for that note.
    scheduler, progress : as in :func:`~favmac.distributed.calibrate`
    recalibration : Recalibration or dict, optional
        The maps the thresholds were calibrated with (``details["recalibration_maps"]`` of
        :func:`~favmac.distributed.calibrate` with ``recalibrate``), applied to every patient's
        probabilities first (the sets and the proxies use g_k(p_k)).

    Returns
    -------
    int
        Number of patients written.

    Raises
    ------
    DataError
        For the faults :func:`~favmac.distributed.calibrate` refuses (labels are not read) and
        a patient id seen twice in the whole file set; nothing is written then.
    """
    score = check_score(default_score(universe, delta, target, false_flag_weights(cost)) if score is None else score,
                        universe)
    columns = segment_columns(segment)
    segment = None if not columns else columns[0] if len(columns) == 1 else columns
    if segment is None:
        threshold = float(thresholds)
    elif len(columns) == 1:
        if not isinstance(thresholds, dict):
            raise ValueError("thresholds: with segment=..., give a dict of segment label -> threshold")
        threshold = {str(label).strip(): float(t) for label, t in thresholds.items()}
    else:
        if not isinstance(thresholds, dict) or any(not isinstance(thresholds.get(c), dict) for c in columns):
            raise ValueError(f"thresholds: with several segment columns ({', '.join(columns)}), give a dict "
                             "column -> {segment label -> threshold} for each")
        threshold = {c: {str(label).strip(): float(t) for label, t in thresholds[c].items()} for c in columns}
    values = ([threshold] if segment is None else threshold.values() if len(columns) == 1
              else [t for by_label in threshold.values() for t in by_label.values()])
    if any(math.isnan(t) for t in values):
        raise ValueError("thresholds: a threshold is NaN")
    out = os.fspath(out)
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise ValueError(f"out: {out!r} already exists and is not an empty folder")
    parent = os.path.dirname(os.path.abspath(out))
    staging = os.path.join(parent, f".{os.path.basename(out)}.partial-{uuid.uuid4().hex[:8]}")
    os.makedirs(staging)
    try:
        with Runner(source, scheduler, progress, labelled=False, codes=codes, segment=segment) as runner:
            check_universe(universe, len(runner.codes))
            from ..recalibration import as_recalibration

            info = dict(maps=as_recalibration(recalibration, codes=runner.codes), threshold=threshold, method=method or method_name(universe, score), target=target, delta=delta,
                        universe=universe, score=score, segment=segment,
                        c_max=ExactCosts.of(cost, len(runner.codes), c_max).c_max, sizes=segment_sizes)
            info["notes"] = (_segment_notes(threshold, segment_sizes, target, delta, info["c_max"])
                             if len(columns) == 1 else {})
            info["members"] = member_context_of(value, runner.codes, runner.columns(), universe)
            import dask

            shared = [runner.shared(arg) for arg in (value, cost, runner.codes, info)]
            tasks = [dask.delayed(_predict_item, pure=False)(item, name, index, *shared, staging)
                     for index, (item, name) in enumerate(runner.items())]
            written = sum(count for (count,) in runner.run_checking_ids(tasks, (ID_COLUMN, *columns)))
        if os.path.isdir(out):
            os.rmdir(out)
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return written


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
            hashes.append(id_hashes(ids))
            columns = segment_columns(info["segment"])
            segments = segment_labels(frame, info["segment"], file, row_numbers) if len(columns) == 1 else None
            threshold, notes = info["threshold"], None
            if len(columns) > 1:  # several groupings: the smallest of the patient's groups' thresholds
                sizes = info["sizes"] or {}
                finals = [(c, info["threshold"][c], sizes.get(c)) for c in columns]
                threshold, segments, notes = smallest_group_thresholds(
                    finals, [segment_labels(frame, c, file, row_numbers) for c in columns], len(frame),
                    math.nan if info["target"] is None else info["target"], info["c_max"] if info["target"] is not None
                    else None, info["delta"])
            elif segments is not None:
                threshold = np.array([info["threshold"].get(label, -math.inf) for label in segments])
                notes = [info["notes"].get(label, "") if label in info["threshold"] else missing_note.format(label)
                         for label in segments]
            if info["maps"] is not None:  # the maps the thresholds were calibrated with
                probs = info["maps"].apply(probs)
            members = info["members"]  # the payment value: bound to these patients' cells and known codes
            bound = value if members is None else members.bind(*members.read(frame, row_numbers, file))
            cands = candidate_sets(probs, bound, cost, info["universe"])
            selected = cands.masks(cands.choose(threshold, info["score"]))
            table = chosen_sets(ids.to_numpy(dtype=object), probs, selected, threshold,
                                codes=codes, value=bound, cost=cost, method=info["method"],
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
    return written, hash_series(hashes)


def _predict_item(item, name, index, value, cost, codes, info, staging):
    """Write the chosen sets of one Piece or dask partition as ``part-<index>.parquet``."""
    names = item.columns if isinstance(item, Piece) else list(item.columns)
    layout = column_layout(names, name, labelled=False, segment_column=info["segment"], codes=codes)
    prob_cols = layout.prob_columns
    members = info["members"]
    text = (ID_COLUMN, *segment_columns(info["segment"]), *(members.text if members else ()))
    wanted = list(dict.fromkeys([*text, *prob_cols, *(members.columns if members else ())]))
    path = os.path.join(staging, f"part-{index:05d}.parquet")
    return _predict_rows(rows_of(item, name, wanted, text), value, cost, codes, info, path, prob_cols)
