"""replay: the whole online FavMac session over a labelled stream, all targets in one pass.

For every stream position n >= burn_in it records the threshold calibrated on patients
0..n-1 (or the last ``window`` of them), the set chosen for patient n, and that set's
realized cost and value — exactly what a loop of ``FavMac.update/predict`` gives.

How it is fast: in a replay every calibration point is known up front, so keys are ranked
once and a Fenwick tree over ranks (numba, exact int64 weights at a decimal scale) replaces
the QuantileTree. In expected-cost control the inserted points do not depend on the
target — only the query level c(n+1) - C_max does — so one pass serves every target.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .adaptive import AdaptiveTarget, check_adaptive_rate
from .recalibration import DEFAULT_RECALIBRATION
from .result import ReplayResult
from .segments import check_group_labels, group_rows
from .thresholds import (
    INT64_LIMIT,
    ExactCosts,
    calibration_points,
    common_scale,
    expected_bounds,
    scaled_int,
    violation_ranks,
    violation_scores,
)
from .universe import Candidates, ChosenSets, candidate_sets, check_score, check_universe
from .validation import check_stream

__all__ = ["replay", "predict_with_threshold", "method_name"]

_CHUNK = 20_000  # patients per kernel call, for progress reports
_FORMULA_CHUNK = 100  # patients per candidate batch when a formula value makes them slow


def method_name(universe: str, score: str = "cost") -> str:
    """Display name of a FavMac run: "FavMac (ratio)" (cost score), "FavMac (price)" (ratio
    universe, price score), "FavMac (value, price)" (another universe, price score).

    >>> method_name("prob"), method_name("ratio", "price"), method_name("value", "price")
    ('FavMac (prob)', 'FavMac (price)', 'FavMac (value, price)')
    """
    if score == "cost":
        return f"FavMac ({universe})"
    return f"FavMac ({score})" if universe == "ratio" else f"FavMac ({universe}, {score})"


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
    score: str = "cost",
    recalibrate=None,
    recalibration: str = DEFAULT_RECALIBRATION,
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
        Patients used for calibration only (no prediction recorded).
    window : int, optional
        Rolling window of calibration patients (per segment with ``groups``).
    c_max : float, optional
        Largest cost (default: sum of cost weights).
    codes, patient_ids : optional labels carried into the result.
    method : str, optional
        Display name (default :func:`method_name`, e.g. "FavMac (ratio)").
    progress : callable(float), optional
        Called with the fraction done (0..1) as the replay advances.
    groups : array (N,), optional
        Segment label of each patient (:mod:`favmac.segments`): patient n is calibrated on
        the earlier patients of its own segment only; the burn-in of a segment is its
        patients among the first ``burn_in``. The result then carries ``groups``,
        ``group_thresholds`` and ``group_sizes``.
    adaptive_rate : float, optional
        gamma > 0 for the adaptive target c_n under drift (:mod:`favmac.adaptive`; expected
        control only). The result carries ``adaptive_targets`` (T, S).
    score : {"cost", "price"}
        What the threshold is on: Chat (the paper's) or the price score
        (:meth:`favmac.universe.Candidates.scores`; nested universes only).
    recalibrate : int, optional
        R >= 50: the first R rows are a recalibration fold (:mod:`favmac.recalibration`):
        per-code maps fitted on them replace p for the rest; the fold gets no prediction and
        never joins calibration, ``burn_in`` counts patients after it, and the result's
        ``burn_in`` is R + burn_in. ``settings`` carry ``recalibration_maps``.
    recalibration : {"platt", "isotonic"}
        The map (default "platt").

    Returns
    -------
    ReplayResult
        thresholds (T, S), selected (T, S, K), cost (T, S), value (T, S) with
        S = N - burn_in, and final_thresholds (T,) calibrated on all N patients.

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
    """
    probs, labels, targets, delta, burn_in, window, codes, patient_ids = check_stream(
        probs, labels, targets, delta, burn_in, window, codes, patient_ids)
    if recalibrate is not None:  # SPEC "Recalibration on a split": fit on the fold, replay the rest
        from .recalibration import replay_after_fold
        return replay_after_fold(replay, probs, labels, value, cost, targets, recalibrate=recalibrate,
                                 recalibration=recalibration, burn_in=burn_in, window=window, groups=groups,
                                 patient_ids=patient_ids, codes=codes, delta=delta, universe=universe, c_max=c_max,
                                 method=method, progress=progress, adaptive_rate=adaptive_rate, score=score)
    n_patients, n_codes = probs.shape
    check_universe(universe, n_codes)
    check_score(score, universe)
    rate = check_adaptive_rate(adaptive_rate, delta)
    group_labels = None if groups is None else check_group_labels(groups, n_patients)
    window_int = 0 if window is None else int(window)
    report = progress if progress is not None else (lambda fraction: None)

    report(0.0)
    cands = _candidates(probs, value, cost, universe, report)
    costs = ExactCosts.of(cost, n_codes, c_max)
    realized = _realized(cands, labels, costs)
    report(0.25)

    steps = n_patients - burn_in
    parts = [(None, np.arange(n_patients))] if group_labels is None else group_rows(group_labels)
    thresholds = np.empty((len(targets), steps))
    final = None
    adaptive_targets = np.empty((len(targets), steps)) if rate is not None else None
    group_thresholds, group_sizes, group_final_targets = {}, {}, {}
    for i, (label, rows) in enumerate(parts):
        sub_burn = int(np.searchsorted(rows, burn_in))
        sub_cands = cands if label is None else cands.subset(rows)
        engine = _Engine(sub_cands, realized if label is None else realized[rows], costs, targets, delta, sub_burn,
                         window_int, rate, score, lambda f, i=i: report(0.25 + 0.6 * (i + f) / len(parts)))
        part = engine.run()
        if part is None:
            warnings.warn("costs too large for exact int64 arithmetic; replaying with the (slower) exact FavMac loop")
            part = _loop_thresholds(probs[rows], labels[rows], value, cost, targets, delta, universe, sub_burn,
                                    window, c_max, score, rate)
        part_thresholds, part_targets = part
        positions = rows[sub_burn:] - burn_in
        thresholds[:, positions] = part_thresholds[:, :-1]
        if rate is not None:
            adaptive_targets[:, positions] = part_targets[:, :-1]
        if label is None:
            final = part_thresholds[:, -1]
            final_targets = None if rate is None else part_targets[:, -1]
        else:
            group_thresholds[label] = part_thresholds[:, -1]
            group_sizes[label] = len(rows)
            if rate is not None:
                group_final_targets[label] = part_targets[:, -1]
    if group_labels is not None:  # the pooled final threshold at the base target, for unsegmented patients
        pooled = _Engine(cands, realized, costs, targets, delta, n_patients, window_int, None, score, lambda f: None).run()
        final = pooled[0][:, -1] if pooled is not None else _loop_thresholds(
            probs, labels, value, cost, targets, delta, universe, n_patients, window, c_max, score, None)[0][:, -1]
        final_targets = group_final_targets or None
    report(0.85)

    # Selection, in chunks of patients: the chosen candidate of every (target, step) is kept
    # as a small integer (ChosenSets); the (T, S, K) booleans are built only if asked for.
    n_targets = len(targets)
    n_candidates = cands.chat.shape[1]
    chosen_index = np.zeros((n_targets, steps), dtype=np.int8 if n_candidates <= 128 else np.int16 if n_candidates <= 2**15 else np.int64)
    realized_cost = np.zeros((n_targets, steps))
    realized_value = np.zeros((n_targets, steps))
    exceeds = np.zeros((n_targets, steps), dtype=bool)
    bounds = [costs.bound(target) for target in targets]
    for start, stop in _chunks(burn_in, n_patients):
        part = cands.subset(slice(start, stop))
        steps_here = slice(start - burn_in, stop - burn_in)
        rows = np.arange(stop - start)
        part_labels = labels[start:stop]
        cost_table = part.totals(cost.contributions(part_labels))
        value_table = part.totals(value.contributions(part_labels)) if value.is_additive else None
        exact_cost = realized[start:stop]
        for t in range(n_targets):
            index = part.choose(thresholds[t, steps_here], score)
            chosen_index[t, steps_here] = index
            realized_cost[t, steps_here] = cost_table[rows, index]
            exceeds[t, steps_here] = exact_cost[rows, index] > bounds[t]
            realized_value[t, steps_here] = value_table[rows, index] if value_table is not None else value(part.masks(index), part_labels)
    tail = slice(burn_in, n_patients)
    chosen = ChosenSets(chosen_index, order=None if cands.order is None else cands.order[tail], subsets=cands.subsets)
    report(1.0)
    ids = None if patient_ids is None else np.asarray(patient_ids)[tail]
    settings = {"universe": universe, "score": score, "window": window, "c_max": float(costs.c_max),
                "control": "expected" if delta is None else "violation"}
    if rate is not None:
        settings["adaptive_rate"] = rate
    if group_labels is not None:
        settings["segments"] = True
    return ReplayResult(
        method=method or method_name(universe, score),
        targets=targets,
        delta=delta,
        burn_in=burn_in,
        thresholds=thresholds,
        selected=None,
        cost=realized_cost,
        value=realized_value,
        codes=codes,
        patient_ids=ids,
        settings=settings,
        final_thresholds=final,
        exceeds=exceeds,
        groups=None if group_labels is None else group_labels[tail],
        group_thresholds=group_thresholds or None,
        group_sizes=group_sizes or None,
        adaptive_targets=adaptive_targets,
        final_adaptive_targets=final_targets,
        chosen=chosen,
    )


