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
from ..thresholds import ExactCosts
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


def _realized(function, selected, labels, hit):
    """Realized value (hit=True) or cost (hit=False) of every chosen set, shape (T, S)."""
    n_targets, n_steps, n_codes = selected.shape
    if getattr(function, "is_additive", False) and hasattr(function, "weights_for"):
        weights = np.asarray(function.weights_for(n_codes), dtype=float)
        per_code = np.where(labels == hit, weights[None, :], 0.0)
        from .kernels import masked_sums

        return masked_sums(selected, np.ascontiguousarray(per_code))
    rows = getattr(function, "n_rows", None)
    if rows is not None:  # per-patient context (favmac.payment.CmsHccValue): the steps are the stream's last rows
        from ..functions import bind_rows

        bound = bind_rows(function, slice(rows - n_steps, rows))
        return np.array([bound(selected[t], labels) for t in range(n_targets)], dtype=float).reshape(n_targets, n_steps)
    return np.asarray(function(selected, labels), dtype=float).reshape(n_targets, n_steps)


def build_result(method: str, stream: Stream, thresholds, selected, value, cost, settings: dict,
                 final_thresholds) -> ReplayResult:
    """The ReplayResult of a baseline run: realized cost/value and exact violation flags."""
    step_labels = stream.labels[stream.burn_in:]
    settings = {"control": stream.control, "c_max": float(stream.costs.c_max), "window": stream.window, **settings}
    result = ReplayResult(
        method=method,
        targets=stream.targets,
        delta=stream.delta,
        burn_in=stream.burn_in,
        thresholds=thresholds,
        selected=selected,
        cost=_realized(cost, selected, step_labels, hit=False),
        value=_realized(value, selected, step_labels, hit=True),
        codes=stream.codes,
        patient_ids=None if stream.patient_ids is None else stream.patient_ids[stream.burn_in:],
        settings=settings,
        final_thresholds=final_thresholds,
        exceeds=stream.costs.exceeds(selected, step_labels, stream.targets),
    )
    stream.progress(1.0)
    return result
