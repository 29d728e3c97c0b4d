"""Segments (Mondrian control): each patient is calibrated on earlier patients of its own group.

With a group label g_i per patient (a plan, region or provider), patient n's threshold comes
from the earlier calibration patients of its own group only — the same formulas with N =
that group's count and the window applied per group (``../shared/SPEC.md``, "Segments").
Each group then keeps its own guarantee, E[C | group] <= c and P{C > c | group} <= delta.
A group with too few patients for the target gets T = -inf (the empty set);
:func:`too_small_reason` says why and :func:`min_calibration` how many patients it needs.

This module holds the group bookkeeping shared by the replay engine, :class:`favmac.FavMac`,
the validity check and the app: splitting a stream by group, the minimum group size, and
the per-segment summary table of a replay.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .thresholds import exact, violation_rank

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["check_group_labels", "group_rows", "min_calibration", "running_by_segment", "segment_table",
           "too_small_reason"]


def check_group_labels(groups, n_patients: int, *, name: str = "groups") -> np.ndarray:
    """One text label per patient, as an object array; refuses missing labels, naming the first row.

    >>> check_group_labels(["a", 2, "a"], 3).tolist()
    ['a', '2', 'a']
    """
    arr = np.asarray(groups, dtype=object)
    if arr.ndim == 0:
        arr = np.full(n_patients, arr.item(), dtype=object)
    if arr.shape != (n_patients,):
        raise ValueError(f"{name}: expected one group label per patient, shape ({n_patients},), got {arr.shape}")
    out = np.empty(n_patients, dtype=object)
    for i, g in enumerate(arr.tolist()):
        if g is None or (isinstance(g, float) and math.isnan(g)) or (isinstance(g, str) and not g.strip()):
            raise ValueError(f"{name}: patient {i} (0-based) has no group label; every patient needs one")
        out[i] = g.strip() if isinstance(g, str) else str(g)
    return out


def group_rows(groups) -> list[tuple[str, np.ndarray]]:
    """``(label, rows)`` per group, labels sorted, rows (int64) in stream order.

    >>> [(g, r.tolist()) for g, r in group_rows(np.array(["b", "a", "b"], dtype=object))]
    [('a', [1]), ('b', [0, 2])]
    """
    labels, inverse = np.unique(np.asarray(groups, dtype=object).astype(str), return_inverse=True)
    inverse = inverse.ravel()
    return [(str(label), np.flatnonzero(inverse == i)) for i, label in enumerate(labels)]


def min_calibration(target, c_max, delta=None) -> int:
    """Fewest calibration patients with a finite-or-+inf threshold (not -inf) for this target.

    Expected control: M = c (N + 1) - C_max >= 0, i.e. N >= C_max / c - 1. Violation control:
    k = ceil((1 - delta)(N + 1)) <= N.

    >>> min_calibration(1, 10), min_calibration(1, 10, delta=0.1)
    (9, 9)
    """
    if delta is None:
        need = exact(c_max) / exact(target) - 1
        return max(0, math.ceil(need))
    n = max(0, math.floor((1 - exact(delta)) / exact(delta)) - 1)
    while violation_rank(delta, n) > n:
        n += 1
    return n


def too_small_reason(n_calibration: int, target, c_max, delta=None) -> str | None:
    """Why a group of ``n_calibration`` patients gets the empty set (T = -inf), or None if it does not.

    >>> too_small_reason(3, 1, 10)
    'only 3 calibration patients; expected-cost control at target 1 needs at least 9 (M = c(N+1) - C_max < 0), so every set is empty'
    """
    need = min_calibration(target, c_max, delta)
    if n_calibration >= need:
        return None
    if delta is None:
        rule = f"expected-cost control at target {float(target):g} needs at least {need} (M = c(N+1) - C_max < 0)"
    else:
        rule = f"violation control at delta {float(delta):g} needs at least {need} (k = ceil((1-delta)(N+1)) > N)"
    return f"only {n_calibration} calibration patients; {rule}, so every set is empty"


def segment_table(result, target_index: int = 0) -> pd.DataFrame:
    """One row per segment of a grouped replay: how each group fared against the target.

    Columns: ``segment``, ``patients`` (calibration patients of the group over the whole
    stream), ``predicted`` (its patients after the burn-in), ``threshold`` (the group's final
    threshold), ``mean_cost``, ``target``, ``violation_rate``, ``delta`` (NaN under expected
    control), ``bound`` (with an adaptive rate: the deterministic bound c + (c + gamma
    C_max) / (gamma S_g) on the segment's mean cost over its S_g predicted patients; NaN
    otherwise), ``within_target`` (mean cost <= target — or <= ``bound`` when adaptive —
    under expected control, violation rate <= delta under violation control; empty when the
    group had no predicted patient) and ``warning`` (why the group gets the empty set, if it
    is too small).

    Parameters
    ----------
    result : ReplayResult
        A replay run with ``groups=`` (``result.groups`` set).
    target_index : int
        Which target's row of the result.
    """
    if result.groups is None or result.group_thresholds is None:
        raise ValueError("result: segment_table needs a replay run with groups= (segments on)")
    target = float(result.targets[target_index])
    c_max = result.settings.get("c_max")
    rows = []
    for label, final in result.group_thresholds.items():
        mine = result.groups == label
        predicted = int(mine.sum())
        costs = result.cost[target_index, mine]
        viol = result.violations[target_index, mine]
        n_cal = int(result.group_sizes[label])
        mean_cost = float(costs.mean()) if predicted else math.nan
        rate = float(viol.mean()) if predicted else math.nan
        bound = math.nan
        if result.adaptive_targets is not None and predicted and c_max is not None:
            from .adaptive import adaptive_bound

            bound = float(adaptive_bound(result.targets[target_index], result.settings["adaptive_rate"], c_max,
                                         predicted))
        if not predicted:
            within = None
        elif result.delta is None:
            within = bool(mean_cost <= (target if math.isnan(bound) else bound) + 1e-12)
        else:
            within = bool(rate <= result.delta)
        reason = too_small_reason(n_cal, result.targets[target_index], c_max, result.delta) if c_max is not None else None
        rows.append({
            "segment": label,
            "patients": n_cal,
            "predicted": predicted,
            "threshold": float(final[target_index]),
            "mean_cost": mean_cost,
            "target": target,
            "violation_rate": rate,
            "delta": math.nan if result.delta is None else float(result.delta),
            "bound": bound,
            "within_target": within,
            "warning": reason or "",
        })
    import pandas as pd  # imported on use: pandas is slow to import

    return pd.DataFrame(rows, columns=["segment", "patients", "predicted", "threshold", "mean_cost", "target",
                                       "violation_rate", "delta", "bound", "within_target", "warning"])


def running_by_segment(result, target_index: int = 0) -> pd.DataFrame:
    """Running mean cost and violation rate within each segment, step by step (for split curves).

    Columns: segment, step, position, mean_cost, violation_rate (over that segment's predicted
    patients up to and including the step). Needs ``result.groups``.

    >>> import numpy as np
    >>> from favmac.result import ReplayResult
    >>> r = ReplayResult("m", np.array([1.0]), None, 0, np.zeros((1, 3)), np.zeros((1, 3, 1), bool),
    ...                  np.array([[2.0, 0.0, 1.0]]), np.zeros((1, 3)), groups=np.array(["a", "b", "a"], dtype=object))
    >>> running_by_segment(r)[["segment", "position", "mean_cost"]].values.tolist()
    [['a', 0, 2.0], ['a', 2, 1.5], ['b', 1, 0.0]]
    """
    import pandas as pd  # imported on use: pandas is slow to import

    if result.groups is None:
        raise ValueError("result: running_by_segment needs a result with segments (groups)")
    groups = np.asarray(result.groups, dtype=object).astype(str)
    cost = np.asarray(result.cost[target_index], dtype=float)
    violation = np.asarray(result.violations[target_index], dtype=bool)
    parts = []
    for label, rows in group_rows(groups):
        seen = np.arange(1, len(rows) + 1)
        parts.append(pd.DataFrame({
            "segment": label,
            "step": rows,
            "position": rows + result.burn_in,
            "mean_cost": np.cumsum(cost[rows]) / seen,
            "violation_rate": np.cumsum(violation[rows]) / seen,
        }))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["segment", "step", "position", "mean_cost", "violation_rate"])
