"""The replay API: :func:`replay`, the whole online session over a labelled stream for several targets."""
from __future__ import annotations

import dataclasses

from ..recalibration import DEFAULT_RECALIBRATE_BY, DEFAULT_RECALIBRATION
from ..result import ReplayResult
from ..universe import DEFAULT_UNIVERSE, Candidates
from ..validation import check_c_max
from .fold import after_fold
from .options import ReplayOptions
from .session import Session, shared_candidates
from .work import PatientWork

__all__ = ["replay"]


_DEFAULTS = ReplayOptions()


def replay(
    probs,
    labels,
    value,
    cost,
    targets,
    *,
    delta=None,
    universe: str = DEFAULT_UNIVERSE,
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
    recalibrate_by: str = DEFAULT_RECALIBRATE_BY,
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
        :func:`favmac.scores.default_score`.
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
    options = dataclasses.replace(options, c_max=check_c_max(options.c_max))
    if candidates is not None and work is not None:
        raise ValueError("candidates and work: give one of them (work carries its own candidate sets)")
    if recalibrate is not None:  # SPEC "Recalibration on a split": fit on the fold, replay the rest
        if candidates is not None:
            raise ValueError("candidates: not with recalibrate (the fold changes the probabilities the candidates "
                             "are built from); leave candidates unset")
        if work is not None:
            raise ValueError("work: not with recalibrate (the fold's maps change every patient's probabilities); "
                             "leave work unset")
        return after_fold(replay, probs, labels, value, cost, targets, options, groups, label_available_at, codes,
                          patient_ids, progress, method, recalibrate, recalibration, recalibrate_by)
    session = Session.prepare(probs, labels, value, cost, targets, options, groups, label_available_at, codes,
                              patient_ids, progress)
    if candidates is not None:
        session.candidates = shared_candidates(candidates, session)
    return session.run(method, work)
