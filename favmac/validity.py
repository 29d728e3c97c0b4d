"""Validity evidence: did the promise hold on this data? Re-run the session over many random orderings.

FavMac's guarantees are over the order in which patients arrive: if the patients are
exchangeable (no drift, calibration patients like the ones being coded), then for the
stream in a uniformly random order each predicted patient's expected cost is at most c
(expected-cost control) and its chance of exceeding c at most delta (violation control) —
conditional on the data set itself. So replaying the user's own data in R >= 200 random
orders (fixed seed) and averaging tests the promise on exactly this data:

* expected control: the per-ordering mean realized cost, R independent draws (given the
  data) whose mean is <= c under the promise — a one-sided t-test of "mean > c";
* violation control: the per-ordering violation rate, tested the same way (its mean is
  <= delta under the promise), plus an exact binomial test on the first predicted patient of
  every ordering (R independent draws each exceeding c with probability <= delta). A
  binomial test on all R x S predictions would be wrong: patients of one ordering share
  their calibration data, so they are not independent.

With segments each segment is tested on its own patients (its own guarantee); with several
groupings (plan and age band) every group of every grouping is, one table per grouping. With
``segment_control=False`` the session is calibrated on everyone (pooled) and only *reported*
per group, which shows where a pooled guarantee hides a group's overrun. Labels that arrive
later are replayed as they would arrive in each ordering (``label_delay``,
``label_available_at``; see :func:`validity_check` for how an arrival moves with its patient).

The order the patients really arrived in is replayed too: where its statistic falls among
the random orderings' (a permutation p-value, (1 + #{orderings >= it}) / (R + 1)) tells
whether time order matters — drift, which exchangeability rules out and the adaptive
target is for. The verdict is plain sentences an auditor can act on; :class:`ValidityReport`
keeps the numbers behind them.
The spread shown around the target is what drawing the S predicted patients at random from
the N would give — sd / sqrt(S) for costs, sqrt(delta (1 - delta) / S) for violations, times
the finite-population factor sqrt((N - S) / (N - 1)), since every ordering reuses the same N
patients: a guide to "how far from the target is still chance", not part of the test.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .recalibration import DEFAULT_RECALIBRATE_BY, DEFAULT_RECALIBRATION
from .universe import DEFAULT_UNIVERSE

__all__ = ["GROUP_COLUMNS", "MIN_ORDERINGS", "ValidityReport", "order_sentence", "validity_check", "verdict_sentence"]

#: Fewest random orderings a validity check runs.
MIN_ORDERINGS = 200

#: Columns of a per-group table (:attr:`ValidityReport.groupings`), one row per group.
GROUP_COLUMNS = ["segment", "patients", "predicted", "mean", "spread", "mean_cost", "violation_rate", "promised",
                 "p_value", "binomial_p_value", "passed", "verdict"]

POOLED_REASON = ("Calibration is pooled over all segments, which promises the average over everyone, not each "
                 "segment: turn on per-segment control to promise each segment its own target.")


@dataclass
class ValidityReport:
    """Outcome of :func:`validity_check`.

    Attributes
    ----------
    control : {"expected", "violation"}
    target : float
        c (cost units).
    delta : float or None
    promised : float
        What the statistic may not exceed on average: c (expected) or delta (violation).
    statistic : ndarray (R,)
        Per ordering: mean realized cost (expected) or violation rate (violation).
    n_predicted : int
        S, predicted patients per ordering.
    predicted_spread : float
        The standard deviation of the statistic that S patients drawn at random from the N
        would give (with the finite-population factor).
    p_value : float
        One-sided t-test of "the true mean exceeds ``promised``".
    binomial_p_value : float or None
        Violation control: exact binomial test on the first predicted patient of each ordering.
    passed : bool
        No significant excess at level ``alpha``.
    verdict : str
        The plain-language statement.
    segments : DataFrame or None
        The first grouping's table (see ``groupings``).
    segment_statistics : dict
        The first grouping's group label -> per-ordering statistic (see ``grouping_statistics``).
    groupings : dict or None
        Grouping name -> its table, one row per group (:data:`GROUP_COLUMNS`): segment (the
        group), patients (in the data), predicted (per ordering, on average), mean (of the
        statistic over the orderings: mean cost or violation rate), spread (its standard
        deviation over the orderings), mean_cost and violation_rate (both, whatever the
        control), promised, p_value, binomial_p_value (violation control: the group's first
        predicted patient of each ordering), passed (None with a single ordering having the
        group), verdict. A group whose patients are all in the burn-in has no row.
    grouping_statistics : dict or None
        Grouping name -> {group label -> per-ordering statistic (orderings where the group has
        predicted patients)}.
    observed : float
        The statistic in the patients' own (file) order.
    order_p_value : float
        Permutation p-value of ``observed`` among the random orderings (small: the arrival
        order matters, i.e. drift).
    adaptive_bound : float or None
        With an adaptive target (docs/method.md "Adaptive target under drift"): what it promises instead
        of E[C] <= c, the deterministic bound c + (c + gamma (L + 1) C_max) / (gamma S) on
        the mean cost over the S predicted patients (L: the most labels pending, 0 without a
        delay; :func:`favmac.adaptive.adaptive_bound`), the largest over the orderings and the
        arrival order. None without an adaptive target.
    adaptive_held : bool or None
        Whether every ordering's mean cost, and the arrival order's, stayed within its own
        bound. Then ``passed`` is this (the t-test against c is reported, not the promise).
    overall_passed : bool or None
        The promise for everyone together (``passed`` before any group's own test): with pooled
        control (``segment_control=False``) the only promise made, so a group over the target
        then makes ``passed`` False while this stays True.
    """

    control: str
    target: float
    delta: float | None
    promised: float
    statistic: np.ndarray
    n_predicted: int
    predicted_spread: float
    p_value: float
    binomial_p_value: float | None
    passed: bool
    verdict: str
    alpha: float
    seed: int
    segments: pd.DataFrame | None = None
    segment_statistics: dict | None = None
    observed: float | None = None
    order_p_value: float | None = None
    groupings: dict | None = None
    grouping_statistics: dict | None = None
    adaptive_bound: float | None = None
    adaptive_held: bool | None = None
    overall_passed: bool | None = None

    @property
    def n_orderings(self) -> int:
        return len(self.statistic)

    @property
    def mean(self) -> float:
        return float(np.mean(self.statistic))


def _t_test(values, promised) -> float:
    """One-sided p-value of "mean > promised" (Student t, R - 1 degrees of freedom)."""
    from scipy import stats

    values = np.asarray(values, dtype=float)
    mean = float(values.mean())
    sd = float(values.std(ddof=1)) if len(values) > 1 else 0.0
    if sd == 0.0 or not math.isfinite(sd):
        return 0.0 if mean > promised + 1e-12 else 1.0
    t = (mean - promised) / (sd / math.sqrt(len(values)))
    return float(stats.t.sf(t, len(values) - 1))


def _binomial(first_violations, delta) -> float:
    """P(X >= observed) for X ~ Binomial(R, delta): exact, one-sided."""
    from scipy import stats

    hits = int(np.sum(first_violations))
    return float(stats.binom.sf(hits - 1, len(first_violations), delta))


def _figure(x: float) -> str:
    """A cost figure for a sentence: three significant digits, whole numbers from 1,000 on (a mean of
    4,472 dollars is not "4.47e+03").

    >>> _figure(4472.4), _figure(0.9252), _figure(1.05)
    ('4,472', '0.925', '1.05')
    """
    return f"{x:,.0f}" if math.isfinite(x) and abs(x) >= 1000 else f"{x:.3g}"


def _per_100(control, x: float, unit) -> str:
    """A group's statistic for a sentence: a mean cost per 100 charts, or a violation rate in %.

    >>> _per_100("expected", 0.132, "false flags"), _per_100("violation", 0.1234, None)
    ('13.2 false flags per 100 charts', '12.3% of charts over c')
    """
    if control == "expected":
        return _figure(100 * x) + (f" {unit}" if unit else "") + " per 100 charts"
    return f"{100 * x:.1f}% of charts over c"


def _kept(x: float) -> str:
    """:func:`_figure` keeping its trailing zeros, for the two ends of a range ("1.00 and 1.07", not "1 and 1.07").

    >>> _kept(1.0), _kept(1.07), _kept(4472.4), _kept(100.0), _kept(99.5)
    ('1.00', '1.07', '4,472', '100', '99.5')
    """
    return _figure(x) if math.isfinite(x) and abs(x) >= 1000 else f"{x:#.3g}".rstrip(".")


def _p_text(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def verdict_sentence(control, mean, promised, p_value, passed, *, n_orderings, n_patients, alpha, who="your patients",
                     target=None, reason=None, unit=None) -> str:
    """The pass/fail statement in plain words (``unit``: the cost's unit, e.g. "false flags", said after
    each cost figure).

    >>> print(verdict_sentence("expected", 0.97, 1.0, 0.62, True, n_orderings=200, n_patients=3000, alpha=0.05))
    PASS: over 200 random orderings of your patients (3,000 patients), the chosen code sets cost 97 per 100 charts on average, within the promised 100 per 100 charts (one-sided t-test, p = 0.620). The cost guarantee held on this data.
    """
    each = f" {unit}" if unit else ""
    if control == "expected":  # per 100 charts, as the page's tiles
        measured = f"the chosen code sets cost {_per_100(control, mean, unit)} on average"
        promise = f"the promised {_per_100(control, promised, unit)}"
        holds = "The cost guarantee held on this data."
        broke = ("The cost guarantee did not hold on this data: the patients being coded do not look like the "
                 "calibration patients (drift or a non-random order), so do not rely on the target here.")
    else:
        measured = f"{100 * mean:.1f}% of patients got a set costing more than {target:g}{each}"
        promise = f"the promised at most {100 * promised:g}%"
        holds = "The violation guarantee held on this data."
        broke = ("The violation guarantee did not hold on this data: the patients being coded do not look like the "
                 "calibration patients (drift or a non-random order), so do not rely on it here.")
    if reason:
        broke = reason
    where = f"over {n_orderings} random orderings of {who} ({n_patients:,} patients)"
    if passed:
        relation = "within" if mean <= promised else "above, but by no more than chance explains,"
        return f"PASS: {where}, {measured}, {relation} {promise} (one-sided t-test, {_p_text(p_value)}). {holds}"
    return (f"FAIL: {where}, {measured}, above {promise}; a gap this large would happen by chance less than "
            f"{alpha:g} of the time if the promise held (one-sided t-test, {_p_text(p_value)}). {broke}")


def validity_check(probs, labels, value, cost, target, *, delta=None, universe: str = DEFAULT_UNIVERSE, burn_in: int = 0,
                   window=None, c_max=None, groups=None, adaptive_rate=None, label_delay=None, label_available_at=None,
                   recalibrate=None, recalibration: str = DEFAULT_RECALIBRATION,
                   recalibrate_by: str = DEFAULT_RECALIBRATE_BY, n_orderings: int = MIN_ORDERINGS,
                   seed: int = 0, alpha: float = 0.05, progress=None, segment_control: bool = True,
                   score: str | None = None, cost_unit: str | None = None) -> ValidityReport:
    """Replay the session over ``n_orderings`` random orderings and test the promise.

    Each ordering is ``replay`` of the permuted patients, with everything that belongs to a
    patient moving with it: its probabilities and labels, its member context (a payment
    value's cell and known codes), its group in every grouping, and its label arrival.

    Parameters
    ----------
    probs, labels : ndarray (N, K)
    value, cost : value and cost functions
    target : float
        The target c.
    delta : float or None
        None: expected-cost control; else violation control at level delta.
    universe, burn_in, window, c_max, adaptive_rate
        As :func:`favmac.replay`.
    groups : as :func:`favmac.replay`
        One grouping, or several (``[plan, age_band]``, a dict name -> labels, a DataFrame):
        every group of every grouping is tested on its own patients, one table per grouping
        (docs/method.md "Several groupings at once": each group keeps its own guarantee).
    label_delay : int, optional
        Labels arrive d stream positions after the prediction. A delay is a property of the
        process, not of a patient, so in every ordering it stays d positions.
    label_available_at : array (N,) of int, optional
        Per-patient arrival positions, in the order given. What travels with a patient under a
        permutation is its own delay, ``label_available_at[i] - i``: a patient moved to
        position j gets its labels at ``j + label_available_at[i] - i`` (a label that never
        arrived within the stream keeps arriving that far after it). The arrival order
        (observed) run uses the positions as given.
    recalibrate, recalibration, recalibrate_by
        As :func:`favmac.replay`: the first R patients of each ordering are its recalibration
        fold (so the fold, and every patient's recalibrated p, change with the ordering: the
        candidate sets are rebuilt for every ordering).
    segment_control : bool
        With ``groups``: True calibrates each group on its own (Mondrian control, smallest
        threshold over the groupings); False calibrates on everyone and only reports per group.
    score : str or None
        The conformal score, passed to :func:`favmac.replay` (None: its default for the control).
    cost_unit : str or None
        The cost's unit (e.g. "false flags"), said after each cost figure in the verdict sentences.
    n_orderings : int
        R >= 200 random orderings.
    seed : int
        Orderings are ``numpy.random.RandomState(seed).permutation(N)`` drawn in sequence.
    alpha : float
        Level of the one-sided tests (0 < alpha < 1).
    progress : callable(float), optional
        Called with the fraction of orderings done.

    Returns
    -------
    ValidityReport

    Notes
    -----
    Without ``recalibrate`` the per-patient work (candidate sets, proxies, realized costs,
    calibration points: :class:`favmac.replay.PatientWork`) is computed once and permuted for
    every ordering; only the thresholds and the selection are replayed. With a recalibration
    fold every ordering is a full replay.

    Examples
    --------
    >>> from favmac import AdditiveValue, AdditiveCost
    >>> rng = np.random.RandomState(0)
    >>> p = rng.rand(300, 4).round(3); y = rng.rand(300, 4) < p
    >>> report = validity_check(p, y, AdditiveValue(), AdditiveCost(), 1.0, burn_in=100)
    >>> report.n_orderings, report.passed
    (200, True)
    >>> two = validity_check(p, y, AdditiveValue(), AdditiveCost(), 1.0, burn_in=100, label_delay=10,
    ...                      groups={"parity": np.arange(300) % 2, "half": np.arange(300) >= 150})
    >>> list(two.groupings), list(two.groupings["half"]["segment"])
    (['parity', 'half'], ['False', 'True'])
    """
    from .adaptive import result_bound
    from .arrivals import check_arrivals
    from .functions import bind_rows
    from .replay import PatientWork, replay
    from .segments import check_groupings, group_index
    from .validation import aligned_labels, check_probs

    labels = aligned_labels(probs, labels)
    probs = check_probs(probs)
    n_patients = probs.shape[0]
    fold = recalibrate if isinstance(recalibrate, (int, np.integer)) and not isinstance(recalibrate, bool) else 0
    if isinstance(burn_in, (int, np.integer)) and not isinstance(burn_in, bool) and n_patients - fold - burn_in < 1:
        raise ValueError(f"burn_in: {burn_in} calibration-only patients" + (f" after a fold of {fold}" if fold else "")
                         + f" leave no patient to predict among {n_patients}; the check needs at least one")
    if isinstance(n_orderings, bool) or int(n_orderings) != n_orderings or n_orderings < MIN_ORDERINGS:
        raise ValueError(f"n_orderings: expected a whole number >= {MIN_ORDERINGS}, got {n_orderings!r}")
    if isinstance(seed, bool) or int(seed) != seed or seed < 0:
        raise ValueError(f"seed: expected a whole number >= 0, got {seed!r}")
    if not 0 < float(alpha) < 1:
        raise ValueError(f"alpha: expected a level between 0 and 1, e.g. 0.05; got {alpha!r}")
    groupings = check_groupings(groups, n_patients)
    # each patient's own delay travels with it (module docstring of favmac.arrivals: arrival >= position)
    own_delay = (None if label_available_at is None
                 else check_arrivals(label_available_at, n_patients) - np.arange(n_patients))
    report = progress if progress is not None else (lambda fraction: None)
    rng = np.random.RandomState(int(seed))
    labels = np.asarray(labels)
    n_orderings = int(n_orderings)
    report(0.0)
    work = None
    if recalibrate is None:  # the per-patient work does not depend on the order: built once, permuted
        work = PatientWork.of(probs, labels, value, cost, [target], delta=delta, universe=universe, score=score,
                              c_max=c_max)
    calibrated = {name: g for name, g in groupings} if groupings and segment_control else None
    if calibrated is not None and len(calibrated) == 1:
        calibrated = groupings[0][1]

    def run(order, arrivals=None):
        grouped = None if calibrated is None else (
            calibrated[order] if isinstance(calibrated, np.ndarray) else {name: g[order] for name, g in calibrated.items()})
        res = replay(probs[order], labels[order], bind_rows(value, order), bind_rows(cost, order), [target],
                     delta=delta, universe=universe, burn_in=burn_in, window=window, c_max=c_max,
                     adaptive_rate=adaptive_rate, score=score, groups=grouped, label_delay=label_delay,
                     label_available_at=arrivals, recalibrate=recalibrate,
                     **({} if recalibrate is None else {"recalibration": recalibration, "recalibrate_by": recalibrate_by}),
                     work=None if work is None else work.take(order))
        measured = res.cost[0] if delta is None else res.violations[0].astype(float)
        return res, measured

    observed_res, observed_measured = run(np.arange(n_patients), label_available_at)
    observed = float(observed_measured.mean())
    adaptive = adaptive_rate is not None and delta is None
    bounds = np.full(n_orderings, np.nan)
    first_predicted = observed_res.burn_in  # burn-in (after a recalibration fold) is the same in every ordering
    steps = n_patients - first_predicted
    indexed = [(name, *group_index(g)) for name, g in groupings]
    group_means = [np.full((n_orderings, len(names)), np.nan) for _, names, _ in indexed]
    group_costs = [np.full((n_orderings, len(names)), np.nan) for _, names, _ in indexed]
    group_rates = [np.full((n_orderings, len(names)), np.nan) for _, names, _ in indexed]
    group_first = [np.zeros((n_orderings, len(names)), dtype=bool) for _, names, _ in indexed]
    group_predicted = [np.zeros(len(names)) for _, names, _ in indexed]
    group_bounds = [np.full((n_orderings, len(names)), np.nan) for _, names, _ in indexed]  # adaptive, per group
    statistic = np.empty(n_orderings)
    first = np.zeros(n_orderings, dtype=bool)
    per_patient = []
    for r in range(n_orderings):
        order = rng.permutation(n_patients)
        arrivals = None if own_delay is None else np.arange(n_patients) + own_delay[order]
        res, measured = run(order, arrivals)
        statistic[r] = measured.mean()
        if adaptive:
            bounds[r] = result_bound(res)
        violations = res.violations[0]
        first[r] = bool(violations[0])
        if r < 20:
            per_patient.append(res.cost[0])
        for i, (_, names, index) in enumerate(indexed):
            mine = index[order][first_predicted:]
            counts = np.bincount(mine, minlength=len(names))
            present = counts > 0
            group_predicted[i] += counts
            with np.errstate(invalid="ignore", divide="ignore"):
                group_means[i][r, present] = (np.bincount(mine, weights=measured, minlength=len(names)) / counts)[present]
                group_costs[i][r, present] = (np.bincount(mine, weights=res.cost[0], minlength=len(names)) / counts)[present]
                group_rates[i][r, present] = (np.bincount(mine, weights=violations, minlength=len(names)) / counts)[present]
            seen, where = np.unique(mine, return_index=True)
            group_first[i][r, seen] = violations[where]
            if adaptive and segment_control:  # each group steers its own target: its own bound over its S_g
                for g in np.flatnonzero(present):
                    group_bounds[i][r, g] = result_bound(res, int(counts[g]))
        report((r + 1) / n_orderings)
    promised = float(target) if delta is None else float(delta)
    pool = n_patients - (0 if recalibrate is None else int(recalibrate))  # the fold never calibrates
    finite = math.sqrt(max(pool - steps, 0) / (pool - 1)) if pool > 1 else 0.0
    if delta is None:
        spread = float(np.std(np.concatenate(per_patient))) / math.sqrt(steps) * finite
    else:
        spread = math.sqrt(float(delta) * (1 - float(delta)) / steps) * finite
    p_value = _t_test(statistic, promised)
    binomial = None if delta is None else _binomial(first, float(delta))
    control = "expected" if delta is None else "violation"
    order_p = float((1 + np.sum(statistic >= observed - 1e-12)) / (n_orderings + 1))
    bound, held = None, None
    if adaptive:  # the adaptive target promises its deterministic bound for any order, not E[C] <= c
        observed_bound = result_bound(observed_res)
        held = bool(np.all(statistic <= bounds + 1e-12) and observed <= observed_bound + 1e-12)
        bound = float(max(np.max(bounds), observed_bound))
        passed = held
        verdict = adaptive_verdict(held, float(np.max(statistic - bounds)), observed - observed_bound, bound,
                                   float(statistic.mean()), float(target), p_value, n_orderings=n_orderings,
                                   n_patients=n_patients, n_predicted=steps, unit=cost_unit)
    else:
        passed = p_value >= alpha
        verdict = verdict_sentence(control, float(statistic.mean()), promised, p_value, passed, n_orderings=n_orderings,
                                   n_patients=n_patients, alpha=alpha, target=float(target), unit=cost_unit)
    verdict += " " + order_sentence(control, observed, statistic, order_p, alpha, adaptive_rate is not None, unit=cost_unit)
    tables, statistics, failing, overruns = {}, {}, [], []
    several = len(indexed) > 1
    for i, (name, names, index) in enumerate(indexed):
        rows, stats_of = [], {}
        sizes = np.bincount(index, minlength=len(names))
        for g, label in enumerate(names):
            present = ~np.isnan(group_means[i][:, g])
            values = group_means[i][present, g]
            if not len(values):
                continue  # every patient of the group is in the burn-in (or the fold) in every ordering
            stats_of[label] = values
            seg_p = _t_test(values, promised) if len(values) > 1 else math.nan
            seg_binom = None if delta is None else _binomial(group_first[i][present, g], float(delta))
            seg_pass = bool(seg_p >= alpha) if not math.isnan(seg_p) else None
            who = f"{name} {label}" if several else f"segment {label}"
            seg_bounds = group_bounds[i][present, g]
            if adaptive and segment_control:  # the group's own adaptive bound, in every ordering
                seg_pass = bool(np.all(values <= seg_bounds + 1e-12))
            rows.append({
                "segment": label, "patients": int(sizes[g]), "predicted": int(round(group_predicted[i][g] / n_orderings)),
                "mean": float(values.mean()), "spread": float(values.std(ddof=1)) if len(values) > 1 else math.nan,
                "mean_cost": float(np.mean(group_costs[i][present, g])),
                "violation_rate": float(np.mean(group_rates[i][present, g])),
                "promised": float(np.max(seg_bounds)) if adaptive and segment_control else promised,
                "p_value": seg_p, "binomial_p_value": seg_binom, "passed": seg_pass,
                "verdict": _adaptive_group_sentence(who, seg_pass, float(np.max(values - seg_bounds)), len(values),
                                                    unit=cost_unit)
                if adaptive and segment_control else "" if seg_pass is None else verdict_sentence(
                    control, float(values.mean()), promised, seg_p, seg_pass, n_orderings=len(values),
                    n_patients=int(sizes[g]), alpha=alpha, who=who, target=float(target), unit=cost_unit,
                    reason=None if segment_control else POOLED_REASON),
            })
            if seg_pass is False:
                failing.append(who if several else str(label))
                overruns.append(f"{who} at {_per_100(control, float(values.mean()), cost_unit)} against the promised "
                                f"{_figure(100 * promised) + ' per 100 charts' if control == 'expected' else f'{100 * promised:g}%'} "
                                f"({_p_text(seg_p)})")
        tables[name] = pd.DataFrame(rows, columns=GROUP_COLUMNS)
        statistics[name] = stats_of
    overall_passed = passed
    if failing and not segment_control:  # a pooled run promises everyone's average: say what held, then the groups
        verdict = (("Held overall, not in every segment. " if passed else "")
                   + f"{verdict} Per segment, which pooled control does not promise, "
                   + ("these ran over: " if len(overruns) > 1 else "this one ran over: ") + "; ".join(overruns)
                   + (". See the table of each grouping. " if several else ". See the table per segment. ") + POOLED_REASON)
        passed = False
    elif failing:
        if several:
            verdict += (f" However, the promise did not hold for {', '.join(failing)} (see the table of each "
                        "grouping).")
        else:
            verdict += f" However, the promise did not hold for segment(s) {', '.join(failing)} (see the table per segment)."
        passed = False
    first_name = indexed[0][0] if indexed else None
    return ValidityReport(control=control, target=float(target), delta=None if delta is None else float(delta),
                          promised=promised, statistic=statistic, n_predicted=steps, predicted_spread=spread,
                          p_value=p_value, binomial_p_value=binomial, passed=passed, verdict=verdict,
                          alpha=float(alpha), seed=int(seed),
                          segments=None if first_name is None else tables[first_name],
                          segment_statistics=None if first_name is None else statistics[first_name],
                          observed=observed, order_p_value=order_p,
                          groupings=tables or None, grouping_statistics=statistics or None,
                          adaptive_bound=bound, adaptive_held=held, overall_passed=overall_passed)


def _adaptive_group_sentence(who, held, worst, n_orderings, unit=None) -> str:
    """A group's verdict under an adaptive target: its mean within its own bound in every ordering.

    >>> _adaptive_group_sentence("segment A", True, -0.25, 200)
    'PASS: in all 200 orderings where segment A had predicted patients, its mean cost stayed within its adaptive bound (closest: 25 per 100 charts below).'
    """
    if held:
        return (f"PASS: in all {n_orderings} orderings where {who} had predicted patients, its mean cost stayed within "
                f"its adaptive bound (closest: {_per_100('expected', -worst, unit)} below).")
    return (f"FAIL: {who}'s mean cost exceeded its adaptive bound by up to {_per_100('expected', worst, unit)}, which the "
            "bound rules out for any order: report this as a bug.")


def adaptive_verdict(held, worst, observed_excess, bound, mean, target, p_value, *, n_orderings, n_patients,
                     n_predicted, unit=None) -> str:
    """The pass/fail statement of an adaptive target: its promise is a bound for any order (docs/method.md "Adaptive
    target under drift"), so it must hold in every ordering; the mean against c is reported beside it.

    >>> print(adaptive_verdict(True, -0.5, -0.4, 3.4, 1.33, 1.05, 0.0, n_orderings=200, n_patients=3000,
    ...                        n_predicted=2000))  # doctest: +NORMALIZE_WHITESPACE
    PASS: the adaptive target promises that the mean cost over the 2,000 predicted patients stays at most 340
    per 100 charts in any order; it did in all 200 random orderings of your patients (3,000 patients) and in
    their arrival order (the closest came within 40 per 100 charts of it). It does not promise an average of at
    most the target of 105 per 100 charts: the orderings' mean was 133 per 100 charts (above; one-sided t-test
    against the target, p < 0.001); the target is what the adaptive target steers the long-run mean to.
    """
    promise = (f"the adaptive target promises that the mean cost over the {n_predicted:,} predicted patients stays at "
               f"most {_per_100('expected', bound, unit)} in any order")
    where = f"{n_orderings} random orderings of your patients ({n_patients:,} patients)"
    if held:
        margin = -max(worst, observed_excess)
        head = (f"PASS: {promise}; it did in all {where} and in their arrival order (the closest came within "
                f"{_per_100('expected', margin, unit)} of it).")
    else:
        head = (f"FAIL: {promise}; the mean exceeded its bound by up to "
                f"{_per_100('expected', max(worst, observed_excess), unit)}, which the bound rules out for any order: "
                "report this as a bug.")
    relation = "within" if mean <= target + 1e-12 else "above"
    return (f"{head} It does not promise an average of at most the target of {_per_100('expected', target, unit)}: the "
            f"orderings' mean was {_per_100('expected', mean, unit)} ({relation}; one-sided t-test against the target, "
            f"{_p_text(p_value)}); the target is what the adaptive target steers the long-run mean to.")


def order_sentence(control, observed, statistic, order_p, alpha, adaptive, unit=None) -> str:
    """What the patients' own arrival order shows, in plain words (``unit``: the cost's unit).

    >>> order_sentence("expected", 1.3, np.array([1.0, 1.01]), 1 / 3, 0.05, False)[:40]
    'In the order your patients arrived, the '
    """
    what = "the mean cost was" if control == "expected" else "the violation rate was"
    shown = _per_100(control, observed, unit) if control == "expected" else f"{100 * observed:.1f}%"
    low, high = np.quantile(statistic, [0.025, 0.975])
    span = f"{_kept(100 * low)} and {_kept(100 * high)}" if control == "expected" else f"{100 * low:.1f}% and {100 * high:.1f}%"
    text = f"In the order your patients arrived, {what} {shown} (random orderings: 95% between {span}; "
    if order_p < alpha:
        advice = ("the adaptive target is on and keeps the long-run mean within its bound."
                  if adaptive else "consider the adaptive target (expected-cost control) or a rolling window.")
        return text + f"permutation p = {order_p:.3f}): the arrival order matters, a sign of drift over time; " + advice
    return text + f"permutation p = {order_p:.3f}): no sign that the arrival order matters."