class _Engine:
    """Thresholds of one (sub-)stream: ``run()`` gives ((T, n - burn_in + 1) thresholds,
    (T, n - burn_in + 1) adaptive targets or None), or None when int64 would overflow."""

    def __init__(self, cands, realized, costs, targets, delta, burn_in, window, rate, score, report):
        self.cands, self.realized, self.costs = cands, realized, costs
        self.targets, self.delta, self.burn_in, self.window = targets, delta, burn_in, window
        self.rate, self.score, self.report = rate, score, report

    def run(self):
        if self.delta is not None:
            out = _violation_thresholds(self.cands, self.realized, self.costs, self.targets, self.delta,
                                        self.burn_in, self.window, self.report, self.score)
            return out, None
        if self.rate is not None:
            return _adaptive_thresholds(self.cands, self.realized, self.costs, self.targets, self.rate,
                                        self.burn_in, self.window, self.score)
        out = _expected_thresholds(self.cands, self.realized, self.costs, self.targets, self.burn_in, self.window,
                                   self.report, self.score)
        return None if out is None else (out, None)


def _candidates(probs, value, cost, universe, report):
    """candidate_sets, in chunks with progress reports when the value is a (slow) formula."""
    if value.is_additive or len(probs) <= _FORMULA_CHUNK:
        return candidate_sets(probs, value, cost, universe)
    parts = []
    for start in range(0, len(probs), _FORMULA_CHUNK):
        parts.append(candidate_sets(probs[start : start + _FORMULA_CHUNK], value, cost, universe))
        report(0.2 * min(len(probs), start + _FORMULA_CHUNK) / len(probs))
    return Candidates.concatenate(parts)


