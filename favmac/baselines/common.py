"""Plumbing shared by the five baselines: inputs, calibration sizes, result building.

Every baseline follows the online protocol of :func:`favmac.replay.replay`: for each
stream position ``n >= burn_in`` the method is calibrated on patients ``0..n-1`` (or the
last ``window`` of them), predicts a set for patient ``n``, and the realized cost and value
of that set are recorded, with exact "cost > target" flags (``ReplayResult.exceeds``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..result import ReplayResult
from ..thresholds import INT64_LIMIT, ExactCosts
from ..validation import check_stream

__all__ = ["Stream", "prepare", "refuse_control", "calibration_sizes", "build_result", "grid_costs", "no_progress"]

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


def prepare(probs, labels, cost, targets, *, delta, burn_in, window, c_max, codes, patient_ids, progress) -> Stream:
    """Check every input (one wording, :mod:`favmac.validation`) and read the cost exactly."""
    probs, labels, targets, delta, burn_in, window, codes, patient_ids = check_stream(
        probs, labels, targets, delta, burn_in, window, codes, patient_ids)
    if not getattr(cost, "is_additive", False) or not hasattr(cost, "weights_for"):
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
    if not (getattr(function, "is_additive", False) and hasattr(function, "weights_for")):
        return None
    return np.asarray(function.weights_for(n_codes), dtype=float)


def _realized(function, selected, labels, hit):
    """Realized value (hit=True) or cost (hit=False) of every chosen set, shape (T, S)."""
    n_targets, n_steps, n_codes = selected.shape
    weights = _additive_weights(function, n_codes)
    if weights is not None:
        from .kernels import masked_sums

        return masked_sums(selected, np.ascontiguousarray(np.where(labels == hit, weights[None, :], 0.0)))
    rows = getattr(function, "n_rows", None)
    if rows is not None:  # per-patient context (favmac.payment.CmsHccValue): the steps are the stream's last rows
        from ..functions import bind_rows

        bound = bind_rows(function, slice(rows - n_steps, rows))
        if hasattr(bound, "per_target"):  # every target's sets in one compiled pass
            return np.asarray(bound.per_target(selected, labels), dtype=float).reshape(n_targets, n_steps)
        return np.array([bound(selected[t], labels) for t in range(n_targets)], dtype=float).reshape(n_targets, n_steps)
    return np.asarray(function(selected, labels), dtype=float).reshape(n_targets, n_steps)


def _outcomes(stream: Stream, selected, value, cost, labels):
    """(cost, value, exceeds), each (T, S), of the chosen sets.

    With an additive cost whose exact sums fit int64 (the usual case) one compiled pass gives
    all three (:func:`favmac.baselines.kernels.set_outcomes`); the same numbers as
    :func:`_realized` and :meth:`ExactCosts.exceeds`, which remain the path for the rest.
    """
    n_codes = selected.shape[2]
    cost_weights = _additive_weights(cost, n_codes)
    bounds = [stream.costs.bound(t) for t in stream.targets]
    exact_ok = stream.costs.weights.dtype != object and all(abs(b) < INT64_LIMIT for b in bounds)
    if cost_weights is None or not exact_ok:
        return (_realized(cost, selected, labels, hit=False), _realized(value, selected, labels, hit=True),
                stream.costs.exceeds(selected, labels, stream.targets))
    from .kernels import set_outcomes

    value_weights = _additive_weights(value, n_codes)
    realized_cost, realized_value, exceeds = set_outcomes(
        selected, np.ascontiguousarray(labels, dtype=bool), cost_weights,
        np.zeros(0) if value_weights is None else value_weights, stream.costs.weights.astype(np.int64),
        np.array(bounds, dtype=np.int64))
    if value_weights is None:
        realized_value = _realized(value, selected, labels, hit=True)
    return realized_cost, realized_value, exceeds


def build_result(method: str, stream: Stream, thresholds, selected, value, cost, settings: dict,
                 final_thresholds) -> ReplayResult:
    """The ReplayResult of a baseline run: realized cost/value and exact violation flags."""
    step_labels = stream.labels[stream.burn_in:]
    settings = {"control": stream.control, "c_max": float(stream.costs.c_max), "window": stream.window, **settings}
    realized_cost, realized_value, exceeds = _outcomes(stream, selected, value, cost, step_labels)
    result = ReplayResult(
        method=method,
        targets=stream.targets,
        delta=stream.delta,
        burn_in=stream.burn_in,
        thresholds=thresholds,
        selected=selected,
        cost=realized_cost,
        value=realized_value,
        codes=stream.codes,
        patient_ids=None if stream.patient_ids is None else stream.patient_ids[stream.burn_in:],
        settings=settings,
        final_thresholds=final_thresholds,
        exceeds=exceeds,
    )
    stream.progress(1.0)
    return result
