"""Calibrate: the final FavMac thresholds over a very large labelled data set, exactly, on Dask.

The final thresholds over a calibration set are a weighted order statistic of per-patient
points (docs/method.md, "Distributed calibration"), so they split over partitions:

1. every partition turns its patients into points — (key, integer weight) for expected-cost
   control, the scores T_i with weight 1 for violation control — and returns exact integer
   histograms over the keys' ordered 64-bit patterns, the top 20 bits first
   (:mod:`favmac.distributed.histograms`);
2. the coordinator adds the histograms, finds for every target the bucket where
   F(b) = total weight of keys <= b crosses M (or the k-th largest T_i), and
3. asks the partitions again, inside the crossing buckets only: either the next 22 bits
   (a bucket still holding many points) or the exact distinct keys with their summed weights,
   until one key remains. docs/method.md's edge rules (+inf, -inf) are applied on the way.

Nothing is approximate and nothing depends on the partition order: weights are integers at
the cost's decimal scale (``favmac.thresholds.ExactCosts``). No partition ever materializes
more than one batch of rows; the data is read once per pass (two passes in practice, a third
only when a 20-bit bucket holds more than ``EXACT_LIMIT`` points). Input is read and checked
by :mod:`favmac.distributed.sources` (favmac.io's rules); the passes run on
:class:`favmac.distributed.runner.Runner`, which also refuses a patient id seen twice.

"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..io.csv_parsing import ID_COLUMN, numeric_block, patient_ids
from ..io.layouts import column_layout
from ..recalibration import (DEFAULT_FOLD, DEFAULT_FOLD_MIN_PATIENTS, DEFAULT_RECALIBRATION, Recalibration, check_recalibrate,
                             default_recalibrate, fit_recalibration)
from ..segments import group_rows
from ..thresholds import (
    ExactCosts,
    calibration_points,
    expected_margin,
    rank_edge,
    violation_rank,
    violation_scores,
)
from ..functions import false_flag_weights
from ..scores import check_score, default_score
from ..universe import DEFAULT_UNIVERSE, candidate_sets, check_universe
from .histograms import (
    WIDTHS,
    add,
    bucket,
    crossing,
    cumsum,
    descend,
    group_sum,
    key_of_bits,
    merge,
    ordered_bits,
    select,
    sparse_histogram,
)
from .members import MemberContext, member_context_of
from .runner import Runner, hash_series, id_hashes
from .sources import Piece, rows_of, segment_columns, segment_labels

__all__ = ["calibrate"]


# ----------------------------------------------------------------------------- the model


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
    segment: str | tuple | None = None  # column(s) of group labels: every group of each is also calibrated on its own
    maps: Recalibration | None = None  # recalibration maps applied to every row after the fold
    fold: tuple = ()  # ((item key, rows), ...): leading rows of each item that are the recalibration fold
    members: MemberContext | None = None  # the payment value's cells and known codes, read per batch

    def fold_rows(self, item, name) -> int:
        """How many leading rows of this Piece or dask partition belong to the recalibration fold."""
        return dict(self.fold).get(_item_key(item, name), 0)

    @property
    def columns(self) -> tuple:
        """The segment columns (one per grouping; () without segments)."""
        return segment_columns(self.segment)

    @property
    def text(self) -> tuple:
        """The columns read as text: the ids, the segment labels and the member cells / known codes."""
        return (ID_COLUMN, *self.columns, *(self.members.text if self.members else ()))

    def group_key(self, c: int, label: str):
        """The key of group ``label`` of the c-th segment column: the label itself with one column,
        ``(column, label)`` with several (two groupings may share a label)."""
        return label if len(self.columns) == 1 else (self.columns[c], label)

    @property
    def wanted(self) -> list[str]:
        """The columns a pass reads."""
        wanted = [ID_COLUMN, *self.columns] + [f"prob_{c}" for c in self.codes] + [f"label_{c}" for c in self.codes]
        return list(dict.fromkeys(wanted + list(self.members.columns if self.members else ())))  # a cms_cell segment once

    @property
    def expected(self) -> bool:
        return not self.bounds

    @property
    def n_sets(self) -> int:
        return max(1, len(self.bounds))

    def arrays(self, frame, file, rows, hash_ids: bool = True):
        """(probabilities, labels, segment labels (one array per segment column) or None, id hashes or
        None, member context (cells, known) or None) of a batch, checked by favmac.io's rules (the ids
        are checked on the first pass only, with ``hash_ids``)."""
        probs = numeric_block(frame, [f"prob_{c}" for c in self.codes], rows, file, "probability")
        labels = numeric_block(frame, [f"label_{c}" for c in self.codes], rows, file, "label")
        hashes = id_hashes(patient_ids(frame, rows, file)) if hash_ids else None
        groups = [segment_labels(frame, column, file, rows) for column in self.columns] or None
        members = None if self.members is None else self.members.read(frame, rows, file)
        return probs, labels, groups, hashes, members

    def points(self, probs, labels, members=None):
        """Per point set: (keys, integer weights) per patient row — (N, M) for expected control,
        (N,) scores with weight 1 per bound for violation control. Zero weights are dropped later.
        ``members`` (cells, known) are the rows' member context for the payment value."""
        value = self.value if members is None else self.members.bind(*members)
        cands = candidate_sets(probs, value, self.cost, self.universe)
        realized = self.costs.realized(cands, labels.astype(bool))
        if self.expected:
            return [calibration_points(cands, realized, self.score)]
        return [(violation_scores(cands, realized, bound, self.score), np.ones(len(probs), dtype=np.int64))
                for bound in self.bounds]


