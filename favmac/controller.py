"""FavMac: the online value-maximizing controller with conformal cost control."""
from __future__ import annotations

import math
from collections import deque
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from .functions import false_flag_weights
from .protocols import bind_rows, cost_for_value, is_additive
from .quantile_tree import QuantileTree
from .recalibration import (DEFAULT_RECALIBRATE_BY, DEFAULT_RECALIBRATION, Recalibration, SegmentRecalibration, check_recalibrate,
                            check_recalibrate_by, check_recalibration, fit_recalibration)
from .adaptive import AdaptiveTarget, check_adaptive_rate
from .costs import exact_costs
from .segments import check_group_labels, group_rows
from .thresholds import (
    calibration_points,
    exact,
    expected_margin,
    rank_edge,
    violation_rank,
    violation_scores,
)
from .scores import check_score, default_score
from .universe import DEFAULT_UNIVERSE, candidate_sets, check_universe
from .validation import aligned_labels, check_c_max, check_delta, check_labels, check_probs, check_target, check_window, name_pairing

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FavMac"]

_INF = math.inf


class FavMac:
    """Online FavMac: prediction sets that maximize value with controlled cost.

    Constructing only stores and checks the settings (a bad one is a ValueError naming it);
    the calibration state is built by :meth:`reset` or on first use. ``update`` adds labelled
    patients, ``threshold`` is calibrated on everything added so far, ``predict`` chooses sets.

    Parameters
    ----------
    value, cost : value and cost functions (``AdditiveValue``/``FormulaValue``, ``AdditiveCost``)
        Or ``FavMac(spec)``: a :class:`~favmac.runspec.RunSpec` of one target says the whole controller
        (:meth:`of`, which also takes the data's ``codes`` for the CMS payment value).
    target : float
        Target cost c, in the cost's own units.
    delta : float or None
        None: expected-cost control, E[C] <= c. A float in (0, 1): violation control,
        P(C > c) <= delta.
    universe : {"ratio", "prob", "value", "full"}
    c_max : float, optional
        Largest possible cost (default: the sum of the cost weights).
    window : int, optional
        Keep only the last ``window`` patients (rolling window for distribution shift).
    score : {"cost", "price"} or None
        What the threshold is on: the cumulative cost proxy Chat (the paper's rule, every
        patient gets the same false-flag budget) or the price score (running max of the
        step prices Chat increment / Vhat increment: one budget spent across patients where
        each flag is most likely to pay off). "price" needs a nested universe (not "full").
        None (the default): :func:`favmac.scores.default_score` — "price" under expected-cost
        control, "cost" under violation control (but "price" when the target is below the
        cheapest false flag's cost) and on the "full" universe.
    n_codes : int, optional
        Number of codes K. Known from the first ``update``/``predict`` otherwise; give it
        when the threshold is needed before any patient is seen (it fixes C_max).
    adaptive_rate : float, optional
        gamma > 0: the adaptive target under drift (expected-cost control only,
        :mod:`favmac.adaptive`). Each ``update`` first chooses the patient's set with
        ``predict`` at that moment, then moves the target c_n by gamma (c - C_n), C_n that
        set's realized cost; :attr:`current_target` is c_n.
    recalibrate : int, optional
        R >= 50: the first R patients given to ``update`` form a recalibration fold
        (:mod:`favmac.recalibration`; docs/method.md "Recalibration on a split"). They never join the
        calibration data; at the R-th the per-code maps are fitted (:attr:`recalibration_maps`)
        and from then on every patient's probabilities are mapped, in ``update``, ``predict``
        and ``explain``. Before the fold is complete ``predict`` and ``explain`` raise (a fold
        patient gets no prediction); ``threshold`` is that of no calibration patient.
    recalibration : {"platt", "isotonic", "platt_tested"} or Recalibration
        The map fitted on the fold (default "platt"); or maps fitted earlier (e.g.
        ``Recalibration.from_dict`` of a settings file), applied from the start with no fold.
    recalibrate_by : {"code", "segment"}
        "segment": one map per code and segment (the pooled map where a segment's fold is too
        small; :class:`favmac.recalibration.SegmentRecalibration`); ``update`` and ``predict``
        then need ``group`` (one grouping) and ``explain`` is refused.

    Notes
    -----
    Segments (:mod:`favmac.segments`): ``update(p, y, group=g)`` also calibrates the
    segment's own threshold, :meth:`threshold_for` (and ``predict(p, group=g)``) uses it. The
    pooled :attr:`threshold` is calibrated on every patient; with ``adaptive_rate`` each
    segment has its own c_n, and the pooled c_n moves only with updates given no ``group``.
    Several groupings: a *tuple* gives one label per grouping, ``group=(plan, band)`` (for a
    batch, a tuple of per-row arrays); the threshold is the smallest of the groups'
    thresholds (docs/method.md "Several groupings at once"). A plain label (or a list/array of one
    label per row) is the first grouping's. The adaptive target takes one grouping only.

    Examples
    --------
    >>> import numpy as np
    >>> from favmac import AdditiveValue, AdditiveCost
    >>> fm = FavMac(AdditiveValue(), AdditiveCost(), target=1.5, n_codes=3)
    >>> fm.threshold  # no calibration yet: (0 + C_max) / 1 = 3 > 1.5
    -inf
    >>> fm.update(np.array([[0.9, 0.2, 0.6]]), np.array([[1, 0, 0]])).threshold  # on the price score
    0.6666666666666667
    >>> fm.predict([0.95, 0.1, 0.5]).tolist()
    [True, False, False]
    >>> seg = FavMac(AdditiveValue(), AdditiveCost(), target=1.5, n_codes=3)
    >>> seg.update([[0.9, 0.2, 0.6]], [[1, 0, 0]], group="north").threshold_for("north"), seg.threshold_for("south")
    (0.6666666666666667, -inf)
    >>> seg.update([[0.8, 0.1, 0.7]], [[1, 0, 1]], group=("north", "75+")).threshold_for(("north", "75+"))
    4.0
    """

    def __init__(self, value, cost=None, target=None, *, delta=None, universe: str = DEFAULT_UNIVERSE, c_max=None, window=None,
                 n_codes=None, score: str | None = None, adaptive_rate=None, recalibrate=None,
                 recalibration=DEFAULT_RECALIBRATION, recalibrate_by=DEFAULT_RECALIBRATE_BY):
        from .runspec import RunSpec

        if isinstance(value, RunSpec):  # FavMac(spec): the spec says every setting
            given = {"cost": cost, "target": target, "delta": delta, "c_max": c_max, "window": window, "score": score,
                     "adaptive_rate": adaptive_rate, "recalibrate": recalibrate}
            extra = [name for name, v in given.items() if v is not None]
            if extra or universe != DEFAULT_UNIVERSE or recalibration != DEFAULT_RECALIBRATION or \
                    recalibrate_by != DEFAULT_RECALIBRATE_BY:
                raise ValueError(f"spec: a RunSpec says every setting; leave {', '.join(extra) or 'the keywords'} unset "
                                 "(or change the spec with spec.replace(...))")
            self.__init__(**_spec_arguments(value, None, None, n_codes))
            return
        if cost is None or target is None:
            raise TypeError("FavMac(value, cost, target, ...) or FavMac(spec): give the cost and the target, or a RunSpec")
        if n_codes is not None and (isinstance(n_codes, bool) or int(n_codes) != n_codes or n_codes < 1):
            raise ValueError(f"n_codes: expected None or a positive number of codes, got {n_codes!r}")
        check_universe(universe, 0 if n_codes is None else int(n_codes))
        self.value = value
        self.cost = cost
        self.target = check_target(target)
        self.delta = check_delta(delta)
        self.universe = universe
        self._n_codes_arg = n_codes
        self.score = check_score(self._default_score() if score is None else score, universe)
        self.c_max = check_c_max(c_max)
        self.window = check_window(window)
        self.adaptive_rate = check_adaptive_rate(adaptive_rate, self.delta)
        self.recalibrate = check_recalibrate(recalibrate, window=self.window)
        fitted = isinstance(recalibration, (Recalibration, SegmentRecalibration))
        if fitted and self.recalibrate is not None:
            raise ValueError("recalibration: fitted maps are applied as they are; leave recalibrate=None with them")
        self.recalibration = recalibration if fitted else check_recalibration(recalibration)
        self.recalibrate_by = check_recalibrate_by(recalibrate_by)
        self._n_codes_arg = n_codes

    @classmethod
    def of(cls, spec, codes=None, members=None) -> "FavMac":
        """The controller a :class:`~favmac.runspec.RunSpec` of one target describes: its value and cost
        (``spec.build(codes, members)``), control, universe, score, window, C_max (``largest_cost``), adaptive rate and
        fold (``recalibrate="auto"`` is none here: the data decide it only for a whole stream, :func:`favmac.replay`).

        >>> from favmac import RunSpec
        >>> FavMac.of(RunSpec(targets=(1.5,), control="violation", delta=0.2)).delta
        0.2
        """
        return cls(**_spec_arguments(spec, codes, members, None if codes is None else len(codes)))

    def _default_score(self) -> str:
        """:func:`favmac.scores.default_score` of this controller's universe, control, target and cost."""
        return default_score(self.universe, self.delta, self.target, false_flag_weights(self.cost, self._n_codes_arg))

    # -------------------------------------------------------------- bookkeeping
    #: The calibration state: built by reset(), which the first use calls (see __getattr__).
    _STATE = frozenset({"_n_codes", "_tree", "_history", "_costs", "_segments", "_rule", "_current", "_fold", "_maps",
                        "_code_names"})

    def __getattr__(self, name):
        # called only for an attribute not set yet: the state, before the first reset()
        if name in FavMac._STATE:
            self.reset()
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def reset(self) -> "FavMac":
        """Forget every calibration patient (settings and a given ``n_codes`` stay). Returns self."""
        self._n_codes: int | None = None
        self._tree = QuantileTree()
        self._history: deque = deque()
        self._costs = None  # ExactCosts or SetCosts (favmac.costs.exact_costs)
        self._segments: dict = {}
        self._rule: AdaptiveTarget | None = None
        self._current: int | None = None  # c_n * rule.scale
        self._fold: list = []  # the recalibration fold's (probs, labels) so far
        self._maps = None if isinstance(self.recalibration, str) else self.recalibration
        self._code_names: list | None = None  # the columns of the first DataFrame seen (_by_code)
        if self._n_codes_arg is not None:
            self._know_codes(int(self._n_codes_arg))
        return self

    def _by_code(self, probs, name: str = "probs"):
        """``probs`` with its codes in the order of the first DataFrame (or Series) FavMac saw: a frame's columns
        (a Series' index) name the codes, and a frame with the same codes in another order is reordered, not read
        by position; codes with no name in common with the first frame's pair by position (as arrays do); a frame
        sharing some codes but not all is a ValueError naming one (:func:`favmac.validation.name_pairing`)."""
        is_frame = hasattr(probs, "columns") and hasattr(probs, "reindex")
        is_series = not is_frame and hasattr(probs, "index") and hasattr(probs, "reindex") and np.ndim(probs) == 1
        if not (is_frame or is_series):
            return probs
        names = list(probs.columns if is_frame else probs.index)
        if self._code_names is None:
            if len(set(names)) == len(names):
                self._code_names = names
            return probs
        known = self._code_names
        try:
            pairing = name_pairing(names, known)
        except ValueError as err:
            raise ValueError(f"{name}: a DataFrame's columns name the codes, and they differ from the codes FavMac "
                             f"first saw ({', '.join(map(str, known[:10]))}): {err}") from None
        if pairing != "reorder":
            return probs
        return probs[known] if is_frame else probs.reindex(known)

    def _know_codes(self, n_codes: int) -> None:
        if self._n_codes is None:
            check_universe(self.universe, n_codes)
            self._n_codes = n_codes
            self._costs = exact_costs(self.cost, n_codes, self.c_max)
            if self.adaptive_rate is not None:
                self._rule = AdaptiveTarget(self.target, self.adaptive_rate, self._costs.scale)
                self._current = self._rule.start

    @property
    def n_codes(self) -> int | None:
        """Number of codes K (None until given or seen in the first update/predict)."""
        return self._n_codes

    @property
    def n_calibration(self) -> int:
        """Number of labelled patients the threshold is calibrated on."""
        return len(self._history)

    @property
    def recalibration_maps(self) -> Recalibration | None:
        """The per-code maps in use (None before the recalibration fold is complete, or without one)."""
        return self._maps

    @property
    def n_fold(self) -> int:
        """Patients in the recalibration fold so far (R once the maps are fitted; 0 without a fold)."""
        return sum(len(part) for part, _, _ in self._fold)

    def _past_fold(self, probs, labels, group, value=None):
        """The rows after the recalibration fold, their probabilities mapped, with their groups (each
        grouping's) and ``value`` bound to them; the fold's rows are kept until R have arrived, then
        the maps are fitted on them (docs/method.md "Recalibration on a split")."""
        if self._maps is None and self.recalibrate is not None:
            take = min(self.recalibrate - self.n_fold, probs.shape[0])
            segments = None
            if self.recalibrate_by == "segment":
                group = self._fold_segments(group, probs.shape[0])
                segments = group[:take]
            self._fold.append((probs[:take].copy(), labels[:take].copy(), segments))  # the caller may reuse its arrays
            if self.n_fold == self.recalibrate:
                self._maps = fit_recalibration(
                    np.concatenate([p for p, _, _ in self._fold]), np.concatenate([y for _, y, _ in self._fold]),
                    self.recalibration, by=self.recalibrate_by,
                    groups=None if segments is None else np.concatenate([g for _, _, g in self._fold]))
            if group is not None:
                rest = [labels_of[take:] for labels_of in self._groupings_of(group, probs.shape[0])]
                group = tuple(rest) if isinstance(group, tuple) else rest[0]
            if value is not None:
                value = bind_rows(value, slice(take, None))  # a value with per-patient context (CmsHccValue)
            probs, labels = probs[take:], labels[take:]
        if self._maps is not None and probs.shape[0]:
            probs = self._maps.apply(probs, groups=self._map_segments(group, probs.shape[0]))
        return probs, labels, group, value

    def _fold_segments(self, group, n_rows: int) -> np.ndarray:
        """The segment labels (N,) that maps per segment are fitted or applied with (one grouping)."""
        if group is None:
            raise ValueError("group: recalibrate_by='segment' needs each patient's segment in update() and predict() "
                             "(group=label or one per row)")
        if isinstance(group, tuple):
            if len(group) != 1:
                raise ValueError("group: recalibrate_by='segment' takes one grouping; got a tuple of several")
            group = group[0]
        return check_group_labels(group, n_rows, name="group")

    def _map_segments(self, group, n_rows: int):
        """``groups`` for ``maps.apply``: the patients' segments for maps fitted per segment, else None."""
        return self._fold_segments(group, n_rows) if isinstance(self._maps, SegmentRecalibration) else None

    def _mapped(self, probs, group=None):
        """``probs`` through the fitted maps; an error while the recalibration fold is incomplete."""
        if self._maps is None and self.recalibrate is not None:
            raise ValueError(f"recalibrate={self.recalibrate}: the first {self.recalibrate} patients given to update() "
                             f"fit the maps and get no prediction; {self.n_fold} given so far, so there is nothing to "
                             "predict with yet")
        return probs if self._maps is None else self._maps.apply(probs, groups=self._map_segments(group, probs.shape[0]))

    @property
    def c_max_exact(self) -> Fraction | None:
        """C_max as an exact fraction (None while K is unknown)."""
        return None if self._costs is None else self._costs.c_max

    # -------------------------------------------------------------- learning
    def update(self, probs, labels, group=None, *, adapt: bool = True, value=None) -> "FavMac":
        """Add labelled patient(s): probs, labels of shape (K,) or (N, K). Returns self.

        Parameters
        ----------
        probs, labels : array (K,) or (N, K)
        group : label, array (N,) or tuple, optional
            Segment of each patient: it also joins that segment's calibration data. A tuple
            holds one label (or array (N,)) per grouping.
        adapt : bool
            With ``adaptive_rate``: False for calibration-only patients (a burn-in), whose
            sets do not move the adaptive target.
        value : value function, optional
            The controller's value bound to these patients, for values with per-patient
            context (e.g. ``payment.take(rows)`` of a ``CmsHccValue`` with a cell and known codes
            per patient); default the controller's own value.
        """
        labels = aligned_labels(probs, labels)
        probs = self._by_code(probs)
        labels = aligned_labels(probs, labels)  # again, after a reorder of probs' columns
        probs = check_probs(probs, self._n_codes, batch=True)
        labels = check_labels(labels, probs.shape)
        self._know_codes(probs.shape[1])
        probs, labels, group, value = self._past_fold(probs, labels, group, value)
        if probs.shape[0] == 0:
            return self
        if group is not None:
            for grouping, groups in enumerate(self._groupings_of(group, probs.shape[0])):
                for label, rows in group_rows(groups):
                    self._segment(label, grouping).update(probs[rows], labels[rows], adapt=adapt,
                                                          value=None if value is None else bind_rows(value, rows))
            adapt = False  # the pooled target moves with ungrouped updates only
        cost = self._cost_for(value)
        cands = candidate_sets(probs, self.value if value is None else value, cost, self.universe)
        realized = self._costs.realized(cands, labels, cost)
        if self._rule is not None and adapt:
            for row in range(probs.shape[0]):  # sequential: each set is chosen before its patient joins
                one = cands.subset(slice(row, row + 1))
                chosen = int(one.choose(self.threshold, self.score)[0])
                self._current = self._rule.step(self._current, int(realized[row, chosen]))
                self._insert(one, realized[row : row + 1])
            return self
        self._insert(cands, realized)
        return self

    def _cost_for(self, value):
        """The cost of the patients ``value`` is bound to: a set cost built on a value's member
        context (the unsupported payment) follows that value; other costs are returned as they are."""
        return cost_for_value(self.cost, value)

    def _insert(self, cands, realized) -> None:
        scale = self._costs.scale
        # an empty tree without a window takes a batch in one sorted build (QuantileTree.from_arrays: equal in every
        # query to inserting the points one by one), not one insert per point: a first update() of many patients
        bulk = not self._tree and self.window is None and len(realized) > 1
        if self.delta is None:
            keys, increments = calibration_points(cands, realized, self.score)
            if bulk:
                self._tree = QuantileTree.from_arrays(np.asarray(keys, dtype=float).reshape(-1),
                                                      np.asarray(increments).reshape(-1), scale)
            for row_keys, row_inc in zip(keys.tolist(), increments.tolist()):
                if not bulk:
                    self._tree.insert_many(row_keys, row_inc, scale)
                self._remember((row_keys, row_inc, scale))
        else:
            scores = violation_scores(cands, realized, self._costs.bound(self.target), self.score)
            if bulk:
                self._tree = QuantileTree.from_arrays(np.asarray(scores, dtype=float), np.ones(len(scores), dtype=np.int64), 1)
            for score in scores.tolist():
                if not bulk:
                    self._tree.insert(score, 1)
                self._remember(([score], [1], 1))

    def _groupings_of(self, group, n_rows: int) -> list:
        """The labels (N,) of each grouping in ``group`` (a tuple: one entry per grouping)."""
        if not isinstance(group, tuple):
            return [check_group_labels(group, n_rows, name="group")]
        if not group:
            raise ValueError("group: an empty tuple; give one label per grouping, e.g. group=(plan, age_band)")
        if self.adaptive_rate is not None and len(group) > 1:
            raise ValueError(f"group: the adaptive target (adaptive_rate) takes one grouping; got {len(group)} "
                             "(a tuple holds one label per grouping). Give one label, or leave adaptive_rate unset.")
        return [check_group_labels(g, n_rows, name=f"group[{i}]") for i, g in enumerate(group)]

    def _segment(self, label, grouping: int = 0) -> "FavMac":
        """The controller of one segment (created empty on first use); keyed by label in the
        first grouping, by (grouping, label) in the others."""
        label = check_group_labels([label], 1, name="group")[0]
        label = label if grouping == 0 else (grouping, label)
        if label not in self._segments:
            self._segments[label] = FavMac(self.value, self.cost, self.target, delta=self.delta,
                                           universe=self.universe, c_max=self.c_max, window=self.window,
                                           n_codes=self._n_codes, score=self.score, adaptive_rate=self.adaptive_rate)
        return self._segments[label]

    @property
    def segments(self) -> dict:
        """Segment label -> number of its calibration patients (the first grouping; the others
        are keyed (grouping, label), grouping counted from 1)."""
        return {label: fm.n_calibration for label, fm in sorted(self._segments.items(), key=lambda kv: str(kv[0]))
                if not isinstance(label, tuple)}

    def threshold_for(self, group) -> float:
        """Threshold of segment ``group``, calibrated on its patients only (-inf for an unseen segment
        unless the target allows every set with no data: c >= C_max). A tuple (one label per
        grouping) gives the smallest of its groups' thresholds."""
        if group is None:
            return self.threshold
        if isinstance(group, tuple):
            labels = [labels[0] for labels in self._groupings_of(tuple([g] for g in group), 1)]
            return min(self._threshold_in(label if i == 0 else (i, label)) for i, label in enumerate(labels))
        return self._threshold_in(check_group_labels([group], 1, name="group")[0])

    def _threshold_in(self, label) -> float:
        if label in self._segments:
            return self._segments[label].threshold
        if self._n_codes is None and self._n_codes_arg is None and self.c_max is None:
            return -_INF
        return FavMac(self.value, self.cost, self.target, delta=self.delta, universe=self.universe, c_max=self.c_max,
                      n_codes=self._n_codes, score=self.score, adaptive_rate=self.adaptive_rate).threshold

    def target_for(self, group) -> Fraction:
        """The target in force for segment ``group`` (its own c_n with ``adaptive_rate``; c for an unseen one)."""
        if group is None:
            return self.current_target
        if isinstance(group, tuple):  # one label per grouping
            if len(group) != 1:  # several: refused with adaptive_rate, so the target is c
                self._groupings_of(tuple([g] for g in group), 1)
                return exact(self.target)
            group = group[0]
        label = check_group_labels([group], 1, name="group")[0]
        return self._segments[label].current_target if label in self._segments else exact(self.target)

    @property
    def current_target(self) -> Fraction:
        """The target in force: c_n with ``adaptive_rate`` (exact), else c."""
        if self._rule is None:
            return exact(self.target)
        return self._rule.as_fraction(self._current)

    def _remember(self, points) -> None:
        """Keep a patient's points (keys, numerators, denominator) for the rolling window."""
        self._history.append(points)
        if self.window is not None and len(self._history) > self.window:
            self._tree.delete_many(*self._history.popleft())

    # -------------------------------------------------------------- threshold
    @property
    def threshold(self) -> float:
        """Current threshold T, calibrated on all patients added so far (may be +-inf)."""
        n = self.n_calibration
        if self.delta is None:
            if self._costs is None and self.c_max is None:
                return -_INF  # K (hence C_max) is unknown: give n_codes, or update/predict first
            c_max = self._costs.c_max if self._costs is not None else self.c_max
            margin = expected_margin(self.current_target, c_max, n)
            if margin < 0:
                return -_INF
            return self._tree.search_greater(margin)
        k = violation_rank(self.delta, n)
        edge = rank_edge(k, n)
        if not math.isnan(edge):
            return edge
        return self._tree.search_greater(n - k)  # the k-th largest T_i

    # -------------------------------------------------------------- prediction
    def predict(self, probs, group=None, *, value=None) -> np.ndarray:
        """Boolean mask(s) of the chosen set: (K,) for one patient, (N, K) for a batch.

        ``group`` (a label, or one per row; a tuple: one per grouping) uses each segment's
        threshold (:meth:`threshold_for`; the smallest over the groupings).
        ``value`` is the value bound to these patients (see :meth:`update`).
        """
        single = np.asarray(probs).ndim == 1
        probs = self._by_code(probs)
        probs = check_probs(probs, self._n_codes, batch=True)
        self._know_codes(probs.shape[1])
        probs = self._mapped(probs, group)
        cands = candidate_sets(probs, self.value if value is None else value, self._cost_for(value), self.universe)
        if group is None:
            thresholds = self.threshold
        else:
            per_grouping = self._groupings_of(group, probs.shape[0])
            thresholds = np.full(probs.shape[0], _INF)
            for grouping, groups in enumerate(per_grouping):
                known = {label: self._threshold_in(label if grouping == 0 else (grouping, label))
                         for label in set(groups.tolist())}
                thresholds = np.minimum(thresholds, [known[g] for g in groups.tolist()])
        masks = cands.masks(cands.choose(thresholds, self.score))
        return masks[0] if single else masks

    def explain(self, probs, codes=None, *, value=None) -> pd.DataFrame:
        """The greedy order for one patient and where the threshold cuts it.

        One row per step: rank, code, prob, value_weight, cost_weight, chat (cumulative cost
        proxy after adding the code), vhat (cumulative value proxy), score (the key compared
        with the threshold: chat, or the price score), selected. With recalibration ``prob``
        is the mapped probability g_k(p_k), the one the order and proxies use.
        """
        probs = self._mapped(check_probs(self._by_code(probs), self._n_codes, batch=True))
        if probs.shape[0] != 1:
            raise ValueError(f"probs: explain takes one patient's probabilities, shape (K,), got {probs.shape}")
        n_codes = probs.shape[1]
        if self.universe == "full":
            raise ValueError("explain shows a greedy order; the 'full' universe has none")
        codes = list(codes) if codes is not None else (
            [str(c) for c in self._code_names] if self._code_names is not None else [str(k) for k in range(n_codes)])
        if len(codes) != n_codes:
            raise ValueError(f"codes: expected {n_codes} code names, one per code, got {len(codes)}")
        value = self.value if value is None else value  # bound to this patient (see update)
        cands = candidate_sets(probs, value, self._cost_for(value), self.universe)
        chosen = int(cands.choose(self.threshold, self.score)[0])
        order = cands.order[0]
        import pandas as pd  # imported on use: pandas is slow to import
        return pd.DataFrame(
            {
                "rank": np.arange(1, n_codes + 1),
                "code": [codes[k] for k in order],
                "prob": probs[0, order],
                "value_weight": value.weights_for(n_codes)[order],
                "cost_weight": (self.cost.weights_for(n_codes)[order] if is_additive(self.cost)
                                else np.diff(cands.chat[0])),  # a set cost: its score's increments
                "chat": cands.chat[0, 1:],
                "vhat": cands.vhat[0, 1:],
                "score": cands.scores(self.score)[0, 1:],
                "selected": np.arange(1, n_codes + 1) <= chosen,
            }
        )

    def __repr__(self):
        control = "expected" if self.delta is None else f"violation, delta={self.delta}"
        if self.adaptive_rate is not None:
            control += f", adaptive_rate={self.adaptive_rate}"
        score = "" if self.score == self._default_score() else f", score={self.score!r}"
        if self.recalibrate is not None:
            score += f", recalibrate={self.recalibrate} ({self.recalibration})"
        return f"FavMac(target={self.target}, {control}, universe={self.universe!r}{score}, n_calibration={self.n_calibration})"


def _spec_arguments(spec, codes, members, n_codes) -> dict:
    """FavMac's arguments from a RunSpec (validated without the data first: a bad field is a ValueError naming it)."""
    from .runspec import AUTO, SettingsError

    try:
        spec = spec.validate(n_codes=n_codes)
    except SettingsError as err:
        raise ValueError(f"spec: {err}") from None
    if len(spec.targets) != 1:
        raise ValueError(f"spec: FavMac controls one target; the spec has {len(spec.targets)} (use favmac.replay for several)")
    value, cost = spec.build(None if codes is None else [str(c) for c in codes], members)
    fold = None if spec.recalibrate == AUTO else spec.recalibrate
    return dict(value=value, cost=cost, target=spec.target, delta=spec.control_delta, universe=spec.universe,
                c_max=spec.largest_cost, window=spec.window, n_codes=n_codes,
                score=None if spec.score_is_default else spec.score, adaptive_rate=spec.adaptive_rate, recalibrate=fold,
                recalibration=spec.recalibration, recalibrate_by=spec.recalibrate_by if fold is not None else DEFAULT_RECALIBRATE_BY)
