"""The replay API: :func:`replay`, the whole online session over a labelled stream for several targets.

One description of a run, :class:`favmac.runspec.RunSpec`, carries its settings: ``replay(probs, labels, spec)``
builds the value and cost the spec names; ``replay(probs, labels, value, cost, targets, delta=..., ...)`` (your own
value and cost objects) is the keyword wrapper, which builds the spec (:func:`replay_spec`) and runs the same path.
"""
from __future__ import annotations

from ..recalibration import DEFAULT_RECALIBRATE_BY, DEFAULT_RECALIBRATION
from ..result import ReplayResult
from ..runspec import RunSpec, SettingsError
from ..universe import DEFAULT_UNIVERSE, Candidates
from .fold import after_fold
from .session import Session, replay_spec, shared_candidates
from .work import PatientWork

__all__ = ["replay", "replay_spec"]


def replay(
    probs,
    labels,
    value,
    cost=None,
    targets=None,
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
    recalibrate=None,
    recalibration: str = DEFAULT_RECALIBRATION,
    recalibrate_by: str = DEFAULT_RECALIBRATE_BY,
    candidates: Candidates | None = None,
    work: "PatientWork | None" = None,
    members=None,
) -> ReplayResult:
    """Replay an online FavMac session over a labelled stream for several targets.

    Parameters
    ----------
    probs : ndarray (N, K)
        Base-classifier probabilities, in stream order.
    labels : ndarray (N, K) of 0/1
    value : RunSpec, or a value function
        A :class:`~favmac.runspec.RunSpec`: the run it describes (its value, cost, weights, targets, control,
        universe, burn-in, window, score, segments' rule, label delay, fold; ``largest_cost`` is C_max), validated
        against the data (a fold left at "auto" is decided by the data); give ``codes`` (and ``members``) for the
        CMS payment value; ``cost``, ``targets`` and the settings keywords below are then left unset. Otherwise the
        value function, with ``cost`` and ``targets``: the keywords build the spec (:func:`replay_spec`).
    cost : cost function
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

    members : dict, optional
        With a spec of the CMS payment value: the member context the readers found (:attr:`favmac.io.Dataset.members`).

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
    >>> from favmac import RunSpec
    >>> spec = RunSpec(targets=(0.5, 1.0), burn_in=50, recalibrate=None)  # value "tp", cost "fp": as above
    >>> bool((replay(p, y, spec).cost == res.cost).all())
    True
    """
    settings = dict(delta=delta, universe=universe, burn_in=burn_in, window=window, c_max=c_max, score=score,
                    adaptive_rate=adaptive_rate, label_delay=label_delay, recalibrate=recalibrate,
                    recalibration=recalibration, recalibrate_by=recalibrate_by)
    if isinstance(value, RunSpec):
        spec, value, cost = _from_spec(value, cost, targets, settings, probs, codes, members)
        if spec.segment is not None and groups is None:
            raise ValueError(f"groups: the spec is per segment ({spec.segment!r}); give each patient's group(s) as groups")
        if spec.label_available_column is not None and label_available_at is None:
            raise ValueError(f"label_available_at: the spec's labels arrive as the column {spec.label_available_column!r} "
                             "says; give those positions as label_available_at")
    else:
        if cost is None or targets is None:
            raise TypeError("replay(probs, labels, spec) or replay(probs, labels, value, cost, targets, ...): give a "
                            "RunSpec, or the value, the cost and the targets")
        spec = replay_spec(targets, **settings)
    if candidates is not None and work is not None:
        raise ValueError("candidates and work: give one of them (work carries its own candidate sets)")
    if spec.recalibrate is not None:  # docs/method.md "Recalibration on a split": fit on the fold, replay the rest
        if candidates is not None:
            raise ValueError("candidates: not with recalibrate (the fold changes the probabilities the candidates "
                             "are built from); leave candidates unset")
        if work is not None:
            raise ValueError("work: not with recalibrate (the fold's maps change every patient's probabilities); "
                             "leave work unset")
        return after_fold(replay, probs, labels, value, cost, spec, groups, label_available_at, codes, patient_ids,
                          progress, method)
    session = Session.prepare(probs, labels, value, cost, spec, groups, label_available_at, codes, patient_ids, progress)
    if candidates is not None:
        session.candidates = shared_candidates(candidates, session)
    return session.run(method, work)


_KEYWORD_DEFAULTS = dict(delta=None, universe=DEFAULT_UNIVERSE, burn_in=0, window=None, c_max=None, score=None,
                         adaptive_rate=None, label_delay=None, recalibrate=None, recalibration=DEFAULT_RECALIBRATION,
                         recalibrate_by=DEFAULT_RECALIBRATE_BY)


def _from_spec(spec: RunSpec, cost, targets, settings: dict, probs, codes, members):
    """(validated spec, value, cost) of ``replay(probs, labels, spec)``: the spec alone says the run."""
    given = [name for name, default in _KEYWORD_DEFAULTS.items() if settings[name] is not default
             and settings[name] != default]
    if cost is not None or targets is not None or given:
        extra = [name for name, v in (("cost", cost), ("targets", targets)) if v is not None] + given
        raise ValueError(f"spec: a RunSpec says the whole run; leave {', '.join(extra)} unset (or change the spec "
                         "with spec.replace(...))")
    import numpy as np

    shape = np.shape(probs)
    n_patients, n_codes = (shape[0], shape[1]) if len(shape) == 2 else (None, None)
    spec = spec.with_default_fold(n_patients)
    try:
        spec = spec.validate(n_codes=n_codes, n_patients=n_patients)
    except SettingsError as err:
        raise ValueError(f"spec: {err}") from None
    value, cost = spec.build(None if codes is None else [str(c) for c in codes], members)
    return spec, value, cost
