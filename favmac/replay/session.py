"""One replay's validated inputs and its steps: rows, thresholds per part, selection, result.

:meth:`Session.prepare` checks the stream and the settings once; :meth:`Session.run` builds the
candidate sets and realized costs (:mod:`favmac.replay.realized`), asks the :class:`~favmac.replay.engine.Engine`
for the thresholds of every grouping (or the pooled stream), chooses every (target, step)'s set
(:meth:`Session.select`: each patient's smallest threshold over its groupings) and shapes the
:class:`~favmac.result.ReplayResult`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..adaptive import check_adaptive_rate
from ..arrivals import ArrivalSchedule, check_label_delay
from ..costs import exact_costs
from ..functions import false_flag_weights
from ..protocols import bind_rows, is_additive, own_sequences, prefix_values
from ..parallel import map_chunks
from ..result import ReplayResult
from ..recalibration import DEFAULT_RECALIBRATE_BY, DEFAULT_RECALIBRATION
from ..runspec import DEFAULT_DELTA, RunSpec
from ..scores import check_score, default_score
from ..segments import GroupingResult, check_groupings, group_index
from ..thresholds import INT64_LIMIT
from ..universe import DEFAULT_UNIVERSE, Candidates, ChosenSets, candidate_sets, check_universe, smallest_int
from ..validation import check_c_max, check_stream
from . import sizes
from .engine import Engine
from .realized import RealizedRows, realized_costs
from .sizes import patient_chunks

__all__ = ["Session", "candidates_in_chunks", "method_name", "replay_spec", "shared_candidates"]


def replay_spec(targets, *, delta=None, universe: str = DEFAULT_UNIVERSE, burn_in: int = 0, window=None, c_max=None,
                score: str | None = None, adaptive_rate=None, label_delay=None, recalibrate=None,
                recalibration: str = DEFAULT_RECALIBRATION, recalibrate_by: str = DEFAULT_RECALIBRATE_BY) -> RunSpec:
    """The :class:`~favmac.runspec.RunSpec` of :func:`replay`'s keywords (``delta=None``: expected-cost control;
    ``c_max``: the spec's ``largest_cost``). Not validated here: :func:`replay` checks every field against the data.

    >>> spec = replay_spec([0.5, 1.0], delta=0.1, burn_in=50)
    >>> spec.control, spec.targets, spec.burn_in, spec.recalibrate
    ('violation', (0.5, 1.0), 50, None)
    """
    return RunSpec(targets=targets, control="expected" if delta is None else "violation",
                   delta=DEFAULT_DELTA if delta is None else delta, universe=universe, burn_in=burn_in, window=window,
                   score=score, adaptive_rate=adaptive_rate, label_delay=label_delay, recalibrate=recalibrate,
                   recalibration=recalibration, recalibrate_by=recalibrate_by, largest_cost=c_max)


def method_name(universe: str, score: str = "cost") -> str:
    """Display name of a FavMac run: "FavMac (ratio)" (cost score), "FavMac (price)" (ratio
    universe, price score), "FavMac (value, price)" (another universe, price score).

    >>> method_name("prob"), method_name("ratio", "price"), method_name("value", "price")
    ('FavMac (prob)', 'FavMac (price)', 'FavMac (value, price)')
    """
    if score == "cost":
        return f"FavMac ({universe})"
    return f"FavMac ({score})" if universe == "ratio" else f"FavMac ({universe}, {score})"


@dataclass
class Session:
    """One replay's validated inputs, and its steps (``run``). ``spec`` is the run's
    :class:`~favmac.runspec.RunSpec` with its stream fields checked (burn-in, window, label delay, C_max) and
    its score resolved for this value and cost; ``delta`` ... ``label_delay`` read it."""

    probs: np.ndarray
    labels: np.ndarray
    value: object
    cost: object
    targets: np.ndarray
    spec: RunSpec
    score: str
    rate: float | None
    groupings: list  # [(name, labels (N,) object)]
    schedule: ArrivalSchedule
    codes: list | None
    patient_ids: np.ndarray | None
    report: object
    candidates: Candidates | None = None  # given by the caller (``replay(candidates=...)``), else built in ``run``

    @property
    def delta(self) -> float | None:
        """None under expected-cost control, else the violation level."""
        return self.spec.control_delta

    @property
    def universe(self) -> str:
        return self.spec.universe

    @property
    def burn_in(self) -> int:
        return self.spec.burn_in

    @property
    def window(self) -> int | None:
        return self.spec.window

    @property
    def c_max(self) -> float | None:
        """C_max given to the run (``largest_cost``), None: the cost's own."""
        return self.spec.largest_cost

    @property
    def label_delay(self) -> int | None:
        return self.spec.label_delay

    @classmethod
    def prepare(cls, probs, labels, value, cost, spec, groups, label_available_at, codes, patient_ids,
                progress) -> "Session":
        """Check the stream and ``spec``'s settings for it (the library's one wording per rule, :mod:`favmac.validation`)."""
        probs, labels, targets, delta, burn_in, window, codes, patient_ids = check_stream(
            probs, labels, spec.targets, spec.control_delta, spec.burn_in, spec.window, codes, patient_ids)
        n_patients, n_codes = probs.shape
        check_universe(spec.universe, n_codes)
        c_max = check_c_max(spec.largest_cost)
        label_delay = None if spec.label_delay is None else check_label_delay(spec.label_delay, n_patients)
        score = spec.score
        if spec.score_is_default:  # the default of this run's own cost (its per-code false-flag weights)
            score = default_score(spec.universe, delta, targets, false_flag_weights(cost, n_codes))
        score = check_score(score, spec.universe)
        rate = check_adaptive_rate(spec.adaptive_rate, delta)
        groupings = check_groupings(groups, n_patients)
        if rate is not None and len(groupings) > 1:
            raise ValueError(f"adaptive_rate: the adaptive target is for one grouping at most; got {len(groupings)} "
                             f"groupings ({', '.join(name for name, _ in groupings)}). Leave adaptive_rate unset, or "
                             "give one grouping.")
        schedule = ArrivalSchedule.of(n_patients, burn_in, label_delay, label_available_at)
        report = progress if progress is not None else (lambda fraction: None)
        spec = dataclasses.replace(spec, burn_in=burn_in, window=window, label_delay=label_delay, largest_cost=c_max, score=score,
                                   control="expected" if delta is None else "violation",
                                   delta=spec.delta if delta is None else delta)
        return cls(probs, labels, value, cost, targets, spec, score, rate, groupings, schedule, codes,
                   patient_ids, report)

    # ------------------------------------------------------------------ the steps
    def rows(self, lean: bool = True):
        """The per-patient step: (candidate sets (the caller's, or built), their exact realized costs, ExactCosts or SetCosts).

        ``lean``: under expected-cost control with per-code cost weights the realized costs
        are :class:`RealizedRows` (each chunk's computed when read: no (N, M) table is kept);
        otherwise, and with ``lean=False``, one (N, M) table."""
        cands = self.candidates
        if cands is None:
            cands = candidates_in_chunks(self.probs, self.value, self.cost, self.universe, self.report)
        costs = exact_costs(self.cost, self.probs.shape[1], self.c_max)
        if lean and RealizedRows.fits(costs) and self.delta is None and self.rate is None:
            return cands, RealizedRows(cands, self.labels, costs, self.cost), costs
        return cands, realized_costs(cands, self.labels, costs, self.cost), costs

    def work_settings(self) -> tuple:
        """What :class:`PatientWork` depends on besides the patients' rows."""
        return self.universe, self.score, self.c_max, self.delta, tuple(self.targets.tolist())

    def run(self, method, work=None) -> ReplayResult:
        report = self.report
        report(0.0)
        if work is None:
            cands, realized, costs = self.rows()
        else:
            work.check(self)
            cands, realized, costs = work.cands, work.realized, work.costs
        report(0.25)
        # without groupings or given work, the one expected pass is the calibration points' last use
        engine = Engine(self, cands, realized, costs, keyless=work is None and not self.groupings)
        if work is not None:  # the points or scores of these patients, already in this order
            engine.use(work.points, work.scores, work.brackets)
            del work
        n_parts = max(len(self.groupings), 1)
        per_grouping = []
        for i, (name, labels) in enumerate(self.groupings):
            names, index = group_index(labels)
            part = engine.thresholds(index, len(names), self.burn_in, self.rate,
                                     lambda f, i=i: report(0.25 + 0.6 * (i + f) / n_parts))
            per_grouping.append((name, labels, names, index, part))
        n_patients = self.probs.shape[0]
        if per_grouping:
            thresholds = np.minimum.reduce([part.steps for *_, part in per_grouping])
            step_targets = per_grouping[0][-1].step_targets
            final, final_targets = engine.pooled_final(), None
        else:
            part = engine.thresholds(np.zeros(n_patients, dtype=np.int64), 1, self.burn_in, self.rate,
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
        burn_in, n_patients = self.burn_in, self.probs.shape[0]
        n_targets, steps = thresholds.shape
        n_candidates = cands.n_candidates
        chosen_index = np.zeros((n_targets, steps), dtype=smallest_int(n_candidates - 1))
        realized_cost = np.zeros((n_targets, steps))
        realized_value = np.zeros((n_targets, steps))
        exceeds = np.zeros((n_targets, steps), dtype=bool)
        bounds = [costs.bound(target) for target in self.targets]
        compiled = _compiled_choice(cands, realized, bounds, self.cost, self.value)
        if compiled is not None:
            from ..replay_kernels import choose_prefixes

        def choose(start, stop):  # these patients' columns of every table (threads: only its own)
            part = cands.subset(slice(start, stop))
            steps_here = slice(start - burn_in, stop - burn_in)
            rows = np.arange(stop - start)
            part_labels = self.labels[start:stop]
            cost_table = (part.totals(self.cost.contributions(part_labels)) if is_additive(self.cost)
                          else realized[start:stop] / costs.scale)
            value_table = part.totals(self.value.contributions(part_labels)) if is_additive(self.value) else None
            exact_cost = realized[start:stop]
            if compiled is not None:  # every target's choice, cost, value and flag in one compiled pass (no (rows, M) temporaries)
                choose_prefixes(part.scores(self.score), part.best_prefix(), thresholds[:, steps_here], cost_table,
                                value_table, exact_cost, compiled, chosen_index[:, steps_here],
                                realized_cost[:, steps_here], realized_value[:, steps_here], exceeds[:, steps_here])
                return
            # a value with a compiled pass over nested sets (the CMS payment) scores every target's sets at once
            along = None if value_table is not None or not part.nested else prefix_values(self.value)
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
            for start, stop in patient_chunks(*chunk, sizes.SELECT_CHUNK):
                choose(start, stop)

        # additive values and costs on the threads; the others (formulas, the CMS payment, set costs:
        # functions of the rows that may keep state) in this thread
        additive = compiled is not None or (is_additive(self.cost) and is_additive(self.value))
        map_chunks(choose_chunk, patient_chunks(burn_in, n_patients), threads=None if additive else 1)
        tail = slice(burn_in, n_patients)
        chosen = ChosenSets(chosen_index, order=None if cands.order is None else cands.order[tail], subsets=cands.subsets)
        return chosen, realized_cost, realized_value, exceeds

    def result(self, method, costs, thresholds, step_targets, final, final_targets, per_grouping, chosen,
               realized_cost, realized_value, exceeds) -> ReplayResult:
        tail = slice(self.burn_in, self.probs.shape[0])
        settings = {"universe": self.universe, "score": self.score, "window": self.window, "c_max": float(costs.c_max),
                    "control": "expected" if self.delta is None else "violation"}
        if self.rate is not None:
            settings["adaptive_rate"] = self.rate
        if per_grouping:
            settings["segments"] = True
            settings["groupings"] = [name for name, *_ in per_grouping]
        if self.label_delay:
            settings["label_delay"] = self.label_delay
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
            method=method or method_name(self.universe, self.score),
            targets=self.targets,
            delta=self.delta,
            burn_in=self.burn_in,
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
            labels_pending=self.schedule.pending(self.burn_in),
            calibration_sizes=self.schedule.calibration_sizes(self.burn_in, self.window),
        )


