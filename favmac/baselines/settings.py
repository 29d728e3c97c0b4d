"""The baselines under a session's settings: segments (any number of groupings), labels that arrive
later, a rolling window and a recalibration fold, as FavMac's replay honours them.

:func:`run_baseline` runs one baseline (``"classwise"``, ``"inner_set"``, ``"crc"``, ``"rcps"``,
``"fpcp"``) the way :func:`favmac.replay.replay` runs FavMac under the same settings:

* **Recalibration fold** (``recalibrate=R``): per-code maps (``favmac.recalibration.fit_recalibration``,
  the same fit as the replay's) on the first R patients replace p for every later patient; the fold
  gets no prediction and never calibrates; ``burn_in`` counts patients after it (the result's
  ``burn_in`` is R + burn_in, as the replay's).
* **Labels that arrive later** (``label_delay``, ``label_available_at``; docs/method.md "Labels that arrive
  later"): patient n is calibrated on exactly the patients whose labels arrived before it was
  predicted (:class:`favmac.arrivals.ArrivalSchedule`), the window holding the last ``window`` of
  them to arrive.
* **Segments** (``groups``; docs/method.md "Segments", "Several groupings at once"): with one grouping,
  patient n is calibrated on the earlier (arrived) patients of its own group only (the method run
  on each group's own stream); with several, each grouping gives a set and the patient gets their
  intersection. Every baseline's sets are nested in its threshold and costs are non-negative, so
  the intersection costs at most each grouping's set and every group of every grouping keeps the
  method's own guarantee: the baselines' counterpart of FavMac's "smallest threshold".

How: a baseline's threshold for a patient depends only on the sequence of its calibration
patients, and with labels arriving later (or per group) those are always a prefix of one sequence:
the group's patients in the order their labels join. So each group's sequence is run once from its
start (``burn_in=0``), which gives the threshold after every prefix, and patient n reads the
threshold after its own prefix. ClassWise has one threshold per code and keeps no thresholds per
step, so its patients are answered by :func:`favmac.baselines.kernels.classwise_queries` against
the same sequences. FPCP is FavMac's replay with the ``prob`` universe and takes every setting
there. Without segments and delays each method runs as it is (the same numbers).
"""
from __future__ import annotations

import numpy as np

from ..arrivals import ArrivalSchedule
from ..functions import AdditiveValue
from ..protocols import bind_rows
from ..validation import check_stream
from .common import ThresholdSets, build_result, prepare

__all__ = ["SETTING_METHODS", "run_baseline", "honoured_settings"]

#: The baselines :func:`run_baseline` runs, with their rule on p (None: ClassWise's per-code thresholds).
SETTING_METHODS = {"classwise": None, "inner_set": ">", "crc": ">=", "rcps": ">=", "fpcp": None}

#: Display names of the baselines' results.
_NAMES = {"classwise": "ClassWise", "inner_set": "InnerSet", "crc": "CRC", "rcps": "RCPS", "fpcp": "FPCP"}


def honoured_settings() -> tuple[str, ...]:
    """The settings every baseline run by :func:`run_baseline` honours (the adaptive target is FavMac's alone)."""
    return ("segment", "label_delay", "label_available_at", "window", "recalibrate")


def _function(key: str):
    from .. import baselines

    if key not in SETTING_METHODS:
        raise ValueError(f"method: expected one of {', '.join(SETTING_METHODS)}; got {key!r}")
    return getattr(baselines, key)


