"""replay: the whole online FavMac session over a labelled stream, all targets in one pass.

For every stream position n >= burn_in it records the threshold calibrated on the patients
whose labels have arrived before n (:mod:`favmac.arrivals`; without a delay: patients
0..n-1, or the last ``window`` of them), the set chosen for patient n, and that set's
realized cost and value — exactly what a loop of ``FavMac.update/predict`` gives.

The engine runs in steps: candidates -> realized costs -> thresholds per part (each group
of each grouping, or the pooled stream) -> selection (each patient's smallest threshold
over its groupings) -> result.

How it is fast: in a replay every calibration point is known up front, so keys are ranked
once and Fenwick trees over ranks (numba, exact int64 weights at a decimal scale; one per
group, laid end to end) replace the QuantileTree. In expected-cost control the inserted
points do not depend on the target — only the query level c(n+1) - C_max does — so one pass
serves every target.

Threads (:mod:`favmac.parallel`, ``using(n)``): the per-patient passes (counts, keys and their
argsort, weights, slot lookup, the compiled choice of the sets), the merge of the sorted chunks (in
key ranges) and the keyless walk (in slot ranges, :meth:`_Engine._walk_in_ranges`) run on
``inner_threads()`` threads. Each thread writes only its own slices and every sum is an exact
integer, so the results are the same bit for bit on any number of threads.
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass

import numpy as np

from .adaptive import AdaptiveTarget, check_adaptive_rate
from .costs import exact_costs
from .arrivals import ArrivalSchedule, check_label_delay
from .functions import bind_rows, false_flag_weights
from .parallel import inner_threads, map_chunks, ordered_chunks
from .recalibration import DEFAULT_RECALIBRATION
from .result import ReplayResult
from .segments import GroupingResult, check_groupings, group_index
from .thresholds import (
    INT64_LIMIT,
    ExactCosts,
    calibration_count,
    rank_edge,
    violation_rank,
    calibration_points,
    calibration_weights,
    common_scale,
    expected_bounds,
    scaled_int,
    violation_ranks,
    violation_scores,
)
from .universe import (Candidates, ChosenSets, candidate_sets, check_score, check_universe, default_score,
                       smallest_int)
from .validation import check_stream

__all__ = ["PatientWork", "ReplayOptions", "replay", "predict_with_threshold", "method_name"]

_CHUNK = 20_000  # patients per kernel call, for progress reports
_POINTS_CHUNK = 5_000  # patients per step of the points' passes: their (rows, K) temporaries sit beside the sorted keys
_SELECT_CHUNK = 5_000  # patients per step of choosing the sets: their (rows, K) tables sit beside the result tables
_RANK_BATCH = 1 << 16  # sorted queries bisected at once while ranking the points (their temporaries sit beside the keys)
_FORMULA_CHUNK = 100  # patients per candidate batch when a formula value makes them slow
_SHARED_GROUPS = 32  # up to this many groups in a grouping share the stream's key slots (_Engine._layout)
_NO_OWNER = np.zeros(0, dtype=np.int8)


def method_name(universe: str, score: str = "cost") -> str:
    """Display name of a FavMac run: "FavMac (ratio)" (cost score), "FavMac (price)" (ratio
    universe, price score), "FavMac (value, price)" (another universe, price score).

    >>> method_name("prob"), method_name("ratio", "price"), method_name("value", "price")
    ('FavMac (prob)', 'FavMac (price)', 'FavMac (value, price)')
    """
    if score == "cost":
        return f"FavMac ({universe})"
    return f"FavMac ({score})" if universe == "ratio" else f"FavMac ({universe}, {score})"


@dataclass(frozen=True)
class ReplayOptions:
    """How a replay runs, apart from the data: the settings keywords of :func:`replay`, grouped.

    ``replay(p, y, value, cost, targets, options=ReplayOptions(delta=0.1, window=500))`` is
    ``replay(p, y, value, cost, targets, delta=0.1, window=500)``. ``score=None`` is
    :func:`favmac.universe.default_score` of the universe and control.

    >>> ReplayOptions(burn_in=10, label_delay=3).control
    'expected'
    """

    delta: float | None = None
    universe: str = "ratio"
    burn_in: int = 0
    window: int | None = None
    c_max: float | None = None
    score: str | None = None
    adaptive_rate: float | None = None
    label_delay: int | None = None

    @property
    def control(self) -> str:
        return "expected" if self.delta is None else "violation"

    def resolved_score(self, targets=None, cost_weights=None) -> str:
        """The score the run uses (``score``, or the default for the universe, control, ``targets`` and
        the cost's per-code ``cost_weights``: :func:`favmac.universe.default_score`)."""
        return default_score(self.universe, self.delta, targets, cost_weights) if self.score is None else self.score


_DEFAULTS = ReplayOptions()


def replay(
    probs,
    labels,
    value,
    cost,
    targets,
    *,
    delta=None,
    universe: str = "ratio",
    burn_in: int = 0,
    window=None,
    c_max=None,
    codes=None,
    patient_ids=None,
    method: str | None = None,
    progress=None,
    groups=None,
    adaptive_rate=None,
    score: str | None = None,
    label_delay=None,
    label_available_at=None,
    options: ReplayOptions | None = None,
    recalibrate=None,
    recalibration: str = DEFAULT_RECALIBRATION,
    recalibrate_by: str = "code",
    candidates: Candidates | None = None,
    work: "PatientWork | None" = None,
) -> ReplayResult:
    """Replay an online FavMac session over a labelled stream for several targets.

    Parameters
    ----------
    probs : ndarray (N, K)
        Base-classifier probabilities, in stream order.
    labels : ndarray (N, K) of 0/1
    value, cost : value and cost functions
    targets : float or sequence of float
        Target costs c (cost units).
    delta : float or None
        None for expected-cost control, else the violation level.
    universe : {"ratio", "prob", "value", "full"}
    burn_in : int
        Patients used for calibration only (no prediction recorded); labelled from the start.
    window : int, optional
        Rolling window: the last ``window`` calibration patients whose labels have arrived
        (per group with ``groups``).
    c_max : float, optional
        Largest cost (default: sum of cost weights).
    codes, patient_ids : optional labels carried into the result.
    method : str, optional
        Display name (default :func:`method_name`, e.g. "FavMac (ratio)").
    progress : callable(float), optional
        Called with the fraction done (0..1) as the replay advances.
    groups : array (N,), list of arrays, 2-D array (N, G), DataFrame or dict, optional
        Segments (:mod:`favmac.segments`). A 1-D array is one grouping (one label per
        patient): patient n is calibrated on the earlier patients of its own group only; the
        burn-in of a group is its patients among the first ``burn_in``. Several groupings
        (:func:`favmac.segments.check_groupings`: a list of 1-D arrays, a 2-D array or
        DataFrame with one column per grouping, or a dict name -> labels): each patient's
        threshold is the smallest of its groups' thresholds, so every group of every grouping
        keeps its guarantee. The result carries ``groupings`` (one
        :class:`~favmac.segments.GroupingResult` per grouping) and, for the first grouping,
        ``groups``, ``group_thresholds`` and ``group_sizes``.
    adaptive_rate : float, optional
        gamma > 0 for the adaptive target c_n under drift (:mod:`favmac.adaptive`; expected
        control, one grouping at most). The result carries ``adaptive_targets`` (T, S). With
        labels that arrive later, c moves when a patient's labels arrive:
        c += gamma (c - C_i), C_i the realized cost of the set chosen for patient i when it
        was predicted (at the target then in force); without a delay this is
        c_{n+1} = c_n + gamma (c - C_n).
    score : {"cost", "price"} or None
        What the threshold is on: Chat (the paper's) or the price score
        (:meth:`favmac.universe.Candidates.scores`; nested universes only). None:
        :func:`favmac.universe.default_score`.
    label_delay : int, optional
        Labels arrive ``label_delay`` stream positions after the prediction: patient n is
        calibrated on positions < n - d (burn-in patients are labelled from the start).
        0 <= d < N. See :mod:`favmac.arrivals`.
    label_available_at : array (N,) of int, optional
        Per-patient arrival: patient i's labels arrive right after the prediction at
        position ``label_available_at[i]`` (>= i; >= N: never within the stream), so patient
        n is calibrated on {i : label_available_at[i] < n}. Not with ``label_delay``.
    options : ReplayOptions, optional
        The settings keywords above (delta ... label_delay) as one object; then leave those
        keywords at their defaults.
    recalibrate : int, optional
        R >= 50: the first R rows are a recalibration fold (:mod:`favmac.recalibration`):
        per-code maps fitted on them replace p for the rest; the fold gets no prediction and
        never joins calibration, ``burn_in`` counts patients after it, and the result's
        ``burn_in`` is R + burn_in. ``settings`` carry ``recalibration_maps``. Any number of
        groupings, and ``label_delay`` rather than ``label_available_at``.
    recalibration : {"platt_tested", "platt", "isotonic"}
        The map (default "platt_tested", :data:`favmac.recalibration.DEFAULT_RECALIBRATION`).
    recalibrate_by : {"code", "segment"}
        "segment" (with ``groups``, one grouping): one map per code and segment, the pooled
        map where a segment's fold is too small (:class:`favmac.recalibration.SegmentRecalibration`).
    candidates : Candidates, optional
        :func:`favmac.universe.candidate_sets` of these ``probs``, ``value``, ``cost`` and
        ``universe``, built once and shared by runs that differ only in what does not change
        the candidates (the score, the targets, the control): the result is the same as
        without. Not with ``recalibrate`` (the fold changes the probabilities).
    work : PatientWork, optional
        The per-patient work of exactly these patients in this order (``PatientWork.of(...)``
        on the data in some order, then ``.take(order)``), built with the same value, cost,
        targets, control, universe, score and ``c_max``: the candidate sets are then not
        rebuilt (many orderings of one data set: :func:`favmac.validity.validity_check`).
        Not with ``recalibrate`` (the fold, and so every patient's p, changes with the order).

    Returns
    -------
    ReplayResult
        thresholds (T, S), selected (T, S, K), cost (T, S), value (T, S) with
        S = N - burn_in, final_thresholds (T,) calibrated on all N patients, and per step
        ``labels_pending`` and ``calibration_sizes`` (S,).

    Examples
    --------
    >>> import numpy as np
    >>> from favmac import AdditiveValue, AdditiveCost
    >>> rng = np.random.RandomState(0)
    >>> y = rng.rand(200, 5) < 0.3
    >>> p = np.clip(0.6 * y + 0.4 * rng.rand(200, 5), 0, 1)
    >>> res = replay(p, y, AdditiveValue(), AdditiveCost(), [0.5, 1.0], burn_in=50)
    >>> res.cost.shape, bool(res.cost.mean(axis=1)[0] <= 0.5)
    ((2, 150), True)
    >>> seg = replay(p, y, AdditiveValue(), AdditiveCost(), [1.0], burn_in=50, groups=np.arange(200) % 2)
    >>> sorted(seg.group_sizes.items())
    [('0', 100), ('1', 100)]
    >>> two = replay(p, y, AdditiveValue(), AdditiveCost(), [1.0], burn_in=50, label_delay=20,
    ...              groups={"parity": np.arange(200) % 2, "half": np.arange(200) >= 100})
    >>> [g.name for g in two.groupings], int(two.labels_pending[-1]), int(two.calibration_sizes[-1])
    (['parity', 'half'], 20, 179)
    """
    given = dict(delta=delta, universe=universe, burn_in=burn_in, window=window, c_max=c_max,
                 score=score, adaptive_rate=adaptive_rate, label_delay=label_delay)
    if options is None:
        options = ReplayOptions(**given)
    else:
        changed = [name for name, val in given.items() if val is not getattr(_DEFAULTS, name)
                   and val != getattr(_DEFAULTS, name)]
        if changed:
            raise ValueError(f"options: give the settings either as options=ReplayOptions(...) or as keywords, not both "
                             f"(also given: {', '.join(changed)})")
    if candidates is not None and work is not None:
        raise ValueError("candidates and work: give one of them (work carries its own candidate sets)")
    if recalibrate is not None:  # SPEC "Recalibration on a split": fit on the fold, replay the rest
        if candidates is not None:
            raise ValueError("candidates: not with recalibrate (the fold changes the probabilities the candidates "
                             "are built from); leave candidates unset")
        if work is not None:
            raise ValueError("work: not with recalibrate (the fold's maps change every patient's probabilities); "
                             "leave work unset")
        return _after_fold(probs, labels, value, cost, targets, options, groups, label_available_at, codes,
                           patient_ids, progress, method, recalibrate, recalibration, recalibrate_by)
    session = _Session.prepare(probs, labels, value, cost, targets, options, groups, label_available_at, codes,
                               patient_ids, progress)
    if candidates is not None:
        session.candidates = _shared_candidates(candidates, session)
    return session.run(method, work)


def _after_fold(probs, labels, value, cost, targets, options, groups, label_available_at, codes, patient_ids,
                progress, method, recalibrate, recalibration, recalibrate_by="code"):
    """``replay`` with a recalibration fold (:func:`favmac.recalibration.replay_after_fold`)."""
    from .recalibration import replay_after_fold

    if label_available_at is not None:
        raise ValueError("label_available_at: not with recalibrate (its positions count the fold's rows); give "
                         "label_delay instead, or leave recalibrate unset")
    probs, labels, targets, delta, burn_in, window, codes, patient_ids = check_stream(
        probs, labels, targets, options.delta, options.burn_in, options.window, codes, patient_ids)
    settings = {name: getattr(options, name) for name in ("universe", "c_max", "score", "adaptive_rate", "label_delay")}
    value = bind_rows(value, slice(recalibrate, None))  # the replay after the fold sees the rows after it
    cost = bind_rows(cost, slice(recalibrate, None))
    return replay_after_fold(replay, probs, labels, value, cost, targets, recalibrate=recalibrate,
                             recalibration=recalibration, recalibrate_by=recalibrate_by, burn_in=burn_in, window=window, groups=groups,
                             patient_ids=patient_ids, codes=codes, delta=delta, method=method, progress=progress,
                             **settings)


@dataclass
class _Thresholds:
    """The thresholds of one partition of the stream (one grouping, or the pooled stream)."""

    steps: np.ndarray  # (T, S): the threshold of each predicted patient's group
    final: np.ndarray  # (T, G): each group's threshold after the whole stream
    step_targets: np.ndarray | None = None  # (T, S) adaptive c_n
    final_targets: np.ndarray | None = None  # (T, G)


@dataclass
class _Session:
    """One replay's validated inputs, and its steps (``run``)."""

    probs: np.ndarray
    labels: np.ndarray
    value: object
    cost: object
    targets: np.ndarray
    options: ReplayOptions
    score: str
    rate: float | None
    groupings: list  # [(name, labels (N,) object)]
    schedule: ArrivalSchedule
    codes: list | None
    patient_ids: np.ndarray | None
    report: object
    candidates: Candidates | None = None  # given by the caller (``replay(candidates=...)``), else built in ``run``

    @classmethod
    def prepare(cls, probs, labels, value, cost, targets, options, groups, label_available_at, codes, patient_ids,
                progress) -> "_Session":
        probs, labels, targets, delta, burn_in, window, codes, patient_ids = check_stream(
            probs, labels, targets, options.delta, options.burn_in, options.window, codes, patient_ids)
        n_patients, n_codes = probs.shape
        check_universe(options.universe, n_codes)
        options = dataclasses.replace(options, delta=delta, burn_in=burn_in, window=window,
                                      label_delay=None if options.label_delay is None
                                      else check_label_delay(options.label_delay, n_patients))
        score = check_score(options.resolved_score(targets, false_flag_weights(cost, n_codes)), options.universe)
        rate = check_adaptive_rate(options.adaptive_rate, delta)
        groupings = check_groupings(groups, n_patients)
        if rate is not None and len(groupings) > 1:
            raise ValueError(f"adaptive_rate: the adaptive target is for one grouping at most; got {len(groupings)} "
                             f"groupings ({', '.join(name for name, _ in groupings)}). Leave adaptive_rate unset, or "
                             "give one grouping.")
        schedule = ArrivalSchedule.of(n_patients, burn_in, options.label_delay, label_available_at)
        report = progress if progress is not None else (lambda fraction: None)
        return cls(probs, labels, value, cost, targets, options, score, rate, groupings, schedule, codes,
                   patient_ids, report)

    # ------------------------------------------------------------------ the steps
    def rows(self, lean: bool = True):
        """The per-patient step: (candidate sets (the caller's, or built), their exact realized costs, ExactCosts or SetCosts).

        ``lean``: under expected-cost control with per-code cost weights the realized costs
        are :class:`_RealizedRows` (each chunk's computed when read: no (N, M) table is kept);
        otherwise, and with ``lean=False``, one (N, M) table."""
        cands = self.candidates
        if cands is None:
            cands = _candidates(self.probs, self.value, self.cost, self.options.universe, self.report)
        costs = exact_costs(self.cost, self.probs.shape[1], self.options.c_max)
        if lean and _RealizedRows.fits(costs) and self.options.delta is None and self.rate is None:
            return cands, _RealizedRows(cands, self.labels, costs, self.cost), costs
        return cands, _realized(cands, self.labels, costs, self.cost), costs

    def work_settings(self) -> tuple:
        """What :class:`PatientWork` depends on besides the patients' rows."""
        opts = self.options
        return opts.universe, self.score, opts.c_max, opts.delta, tuple(self.targets.tolist())

    def run(self, method, work=None) -> ReplayResult:
        opts, report = self.options, self.report
        report(0.0)
        if work is None:
            cands, realized, costs = self.rows()
        else:
            work.check(self)
            cands, realized, costs = work.cands, work.realized, work.costs
        report(0.25)
        # without groupings or given work, the one expected pass is the calibration points' last use
        engine = _Engine(self, cands, realized, costs, keyless=work is None and not self.groupings)
        if work is not None:  # the points or scores of these patients, already in this order
            engine._points, engine._scores = work.points, work.scores
            for bracket, points in zip(engine._bracket_engines() if work.brackets else (), work.brackets or ()):
                bracket._points = points  # weights with many decimals: the bracket engines' too
            del work
        n_parts = max(len(self.groupings), 1)
        per_grouping = []
        for i, (name, labels) in enumerate(self.groupings):
            names, index = group_index(labels)
            part = engine.thresholds(index, len(names), opts.burn_in, self.rate,
                                     lambda f, i=i: report(0.25 + 0.6 * (i + f) / n_parts))
            per_grouping.append((name, labels, names, index, part))
        n_patients = self.probs.shape[0]
        if per_grouping:
            thresholds = np.minimum.reduce([part.steps for *_, part in per_grouping])
            step_targets = per_grouping[0][-1].step_targets
            final, final_targets = engine.pooled_final(), None
        else:
            part = engine.thresholds(np.zeros(n_patients, dtype=np.int64), 1, opts.burn_in, self.rate,
                                     lambda f: report(0.25 + 0.6 * f))
            thresholds, final, step_targets = part.steps, part.final[:, 0], part.step_targets
            final_targets = None if part.final_targets is None else part.final_targets[:, 0]
        del engine  # its calibration points are not needed for the selection (peak memory)
        report(0.85)
        chosen, realized_cost, realized_value, exceeds = self.select(cands, realized, costs, thresholds)
        report(1.0)
        return self.result(method, costs, thresholds, step_targets, final, final_targets, per_grouping, chosen,
                           realized_cost, realized_value, exceeds)

    def select(self, cands, realized, costs, thresholds):
        """The chosen set of every (target, step), in chunks of patients: kept as a small integer
        (ChosenSets; the (T, S, K) booleans are built only if asked for), with its realized cost,
        value and exact "cost > target" flag."""
        burn_in, n_patients = self.options.burn_in, self.probs.shape[0]
        n_targets, steps = thresholds.shape
        n_candidates = cands.n_candidates
        chosen_index = np.zeros((n_targets, steps), dtype=smallest_int(n_candidates - 1))
        realized_cost = np.zeros((n_targets, steps))
        realized_value = np.zeros((n_targets, steps))
        exceeds = np.zeros((n_targets, steps), dtype=bool)
        bounds = [costs.bound(target) for target in self.targets]
        compiled = _compiled_choice(cands, realized, bounds, self.cost, self.value)
        if compiled is not None:
            from .replay_kernels import choose_prefixes

        def choose(start, stop):  # these patients' columns of every table (threads: only its own)
            part = cands.subset(slice(start, stop))
            steps_here = slice(start - burn_in, stop - burn_in)
            rows = np.arange(stop - start)
            part_labels = self.labels[start:stop]
            cost_table = (part.totals(self.cost.contributions(part_labels)) if self.cost.is_additive
                          else realized[start:stop] / costs.scale)
            value_table = part.totals(self.value.contributions(part_labels)) if self.value.is_additive else None
            exact_cost = realized[start:stop]
            if compiled is not None:  # every target's choice, cost, value and flag in one compiled pass (no (rows, M) temporaries)
                choose_prefixes(part.scores(self.score), part.best_prefix(), thresholds[:, steps_here], cost_table,
                                value_table, exact_cost, compiled, chosen_index[:, steps_here],
                                realized_cost[:, steps_here], realized_value[:, steps_here], exceeds[:, steps_here])
                return
            # a value with a compiled pass over nested sets (the CMS payment) scores every target's sets at once
            along = None if value_table is not None or not part.nested else getattr(self.value, "prefixes", None)
            for t in range(n_targets):
                index = part.choose(thresholds[t, steps_here], self.score)
                chosen_index[t, steps_here] = index
                realized_cost[t, steps_here] = cost_table[rows, index]
                exceeds[t, steps_here] = exact_cost[rows, index] > bounds[t]
                if along is None:
                    realized_value[t, steps_here] = (value_table[rows, index] if value_table is not None
                                                     else bind_rows(self.value, slice(start, stop))(part.masks(index), part_labels))
            if along is not None:
                realized_value[:, steps_here] = bind_rows(self.value, slice(start, stop)).prefixes(
                    part.order, chosen_index[:, steps_here], part_labels)

        def choose_chunk(chunk):
            for start, stop in _chunks(*chunk, _SELECT_CHUNK):
                choose(start, stop)

        # additive values and costs on the threads; the others (formulas, the CMS payment, set costs:
        # functions of the rows that may keep state) in this thread
        additive = compiled is not None or (self.cost.is_additive and self.value.is_additive)
        map_chunks(choose_chunk, _chunks(burn_in, n_patients), threads=None if additive else 1)
        tail = slice(burn_in, n_patients)
        chosen = ChosenSets(chosen_index, order=None if cands.order is None else cands.order[tail], subsets=cands.subsets)
        return chosen, realized_cost, realized_value, exceeds

    def result(self, method, costs, thresholds, step_targets, final, final_targets, per_grouping, chosen,
               realized_cost, realized_value, exceeds) -> ReplayResult:
        opts = self.options
        tail = slice(opts.burn_in, self.probs.shape[0])
        settings = {"universe": opts.universe, "score": self.score, "window": opts.window, "c_max": float(costs.c_max),
                    "control": opts.control}
        if self.rate is not None:
            settings["adaptive_rate"] = self.rate
        if per_grouping:
            settings["segments"] = True
            settings["groupings"] = [name for name, *_ in per_grouping]
        if opts.label_delay:
            settings["label_delay"] = opts.label_delay
        elif self.schedule.delayed:
            settings["label_arrivals"] = True
        groupings = []
        for name, labels, names, index, part in per_grouping:
            sizes = dict(zip(names, np.bincount(index, minlength=len(names)).tolist()))
            groupings.append(GroupingResult(
                name=name, groups=labels[tail], thresholds=part.steps,
                final_thresholds={label: part.final[:, g] for g, label in enumerate(names)},
                sizes=sizes,
                final_targets=None if part.final_targets is None else
                {label: part.final_targets[:, g] for g, label in enumerate(names)}))
        first = groupings[0] if groupings else None
        return ReplayResult(
            method=method or method_name(opts.universe, self.score),
            targets=self.targets,
            delta=opts.delta,
            burn_in=opts.burn_in,
            thresholds=thresholds,
            selected=None,
            cost=realized_cost,
            value=realized_value,
            codes=self.codes,
            patient_ids=None if self.patient_ids is None else np.asarray(self.patient_ids)[tail],
            settings=settings,
            final_thresholds=final,
            exceeds=exceeds,
            groups=None if first is None else first.groups,
            group_thresholds=None if first is None else first.final_thresholds,
            group_sizes=None if first is None else first.sizes,
            adaptive_targets=step_targets,
            final_adaptive_targets=final_targets if first is None else first.final_targets,
            chosen=chosen,
            groupings=groupings or None,
            labels_pending=self.schedule.pending(opts.burn_in),
            calibration_sizes=self.schedule.calibration_sizes(opts.burn_in, opts.window),
        )


@dataclass(frozen=True)
class PatientWork:
    """What a replay computes for each patient from its own row alone, for patients in one order.

    A patient's candidate sets and proxies (from its probabilities, and its cell and known
    codes with the payment value), their exact realized costs (its labels), its calibration
    points (expected control: keys and weights) or its violation scores (violation control)
    do not depend on where the patient stands in the stream. So one computation serves every
    reordering of the same patients: ``work.take(order)`` equals ``PatientWork.of`` on the
    patients in ``order`` (exactly: every row is computed on its own, and the points' sorted
    keys are the same multiset), and ``replay(p[order], y[order], ..., work=work.take(order))``
    skips rebuilding it. Burn-in, window, groups and label arrivals do not enter it; a
    recalibration fold does (its maps change every p), so ``replay`` refuses ``work`` with
    ``recalibrate``.

    >>> from favmac import AdditiveValue, AdditiveCost
    >>> rng = np.random.RandomState(0)
    >>> p = rng.rand(60, 4).round(3); y = rng.rand(60, 4) < p; order = rng.permutation(60)
    >>> work = PatientWork.of(p, y, AdditiveValue(), AdditiveCost(), [1.0])
    >>> a = replay(p[order], y[order], AdditiveValue(), AdditiveCost(), [1.0], burn_in=20, work=work.take(order))
    >>> b = replay(p[order], y[order], AdditiveValue(), AdditiveCost(), [1.0], burn_in=20)
    >>> bool(np.array_equal(a.thresholds, b.thresholds) and np.array_equal(a.cost, b.cost))
    True
    """

    settings: tuple  # (universe, score, c_max, delta, targets) it was built for
    cands: Candidates
    realized: np.ndarray  # (N, M) exact realized cost of every candidate (a table, never _RealizedRows)
    costs: object  # ExactCosts or SetCosts (favmac.costs.exact_costs)
    points: tuple | None  # expected control: (ptr, ranks, weights, sorted_keys); None if int64 overflows
    scores: list | None  # violation control: (N,) violation scores per target
    brackets: tuple | None = None  # points None, weights with many decimals: the bracket engines' points (low, high)

    @classmethod
    def of(cls, probs, labels, value, cost, targets, *, delta=None, universe: str = "ratio", score: str | None = None,
           c_max=None) -> "PatientWork":
        """The work of every patient of the stream (arguments as :func:`replay`)."""
        options = ReplayOptions(delta=delta, universe=universe, score=score, c_max=c_max)
        session = _Session.prepare(probs, labels, value, cost, targets, options, None, None, None, None, None)
        cands, realized, costs = session.rows(lean=False)  # kept for every ordering: one table
        cands.scores(session.score)  # these per-patient tables are computed once here; subsets carry them
        if cands.nested:
            cands.best_prefix(), cands.code_ranks()
        engine = _Engine(session, cands, realized, costs)
        points, scores = (engine.points(), None) if delta is None else (None, engine.scores())
        engines = engine._bracket_engines() if delta is None and points is None else None
        brackets = None if engines is None else tuple(e.points() for e in engines)  # _Engine._bracketed's
        return cls(session.work_settings(), cands, realized, costs, points, scores, brackets)

    @property
    def n_patients(self) -> int:
        return self.cands.n_patients

    def take(self, order) -> "PatientWork":
        """The work of the patients ``order`` (an index array), in that order. O(N K)."""
        order = np.asarray(order, dtype=np.int64)

        def taken(points):
            if points is None:
                return None
            ptr, ranks, weights, sorted_keys = points  # each patient's run of points moves with it; keys and ranks stay
            counts = np.diff(ptr)[order]
            new_ptr = np.zeros(len(order) + 1, dtype=np.int64)
            np.cumsum(counts, out=new_ptr[1:])
            index = np.repeat(ptr[:-1][order] - new_ptr[:-1], counts) + np.arange(new_ptr[-1], dtype=np.int64)
            return new_ptr, ranks[index], weights[index], sorted_keys

        scores = None if self.scores is None else [scores[order] for scores in self.scores]
        brackets = None if self.brackets is None else tuple(taken(points) for points in self.brackets)
        return PatientWork(self.settings, self.cands.subset(order), self.realized[order], self.costs, taken(self.points),
                           scores, brackets)

    def check(self, session) -> None:
        """Refuse work built for other patients or other settings than the session's."""
        if self.n_patients != session.probs.shape[0]:
            raise ValueError(f"work: built for {self.n_patients} patients, the stream has {session.probs.shape[0]}; "
                             "build it with PatientWork.of on these patients")
        if self.settings != session.work_settings():
            raise ValueError(f"work: built for (universe, score, c_max, delta, targets) = {self.settings}, the replay "
                             f"asks for {session.work_settings()}; build it with the replay's settings")


class _Engine:
    """Thresholds of one partition of the stream (``thresholds``), sharing the calibration
    points of the whole stream between partitions; the exact FavMac loop when int64 would overflow."""

    def __init__(self, session: _Session, cands, realized, costs, keyless: bool = False):
        self.session, self.cands, self.realized, self.costs = session, cands, realized, costs
        # keyless: the one pooled expected pass is the points' last use, so it drops the sorted
        # keys before the walk and looks up only the answers' keys afterwards (_expected)
        self.keyless = keyless
        self._points = self._scores = self._leaf = None
        self._leaf_full = False
        self._by_rank, self._ranked, self._unique = {}, {}, {}
        self._brackets = None

    def thresholds(self, group, n_groups, burn_in, rate, report) -> _Thresholds:
        """Thresholds with ``group`` (N,) int64 in [0, n_groups): each patient calibrated on its group."""
        s = self.session
        window = 0 if s.options.window is None else int(s.options.window)
        evict = s.schedule.evictions(group, window)
        if s.options.delta is not None:
            out = self._violation(group, n_groups, burn_in, window, evict, report)
        elif rate is not None:
            out = self._adaptive(group, n_groups, burn_in, window, evict, rate)
        else:
            out = self._expected(group, n_groups, burn_in, window, evict, report)
            if out is None:  # weights with many decimals: bracket the exact answer at a coarser scale
                out = self._bracketed(group, n_groups, burn_in, window, evict, report)
        if out is None:
            warnings.warn("costs too large for exact int64 arithmetic; replaying with the (slower) exact FavMac loop")
            out = self._loop(group, n_groups, burn_in, rate)
        return out

    def pooled_final(self) -> np.ndarray:
        """(T,) thresholds calibrated on the whole stream (the last ``window`` arrived), at the base
        targets: the final query of a one-group pass, computed directly from the points (no walk)."""
        s = self.session
        schedule, window, n_patients = s.schedule, s.options.window, self.cands.n_patients
        patients = schedule.order[-window:] if window else schedule.order
        m = len(patients)
        if s.options.delta is not None:
            out = np.empty(len(s.targets))
            for t, scores in enumerate(self.scores()):
                k = violation_rank(s.options.delta, m)
                edge = rank_edge(k, m)
                out[t] = edge if not math.isnan(edge) else np.partition(scores[patients], m - k)[m - k]
            return out
        points = self.points()
        if points is None:
            engines = self._bracket_engines()  # brackets of the exact thresholds (_bracketed)
            if engines is None:
                return self._loop(np.zeros(n_patients, dtype=np.int64), 1, n_patients, None).final[:, 0]
            down, up = np.asarray(engines[0].pooled_final()), np.asarray(engines[1].pooled_final())
            differ = np.flatnonzero(down != up)
            if len(differ):
                pooled = np.zeros(n_patients, dtype=np.int64)
                cells = [(t, 0, len(schedule.order), up[t], down[t]) for t in differ]  # every patient, as above
                exact = self._near_ties(engines[0].costs, pooled, window or 0, cells)
                if exact is None:
                    exact = self._loop(pooled, 1, n_patients, None, only=differ.tolist()).final[differ, 0]
                down[differ] = exact
            return down
        from .replay_kernels import weight_totals

        ptr, ranks, weights, keys = points
        if self._leaf_full and not window:  # an expected pass left every point's weight in its key's slots
            leaf, self._leaf, self._leaf_full = self._leaf, None, False
            cumulative = np.cumsum(leaf, out=leaf) if leaf.dtype == np.int64 else np.cumsum(leaf, dtype=np.int64)
            del leaf
        else:
            cumulative = np.cumsum(weight_totals(ptr, ranks, weights, np.sort(patients), len(keys)))
        bounds = expected_bounds(s.targets, self.costs, m, first=m)[:, 0]
        found = np.searchsorted(cumulative, bounds, side="right")  # first key whose F exceeds the bound
        return np.where(bounds < 0, -np.inf, np.where(found >= len(keys), np.inf, keys[np.minimum(found, len(keys) - 1)]
                                                      if len(keys) else np.inf))

    def scores(self) -> list:
        """Violation scores T_i of every patient, one (N,) array per target (computed once)."""
        if self._scores is None:
            s = self.session
            self._scores = [violation_scores(self.cands, self.realized, self.costs.bound(target), s.score)
                            for target in s.targets]
        return self._scores

    def ranked_scores(self, t: int):
        """(scores of target t sorted, each patient's slot in them): ties take consecutive slots in
        stream order; kept for the next grouping when there are several."""
        if t in self._ranked:
            return self._ranked[t]
        scores = self.scores()[t]
        order = np.argsort(scores, kind="stable")
        slots = np.empty(len(scores), dtype=np.int64)
        slots[order] = np.arange(len(scores))
        out = (scores[order], slots)
        if len(self.session.groupings) > 1:
            self._ranked[t] = out
        return out

    # ------------------------------------------------------------------ shared arrays
    def points(self):
        """(ptr, ranks, weights, sorted_keys) of the whole stream's calibration points (expected
        control), or None when int64 would overflow. Gathered in chunks of patients (count, keys,
        then ranks and weights); keys are ranked by bisecting the sorted keys; ranks are int32 and
        weights keep the realized costs' int32 when they fit: no (N, M) temporaries."""
        if self._points is None:
            self._points = _expected_points(self.cands, self.realized, self.costs, self.session.score)
        return self._points

    def points_by_rank(self, ptr, ranks, n_ranks, key):
        """:func:`~favmac.replay_kernels.rank_order` of some points (``key`` names them), kept for
        the next grouping."""
        from .replay_kernels import rank_order

        if key not in self._by_rank:  # every rank is the first of its key's slots (equal keys share it)
            self._by_rank[key] = rank_order(ptr, ranks, n_ranks, True)
        return self._by_rank[key]

    def _unique_slots(self, ranks, keys, key):
        """The points' ranks with equal keys spread over their keys' slots (one point per slot);
        the ranks themselves when all keys differ. Kept for the next grouping."""
        from .replay_kernels import unique_slots

        if key not in self._unique:
            self._unique[key] = unique_slots(ranks, keys)
        return self._unique[key]

    def _layout(self, ptr, ranks, keys, group, n_groups, key, n_keys=None) -> tuple:
        """Where a grouping's groups keep their points in the blocked trees (:mod:`favmac.replay_kernels`):
        ``(slots, keys, lstart, lsize, bstart, owner)``. One group: the given ranks and keys.
        Up to ``_SHARED_GROUPS`` groups: every group on the whole stream's slots (one per point),
        ``owner`` naming each slot's group. More groups: each its own sorted keys
        (:func:`~favmac.replay_kernels.group_slots`). ``n_keys``: the slots, when ``keys`` is
        empty (one group, a keyless walk)."""
        from .replay_kernels import block_count, group_slots, slot_owner

        n_keys = len(keys) if n_keys is None else n_keys
        if n_groups == 1:
            return (ranks, keys, np.zeros(1, dtype=np.int64), np.array([n_keys], dtype=np.int64),
                    np.array([0, block_count(n_keys)], dtype=np.int64), _NO_OWNER)
        if n_groups <= _SHARED_GROUPS:
            slots = self._unique_slots(ranks, keys, key) if key == "points" else ranks  # the scores' are unique
            owner = np.empty(n_keys, dtype=np.int8 if n_groups <= 127 else np.int16)
            slot_owner(ptr, slots, group, owner)
            return (slots, keys, np.zeros(n_groups, dtype=np.int64), np.full(n_groups, n_keys, dtype=np.int64),
                    np.arange(n_groups + 1, dtype=np.int64) * block_count(n_keys), owner)
        local, grouped_keys, key_start = group_slots(ptr, group, *self.points_by_rank(ptr, ranks, n_keys, key), keys,
                                                     n_groups)
        sizes = np.diff(key_start)
        blocks = np.array([block_count(size) for size in sizes], dtype=np.int64)
        return (local, grouped_keys, key_start[:-1].copy(), sizes, np.concatenate([[0], np.cumsum(blocks)]),
                _NO_OWNER)

    def _trees(self, layout, largest: int):
        """Empty (leaf, btree) arrays of a layout; the leaves reuse the last pass's (``_done``)
        when they fit: a fresh array of that size costs its page faults again. ``largest``
        bounds what one leaf can hold (:meth:`_leaf_bound`): the leaves take the smallest
        integer dtype for it; the block trees (sums of many leaves) stay int64."""
        _, keys, lstart, lsize, bstart, owner = layout
        n_slots = int(np.max(lstart + lsize)) if len(lstart) else 0  # the keys may be left out (a keyless walk)
        dtype = smallest_int(largest)
        leaf, self._leaf, self._leaf_full = self._leaf, None, False
        if leaf is not None and len(leaf) == n_slots and leaf.dtype == dtype:
            leaf.fill(0)
        else:
            leaf = None  # the old leaves go before the new ones are allocated
            leaf = np.zeros(n_slots, dtype=dtype)
        return leaf, np.zeros(int(bstart[-1]), dtype=np.int64)

    @staticmethod
    def _leaf_bound(layout, ranks, weights) -> int:
        """The most one leaf of ``layout`` can hold: the largest weight times the most points
        that share a slot (with the given ``ranks`` as slots, every point of a key is in its
        key's first slot: the longest run of equal keys; the other layouts give each point a
        slot of its own). Every leaf is a sum of some of its slot's points' weights, all >= 0."""
        if len(weights) == 0:
            return 0
        sharing = longest_run(layout[1]) if layout[0] is ranks else 1
        return int(weights.max()) * int(sharing)

    def _done(self, leaf, full=False):
        """Keep a pass's leaves for the next pass; ``full``: they hold every calibration point's
        weight in its slot of the whole stream's sorted keys (for :meth:`pooled_final`)."""
        self._leaf, self._leaf_full = leaf, full

    def _schedule_args(self, group):
        schedule = self.session.schedule
        return group, schedule.order, schedule.ptr

    def _expected(self, group, n_groups, burn_in, window, evict, report):
        s = self.session
        keyless = self.keyless and n_groups == 1 and self._points is None
        if keyless:  # the walk records the answers' slots; their keys are looked up after it (_slot_keys)
            # the points ranked without the sorted keys or their weights, which are filled once the keys are gone
            ranked = _merged_points(self.cands, self.realized, self.costs, s.score)
            if ranked is None:
                return None
            ptr, ranks, heaviest, n_keys, sharing = ranked
            # _leaf_bound of these ranks (every point in its key's first slot): the heaviest weight
            # times the longest run of equal keys
            largest = heaviest * sharing
            del ranked
            weights = _point_weights(self.cands, self.realized, s.score, ptr, heaviest)
        else:
            points = self.points()
            if points is None:
                return None
            ptr, ranks, weights, sorted_keys = points
            n_keys = len(sorted_keys)
        from .replay_kernels import expected_thresholds

        n_patients = len(group)
        if keyless:
            layout = self._layout(ptr, ranks, np.empty(0), group, n_groups, "points", n_keys)
        else:
            layout = self._layout(ptr, ranks, sorted_keys, group, n_groups, "points")
            largest = self._leaf_bound(layout, ranks, weights)
        leaf, btree = self._trees(layout, largest)
        counts = np.zeros(n_groups, dtype=np.int64)
        out = np.empty((len(s.targets), n_patients - burn_in))
        final = np.empty((len(s.targets), n_groups))
        arrived = s.schedule.ptr  # labels arrived before position n: arrived[n]
        chunks = _chunks(0, n_patients + 1)
        if keyless and inner_threads() > 1 and n_keys and len(chunks) > 1:  # the first chunk on one tree, then ranges
            chunks, ranges = chunks[:1], chunks[1:]
        else:
            ranges = None
        for start, stop in chunks:
            # the bounds of the calibration sizes this chunk can meet only: from the smallest
            # group's now to every label that arrives in the chunk (not a (T, N + 1) table)
            low = min(calibration_count(int(count), window) for count in counts)
            high = calibration_count(int(arrived[min(stop, n_patients)]), window)
            bounds = expected_bounds(s.targets, self.costs, high, first=low)
            expected_thresholds(ptr, layout[0], weights, *layout[1:], *self._schedule_args(group), evict, bounds, low,
                                burn_in, window, start, stop, leaf, btree, counts, out, final)
            report(stop / (n_patients + 1))
        if ranges:
            self._walk_in_ranges(ptr, ranks, weights, n_keys, leaf, int(counts[0]), group, burn_in, window, evict, ranges,
                                 out, final, report)
        if keyless:
            del leaf, btree, layout, weights
            self._slot_keys(ptr, ranks, n_keys, out, final)
            return _Thresholds(out, final)
        self._done(leaf, full=not window and layout[1] is sorted_keys)  # no window, the stream's own keys
        return _Thresholds(out, final)

    def _walk_in_ranges(self, ptr, slots, weights, n_keys, leaf, arrived_count, group, burn_in, window, evict, chunks,
                        out, final, report):
        """The rest of a one-group keyless walk (positions ``chunks``) on the inner threads: the slots
        split into one range per thread (:func:`_range_splits`, from where the answers so far fell), each
        thread walking the stream over its own range of the one ``leaf`` array with its own block tree
        (:func:`~favmac.replay_kernels.expected_slots_range`). Every answer is the one-range walk's
        (integer sums, each written by the range that holds it); no key-sized array is added."""
        from .replay_kernels import expected_slots_range, range_btree, weight_below

        s = self.session
        schedule = s.schedule
        n_patients = len(group)
        done = chunks[0][0]
        edges = _range_splits(out[:, : max(0, done - burn_in)], n_keys, ptr[-1] / max(n_patients, 1), inner_threads())

        def prepare(edge):  # a range's walk state from the leaves so far: (lo, hi, last, below, btree, state)
            lo, hi = edge
            state = np.array([arrived_count, leaf[:lo].sum(dtype=np.int64), leaf[lo:hi].sum(dtype=np.int64)], dtype=np.int64)
            below = weight_below(ptr, slots, weights, lo) if lo else np.zeros(0, dtype=np.int64)
            return lo, hi, hi == n_keys, below, range_btree(leaf, lo, hi), state

        ranges = map_chunks(prepare, zip(edges[:-1], edges[1:]))
        for start, stop in chunks:
            low = calibration_count(int(ranges[0][-1][0]), window)
            high = calibration_count(int(schedule.ptr[min(stop, n_patients)]), window)
            bounds = expected_bounds(s.targets, self.costs, high, first=low)

            def walk(part, start=start, stop=stop, low=low, bounds=bounds):
                lo, hi, last, below, btree, state = part
                expected_slots_range(ptr, slots, weights, lo, hi, last, below, schedule.order, schedule.ptr, evict,
                                     bounds, low, burn_in, window, start, stop, leaf, btree, state, out, final)

            map_chunks(walk, ranges)
            report(stop / (n_patients + 1))

    def _bracket_engines(self):
        """Two engines over the same candidate sets at a coarser integer scale, with every cost weight
        rounded down and up (:meth:`ExactCosts.brackets`), for per-code weights whose exact sums
        overflow int64; None for other costs (set costs). Built once, kept for the next grouping."""
        if self._brackets is None:
            if not isinstance(self.costs, ExactCosts):
                return None
            s = self.session
            self._brackets = [_Engine(s, self.cands, _RealizedRows(self.cands, s.labels, costs, s.cost), costs,
                                      keyless=self.keyless)
                              for costs in self.costs.brackets(self.cands.n_patients)]
        return self._brackets

    def _bracketed(self, group, n_groups, burn_in, window, evict, report):
        """Expected-cost thresholds when the exact sums overflow int64 (weights with many decimals).

        Each calibration sum F(b) of the low engine is at most the exact one (divided by the same D)
        and each of the high engine at least, and both compare with floor(M / D): the exact
        threshold, the smallest key with F(b) > M, lies between the high engine's and the low
        engine's. Where the two agree a threshold is exact; where they differ (a near-tie finer than the
        coarse scale, more likely the longer the stream) :meth:`_near_ties` decides it exactly, and only
        when those are too many or too wide does the exact loop replay the targets concerned. None for
        costs without brackets (set costs)."""
        engines = self._bracket_engines()
        if engines is None:
            return None
        down = engines[0]._expected(group, n_groups, burn_in, window, evict, lambda f: report(f / 2))
        up = engines[1]._expected(group, n_groups, burn_in, window, evict, lambda f: report(0.5 + f / 2))
        if down is None or up is None:
            return None
        steps, finals = np.argwhere(down.steps != up.steps), np.argwhere(down.final != up.final)
        if len(steps) or len(finals):  # near-ties: the weights rounded up answer below the exact key, down above it
            arrived = self.session.schedule.ptr
            cells = ([(t, group[burn_in + i], arrived[burn_in + i], up.steps[t, i], down.steps[t, i]) for t, i in steps]
                     + [(t, g, arrived[-1], up.final[t, g], down.final[t, g]) for t, g in finals])
            exact = self._near_ties(engines[0].costs, group, window, cells)
            if exact is not None:
                down.steps[tuple(steps.T)], down.final[tuple(finals.T)] = exact[: len(steps)], exact[len(steps):]
            else:
                differ = sorted({int(t) for t, *_ in cells})
                warnings.warn(f"costs too large for exact int64 arithmetic; near-ties at {len(differ)} of {len(down.steps)} "
                              "targets are decided by the (slower) exact FavMac loop (cost weights with fewer decimals avoid it)")
                exact = self._loop(group, n_groups, burn_in, None, only=differ)
                down.steps[differ], down.final[differ] = exact.steps[differ], exact.final[differ]
        return down

    def _near_ties(self, floor_costs, group, window, cells):
        """Exact thresholds of the queries where the brackets differ (:func:`favmac.near_ties.resolve`):
        ``cells`` holds (target, group, arrived, lowest key, highest key) per query, the calibration
        patients being the group's first ``arrived`` labels in arrival order (the last ``window`` of them).
        None when there are too many or their brackets are too wide: the caller runs the exact loop."""
        from .near_ties import CostLimbs, NearTieQueries, fits, resolve

        if not fits(floor_costs.divisor, len(self.costs.weights)):
            return None
        s = self.session
        n_patients = self.cands.n_patients
        position = np.empty(n_patients, dtype=np.int64)
        position[s.schedule.order] = np.arange(n_patients)
        members = {}
        queries = NearTieQueries()
        for t, g, stop, low, high in cells:
            if g not in members:
                members[g] = np.sort(position[group == g])
            count = int(np.searchsorted(members[g], stop))
            first = int(members[g][count - window]) if window and count > window else 0
            queries.add(int(t), int(g), first, int(stop), min(count, window) if window else count, float(low), float(high))
        limbs = (floor_costs.divisor, floor_costs, self.costs.remainders(floor_costs.divisor))

        def chunk(rows):  # computed on the inner threads, used by resolve in order
            start, stop = rows
            part = self.cands.subset(slice(start, stop))
            exact = CostLimbs.realized(self.costs, part, s.labels[start:stop], limbs)
            keys, floor_part, rest_part = part.scores(s.score), exact.low, exact.rest
            if not part.nested:  # the full universe: its sets in key order
                idx = np.argsort(keys, axis=1, kind="stable")
                keys, floor_part, rest_part = (np.take_along_axis(a, idx, axis=1) for a in (keys, floor_part, rest_part))
            return np.arange(start, stop), keys, floor_part, rest_part

        return resolve(queries, ordered_chunks(chunk, _chunks(0, n_patients, _POINTS_CHUNK)), self.costs,
                       floor_costs.divisor, s.targets, np.ascontiguousarray(group, dtype=np.int64), position)

    def _slot_keys(self, ptr, ranks, n_keys, *answers):
        """Replace the slots a keyless walk wrote in ``answers`` (2-D arrays) by their keys, in place:
        one pass over the patients with a point in an answered slot (their keys recomputed chunk by
        chunk; the others' keys are not needed) keeps the keys of the marked slots only (a bit set over
        the slots and one float per answer slot), not the sorted keys of every point. The same floats:
        a slot's key is the key of every point ranked there, the last one in point order as before."""
        from .replay_kernels import mark_slots, marked_patients, record_slot_keys, slot_keys, slot_prefix

        bits = np.zeros((n_keys + 63) >> 6, dtype=np.uint64)
        for table in answers:
            mark_slots(table, bits)
        prefix = slot_prefix(bits)
        found = np.empty(int(prefix[-1]))
        chunks = _chunks(0, self.cands.n_patients, _CHUNK)

        def holders(chunk):  # the patients with a point in a marked slot: at 300,000 x 35 about one in seven
            start, stop = chunk
            return start + np.flatnonzero(marked_patients(ptr[start : stop + 1], ranks, bits))

        def slot_points(rows):  # the ranks and keys of these patients' points, in point order
            if not len(rows):
                return None
            keys, increments = calibration_points(self.cands.subset(rows), _rows_of(self.realized, rows),
                                                  self.session.score)
            counts = ptr[rows + 1] - ptr[rows]
            points = np.repeat(ptr[rows] - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
            return ranks[points], keys[increments > 0]

        # the keys computed on the threads, recorded here in point order (the last write of a slot wins
        # as on one thread: -0.0 and 0.0 share a slot)
        for found_points in ordered_chunks(slot_points, map_chunks(holders, chunks)):
            if found_points is not None:
                record_slot_keys(*found_points, bits, prefix, found)
            del found_points
        for table in answers:
            slot_keys(table, bits, prefix, found)

    def _violation(self, group, n_groups, burn_in, window, evict, report):
        from .replay_kernels import violation_thresholds

        s = self.session
        n_patients = len(group)
        ranks_k = violation_ranks(s.options.delta, n_patients)
        out = np.empty((len(s.targets), n_patients - burn_in))
        final = np.empty((len(s.targets), n_groups))
        ptr = np.arange(n_patients + 1)
        for t in range(len(s.targets)):
            sorted_scores, score_slots = self.ranked_scores(t)
            layout = self._layout(ptr, score_slots, sorted_scores, group, n_groups, ("scores", t))
            leaf, btree = self._trees(layout, 1)  # a patient's score has a slot of its own: counts 0 or 1
            counts = np.zeros(n_groups, dtype=np.int64)
            for start, stop in _chunks(0, n_patients + 1):
                violation_thresholds(*layout, *self._schedule_args(group), evict, ranks_k, burn_in, window, start, stop,
                                     leaf, btree, counts, out[t], final[t])
            self._done(leaf)
            report((t + 1) / len(s.targets))
        return _Thresholds(out, final)

    def _adaptive(self, group, n_groups, burn_in, window, evict, rate):
        """Thresholds and adaptive targets c_n; None when int64 would overflow."""
        from .replay_kernels import adaptive_thresholds

        s, costs = self.session, self.costs
        n_patients = len(group)
        floor = math.lcm(costs.scale, common_scale(s.targets))  # one scale S for every target
        rules = [AdaptiveTarget(target, rate, costs.scale, min_scale=floor) for target in s.targets]
        big = rules[0].scale
        if self.realized.dtype == object or not costs.exact_sums(n_patients):
            return None
        c_max_big = scaled_int(costs.c_max, big)
        largest = max(rule.largest(costs.c_max, n_patients) for rule in rules)
        if largest * (n_patients + 1) + c_max_big >= INT64_LIMIT:
            return None
        points = self.points()
        if points is None:
            return None
        ptr, ranks, weights, sorted_keys = points
        layout = self._layout(ptr, ranks, sorted_keys, group, n_groups, "points")
        leaf, btree = self._trees(layout, self._leaf_bound(layout, ranks, weights))
        steps = n_patients - burn_in
        out = np.empty((len(s.targets), steps))
        targets_out = np.empty((len(s.targets), steps), dtype=np.int64)
        final = np.empty((len(s.targets), n_groups))
        final_targets = np.empty((len(s.targets), n_groups), dtype=np.int64)
        ok = adaptive_thresholds(
            ptr, layout[0], weights.astype(np.int64), *layout[1:], *self._schedule_args(group), evict,
            np.ascontiguousarray(self.cands.scores(s.score), dtype=float), _preference(self.cands),
            np.ascontiguousarray(self.realized, dtype=np.int64), np.array([rule.start for rule in rules], dtype=np.int64),
            np.array([rule.target_base for rule in rules], dtype=np.int64), np.int64(rules[0].rate_scaled),
            np.int64(rules[0].cost_to_base), np.int64(big // costs.scale), np.int64(c_max_big), burn_in, window,
            np.int64(INT64_LIMIT), leaf, btree, out, targets_out, final, final_targets)
        self._done(leaf)
        if not ok:
            return None
        return _Thresholds(out, final, targets_out / big, final_targets / big)

    def _loop(self, group, n_groups, burn_in, rate, only=None):
        """The exact (Python integers) FavMac loop, one controller per group, labels joining as they arrive
        (``only``: the indices of the targets to replay; the other rows are left unset)."""
        from .controller import FavMac

        s, opts = self.session, self.session.options
        schedule = s.schedule
        if rate is not None and schedule.delayed:
            raise ValueError("costs too large for exact int64 arithmetic with an adaptive target and delayed labels; "
                             "round the cost weights or the target to fewer decimals")
        n_patients, n_codes = s.probs.shape
        out = np.empty((len(s.targets), n_patients - burn_in))
        final = np.empty((len(s.targets), n_groups))
        step_targets = np.empty_like(out) if rate is not None else None
        final_targets = np.empty_like(final) if rate is not None else None
        for t in range(len(s.targets)) if only is None else only:
            target = s.targets[t]
            fms = [FavMac(s.value, s.cost, target, delta=opts.delta, universe=opts.universe, c_max=opts.c_max,
                          window=opts.window, n_codes=n_codes, adaptive_rate=rate, score=s.score)
                   for _ in range(n_groups)]
            for n in range(n_patients):
                if n >= burn_in:
                    out[t, n - burn_in] = fms[group[n]].threshold
                    if rate is not None:
                        step_targets[t, n - burn_in] = float(fms[group[n]].current_target)
                for i in schedule.order[schedule.ptr[n] : schedule.ptr[n + 1]]:
                    fms[group[i]].update(s.probs[i], s.labels[i], adapt=bool(i >= burn_in), value=bind_rows(s.value, i))
            for g, fm in enumerate(fms):
                final[t, g] = fm.threshold
                if rate is not None:
                    final_targets[t, g] = float(fm.current_target)
        return _Thresholds(out, final, step_targets, final_targets)


def _candidates(probs, value, cost, universe, report):
    """candidate_sets, in chunks with progress reports when the value is a (slow) formula."""
    # a value with its own compiled greedy (the CMS payment, a few us per patient) takes the large chunks
    size = _CHUNK if getattr(value, "sequences", None) is not None else _FORMULA_CHUNK
    if value.is_additive or len(probs) <= size:
        return candidate_sets(probs, value, cost, universe)
    parts = []
    for start in range(0, len(probs), size):
        rows = slice(start, start + size)
        parts.append(candidate_sets(probs[rows], bind_rows(value, rows), bind_rows(cost, rows), universe))
        report(0.2 * min(len(probs), start + size) / len(probs))
    return Candidates.concatenate(parts)


def _shared_candidates(candidates, session) -> Candidates:
    """``candidates`` checked against the replay's stream and universe (ValueError naming what differs)."""
    if not isinstance(candidates, Candidates):
        raise ValueError(f"candidates: expected favmac.universe.Candidates (from candidate_sets); got {type(candidates).__name__}")
    n_patients, n_codes = session.probs.shape
    universe = session.options.universe
    if candidates.universe != universe or candidates.n_patients != n_patients:
        raise ValueError(f"candidates: built for the {candidates.universe!r} universe and {candidates.n_patients} patients; "
                         f"this replay has the {universe!r} universe and {n_patients} patients. Build them with "
                         "candidate_sets(probs, value, cost, universe) of this replay's inputs")
    return candidates


def _chunks(start, stop, size=_CHUNK):
    edges = list(range(start, stop, size)) + [stop]
    return list(zip(edges[:-1], edges[1:]))


def _realized(cands, labels, costs, cost=None):
    """``costs.realized`` (exact realized cost of every candidate), in chunks of patients
    (its temporaries are several (N, K) arrays), as int32 when the weights' sum fits."""
    n_patients = cands.n_patients
    limbs = costs.limbs() if isinstance(costs, ExactCosts) else None
    if limbs is not None:  # sums beyond int64: two int64 limbs per cost, not Python integers (near_ties.CostLimbs)
        from .near_ties import CostLimbs

        return CostLimbs.stack([CostLimbs.realized(costs, cands.subset(slice(start, stop)), labels[start:stop], limbs)
                                for start, stop in _chunks(0, n_patients) or [(0, 0)]])
    out = None
    for start, stop in _chunks(0, n_patients) or [(0, 0)]:
        part = costs.realized(cands.subset(slice(start, stop)), labels[start:stop], bind_rows(cost, slice(start, stop)))
        if out is None:
            dtype = costs.realized_dtype or part.dtype  # int32 when realized <= sum of weights fits
            out = np.empty((n_patients, part.shape[1]), dtype=dtype)
        out[start:stop] = part
    return out


def _compiled_choice(cands, realized, bounds, cost, value):
    """The bounds as an int64 array when :func:`~favmac.replay_kernels.choose_prefixes` can choose the
    sets (nested sequences, additive cost and value, integer realized costs and bounds within int64), else None."""
    if not (cands.nested and cost.is_additive and value.is_additive) or np.dtype(realized.dtype).kind != "i":
        return None
    if any(not -INT64_LIMIT < bound < INT64_LIMIT for bound in bounds):
        return None
    return np.array(bounds, dtype=np.int64)


def _rows_of(realized, rows):
    """The realized costs of the patients ``rows`` (an index array) of a table or :class:`_RealizedRows`."""
    return realized.take(rows) if isinstance(realized, _RealizedRows) else realized[rows]


class _RealizedRows:
    """The exact realized costs (N, M) of every candidate, computed chunk by chunk when read:
    ``rows[start:stop]`` is ``costs.realized`` of those patients (the values and dtype
    :func:`_realized` stores), so the whole table never exists. Only slices of rows can be read."""

    def __init__(self, cands, labels, costs, cost):
        self.cands, self.labels, self.costs, self.cost = cands, labels, costs, cost
        self.dtype = np.dtype(object if costs.weights.dtype == object else costs.realized_dtype or np.int64)
        self.shape = (cands.n_patients, cands.n_candidates)
        self.limbs = costs.limbs()  # sums beyond int64: rows read as near_ties.CostLimbs

    @staticmethod
    def fits(costs) -> bool:
        """Per-code integer weights (ExactCosts): realized costs int32, int64 or (sums beyond int64) Python integers."""
        return isinstance(costs, ExactCosts)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows):
        if not isinstance(rows, slice) or rows.step not in (None, 1):
            raise TypeError("_RealizedRows: read contiguous rows (realized[start:stop]), or take(rows) for an index array")
        return self.take(rows)

    def take(self, rows):
        """The realized costs of the patients ``rows`` (a slice or an index array), computed now."""
        if self.limbs is not None:  # sums beyond int64: two int64 limbs per cost
            from .near_ties import CostLimbs

            return CostLimbs.realized(self.costs, self.cands.subset(rows), self.labels[rows], self.limbs)
        part = self.costs.realized(self.cands.subset(rows), self.labels[rows], bind_rows(self.cost, rows))
        return part.astype(self.dtype, copy=False)


def _expected_points(cands, realized, costs, score):
    """(ptr, ranks, weights, sorted_keys) of every patient's calibration points; None when int64 would overflow.

    Patient i's points are ``ranks[ptr[i]:ptr[i + 1]]`` (positions in ``sorted_keys``, int32
    below 2^31 points) with ``weights`` (the smallest integer dtype that holds the largest,
    :func:`smallest_int`). Equal keys are not compacted: every point takes the first slot of its key
    (searchsorted, side "left") and the other slots keep weight 0, which never moves "the
    smallest key whose cdf exceeds the bound". (The keyless walk ranks its points without the
    sorted keys: :func:`_merged_points`.)
    """
    n_patients = cands.n_patients
    counted = _point_counts(cands, realized, costs, score)
    if counted is None:
        return None
    ptr, largest = counted
    chunks = _chunks(0, n_patients, _POINTS_CHUNK)
    # The sorted keys first, before the per-point arrays exist, so that no two point-sized
    # float arrays are alive at once.
    sorted_keys = np.empty(ptr[-1])
    for start, stop in chunks:
        keys, increments = calibration_points(cands.subset(slice(start, stop)), realized[start:stop], score)
        sorted_keys[ptr[start] : ptr[stop]] = keys[increments > 0]
    sorted_keys.sort()
    ranks = np.empty(ptr[-1], dtype=np.int32 if len(sorted_keys) < 2**31 else np.int64)
    point_weights = np.empty(ptr[-1], dtype=smallest_int(largest))  # every weight fits it
    for first, last in _chunks(0, n_patients):
        # bisecting sorted queries walks the keys forward (cache friendly); random ones do not, and
        # the more queries at once the closer they are: a _CHUNK of patients' keys is ranked at once,
        # computed in smaller steps (the keys' temporaries are several (rows, K) arrays)
        part = np.empty(ptr[last] - ptr[first])
        for start, stop in _chunks(first, last, _POINTS_CHUNK):
            keys, increments = calibration_points(cands.subset(slice(start, stop)), realized[start:stop], score)
            positive = increments > 0
            point_weights[ptr[start] : ptr[stop]] = increments[positive]
            part[ptr[start] - ptr[first] : ptr[stop] - ptr[first]] = keys[positive]
            del keys, increments, positive
        order = np.argsort(part)
        for begin in range(0, len(order), _RANK_BATCH):  # sorted queries, a batch at a time (small temporaries)
            batch = order[begin : begin + _RANK_BATCH]
            ranks[batch + ptr[first]] = np.searchsorted(sorted_keys, part[batch])
        del part, order
    return ptr, ranks, point_weights, sorted_keys


def _merged_points(cands, realized, costs, score):
    """(ptr, ranks, heaviest, n_keys, sharing) of the keyless walk's calibration points: the ranks
    :func:`_expected_points` gives (each point's first slot in the sorted keys), without the sorted
    keys; None when int64 would overflow. ``heaviest`` is the largest weight (the weights are filled
    later by :func:`_point_weights`), ``n_keys`` the number of points (slots) and ``sharing`` the most
    points sharing one slot (the longest run of equal keys).

    Each chunk of patients' keys is sorted as it is gathered (its sort order kept in ``ranks``), then
    the sorted chunks are merged (:func:`_rank_runs`): no sort of every key and no second pass of keys
    to bisect (the keys are computed once here). The chunks run on the inner threads
    (:mod:`favmac.parallel`), each writing only its own slices of the keys and ranks."""
    counted = _point_counts(cands, realized, costs, score)
    if counted is None:
        return None
    ptr, heaviest = counted
    # on n threads, runs of 1/n the patients: n chunks' sort buffers at once take one chunk's memory
    chunks = _chunks(0, cands.n_patients, max(1, _CHUNK // inner_threads()))
    keys = np.empty(ptr[-1])  # each chunk's keys, sorted, then their ranks (merge_ranks)
    ranks = np.empty(ptr[-1], dtype=np.int32 if len(keys) < 2**31 else np.int64)

    def gather(chunk):  # one chunk's keys, sorted in place (threads: each chunk writes its own slices)
        first, last = chunk
        part = keys[ptr[first] : ptr[last]]
        for start, stop in _chunks(first, last, _POINTS_CHUNK):  # the keys' temporaries are (rows, K) arrays
            step_keys, increments = calibration_points(cands.subset(slice(start, stop)), realized[start:stop], score)
            part[ptr[start] - ptr[first] : ptr[stop] - ptr[first]] = step_keys[increments > 0]
            del step_keys, increments
        order = np.argsort(part)
        ranks[ptr[first] : ptr[last]] = order  # offsets in the chunk (below its points, so they fit)
        part[:] = part[order]

    map_chunks(gather, chunks)
    starts = ptr[[first for first, _ in chunks] + [cands.n_patients]] if chunks else np.zeros(1, dtype=np.int64)
    sharing = _rank_runs(keys, starts, ranks)
    return ptr, ranks, heaviest, len(keys), sharing


def _rank_runs(keys, starts, ranks) -> int:
    """:func:`~favmac.replay_kernels.merge_ranks` then :func:`~favmac.replay_kernels.unsort_ranks` of the
    sorted runs ``keys[starts[r]:starts[r + 1]]`` (their sort orders in ``ranks``), on the inner threads:
    the merge in key ranges (:func:`~favmac.replay_kernels.split_runs`; two per thread, one on one
    thread), the unsort run by run. Returns the longest run of equal keys; ``ranks`` holds the ranks."""
    from .replay_kernels import merge_part, split_runs, unsort_ranks

    threads = inner_threads()
    parts = split_runs(keys, starts, 1 if threads == 1 else 2 * threads)
    sharing = max(map_chunks(lambda part: merge_part(keys, *part), parts))
    map_chunks(lambda r: unsort_ranks(keys, starts[r : r + 2], ranks), range(len(starts) - 1))
    return int(sharing)


def _range_splits(answers, n_keys: int, points_per_position: float, parts: int, query_cost: float = 4.0) -> np.ndarray:
    """Slot edges ``0 = e_0 < ... < e_k = n_keys`` (k <= ``parts``) splitting a keyless walk's slots into
    ranges of about equal work (:meth:`_Engine._walk_in_ranges`). A position's work in a range is its
    joining points there (the slots are ranks: about (hi - lo) / n_keys of ``points_per_position``) and
    ``query_cost`` (in joining points) per answer there, the answers' places estimated from the walk's
    answers so far (``answers``: (T, positions) slots, +-inf; an answer stays near its place while the
    stream is stationary). Any edges give the same answers: only the balance depends on them.

    >>> answers = np.array([[10.0] * 5, [60.0] * 5, [np.inf] * 5])  # 3 targets, 5 positions
    >>> _range_splits(answers, 100, 4.0, 2).tolist()  # each range: 2 joining points and 1 answer per position
    [0, 50, 100]
    """
    grid = np.linspace(0, n_keys, 1025)
    work = grid / n_keys * points_per_position  # the work of the slots below each grid point, per position
    if answers.size:
        finite = np.sort(answers[np.isfinite(answers)])
        work = work + query_cost * np.searchsorted(finite, grid, side="left") / answers.shape[1]
    places = np.searchsorted(work, work[-1] * np.arange(1, parts) / parts)
    return np.unique(np.concatenate([[0], np.ceil(grid[np.minimum(places, len(grid) - 1)]), [n_keys]])).astype(np.int64)


def _point_counts(cands, realized, costs, score):
    """(ptr, heaviest) of the calibration points (:func:`_expected_points`): patient i's points are
    ``ptr[i]:ptr[i + 1]``, ``heaviest`` the largest weight; None when int64 would overflow."""
    n_patients = cands.n_patients
    if realized.dtype == object or not costs.exact_sums(n_patients):
        return None
    counts = np.zeros(n_patients, dtype=np.int64)

    def count(chunk):  # the largest weight of one chunk (threads: each chunk writes its own counts)
        largest = 0
        for start, stop in _chunks(*chunk, _POINTS_CHUNK):  # the weights' temporaries are (rows, K) arrays
            increments = calibration_weights(cands.subset(slice(start, stop)), realized[start:stop], score)  # no keys
            counts[start:stop] = np.count_nonzero(increments > 0, axis=1)
            largest = max(largest, int(increments.max(initial=0)))
        return largest

    largest = max(map_chunks(count, _chunks(0, n_patients)), default=0)  # the largest weight, for the weights' dtype
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return ptr, largest


def _point_weights(cands, realized, score, ptr, largest: int) -> np.ndarray:
    """The calibration points' weights (:func:`_expected_points`) in one pass over the patients,
    in the smallest integer dtype that holds ``largest``: the same integers in the same places."""
    out = np.empty(ptr[-1], dtype=smallest_int(largest))

    def fill(chunk):  # threads: each chunk writes its own points
        for start, stop in _chunks(*chunk, _POINTS_CHUNK):
            increments = calibration_weights(cands.subset(slice(start, stop)), realized[start:stop], score)
            out[ptr[start] : ptr[stop]] = increments[increments > 0]
            del increments

    map_chunks(fill, _chunks(0, cands.n_patients))
    return out


def longest_run(keys, block: int = 1 << 16) -> int:
    """The most equal values in a row of sorted ``keys`` (0 for none), in blocks of ``block``
    comparisons (plain numpy: no key-sized temporaries, and no compiled kernel to load while
    the sorted keys are alive).

    >>> longest_run(np.array([1.0, 1.0, 2.0, 2.0, 2.0, 3.0]), block=2), longest_run(np.array([5.0])), longest_run(np.array([]))
    (3, 1, 0)
    """
    n = len(keys)
    if n == 0:
        return 0
    best = carry = 0  # carry: the equal pairs in a row at the end of the blocks so far
    for start in range(0, n - 1, block):
        stop = min(start + block, n - 1)
        same = keys[start + 1 : stop + 1] == keys[start:stop]  # pairs (j, j + 1)
        breaks = np.flatnonzero(~same)
        if len(breaks) == 0:
            carry += len(same)
            best = max(best, carry)
            continue
        best = max(best, carry + int(breaks[0]))
        if len(breaks) > 1:
            best = max(best, int(np.diff(breaks).max()) - 1)
        carry = len(same) - 1 - int(breaks[-1])
        best = max(best, carry)
    return best + 1


def _preference(cands) -> np.ndarray:
    """(N, M) candidate indices in the order ``Candidates.choose`` prefers them: the first one
    under the threshold is S_hat (nested: larger Vhat, then the longer prefix; full: larger
    Vhat, then smaller C-hat, then enumeration order)."""
    shape = cands.chat.shape
    steps = np.broadcast_to(np.arange(shape[1]), shape)
    if cands.nested and cands.monotone:
        return np.ascontiguousarray(np.broadcast_to(np.arange(shape[1])[::-1], shape), dtype=np.int64)
    if cands.nested:
        return np.lexsort((-steps, -cands.vhat), axis=-1).astype(np.int64)
    return np.lexsort((steps, cands.chat, -cands.vhat), axis=-1).astype(np.int64)


def predict_with_threshold(probs, value, cost, threshold, universe: str = "ratio", score: str | None = None,
                           recalibration=None, delta=None, groups=None, target=None) -> np.ndarray:
    """Chosen sets (N, K) bool for new patients under a fixed threshold (e.g. final_thresholds[t]).

    ``score`` must be the score the threshold was calibrated on ("cost" or "price"); None is the
    default of ``universe``, ``delta`` and ``target`` (:func:`favmac.universe.default_score`: give the
    target the threshold was calibrated for, or the score itself);
    ``recalibration`` the maps it was calibrated with (a ``Recalibration`` or its dict, e.g.
    ``result.settings["recalibration_maps"]``), applied to ``probs`` first; maps fitted per
    segment also need ``groups`` (each row's segment).

    >>> from favmac import AdditiveValue, AdditiveCost
    >>> predict_with_threshold([[0.9, 0.2], [0.4, 0.8]], AdditiveValue(), AdditiveCost(), 0.25).tolist()
    [[True, False], [False, True]]
    """
    probs = np.atleast_2d(np.asarray(probs, dtype=float))
    if score is None:
        score = default_score(universe, delta, target, false_flag_weights(cost, probs.shape[1]))
    score = check_score(score, universe)
    if recalibration is not None:
        from .recalibration import as_recalibration
        probs = as_recalibration(recalibration).apply(probs, groups=groups)
    cands = candidate_sets(probs, value, cost, universe)
    if isinstance(threshold, float) and math.isnan(threshold):
        raise ValueError("threshold is NaN")
    return cands.masks(cands.choose(threshold, score))