# ----------------------------------------------------------------------------- one pass over a piece


def _rows_from(members, start: int):
    """The member context (cells, known) of the rows from ``start`` on (known may be None or (K,))."""
    cells, known = members
    return cells[start:], (known[start:] if known is not None and known.ndim == 2 else known)


def _item_key(item, name):
    """A Piece (hashable, unique) or a dask partition's name ("partition <i>")."""
    return item if isinstance(item, Piece) else name


def _pass_rows(model: _Model, rows, request, skip: int = 0):
    """Fold batches ``rows`` (iterable of (file, row numbers, frame)) into one pass's results.

    Point sets are keyed by (group, s): group None is every patient, a group key
    (``_Model.group_key``: the label, or (column, label) with several segment columns) its
    patients only; s indexes the model's point sets (one per violation bound). ``request``
    is None for the first pass (a top-level histogram per point set) or a dict from point-set
    key to a list of regions (depth, prefix, exact) to histogram one level deeper
    (exact=False) or to enumerate as distinct patterns with summed weights (exact=True).

    Returns ``(patients per group, results)``: the first pass gives one sparse histogram
    (ids, sums, counts) per key, later passes one per requested region. The first pass
    appends a third item, the 64-bit hashes of the patient ids (for the duplicate check).
    The first ``skip`` rows are the recalibration fold: checked and id-hashed, never points;
    the other rows' probabilities go through ``model.maps``.
    """
    n_rows: dict = {None: 0}
    size = 1 << WIDTHS[0]
    dense = {}  # the pooled sets: dense 20-bit histograms [sums, counts]
    sparse: dict = {}  # segment sets (few points each): sparse histograms per batch
    partial = {key: [[] for _ in regions] for key, regions in (request or {}).items()}
    hashes = []
    for file, row_numbers, frame in rows:
        probs, labels, groups, id_hashes, members = model.arrays(frame, file, row_numbers, hash_ids=request is None)
        if request is None:
            hashes.append(id_hashes)
        if skip:  # docs/method.md "Recalibration on a split": the fold never joins calibration
            drop = min(skip, len(probs))
            skip -= drop
            probs, labels = probs[drop:], labels[drop:]
            groups = None if groups is None else [g[drop:] for g in groups]
            members = None if members is None else _rows_from(members, drop)
        if model.maps is not None and len(probs):
            probs = model.maps.apply(probs)
        n_rows[None] += len(probs)
        if not len(probs):
            continue
        per_row = model.points(probs, labels, members)
        selections = [(None, slice(None))] + [(model.group_key(c, label), selected)
                                              for c, labels_of in enumerate(groups or [])
                                              for label, selected in group_rows(labels_of)]
        for group, selected in selections:
            if group is not None:
                n_rows[group] = n_rows.get(group, 0) + len(selected)
            for s, (keys, weights) in enumerate(per_row):
                keys, weights = keys[selected], weights[selected]
                keep = weights > 0
                patterns, weights = ordered_bits(keys[keep]), weights[keep]
                key = (group, s)
                if request is None:
                    ids = bucket(patterns, 0)
                    if group is None:
                        sums, counts = dense.get(key, (np.zeros(size, np.int64), np.zeros(size, np.int64)))
                        dense[key] = (add(sums, group_sum(ids, weights, size)), counts + np.bincount(ids, minlength=size))
                    else:
                        sparse.setdefault(key, []).append(sparse_histogram(ids.astype(np.uint64), weights))
                    continue
                for r, (depth, prefix, exact_mode) in enumerate(request.get(key, ())):
                    mask = select(patterns, depth, prefix)
                    if mask.any():
                        chosen = patterns[mask]
                        ids = chosen if exact_mode else bucket(chosen, depth).astype(np.uint64)
                        partial[key][r].append(sparse_histogram(ids, weights[mask]))
    if request is None:
        out = {key: merge(parts) for key, parts in sparse.items()}
        for key, (sums, counts) in dense.items():
            nz = np.flatnonzero(counts)
            out[key] = (nz.astype(np.uint64), sums[nz], counts[nz])
        return n_rows, out, hash_series(hashes)
    return n_rows, {key: [merge(parts) for parts in per_region] for key, per_region in partial.items()}