def run_baseline(key: str, probs, labels, value, cost, targets, *, delta=None, burn_in=0, window=None, c_max=None,
                 groups=None, label_delay=None, label_available_at=None, recalibrate=None, recalibration=None,
                 recalibrate_by="code", codes=None, patient_ids=None, progress=None):
    """Baseline ``key`` over the stream under a session's settings (module docstring).

    Parameters as the baselines' (``favmac.baselines``) plus ``groups``, ``label_delay``,
    ``label_available_at``, ``recalibrate``, ``recalibration`` and ``recalibrate_by``, as
    :func:`favmac.replay.replay` takes them. ``value`` and ``cost`` cover the whole stream (a
    per-patient value is bound to the rows after the fold here).

    Returns
    -------
    ReplayResult
        As the method's own: ``cost``, ``value`` and ``exceeds`` per target and predicted patient,
        ``burn_in`` the fold plus the burn-in. With segments or delays ``thresholds`` are each
        patient's own (ClassWise: NaN) and ``final_thresholds`` NaN (there is one per group).

    Notes
    -----
    Running time: with segments or delays, one run of the method per group of each grouping over that
    group's patients (each O(n log n) plus O(n T K) to score; ClassWise: one compiled pass per code and
    group), so about the method's own time per grouping; the sets are scored once, for the whole stream.

    Examples
    --------
    >>> import numpy as np
    >>> from favmac import AdditiveCost, AdditiveValue
    >>> p = np.array([[0.9, 0.2], [0.8, 0.4], [0.7, 0.1], [0.6, 0.3], [0.95, 0.5], [0.85, 0.2]])
    >>> y = np.array([[1, 0], [1, 0], [0, 0], [1, 1], [1, 0], [1, 0]])
    >>> res = run_baseline("crc", p, y, AdditiveValue(), AdditiveCost(), [1.0], burn_in=4, groups=["a", "b", "a", "b", "a", "b"])
    >>> res.selected[0].astype(int).tolist()  # patient 4 calibrated on a's patients 0 and 2 (lambda 0.7), 5 on b's 1 and 3 (0)
    [[1, 0], [1, 1]]
    """
    function = _function(key)
    from . import BASELINE_CONTROLS
    from .common import refuse_control

    refuse_control(_NAMES[key], delta, BASELINE_CONTROLS[key])
    if key == "rcps" and delta is None:
        raise ValueError("delta: RCPS controls violations and needs a level in (0, 1), e.g. delta=0.1")
    if key == "fpcp":  # FavMac's replay with the prob universe: it takes every setting itself
        from ..replay import replay

        extra = {} if recalibrate is None else {"recalibrate": recalibrate, "recalibrate_by": recalibrate_by,
                                                **({} if recalibration is None else {"recalibration": recalibration})}
        return replay(probs, labels, value, cost, targets, delta=delta, universe="prob", burn_in=burn_in, window=window,
                      c_max=c_max, codes=codes, patient_ids=patient_ids, method="FPCP", progress=progress, score="cost",
                      groups=groups, label_delay=label_delay, label_available_at=label_available_at, **extra)
    probs, labels, targets, delta, burn_in, window, codes, patient_ids = check_stream(
        probs, labels, targets, delta, burn_in, window, codes, patient_ids)
    fold = 0
    maps = None
    if recalibrate is not None:
        probs, labels, groups, patient_ids, maps, fold = _after_fold(probs, labels, groups, patient_ids, codes, window, burn_in,
                                                                     label_available_at, recalibrate, recalibration, recalibrate_by)
        value, cost = bind_rows(value, slice(fold, None)), bind_rows(cost, slice(fold, None))
    delayed = label_delay is not None or label_available_at is not None
    if groups is None and not delayed:
        result = function(probs, labels, value, cost, targets, delta=delta, burn_in=burn_in, window=window, c_max=c_max,
                          codes=codes, patient_ids=patient_ids, progress=progress)
    else:
        result = _by_prefix(key, function, probs, labels, value, cost, targets, delta=delta, burn_in=burn_in, window=window,
                            c_max=c_max, groups=groups, label_delay=label_delay, label_available_at=label_available_at,
                            codes=codes, patient_ids=patient_ids, progress=progress)
    if maps is not None:
        result.burn_in = fold + burn_in
        result.settings.update(recalibrate=fold, recalibration=maps.method, recalibration_maps=maps.to_dict())
        if recalibrate_by != "code":
            result.settings["recalibrate_by"] = recalibrate_by
    return result


def _after_fold(probs, labels, groups, patient_ids, codes, window, burn_in, label_available_at, recalibrate, recalibration,
                recalibrate_by):
    """The stream after a recalibration fold, its probabilities through the maps fitted on the fold
    (as :func:`favmac.recalibration.replay_after_fold` fits and applies them)."""
    from ..recalibration import DEFAULT_RECALIBRATION, fit_fold

    if label_available_at is not None:
        raise ValueError("label_available_at: not with recalibrate (its positions count the fold's rows); give "
                         "label_delay instead, or leave recalibrate unset")
    maps, size, groupings, segments = fit_fold(probs, labels, groups, recalibrate=recalibrate,
                                               recalibration=recalibration or DEFAULT_RECALIBRATION,
                                               recalibrate_by=recalibrate_by, window=window, burn_in=burn_in, codes=codes)
    rest = slice(size, None)
    mapped = maps.apply(probs[rest], groups=None if segments is None else segments[rest])
    after = None if not groupings else [labelled[rest] for _, labelled in groupings]
    return (mapped, labels[rest], after, None if patient_ids is None else patient_ids[rest], maps, size)


def _group_ids(groups, n_patients: int) -> list[np.ndarray]:
    """One int array (N,) of group numbers per grouping (a single all-zero one without groups)."""
    from ..segments import check_groupings

    groupings = check_groupings(groups, n_patients)
    if not groupings:
        return [np.zeros(n_patients, dtype=np.int64)]
    return [np.unique(np.asarray(labelled).astype(str), return_inverse=True)[1].astype(np.int64).reshape(-1)
            for _, labelled in groupings]