def _chunks(start, stop, size=_CHUNK):
    edges = list(range(start, stop, size)) + [stop]
    return list(zip(edges[:-1], edges[1:]))


def _realized(cands, labels, costs):
    """``costs.realized`` (exact realized cost of every candidate), in chunks of patients
    (its temporaries are several (N, K) arrays), as int32 when the weights' sum fits."""
    n_patients = cands.n_patients
    out = None
    for start, stop in _chunks(0, n_patients) or [(0, 0)]:
        part = costs.realized(cands.subset(slice(start, stop)), labels[start:stop])
        if out is None:
            dtype = np.int32 if costs.weights.dtype == np.int32 else part.dtype  # realized <= sum of weights
            out = np.empty((n_patients, part.shape[1]), dtype=dtype)
        out[start:stop] = part
    return out


def _expected_thresholds(cands, realized, costs, targets, burn_in, window, report, score):
    """(T, N - burn_in + 1) thresholds; None when int64 would overflow.

    The calibration points are gathered in chunks of patients (count, keys, then ranks and
    weights), keys are ranked by bisecting the sorted keys, ranks are int32 and weights keep
    the realized costs' int32 when they fit: no (N, M) temporaries.
    """
    from .replay_kernels import expected_thresholds

    n_patients = cands.n_patients
    if not costs.exact_sums(n_patients):
        return None
    chunks = _chunks(0, n_patients)
    counts = np.zeros(n_patients, dtype=np.int64)
    for start, stop in chunks:
        _, increments = calibration_points(cands.subset(slice(start, stop)), realized[start:stop], score)
        counts[start:stop] = np.count_nonzero(increments > 0, axis=1)
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    del counts
    # The sorted keys first, before the per-point arrays exist, so that no two point-sized
    # float arrays are alive at once. Equal keys are not compacted: every point takes the
    # first slot of its key (searchsorted, side "left") and the other slots keep weight 0,
    # which never moves "the smallest key whose cdf exceeds the bound".
    sorted_keys = np.empty(ptr[-1])
    for start, stop in chunks:
        keys, increments = calibration_points(cands.subset(slice(start, stop)), realized[start:stop], score)
        sorted_keys[ptr[start] : ptr[stop]] = keys[increments > 0]
    sorted_keys.sort()
    ranks = np.empty(ptr[-1], dtype=np.int32 if len(sorted_keys) < 2**31 else np.int64)
    weights = np.empty(ptr[-1], dtype=realized.dtype if realized.dtype != object else np.int64)
    for start, stop in _chunks(0, n_patients, 8 * _CHUNK):
        keys, increments = calibration_points(cands.subset(slice(start, stop)), realized[start:stop], score)
        positive = increments > 0
        weights[ptr[start] : ptr[stop]] = increments[positive]
        # bisecting sorted queries walks the keys forward (cache friendly); random ones do not
        part = keys[positive]
        order = np.argsort(part)
        ranks[ptr[start] + order] = np.searchsorted(sorted_keys, part[order])
        del keys, increments, positive, part, order
    bounds = expected_bounds(targets, costs, n_patients)
    tree = np.zeros(len(sorted_keys) + 1, dtype=np.int64)
    out = np.empty((len(targets), n_patients - burn_in + 1))
    for start, stop in _chunks(0, n_patients + 1):
        expected_thresholds(ptr, ranks, weights, sorted_keys, bounds, burn_in, window, start, stop, tree, out)
        report(stop / (n_patients + 1))
    return out