def _piece_pass(item, name: str, model: _Model, request):
    """One pass over a Piece or a dask partition (see ``_pass_rows``)."""
    if not isinstance(item, Piece):
        column_layout(item.columns, name, segment_column=model.segment, codes=model.codes)
    return _pass_rows(model, rows_of(item, name, model.wanted, model.text), request, model.fold_rows(item, name))


def _fit_fold(runner, model: _Model, size: int, method: str, *, auto: bool = False):
    """Read the first ``size`` rows of the stream order (files sorted, rows in order; or the
    partitions in order) on the coordinator and fit the maps: ``(maps, fold)`` for the model.

    ``auto`` (``recalibrate="auto"``): the rows are counted on up to :data:`DEFAULT_FOLD_MIN_PATIENTS`
    first and :func:`favmac.recalibration.default_recalibrate` of that count decides (``size`` is
    :data:`DEFAULT_FOLD`); when it says no fold, ``(None, ())``."""
    probs, labels, fold, seen, counted = [], [], [], 0, 0
    goal = max(size, DEFAULT_FOLD_MIN_PATIENTS) if auto else size
    for item, name in runner.items():
        if counted >= goal:
            break
        part = item if isinstance(item, Piece) else item.compute()
        if not isinstance(item, Piece):
            column_layout(part.columns, name, segment_column=model.segment, codes=model.codes)
        taken = 0
        for file, row_numbers, frame in rows_of(part, name, model.wanted, model.text):
            batch_probs, batch_labels, *_ = model.arrays(frame, file, row_numbers, hash_ids=False)
            take = max(0, min(size - seen, len(batch_probs)))
            probs.append(batch_probs[:take])
            labels.append(batch_labels[:take])
            seen += take
            taken += take
            counted += len(batch_probs)
            if counted >= goal:
                break
        if taken:
            fold.append((_item_key(item, name), taken))
    if auto and default_recalibrate(counted) is None:  # fewer labelled patients than the default fold needs
        return None, ()
    check_recalibrate(size, n_patients=seen)  # a stream shorter than R: the error names the setting
    maps = fit_recalibration(np.concatenate(probs), np.concatenate(labels), method, codes=model.codes)
    return maps, tuple(fold)


# ----------------------------------------------------------------------------- calibrate


def _checked_segment(segment):
    """``segment`` as None, one column name, or a tuple of two or more distinct names."""
    columns = segment_columns(segment)
    if not columns:
        if segment is not None:
            raise ValueError("segment: give a column name or a list of them, not an empty list")
        return None
    if len(set(columns)) != len(columns):
        raise ValueError(f"segment: names a column twice ({', '.join(columns)}); name each segment column once")
    return columns[0] if len(columns) == 1 else columns


