"""The calibration state of a program under one settings version, kept up to date event by event.

A program (docs/method.md "Programs: a standing FavMac in a store") is FavMac running for months: labelled
patients given at creation (the history), then batches of new patients to predict and, weeks
later, their confirmed codes. :class:`ProgramState` is what the program knows at any moment,
derived from its events only:

* **history** (:meth:`ProgramState.add_history`): the first R patients are the recalibration fold
  when the settings have one (the per-code maps are fitted on them; they never calibrate); the rest
  are burn-in: they calibrate from the start, in their order, and never move an adaptive target;
* **predict** (:meth:`ProgramState.decide`, then :meth:`ProgramState.add_predicted`): every patient
  of a batch gets its set from the thresholds current when the batch arrives: for each grouping the
  threshold of its group (each group of each grouping is calibrated on its own patients only; no
  grouping: one pooled calibration), and the smallest of them;
* **label** (:meth:`ProgramState.add_labels`): confirmed codes of predicted patients. Each joins the
  calibration of its groups; with an adaptive target its group's target moves by
  gamma (c - C_i), C_i the realized cost of the set it was given (under these settings).

This is exactly :func:`favmac.replay` over the history followed by the predicted patients in
prediction order, with the history as the stream's head (its first R the fold, the rest burn-in)
and ``label_available_at[i]`` the stream position of the last patient predicted before patient i's
label event (never, for a label still pending): between two predict batches nothing is queried,
so every label that arrives there joins "after the prediction of the last patient predicted
before it". Labels arriving at one position join in stream order (replay's rule), which only a
rolling window can see: a window holds the W latest patients by (arrival, stream position) —
:class:`_Part` keeps its members sorted by that key, so label batches may come in any order.

Cost of the steps (b patients in a batch, K codes, n calibration points in a part, G groupings):
a predict batch O(b K log K) for the candidate sets plus O(G (distinct groups) log n) thresholds
(a part's threshold is kept until its points change); a label batch O(b K log K) plus, per part,
one sorted run of its new points (:class:`~favmac.store.runs.SortedRuns`: O(b K log(b K)) numpy,
merged log-structured, amortized O(b K log n)); with a window, also one run of the points it
pushes out, and O(b log W) Python for the window's members.

The threshold arithmetic is :class:`favmac.FavMac`'s (the same exact integers at the costs' decimal
scale, :func:`~favmac.thresholds.expected_margin`, :func:`~favmac.thresholds.violation_rank`, the
strict search of T_c), part by part, on :class:`~favmac.store.runs.SortedRuns` instead of a
:class:`~favmac.quantile_tree.QuantileTree` (the same exact answers; tests/store/test_runs.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from sortedcontainers import SortedList

from ..adaptive import AdaptiveTarget
from ..costs import exact_costs
from ..protocols import is_set_cost
from ..recalibration import fit_recalibration
from ..runspec import RunSpec, SettingsError
from ..thresholds import calibration_points, exact, expected_margin, rank_edge, violation_rank, violation_scores
from ..universe import candidate_sets
from .members import BatchMembers, labels_of
from .runs import SortedRuns

__all__ = ["Decisions", "ProgramState", "check_program_spec", "segment_columns"]

_POOLED = (-1, "")  # the part of a program without groupings
JOIN_CHUNK = 32_768  # patients whose calibration points are computed at once


def segment_columns(spec: RunSpec) -> list:
    """The grouping columns of a spec, in order ([] for none)."""
    if spec.segment is None:
        return []
    return [spec.segment] if isinstance(spec.segment, str) else list(spec.segment)


def check_program_spec(spec: RunSpec, codes, history_size: int) -> RunSpec:
    """``spec`` as a program runs it, or a SettingsError naming the field.

    A program runs one target; its labels arrive as label events (so no ``label_delay`` or
    ``label_available_column``); its burn-in is the history after the fold (``burn_in`` is set to
    ``history_size - R``); the unsupported-payment cost is refused (its C_max depends on the cells
    of every patient the program will ever see).
    """
    if not isinstance(spec, RunSpec):
        raise SettingsError("spec", f"must be a favmac.RunSpec; got {type(spec).__name__}")
    if len(spec.targets) != 1:
        raise SettingsError("targets", f"a program runs one target; got {len(spec.targets)} "
                            f"({', '.join(f'{t:g}' for t in spec.targets[:5])}). Give one target")
    if spec.label_delay is not None or spec.label_available_column is not None:
        field_name = "label_delay" if spec.label_delay is not None else "label_available_column"
        raise SettingsError(field_name, "is not used by a program: its labels arrive as label events (program.label); "
                            "leave it unset")
    if spec.cost_kind == "cms_unsupported":
        raise SettingsError("cost_kind", "cms_unsupported cannot be used by a program yet: its C_max depends on the cells "
                            "of every patient the program will see. Choose fp or weighted_fp")
    # recalibrate="auto" (RunSpec's default): the labelled data the program starts from decide, once
    # (docs/method.md "Recalibration on a split", Default: a fold of R = 1,000 when the history holds >= 3,000
    # patients). The program's own burn-in is the rest of the history, so the spec's is not in the rule.
    spec = spec.replace(burn_in=0).with_default_fold(history_size).replace(burn_in=spec.burn_in)
    fold = spec.recalibrate or 0
    if isinstance(fold, str):
        raise SettingsError("recalibrate", f"must be a whole number of fold patients, \"auto\" or None; got {fold!r}")
    if fold > history_size:
        raise SettingsError("recalibrate", f"R = {fold} fold patients, but the program's history holds {history_size} "
                            "labelled patients; use R <= the history's size, or leave recalibrate unset")
    spec = spec.replace(burn_in=history_size - fold)
    return spec.validate(n_codes=len(codes))


def _rows_by_part(groups, n: int):
    """(part key, rows in order) of every part the n patients belong to: the pooled part's, or one per
    group of each grouping (``groups``: per grouping, the (n,) labels)."""
    if not groups:
        yield _POOLED, np.arange(n)
        return
    for g, labels in enumerate(groups):
        names, inverse = np.unique(np.asarray(labels), return_inverse=True)
        inverse = inverse.ravel()
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(len(names) + 1))
        for i, name in enumerate(names.tolist()):
            yield (g, name), order[bounds[i] : bounds[i + 1]]


@dataclass
class Decisions:
    """The sets chosen for a predict batch, before they are recorded.

    Attributes
    ----------
    chosen : ndarray (b, K) bool
        Each patient's set, in the program's code order.
    index : ndarray (b,) int
        The chosen candidate (0 = the empty set).
    thresholds : ndarray (b,)
        The threshold each patient's set was chosen under (the smallest of its groups').
    by_grouping : dict
        Grouping column -> (b,) that grouping's threshold of each patient (empty without groupings).
    targets : ndarray (b,)
        The target in force (c_n with an adaptive target, else c).
    probs : ndarray (b, K)
        The probabilities the sets were chosen from (through the recalibration maps, if any).
    """

    chosen: np.ndarray
    index: np.ndarray
    thresholds: np.ndarray
    by_grouping: dict
    targets: np.ndarray
    probs: np.ndarray


@dataclass
class _Part:
    """The calibration of one group of one grouping (or the pooled stream): its points and size, the
    window's members by (arrival, stream position) with their points, and its adaptive target (an
    integer at the rule's scale).

    The points: a :class:`~favmac.store.runs.SortedRuns` (batches of points as sorted numpy runs, exact
    integer sums at the costs' scale; a window's pushed-out patients as runs of negative weights).
    ``points`` holds a window member's points (keys, weights) until it is pushed out. ``cached`` is the
    last threshold computed, with the (size, target) it was computed at; any change of the points
    clears it."""

    tree: SortedRuns
    current: int | None
    count: int = 0
    members: SortedList | None = None
    points: dict = field(default_factory=dict)
    cached: tuple | None = None

    @property
    def size(self) -> int:
        return self.count if self.members is None else len(self.members)


@dataclass
class _Batch:
    """Patients of one event after the fold, as the state needs them again when their labels come."""

    ids: np.ndarray
    probs: np.ndarray  # (b, K), through the maps
    members: BatchMembers
    groups: list  # per grouping: (b,) labels
    positions: np.ndarray  # stream positions (after the fold)
    chosen: np.ndarray | None  # predicted: the chosen candidate under these settings
    labelled: np.ndarray  # (b,) bool


class ProgramState:
    """The state of a program under the settings ``spec`` (checked with :func:`check_program_spec`).

    Parameters
    ----------
    spec : RunSpec
    codes : list of str
        The program's codes, in the order of every probability and label array.
    """

    def __init__(self, spec: RunSpec, codes):
        self.spec = spec
        self.codes = [str(c) for c in codes]
        self.n_codes = len(self.codes)
        self.columns = segment_columns(spec)
        self.delta = spec.control_delta
        self.target = float(spec.targets[0])
        self.fold = spec.recalibrate or 0
        try:
            _, cost = spec.build(self.codes, None)
        except SettingsError:
            raise
        except ValueError as err:  # e.g. the payment value on codes that are no HCCs: the settings, not the data
            field = "cms_model" if spec.value_kind == "cms_payment" else "value_kind"
            raise SettingsError(field, f"{spec.value_kind} cannot be used with the program's codes: {err}") from None
        if is_set_cost(cost):
            raise SettingsError("cost_kind", "a set cost cannot be used by a program yet")
        self.costs = exact_costs(cost, self.n_codes, None)
        self.rule = None if spec.adaptive_rate is None else AdaptiveTarget(self.target, spec.adaptive_rate, self.costs.scale)
        self.maps = None
        self.parts: dict = {}
        self.batches: list[_Batch] = []
        self.where: dict = {}  # predicted patient id -> (batch number, row)
        self.history_ids: set = set()  # the history's patients (fold and burn-in)
        self.n_stream = 0  # stream positions given so far (after the fold)
        self.n_predicted = 0
        self.n_labelled = 0  # predicted patients whose labels arrived

    # ------------------------------------------------------------------ parts
    def _part(self, key) -> _Part:
        part = self.parts.get(key)
        if part is None:
            part = _Part(SortedRuns(), None if self.rule is None else self.rule.start,
                         members=SortedList() if self.spec.window is not None else None)
            self.parts[key] = part
        return part

    def _peek(self, key) -> _Part:
        """The part of ``key`` without creating it (an empty one for a group never seen)."""
        return self.parts.get(key) or _Part(SortedRuns(), None if self.rule is None else self.rule.start)

    def target_of(self, part: _Part):
        """The target in force in a part (exact)."""
        return exact(self.target) if self.rule is None else self.rule.as_fraction(part.current)

    def threshold_of(self, part: _Part) -> float:
        """The part's threshold now (docs/method.md "Thresholds"; -inf when the part is too small for the target)."""
        n = part.size
        if part.cached is not None and part.cached[0] == (n, part.current):
            return part.cached[1]
        value = self._threshold(part, n)
        part.cached = ((n, part.current), value)
        return value

    def _threshold(self, part: _Part, n: int) -> float:
        if self.delta is None:
            margin = expected_margin(self.target_of(part), self.costs.c_max, n)
            if margin < 0:
                return -math.inf
            scaled = margin * self.costs.scale  # F > M <=> F * scale > floor(M * scale): the weights are integers at the scale
            return part.tree.search_greater(scaled.numerator // scaled.denominator)
        k = violation_rank(self.delta, n)
        edge = rank_edge(k, n)
        if not math.isnan(edge):
            return edge
        return part.tree.search_greater(n - k)

    def part_keys(self) -> list:
        """Keys of the parts: (grouping index, label), or the pooled part's."""
        return sorted(self.parts)

    # ------------------------------------------------------------------ batches
    def _groups_of(self, members: BatchMembers, batch: str, first_row: int = 0) -> list:
        return [labels_of(members, column, batch=batch, first_row=first_row) for column in self.columns]

    def _build(self, probs, members: BatchMembers):
        """(candidates, cost) of patients with these (mapped) probabilities and member context."""
        value, cost = self.spec.build(self.codes, members.for_value(len(probs), self.spec.cms_segment))
        return candidate_sets(probs, value, cost, self.spec.universe), cost

    def _mapped(self, probs, groups) -> np.ndarray:
        if self.maps is None:
            return probs
        segments = groups[0] if self.spec.recalibrate_by == "segment" else None
        return self.maps.apply(probs, groups=segments)

    def add_history(self, ids, probs, labels, members: BatchMembers, *, batch: str = "history") -> None:
        """The labelled patients a program starts from: the fold (its first R), then burn-in."""
        ids = np.asarray(ids, dtype=object)
        groups = self._groups_of(members, batch)
        fold = self.fold
        if fold:
            segments = groups[0] if self.spec.recalibrate_by == "segment" else None
            self.maps = fit_recalibration(probs[:fold], labels[:fold], self.spec.recalibration, codes=self.codes,
                                          by=self.spec.recalibrate_by, groups=None if segments is None else segments[:fold])
        rest = slice(fold, None)
        groups = [labels[rest] for labels in groups]
        kept = members.take(rest)
        mapped = self._mapped(probs[rest], groups)
        number = len(self.batches)
        n = len(mapped)
        batch_state = _Batch(ids[rest], mapped, kept, groups, self.n_stream + np.arange(n), None, np.ones(n, dtype=bool))
        self.batches.append(batch_state)
        self.history_ids.update(ids.tolist())  # the fold's and the burn-in's: known, never predicted
        self.n_stream += n
        self._join(mapped, labels[rest], kept, groups, batch_state.positions, arrival=-1, chosen=None)

    def decide(self, probs, members: BatchMembers, *, batch: str = "batch") -> Decisions:
        """The sets of a new batch under the current thresholds (changes nothing). O(b K log K)."""
        groups = self._groups_of(members, batch)
        mapped = self._mapped(probs, groups)
        cands, _ = self._build(mapped, members)
        n = len(mapped)
        thresholds = np.full(n, math.inf)
        targets = np.full(n, self.target)
        by_grouping = {}
        if self.columns:
            for g, (column, labels) in enumerate(zip(self.columns, groups)):
                names, inverse = np.unique(labels.astype(str), return_inverse=True)
                parts = [self._peek((g, name)) for name in names.tolist()]
                values = np.array([self.threshold_of(part) for part in parts])[inverse.ravel()]
                by_grouping[column] = values
                thresholds = np.minimum(thresholds, values)
                if self.rule is not None and g == 0:
                    targets = np.array([float(self.target_of(part)) for part in parts])[inverse.ravel()]
        else:
            part = self._peek(_POOLED)
            thresholds[:] = self.threshold_of(part)
            targets[:] = float(self.target_of(part))
        index = cands.choose(thresholds, self.spec.score)
        return Decisions(cands.masks(index), np.asarray(index, dtype=np.int64), thresholds, by_grouping, targets, mapped)

    def add_predicted(self, ids, members: BatchMembers, decisions: Decisions, *, batch: str = "batch") -> None:
        """Record a predicted batch (its decisions from :meth:`decide` on the same state). O(b)."""
        ids = np.asarray(ids, dtype=object)
        n = len(ids)
        groups = self._groups_of(members, batch)
        number = len(self.batches)
        self.batches.append(_Batch(ids, decisions.probs, members, groups, self.n_stream + np.arange(n),
                                   decisions.index, np.zeros(n, dtype=bool)))
        for row, patient in enumerate(ids.tolist()):
            self.where[patient] = (number, row)
        self.n_stream += n
        self.n_predicted += n

    def add_labels(self, ids, labels) -> None:
        """Confirmed codes of predicted, not yet labelled patients (checked by the caller)."""
        places = [self.where[patient] for patient in np.asarray(ids, dtype=object).tolist()]
        numbers = np.array([number for number, _ in places], dtype=np.int64)
        rows = np.array([row for _, row in places], dtype=np.int64)
        labels = np.asarray(labels, dtype=bool)
        # gather the patients batch by batch, then join them in stream order (replay's order for labels
        # arriving at one position)
        probs, members, groups, positions, chosen, given = [], [], [[] for _ in self.columns], [], [], []
        for number in np.unique(numbers).tolist():
            picked = np.flatnonzero(numbers == number)
            batch_state = self.batches[number]
            here = rows[picked]
            batch_state.labelled[here] = True
            probs.append(batch_state.probs[here])
            members.append((batch_state.members.take(here), len(here)))
            for g in range(len(self.columns)):
                groups[g].append(batch_state.groups[g][here])
            positions.append(batch_state.positions[here])
            chosen.append(batch_state.chosen[here])
            given.append(labels[picked])
        positions = np.concatenate(positions)
        order = np.argsort(positions, kind="stable")
        self._join(np.concatenate(probs)[order], np.concatenate(given)[order],
                   BatchMembers.concatenate(members, self.n_codes).take(order),
                   [np.concatenate(g)[order] for g in groups], positions[order],
                   arrival=self.n_stream - 1, chosen=np.concatenate(chosen)[order])
        self.n_labelled += len(positions)

    def _join(self, probs, labels, members: BatchMembers, groups, positions, *, arrival: int, chosen) -> None:
        """Patients whose labels arrived (in stream order) join the calibration of their parts.

        Their points are computed :data:`JOIN_CHUNK` patients at a time (the temporaries are several
        (chunk, K) arrays, as in a replay), then each part takes all of its new points as one run (a
        window slides chunk by chunk: the same W latest in the end)."""
        n = len(probs)
        if not n:
            return
        window = self.spec.window
        pending: dict = {}  # part -> [(keys, weights)] of its positive points, chunk by chunk
        for start in range(0, n, JOIN_CHUNK):
            rows = slice(start, min(n, start + JOIN_CHUNK))
            cands, cost = self._build(probs[rows], members.take(rows))
            realized = self.costs.realized(cands, labels[rows], cost)
            if self.delta is None:
                keys, increments = calibration_points(cands, realized, self.spec.score)  # integers at the costs' scale
            else:
                keys = violation_scores(cands, realized, self.costs.bound(self.target), self.spec.score)[:, None]
                increments = np.ones(keys.shape, dtype=np.int64)  # counts
            paid = None if chosen is None or self.rule is None else \
                realized[np.arange(len(keys)), chosen[rows]]
            del realized, cands
            for key, part_rows in _rows_by_part([labels_g[rows] for labels_g in groups], len(keys)):
                part = self._part(key)
                part.count += len(part_rows)
                part.cached = None
                if window is None:
                    whole = len(part_rows) == len(keys)  # the pooled part (or one group): no gather
                    part_keys, part_weights = (keys, increments) if whole else (keys[part_rows], increments[part_rows])
                    positive = part_weights > 0
                    pending.setdefault(key, []).append((part_keys[positive], part_weights[positive]))
                else:
                    self._slide(part, part_rows, keys, increments, positions[rows], arrival)
                if paid is not None:  # in stream order within the part
                    for value in paid[part_rows].tolist():
                        part.current = self.rule.step(part.current, int(value))
        for key, pieces in pending.items():  # each part's points go in at once, as one sorted run
            weights = [w for _, w in pieces]
            self.parts[key].tree.add(np.concatenate([k for k, _ in pieces]),
                                     np.concatenate(weights) if len(weights) > 1 else weights[0])

    def _slide(self, part: _Part, rows, keys, increments, positions, arrival: int) -> None:
        """A window's part takes the patients ``rows`` (in stream order): it keeps the W latest by (arrival,
        stream position). Added one by one, each past W would push the oldest out; the end is the same
        as keeping the W largest keys of old and new members at once (a patient pushed out was the
        smallest then and stays below every later survivor), so the new survivors' points are added in
        one run and the pushed-out old members' points removed in one run."""
        new = [(arrival, int(positions[row])) for row in rows.tolist()]
        members = part.members
        members.update(new)
        out = set()
        while len(members) > self.spec.window:
            out.add(members.pop(0))
        kept = [i for i, order_key in enumerate(new) if order_key not in out]
        if kept:
            chosen = rows[kept]
            point_keys, point_weights = keys[chosen], increments[chosen]
            positive = point_weights > 0
            part.tree.add(point_keys[positive], point_weights[positive])
            for i, row in zip(kept, chosen.tolist()):
                mask = increments[row] > 0
                part.points[new[i]] = (keys[row][mask], increments[row][mask])
        gone = [part.points.pop(order_key) for order_key in out if order_key in part.points]
        if gone:
            part.tree.remove(np.concatenate([k for k, _ in gone]), np.concatenate([w for _, w in gone]))

    # ------------------------------------------------------------------ reading
    def is_known(self, patient) -> bool:
        return patient in self.where or patient in self.history_ids

    def is_predicted(self, patient) -> bool:
        place = self.where.get(patient)
        return place is not None and place[0] >= 0 and self.batches[place[0]].chosen is not None

    def is_labelled(self, patient) -> bool:
        place = self.where.get(patient)
        return place is not None and place[0] >= 0 and bool(self.batches[place[0]].labelled[place[1]])

    def current_thresholds(self) -> dict:
        """Part -> (threshold, target in force, calibration size), for status and the timeline."""
        out = {}
        for key in self.part_keys():
            part = self.parts[key]
            out[key] = (self.threshold_of(part), float(self.target_of(part)), part.size)
        return out

    def pooled_threshold(self) -> float:
        """The threshold of a new patient without groupings (NaN with groupings: it depends on the groups)."""
        if self.columns:
            return math.nan
        return self.threshold_of(self._peek(_POOLED))

    def check_columns(self, members: BatchMembers, batch: str) -> None:
        """A DataError unless ``members`` hold every grouping column these settings use, with no empty label."""
        self._groups_of(members, batch)
