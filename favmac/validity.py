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

With segments each segment is tested on its own patients (its own guarantee); with
``segment_control=False`` the session is calibrated on everyone (pooled) and only *reported*
per segment, which shows where a pooled guarantee hides a segment's overrun.

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

__all__ = ["MIN_ORDERINGS", "ValidityReport", "order_sentence", "validity_check", "verdict_sentence"]

#: Fewest random orderings a validity check runs.
MIN_ORDERINGS = 200

POOLED_REASON = ("Calibration is pooled over all segments, which promises the average over everyone, not each "
                 "segment: turn on per-segment control.")


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
        One row per segment: segment, patients, predicted, mean, promised, p_value,
        binomial_p_value, passed, verdict.
    segment_statistics : dict
        Segment label -> (R,) per-ordering statistic.
    observed : float
        The statistic in the patients' own (file) order.
    order_p_value : float
        Permutation p-value of ``observed`` among the random orderings (small: the arrival
        order matters, i.e. drift).
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


def _p_text(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def verdict_sentence(control, mean, promised, p_value, passed, *, n_orderings, n_patients, alpha, who="your patients",
                     target=None, reason=None) -> str:
    """The pass/fail statement in plain words.

    >>> print(verdict_sentence("expected", 0.97, 1.0, 0.62, True, n_orderings=200, n_patients=3000, alpha=0.05))
    PASS: over 200 random orderings of your patients (3,000 patients), the chosen code sets cost 0.97 per patient on average, within the promised 1 (one-sided t-test, p = 0.620). The cost guarantee held on this data.
    """
    if control == "expected":
        measured = f"the chosen code sets cost {mean:.3g} per patient on average"
        promise = f"the promised {promised:g}"
        holds = "The cost guarantee held on this data."
        broke = ("The cost guarantee did not hold on this data: the patients being coded do not look like the "
                 "calibration patients (drift or a non-random order), so do not rely on the target here.")
    else:
        measured = f"{100 * mean:.1f}% of patients got a set costing more than {target:g}"
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


def validity_check(probs, labels, value, cost, target, *, delta=None, universe: str = "ratio", burn_in: int = 0,
                   window=None, c_max=None, groups=None, adaptive_rate=None, n_orderings: int = MIN_ORDERINGS,
                   seed: int = 0, alpha: float = 0.05, progress=None, segment_control: bool = True,
                   score: str | None = None) -> ValidityReport:
    """Replay the session over ``n_orderings`` random orderings and test the promise.

    Parameters
    ----------
    probs, labels : ndarray (N, K)
    value, cost : value and cost functions
    target : float
        The target c.
    delta : float or None
        None: expected-cost control; else violation control at level delta.
    universe, burn_in, window, c_max, groups, adaptive_rate
        As :func:`favmac.replay` (``groups`` tests every segment on its own).
    segment_control : bool
        With ``groups``: True calibrates each segment on its own (Mondrian control); False
        calibrates on everyone and only reports per segment.
    score : str or None
        The conformal score, passed to :func:`favmac.replay` (None: its default for the control).
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

    Examples
    --------
    >>> from favmac import AdditiveValue, AdditiveCost
    >>> rng = np.random.RandomState(0)
    >>> p = rng.rand(300, 4).round(3); y = rng.rand(300, 4) < p
    >>> report = validity_check(p, y, AdditiveValue(), AdditiveCost(), 1.0, burn_in=100)
    >>> report.n_orderings, report.passed
    (200, True)
    """
    from .functions import bind_rows
    from .replay import replay
    from .segments import check_group_labels
    from .validation import check_probs

    probs = check_probs(probs)
    n_patients = probs.shape[0]
    if isinstance(n_orderings, bool) or int(n_orderings) != n_orderings or n_orderings < MIN_ORDERINGS:
        raise ValueError(f"n_orderings: expected a whole number >= {MIN_ORDERINGS}, got {n_orderings!r}")
    if isinstance(seed, bool) or int(seed) != seed or seed < 0:
        raise ValueError(f"seed: expected a whole number >= 0, got {seed!r}")
    if not 0 < float(alpha) < 1:
        raise ValueError(f"alpha: expected a level between 0 and 1, e.g. 0.05; got {alpha!r}")
    group_labels = None if groups is None else check_group_labels(groups, n_patients)
    report = progress if progress is not None else (lambda fraction: None)
    rng = np.random.RandomState(int(seed))
    labels = np.asarray(labels)
    n_orderings = int(n_orderings)
    statistic = np.empty(n_orderings)
    first = np.zeros(n_orderings, dtype=bool)
    per_patient = []
    seg_stats: dict = {}
    seg_first: dict = {}
    seg_counts: dict = {}
    report(0.0)
    def run(order):
        # values and costs with per-patient context (a member's CMS cell, known codes) follow their patients
        res = replay(probs[order], labels[order], bind_rows(value, order), bind_rows(cost, order), [target],
                     delta=delta, universe=universe,
                     burn_in=burn_in, window=window, c_max=c_max, adaptive_rate=adaptive_rate, score=score,
                     groups=None if group_labels is None or not segment_control else group_labels[order])
        measured = res.cost[0] if delta is None else res.violations[0].astype(float)
        res.groups = None if group_labels is None else group_labels[order][burn_in:]
        return res, measured

    observed = float(run(np.arange(n_patients))[1].mean())
    for r in range(n_orderings):
        order = rng.permutation(n_patients)
        res, measured = run(order)
        statistic[r] = measured.mean()
        first[r] = bool(res.violations[0, 0])
        if r < 20:
            per_patient.append(res.cost[0])
        if group_labels is not None:
            for label in np.unique(res.groups):
                mine = res.groups == label
                seg_stats.setdefault(label, []).append(measured[mine].mean())
                seg_first.setdefault(label, []).append(bool(res.violations[0, np.argmax(mine)]))
                seg_counts[label] = (int((group_labels == label).sum()), int(mine.sum()))
        report((r + 1) / n_orderings)
    steps = n_patients - burn_in
    promised = float(target) if delta is None else float(delta)
    finite = math.sqrt((n_patients - steps) / (n_patients - 1)) if n_patients > 1 else 0.0
    if delta is None:
        spread = float(np.std(np.concatenate(per_patient))) / math.sqrt(steps) * finite
    else:
        spread = math.sqrt(float(delta) * (1 - float(delta)) / steps) * finite
    p_value = _t_test(statistic, promised)
    binomial = None if delta is None else _binomial(first, float(delta))
    passed = p_value >= alpha
    control = "expected" if delta is None else "violation"
    verdict = verdict_sentence(control, float(statistic.mean()), promised, p_value, passed, n_orderings=n_orderings,
                               n_patients=n_patients, alpha=alpha, target=float(target))
    order_p = float((1 + np.sum(statistic >= observed - 1e-12)) / (n_orderings + 1))
    verdict += " " + order_sentence(control, observed, statistic, order_p, alpha, adaptive_rate is not None)
    segments = None
    if group_labels is not None:
        rows = []
        for label in sorted(seg_stats):
            values = np.asarray(seg_stats[label])
            seg_p = _t_test(values, promised) if len(values) > 1 else math.nan
            seg_binom = None if delta is None else _binomial(seg_first[label], float(delta))
            seg_pass = bool(seg_p >= alpha) if not math.isnan(seg_p) else None
            n_cal, n_pred = seg_counts[label]
            rows.append({
                "segment": label, "patients": n_cal, "predicted": n_pred, "mean": float(values.mean()),
                "promised": promised, "p_value": seg_p, "binomial_p_value": seg_binom, "passed": seg_pass,
                "verdict": "" if seg_pass is None else verdict_sentence(
                    control, float(values.mean()), promised, seg_p, seg_pass, n_orderings=len(values),
                    n_patients=n_cal, alpha=alpha, who=f"segment {label}", target=float(target),
                    reason=None if segment_control else POOLED_REASON),
            })
        segments = pd.DataFrame(rows)
        seg_stats = {label: np.asarray(v) for label, v in seg_stats.items()}
        if len(segments) and not all(p is not False for p in segments["passed"]):
            failing = ", ".join(str(s) for s, p in zip(segments["segment"], segments["passed"]) if p is False)
            verdict += f" However, the promise did not hold for segment(s) {failing} (see the table per segment)."
            if not segment_control:
                verdict += " " + POOLED_REASON
            passed = False
    return ValidityReport(control=control, target=float(target), delta=None if delta is None else float(delta),
                          promised=promised, statistic=statistic, n_predicted=steps, predicted_spread=spread,
                          p_value=p_value, binomial_p_value=binomial, passed=passed, verdict=verdict,
                          alpha=float(alpha), seed=int(seed), segments=segments,
                          segment_statistics=seg_stats or None, observed=observed, order_p_value=order_p)


def order_sentence(control, observed, statistic, order_p, alpha, adaptive) -> str:
    """What the patients' own arrival order shows, in plain words.

    >>> order_sentence("expected", 1.3, np.array([1.0, 1.01]), 1 / 3, 0.05, False)[:40]
    'In the order your patients arrived, the '
    """
    what = "the mean cost was" if control == "expected" else "the violation rate was"
    shown = f"{observed:.3g}" if control == "expected" else f"{100 * observed:.1f}%"
    low, high = np.quantile(statistic, [0.025, 0.975])
    span = f"{low:.3g} and {high:.3g}" if control == "expected" else f"{100 * low:.1f}% and {100 * high:.1f}%"
    text = f"In the order your patients arrived, {what} {shown} (random orderings: 95% between {span}; "
    if order_p < alpha:
        advice = ("the adaptive target is on and keeps the long-run mean within its bound."
                  if adaptive else "consider the adaptive target (expected-cost control) or a rolling window.")
        return text + f"permutation p = {order_p:.3f}): the arrival order matters, a sign of drift over time; " + advice
    return text + f"permutation p = {order_p:.3f}): no sign that the arrival order matters."