def calibrate(source, value, cost, targets, *, delta=None, universe=DEFAULT_UNIVERSE, score=None, c_max=None,
              segment=None, scheduler=None, progress=False, return_details=False, recalibrate=None,
              recalibration=DEFAULT_RECALIBRATION):
    """Final FavMac thresholds over a very large labelled data set, computed exactly on Dask.

    The result equals ``FavMac(value, cost, c, delta=delta, universe=universe, score=score,
    c_max=c_max)`` fed every row (in any order) and read through ``.threshold``, for every
    target c.

    Parameters
    ----------
    source : str, os.PathLike, list of them, or dask.dataframe.DataFrame
        Parquet or CSV files in the wide layout (``patient_id``, ``prob_<code>``,
        ``label_<code>``; codes in the first file's column order, the same codes in every
        file): a path, a glob such as ``'claims/*.parquet'``, a folder, a list, or any fsspec
        URL (``s3://...``); or a dask DataFrame with those columns. With the payment value,
        also the member-context columns favmac.io reads (``cms_cell``, ``known_codes``,
        ``known_<code>``; the same ones in every file).
    value, cost : value and cost functions (favmac.functions)
        ``value`` may be a :class:`favmac.payment.CmsHccValue` over the files' codes (in their
        column order) without per-patient context: each patient's cell and known codes are then
        read from the files (:mod:`favmac.distributed.members`), and the result equals a
        ``FavMac`` fed every row with its own context (``update(p, y, value=value.take(rows))``).
    targets : float or sequence of float
        Target costs c, in the cost's own units.
    delta : float or None
        None: expected-cost control; a float in (0, 1): violation control.
    universe : {"ratio", "prob", "value", "full"}
    score : {"cost", "price"}, optional
        What the threshold is on (docs/method.md, "The score a threshold is on"); "price" needs a
        greedy universe. Default: :func:`favmac.scores.default_score` of ``universe``,
        ``delta``, the targets and the cost (price under expected-cost control, cost under
        violation control unless every target is below the cheapest false flag, cost on ``full``).
    c_max : float, optional
        Largest possible cost (default: the sum of the cost weights).
    segment : str, optional
        A column of group labels (plan, region, provider; docs/method.md "Segments"): every segment is
        also calibrated on its own patients, as ``FavMac.threshold_for(label)`` after
        ``update(p, y, group=labels)``. A list of columns calibrates several groupings at once
        (docs/method.md "Several groupings at once"): every group of every column on its own patients,
        each equal to the in-memory replay's final group threshold
        (``ReplayResult.groupings[i].final_thresholds``); the second item returned is then
        ``{column: {label: thresholds}}`` and ``segment_sizes`` ``{column: {label: patients}}``.
    scheduler : None, str or distributed.Client
        None: dask's local default (threads); a local scheduler name ("threads", "processes",
        "synchronous"); a ``distributed.Client``; or a scheduler address such as
        ``"tcp://10.0.0.5:8786"`` (a client is opened for the call and closed after).
    progress : bool
        Show dask's progress bar (``dask.diagnostics.ProgressBar`` locally,
        ``distributed.progress`` on a cluster) for every pass.
    recalibrate : int or "auto", optional
        R >= 50: the first R rows of the stream order (files sorted by path, rows in file order;
        a dask DataFrame's partitions in order) are a recalibration fold (docs/method.md "Recalibration on
        a split"): the coordinator reads them and fits per-code maps, every other row is
        calibrated with g_k(p_k), and the fold's rows never calibrate. Equals
        ``FavMac(..., recalibrate=R)`` fed the rows in that order. The details then carry
        ``recalibrate`` and ``recalibration_maps`` (the maps' dict, for
        :func:`~favmac.distributed.predict`). "auto" (what a run description's default asks for,
        e.g. the CLI's): the coordinator counts the first rows up to 3,000 and
        :func:`favmac.recalibration.default_recalibrate` decides (R = 1,000 from 3,000 rows on,
        else no fold); None (the default here): no fold.
    recalibration : {"platt", "isotonic", "platt_tested"}
        The map fitted on the fold.
    return_details : bool
        Also return a dict with ``n_patients``, ``codes``, ``passes``, the exact ``c_max``, the
        ``score`` used and, with ``segment``, ``segment_sizes`` (label -> patients).

    Returns
    -------
    ndarray of float, shape (T,)
        The thresholds (may be +inf or -inf, per docs/method.md's edge rules). With ``segment``,
        ``(thresholds, by_segment)`` where ``by_segment`` maps each label to its (T,) array.
        With ``return_details``, the details dict is appended to the returned tuple.

    Raises
    ------
    DataError
        A file (or partition) with missing columns, codes that differ from the first file's,
        or a missing, non-numeric, NaN or infinite cell, a probability outside [0, 1] or a
        label other than 0/1; a missing patient id or one seen twice in the whole source; a
        CSV fault favmac.io refuses (empty file, another delimiter, a ragged row, ...); with the
        payment value a cell that is not a CMS-HCC coefficient cell, a known code the data
        lacks, or member-context columns that differ between files. The message names the
        file, the row (header = row 1, blank CSV rows counted) and the column.
    ValueError
        A payment value with per-patient context or built on other codes; the ``value``
        universe with a ``cms_cell`` column (its ranking needs one cell).

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
    score = check_score(default_score(universe, delta, targets, false_flag_weights(cost)) if score is None else score,
                        universe)
    segment = _checked_segment(segment)
    with Runner(source, scheduler, progress, labelled=True, segment=segment) as runner:
        n_codes = len(runner.codes)
        check_universe(universe, n_codes)
        costs = ExactCosts.of(cost, n_codes, c_max)
        bounds = () if delta is None else tuple(sorted({costs.bound(t) for t in targets}))
        members = member_context_of(value, runner.codes, runner.columns(), universe)
        model = _Model(value, cost, universe, score, tuple(runner.codes), costs, bounds, segment, members=members)
        if recalibrate is not None:
            auto = isinstance(recalibrate, str) and recalibrate == "auto"
            size = DEFAULT_FOLD if auto else check_recalibrate(recalibrate)
            maps, fold = _fit_fold(runner, model, size, recalibration, auto=auto)
            if maps is not None:
                model = _Model(value, cost, universe, score, tuple(runner.codes), costs, bounds, segment, maps, fold,
                               members)
            recalibrate = None if maps is None else size
        results = runner.run_checking_ids(runner.tasks(_piece_pass, model, None), model.text)
        sizes: dict = {}
        for counts, _ in results:
            for group, n in counts.items():
                sizes[group] = sizes.get(group, 0) + n
        top_keys = {key for _, hists in results for key in hists}
        top = {key: merge([hists[key] for _, hists in results if key in hists]) for key in top_keys}
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
            state[search] = descend(key, need, 0, 0, 0, ids, sums, counts)
        passes = 1
        while state:
            regions: dict = {}
            for key, _, depth, prefix, exact_mode, _ in state.values():
                regions.setdefault(key, set()).add((depth, prefix, exact_mode))
            regions = {key: sorted(found) for key, found in regions.items()}
            results = runner.run(runner.tasks(_piece_pass, model, regions))
            passes += 1
            merged = {key: [merge([hists[key][i] for _, hists in results]) for i in range(len(regions[key]))]
                      for key in regions}
            for search in list(state):
                key, need, depth, prefix, exact_mode, below = state[search]
                ids, sums, counts = merged[key][regions[key].index((depth, prefix, exact_mode))]
                if exact_mode:
                    answers[search] = key_of_bits(int(ids[crossing(cumsum(sums, below), need)]))
                    del state[search]
                else:
                    state[search] = descend(key, need, depth, prefix, below, ids, sums, counts)

    def thresholds_of(group):
        values = np.array([answers[group, t] for t in range(len(targets))], dtype=float)
        return values[0] if scalar else values

    out = thresholds_of(None)
    keys = sorted(g for g in sizes if g is not None)
    several = len(model.columns) > 1
    if segment is not None:
        by_group = {group: thresholds_of(group) for group in keys}
        if several:  # column -> {label: thresholds}
            by_group = {column: {label: by_group[column, label] for c, label in keys if c == column}
                        for column in model.columns}
        out = (out, by_group)
    if return_details:
        details = {"n_patients": sizes[None], "codes": list(runner.codes), "passes": passes, "c_max": costs.c_max,
                   "scale": costs.scale, "score": score}
        if model.maps is not None:
            details["recalibrate"] = int(recalibrate)
            details["recalibration_maps"] = model.maps.to_dict()
        if segment is not None:
            details["segment_sizes"] = ({column: {label: sizes[column, label] for c, label in keys if c == column}
                                         for column in model.columns} if several
                                        else {g: sizes[g] for g in keys})
        return (*out, details) if segment is not None else (out, details)
    return out