def _violation_thresholds(cands, realized, costs, targets, delta, burn_in, window, report, score):
    from .replay_kernels import violation_thresholds

    n_patients = cands.n_patients
    ranks_k = violation_ranks(delta, n_patients)
    out = np.empty((len(targets), n_patients - burn_in + 1))
    for t, target in enumerate(targets):
        scores = violation_scores(cands, realized, costs.bound(target), score)
        unique_scores, score_ranks = np.unique(scores, return_inverse=True)
        tree = np.zeros(len(unique_scores) + 1, dtype=np.int64)
        for start, stop in _chunks(0, n_patients + 1):
            violation_thresholds(score_ranks.astype(np.int64), unique_scores, ranks_k, burn_in, window, start, stop, tree, out[t])
        report((t + 1) / len(targets))
    return out


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


def _adaptive_thresholds(cands, realized, costs, targets, rate, burn_in, window, score):
    """Thresholds and adaptive targets c_n (T, n - burn_in + 1) each; None when int64 would overflow."""
    from .replay_kernels import adaptive_thresholds

    n_patients = cands.n_patients
    floor = max(costs.scale, common_scale(targets))  # one scale S for every target
    rules = [AdaptiveTarget(target, rate, costs.scale, min_scale=floor) for target in targets]
    big = rules[0].scale
    if realized.dtype == object or not costs.exact_sums(n_patients):
        return None
    c_max_big = scaled_int(costs.c_max, big)
    largest = max(rule.largest(costs.c_max, n_patients) for rule in rules)
    if largest * (n_patients + 1) + c_max_big >= INT64_LIMIT:
        return None
    keys = cands.scores(score)
    points, increments = calibration_points(cands, realized, score)
    positive = increments > 0
    unique_keys, ranks = np.unique(points[positive], return_inverse=True)
    ptr = np.concatenate([[0], np.cumsum(positive.sum(axis=1))]).astype(np.int64)
    weights = increments[positive].astype(np.int64)
    tree = np.zeros(len(unique_keys) + 1, dtype=np.int64)
    steps = n_patients - burn_in + 1
    out = np.empty((len(targets), steps))
    targets_out = np.empty((len(targets), steps), dtype=np.int64)
    ok = adaptive_thresholds(
        ptr, ranks.astype(np.int32), weights, unique_keys, np.ascontiguousarray(keys, dtype=float), _preference(cands),
        np.ascontiguousarray(realized, dtype=np.int64), np.array([rule.start for rule in rules], dtype=np.int64),
        np.array([rule.target_base for rule in rules], dtype=np.int64), np.int64(rules[0].rate_scaled),
        np.int64(rules[0].cost_to_base), np.int64(big // costs.scale), np.int64(c_max_big), burn_in, window,
        np.int64(INT64_LIMIT), tree, out, targets_out)
    if not ok:
        return None
    return out, targets_out / big


def _loop_thresholds(probs, labels, value, cost, targets, delta, universe, burn_in, window, c_max, score, rate=None):
    """The exact (Python integers) FavMac loop: thresholds and adaptive targets, as the engine returns them."""
    from .controller import FavMac

    steps = probs.shape[0] - burn_in + 1
    out = np.empty((len(targets), steps))
    targets_out = np.empty((len(targets), steps)) if rate is not None else None
    for t, target in enumerate(targets):
        fm = FavMac(value, cost, target, delta=delta, universe=universe, c_max=c_max, window=window,
                    n_codes=probs.shape[1], adaptive_rate=rate, score=score)
        if burn_in:
            fm.update(probs[:burn_in], labels[:burn_in], adapt=False)
        for n in range(burn_in, probs.shape[0] + 1):
            out[t, n - burn_in] = fm.threshold
            if rate is not None:
                targets_out[t, n - burn_in] = float(fm.current_target)
            if n < probs.shape[0]:
                fm.update(probs[n], labels[n])
    return out, targets_out


def predict_with_threshold(probs, value, cost, threshold, universe: str = "ratio", score: str = "cost",
                           recalibration=None) -> np.ndarray:
    """Chosen sets (N, K) bool for new patients under a fixed threshold (e.g. final_thresholds[t]).

    ``score`` must be the score the threshold was calibrated on ("cost" or "price");
    ``recalibration`` the maps it was calibrated with (a ``Recalibration`` or its dict, e.g.
    ``result.settings["recalibration_maps"]``), applied to ``probs`` first.

    >>> from favmac import AdditiveValue, AdditiveCost
    >>> predict_with_threshold([[0.9, 0.2], [0.4, 0.8]], AdditiveValue(), AdditiveCost(), 0.25).tolist()
    [[True, False], [False, True]]
    """
    check_score(score, universe)
    probs = np.atleast_2d(np.asarray(probs, dtype=float))
    if recalibration is not None:
        from .recalibration import as_recalibration
        probs = as_recalibration(recalibration).apply(probs)
    cands = candidate_sets(probs, value, cost, universe)
    if isinstance(threshold, float) and math.isnan(threshold):
        raise ValueError("threshold is NaN")
    return cands.masks(cands.choose(threshold, score))
