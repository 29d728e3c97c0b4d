"""Plumbing shared by the five baselines: inputs, calibration sizes, result building.

Every baseline follows the online protocol of :func:`favmac.replay.replay`: for each
stream position ``n >= burn_in`` the method is calibrated on patients ``0..n-1`` (or the
last ``window`` of them), predicts a set for patient ``n``, and the realized cost and value
of that set are recorded, with exact "cost > target" flags (``ReplayResult.exceeds``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..protocols import bind_rows, is_additive, n_rows, per_target_values
from ..result import ReplayResult
from ..thresholds import INT64_LIMIT, ExactCosts
from ..validation import check_stream

__all__ = ["Stream", "ThresholdSets", "prepare", "refuse_control", "calibration_sizes", "build_result", "grid_costs",
           "no_progress"]

CONTROL_NAMES = {"expected": "expected-cost control (delta=None)", "violation": "violation control (delta in (0, 1))"}


def no_progress(fraction: float) -> None:
    """Default progress callback: ignore."""


@dataclass
class Stream:
    """Checked inputs of one baseline run."""

    probs: np.ndarray
    labels: np.ndarray
    costs: ExactCosts
    targets: np.ndarray
    delta: float | None
    burn_in: int
    window: int | None
    codes: list | None
    patient_ids: np.ndarray | None
    progress: object

    @property
    def n_patients(self) -> int:
        return self.probs.shape[0]

    @property
    def n_codes(self) -> int:
        return self.probs.shape[1]

    @property
    def window_int(self) -> int:
        """The window for the kernels: 0 means no window."""
        return 0 if self.window is None else self.window

    @property
    def control(self) -> str:
        return "expected" if self.delta is None else "violation"


#: The comparisons :class:`ThresholdSets` applies, numbered as :func:`favmac.baselines.kernels.rule_outcomes` reads them.
RULES = {">=": 0, ">": 1, "<=": 2}


@dataclass
class ThresholdSets:
    """A baseline's chosen sets kept as the rule that makes them, not as (T, S, K) booleans.

    Code k is chosen for target t at step s iff ``scores[s, k] <rule> levels[t, s]`` (``levels``
    may be (T, 1): one level per target). CRC: probabilities ``>=`` lambda; InnerSet:
    probabilities ``>`` tau; ClassWise: how many targets of its order do not predict the code
    ``<=`` the target's place in that order. The booleans are built only when asked for
    (:meth:`masks`, ``ReplayResult.selected``): at 300,000 patients, 35 codes and 10 targets they
    are 105 MB, and the Trade-offs page never needs them (:func:`build_result` scores the sets
    from the rule in one compiled pass). ``scores`` is usually a view of the stream's
    probabilities, so it costs nothing.

    >>> sets = ThresholdSets(np.array([[0.2, 0.7], [0.5, 0.5]]), np.array([[0.5, 0.5]]), ">=")
    >>> sets.masks().astype(int).tolist()
    [[[0, 1], [1, 1]]]
    """

    scores: np.ndarray
    levels: np.ndarray
    rule: str
    #: Not a nested universe's code order (``favmac.universe.ChosenSets.order``): readers that
    #: score prefixes of an order take the sets from :meth:`masks` instead.
    order = None

    def __post_init__(self):
        if self.rule not in RULES:
            raise ValueError(f"rule: expected one of {', '.join(RULES)}; got {self.rule!r}")

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.levels.shape[0], *self.scores.shape)

    def masks(self, target: int | None = None, rows=slice(None)) -> np.ndarray:
        """Boolean sets: (T, S, K), or (S, K) for one ``target``; ``rows`` selects steps."""
        if target is None:
            return np.stack([self.masks(t, rows) for t in range(self.shape[0])]) if self.shape[0] else np.zeros(self.shape, bool)
        levels = self.levels[target]
        levels = (levels if levels.shape[0] == 1 else levels[rows])[:, None]
        scores = self.scores[rows]
        if self.rule == ">=":
            return scores >= levels
        if self.rule == ">":
            return scores > levels
        return scores <= levels


def prepare(probs, labels, cost, targets, *, delta, burn_in, window, c_max, codes, patient_ids, progress) -> Stream:
    """Check every input (one wording, :mod:`favmac.validation`) and read the cost exactly."""
    probs, labels, targets, delta, burn_in, window, codes, patient_ids = check_stream(
        probs, labels, targets, delta, burn_in, window, codes, patient_ids)
    if not is_additive(cost):
        raise ValueError("cost: the baselines need an additive cost (favmac.AdditiveCost); got " + repr(cost))
    costs = ExactCosts.of(cost, probs.shape[1], c_max)
    report = progress if progress is not None else no_progress
    report(0.0)
    return Stream(probs, labels, costs, targets, delta, burn_in, window, codes, patient_ids, report)


def refuse_control(method: str, delta, supported: tuple, hint: str = "") -> None:
    """Raise a ValueError naming the method and the control it supports when ``delta`` asks for another."""
    control = "expected" if delta is None else "violation"
    if control in supported:
        return
    if supported == ("expected",):
        message = f"{method} controls the expected cost only; call it with delta=None"
    else:
        message = f"{method} supports {' and '.join(CONTROL_NAMES[c] for c in supported)} only; got delta={delta!r}"
    raise ValueError(message + (f" ({hint})" if hint else ""))


def calibration_sizes(n_patients: int, window: int | None) -> np.ndarray:
    """Number of calibration patients at positions n = 0..N: min(n, window)."""
    sizes = np.arange(n_patients + 1, dtype=np.int64)
    return sizes if window is None else np.minimum(sizes, window)


def grid_costs(costs: ExactCosts, n_patients: int):
    """Weights and C_max in the units the float grid kernels sum.

    Scaled int64 integers (exact: ties decided exactly) when :meth:`ExactCosts.exact_sums`
    holds, else the plain float weights. Returns ``(weights, c_max_units, scale, exact)``.
    """
    if costs.exact_sums(n_patients):
        return costs.weights.astype(np.int64), costs.c_max_scaled, costs.scale, True
    return costs.float_weights, float(costs.c_max), 1, False


def _additive_weights(function, n_codes):
    """Float per-code weights of an additive ``function``, or None when it is not additive."""
    if not is_additive(function):
        return None
    return np.asarray(function.weights_for(n_codes), dtype=float)


def _realized(function, selected, labels, hit):
    """Realized value (hit=True) or cost (hit=False) of every chosen set, shape (T, S)."""
    n_targets, n_steps, n_codes = selected.shape
    weights = _additive_weights(function, n_codes)
    if weights is not None:
        from .kernels import masked_sums

        return masked_sums(selected, np.ascontiguousarray(np.where(labels == hit, weights[None, :], 0.0)))
    rows = n_rows(function)
    if rows is not None:  # per-patient context (favmac.payment.CmsHccValue): the steps are the stream's last rows
        bound = bind_rows(function, slice(rows - n_steps, rows))
        along = per_target_values(bound)
        if along is not None:  # every target's sets in one compiled pass
            return np.asarray(along(selected, labels), dtype=float).reshape(n_targets, n_steps)
        return np.array([bound(selected[t], labels) for t in range(n_targets)], dtype=float).reshape(n_targets, n_steps)
    return np.asarray(function(selected, labels), dtype=float).reshape(n_targets, n_steps)


def _outcomes(stream: Stream, selected, value, cost, labels):
    """(cost, value, exceeds), each (T, S), of the chosen sets (a (T, S, K) array or
    :class:`ThresholdSets`; the latter only where :func:`_scored_by_rule`).

    With an additive cost whose exact sums fit int64 (the usual case) one compiled pass gives
    all three (:func:`favmac.baselines.kernels.set_outcomes`, or
    :func:`~favmac.baselines.kernels.rule_outcomes` straight from the rule); the same numbers as
    :func:`_realized` and :meth:`ExactCosts.exceeds`, which remain the path for the rest.
    """
    n_codes = selected.shape[2]
    cost_weights = _additive_weights(cost, n_codes)
    bounds = [stream.costs.bound(t) for t in stream.targets]
    if cost_weights is None or not _exact_bounds(stream, bounds):
        return (_realized(cost, selected, labels, hit=False), _realized(value, selected, labels, hit=True),
                stream.costs.exceeds(selected, labels, stream.targets))
    from .kernels import rule_outcomes, set_outcomes

    value_weights = _additive_weights(value, n_codes)
    weights = (cost_weights, np.zeros(0) if value_weights is None else value_weights, stream.costs.weights.astype(np.int64),
               np.array(bounds, dtype=np.int64))
    labels = np.ascontiguousarray(labels, dtype=bool)
    if isinstance(selected, ThresholdSets):
        realized_cost, realized_value, exceeds = rule_outcomes(selected.scores, np.asarray(selected.levels),
                                                               RULES[selected.rule], labels, *weights)
    else:
        realized_cost, realized_value, exceeds = set_outcomes(selected, labels, *weights)
    if value_weights is None:
        realized_value = _realized(value, selected, labels, hit=True)
    return realized_cost, realized_value, exceeds


def _exact_bounds(stream: Stream, bounds) -> bool:
    """Whether the exact "cost > target" flags can be int64 sums (the compiled outcome passes)."""
    return stream.costs.weights.dtype != object and all(abs(b) < INT64_LIMIT for b in bounds)


def _scored_by_rule(stream: Stream, value, cost) -> bool:
    """Whether :func:`_outcomes` scores :class:`ThresholdSets` straight from their rule: an
    additive value and cost, exact int64 bounds. Otherwise the sets are built first."""
    n_codes = stream.n_codes
    if _additive_weights(cost, n_codes) is None or _additive_weights(value, n_codes) is None:
        return False
    return _exact_bounds(stream, [stream.costs.bound(t) for t in stream.targets])


def build_result(method: str, stream: Stream, thresholds, selected, value, cost, settings: dict,
                 final_thresholds) -> ReplayResult:
    """The ReplayResult of a baseline run: realized cost/value and exact violation flags.

    ``selected``: the (T, S, K) chosen sets, or :class:`ThresholdSets` (kept as the result's
    ``chosen``; ``selected`` is then built on first read)."""
    step_labels = stream.labels[stream.burn_in:]
    settings = {"control": stream.control, "c_max": float(stream.costs.c_max), "window": stream.window, **settings}
    sets = selected if isinstance(selected, ThresholdSets) else None
    if sets is not None and not _scored_by_rule(stream, value, cost):
        selected = sets.masks()  # scored the general way; the result keeps them
    realized_cost, realized_value, exceeds = _outcomes(stream, selected, value, cost, step_labels)
    result = ReplayResult(
        method=method,
        targets=stream.targets,
        delta=stream.delta,
        burn_in=stream.burn_in,
        thresholds=thresholds,
        selected=None if isinstance(selected, ThresholdSets) else selected,
        cost=realized_cost,
        value=realized_value,
        codes=stream.codes,
        patient_ids=None if stream.patient_ids is None else stream.patient_ids[stream.burn_in:],
        settings=settings,
        final_thresholds=final_thresholds,
        exceeds=exceeds,
        chosen=sets,
    )
    stream.progress(1.0)
    return result