def candidates_in_chunks(probs, value, cost, universe, report):
    """candidate_sets, in chunks with progress reports when the value is a (slow) formula."""
    # a value with its own compiled greedy (the CMS payment, a few us per patient) takes the large chunks
    size = sizes.CHUNK if own_sequences(value) is not None else sizes.FORMULA_CHUNK
    if is_additive(value) or len(probs) <= size:
        return candidate_sets(probs, value, cost, universe)
    parts = []
    for start in range(0, len(probs), size):
        rows = slice(start, start + size)
        parts.append(candidate_sets(probs[rows], bind_rows(value, rows), bind_rows(cost, rows), universe))
        report(0.2 * min(len(probs), start + size) / len(probs))
    return Candidates.concatenate(parts)


def shared_candidates(candidates, session) -> Candidates:
    """``candidates`` checked against the replay's stream and universe (ValueError naming what differs)."""
    if not isinstance(candidates, Candidates):
        raise ValueError(f"candidates: expected favmac.universe.Candidates (from candidate_sets); got {type(candidates).__name__}")
    n_patients, n_codes = session.probs.shape
    universe = session.universe
    if candidates.universe != universe or candidates.n_patients != n_patients:
        raise ValueError(f"candidates: built for the {candidates.universe!r} universe and {candidates.n_patients} patients; "
                         f"this replay has the {universe!r} universe and {n_patients} patients. Build them with "
                         "candidate_sets(probs, value, cost, universe) of this replay's inputs")
    return candidates


def _compiled_choice(cands, realized, bounds, cost, value):
    """The bounds as an int64 array when :func:`~favmac.replay_kernels.choose_prefixes` can choose the
    sets (nested sequences, additive cost and value, integer realized costs and bounds within int64), else None."""
    if not (cands.nested and is_additive(cost) and is_additive(value)) or np.dtype(realized.dtype).kind != "i":
        return None
    if any(not -INT64_LIMIT < bound < INT64_LIMIT for bound in bounds):
        return None
    return np.array(bounds, dtype=np.int64)