def _by_prefix(key, function, probs, labels, value, cost, targets, *, delta, burn_in, window, c_max, groups, label_delay,
               label_available_at, codes, patient_ids, progress):
    """The run when a patient's calibration data are not simply every earlier patient (module docstring)."""
    stream = prepare(probs, labels, cost, targets, delta=delta, burn_in=burn_in, window=window, c_max=c_max,
                     codes=codes, patient_ids=patient_ids, progress=progress)
    n_patients, n_targets = stream.n_patients, stream.targets.size
    schedule = ArrivalSchedule.of(n_patients, burn_in=burn_in, label_delay=label_delay, label_available_at=label_available_at)
    predicted = np.arange(burn_in, n_patients)
    groupings = _group_ids(groups, n_patients)
    rule = SETTING_METHODS[key]
    options = {}
    if key == "rcps":  # one grid for every group's run: the stream's (as the method's own run takes it)
        from .grid import resolve_grid

        options["grid"] = resolve_grid(stream.probs, 201, None)
    combined = None  # (T, S) levels (a rule on p) or (S, K) ClassWise's passed counts
    plan = None
    if rule is None:
        from .classwise import target_plan

        plan = target_plan(stream.targets, stream.costs.c_max, n_patients)
    steps = sum(len(np.unique(g)) for g in groupings)
    done = 0
    for group in groupings:
        answer = (np.full((n_targets, predicted.size), np.nan) if rule is not None
                  else np.zeros((predicted.size, stream.n_codes), dtype=np.uint8 if n_targets < 256 else np.int64))
        in_order = group[schedule.order]
        for g in np.unique(group):
            sequence = schedule.order[in_order == g]  # the group's patients in the order their labels join
            mine = np.flatnonzero(group[predicted] == g)  # its predicted patients (indices of the steps)
            if mine.size:
                # patient n's calibration data: the group's patients whose labels arrived before n (a prefix)
                prefix = np.searchsorted(schedule.arrival[sequence], predicted[mine], side="left")
                if rule is None:
                    answer[mine] = _classwise_answers(stream, sequence, predicted[mine], prefix, window, plan)
                else:
                    table = _threshold_table(function, stream, sequence, cost, window, c_max, delta, options)
                    answer[:, mine] = table[:, prefix]
            done += 1
            stream.progress(0.9 * done / steps)
        combined = answer if combined is None else np.maximum(combined, answer)
    if rule is None:
        order, _, place = plan
        sets = ThresholdSets(np.ascontiguousarray(combined), place.astype(combined.dtype)[:, None], "<=")
        thresholds = np.full((n_targets, predicted.size), np.nan)
        rule_text = "predict code k iff p_k > its code's threshold, calibrated on the patient's own calibration data"
    else:
        sets = ThresholdSets(stream.probs[burn_in:], combined, rule)
        thresholds = combined
        rule_text = f"predict code k iff p_k {rule} threshold"
    settings = {"rule": rule_text, "label_delay": label_delay, "label_arrivals": label_available_at is not None,
                "groupings": len(groupings) if groups is not None else 0,
                "combined": "the intersection of each grouping's set" if len(groupings) > 1 else None}
    return build_result(_NAMES[key], stream, thresholds, sets, value, cost, settings, np.full(n_targets, np.nan))


def _threshold_table(function, stream, sequence, cost, window, c_max, delta, options) -> np.ndarray:
    """(T, len(sequence) + 1): the method's threshold after each prefix 0..len of ``sequence`` (a run from its start)."""
    probs, labels = stream.probs[sequence], stream.labels[sequence]
    run = function(probs, labels, AdditiveValue(), cost, list(stream.targets), delta=delta, burn_in=0, window=window,
                   c_max=c_max, **options)
    return np.concatenate([np.asarray(run.thresholds, dtype=float), np.asarray(run.final_thresholds, dtype=float)[:, None]],
                          axis=1)


def _classwise_answers(stream, sequence, patients, prefix, window, plan) -> np.ndarray:
    """(len(patients), K): ClassWise's ``passed`` count of each code for ``patients`` (each
    calibrated on the first ``prefix`` of ``sequence``; :func:`favmac.baselines.kernels.classwise_queries`)."""
    from .kernels import classwise_queries, stable_argsort

    _, needs_by_size, _ = plan
    out = np.empty((patients.size, stream.n_codes), dtype=np.int64)
    prefix = np.ascontiguousarray(prefix, dtype=np.int64)
    column_out = np.empty(patients.size, dtype=np.int64)
    for k in range(stream.n_codes):
        column = np.ascontiguousarray(stream.probs[sequence, k])
        queries = np.ascontiguousarray(stream.probs[patients, k])
        order = stable_argsort(np.concatenate([column, queries]))
        negative = np.ascontiguousarray(~stream.labels[sequence, k])
        classwise_queries(column, negative, queries, prefix, order, needs_by_size, 0 if window is None else int(window), column_out)
        out[:, k] = column_out
    return out
