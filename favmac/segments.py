"""Segments (Mondrian control): each patient is calibrated on earlier patients of its own group.

With a group label g_i per patient (a plan, region or provider), patient n's threshold comes
from the earlier calibration patients of its own group only — the same formulas with N =
that group's count and the window applied per group (docs/method.md, "Segments").
Each group then keeps its own guarantee, E[C | group] <= c and P{C > c | group} <= delta.
A group with too few patients for the target gets T = -inf (the empty set);
:func:`too_small_reason` says why and :func:`min_calibration` how many patients it needs.

Several groupings at once (docs/method.md "Several groupings at once"): with groupings such as plan
and age band, each patient gets each grouping's own Mondrian threshold and uses the smallest;
every group of every grouping then keeps its guarantee (exact for the binding grouping,
conservative for the others). :func:`check_groupings` reads the groupings,
:class:`GroupingResult` holds one grouping's outcome in a replay and :func:`segment_table`
(``grouping=``) / :func:`grouping_tables` report each, with which grouping binds.

This module holds the group bookkeeping shared by the replay engine, :class:`favmac.FavMac`,
the validity check and the app: splitting a stream by group, the minimum group size, and
the per-segment summary table of a replay.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .thresholds import exact, violation_rank

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["GroupingResult", "check_group_labels", "check_groupings", "group_index", "group_rows", "grouping_tables", "min_calibration",
           "patient_row", "running_by_segment", "segment_table", "smallest_group_thresholds", "too_small_reason"]


def patient_row(i: int, rows=None) -> str:
    """Where patient ``i`` (0-based array index) is, as a refusal names it: its file row.

    Rows are counted as :mod:`favmac.io` counts them in every message (a spreadsheet's rows: the
    header is row 1, so the first patient is row 2). ``rows`` are the patients' own file rows
    (:attr:`favmac.io.Dataset.rows`: blank lines skipped); without them the rows of a file with
    a header and no blank line, with the array index for array callers.

    >>> patient_row(7), patient_row(7, rows=[2, 3, 5, 6, 7, 8, 9, 10])
    ('row 9 (the header is row 1; array index 7)', 'row 10')
    """
    if rows is not None:
        return f"row {int(rows[i])}"
    return f"row {i + 2} (the header is row 1; array index {i})"


def check_group_labels(groups, n_patients: int, *, name: str = "groups", rows=None) -> np.ndarray:
    """One text label per patient, as an object array; refuses missing labels, naming the first
    one's file row (:func:`patient_row`; ``rows``: the patients' file rows, if known).

    >>> check_group_labels(["a", 2, "a"], 3).tolist()
    ['a', '2', 'a']
    """
    typed = groups if isinstance(groups, np.ndarray) else None
    if typed is not None and typed.shape == (n_patients,) and typed.dtype.kind in "Uiub":
        # a numpy array of text, integers or booleans: check and convert each distinct value once
        distinct, inverse = np.unique(typed, return_inverse=True)
        inverse = inverse.ravel()
        text = np.empty(len(distinct), dtype=object)
        for j, g in enumerate(distinct.tolist()):
            if isinstance(g, str) and not g.strip():
                raise ValueError(f"{name}: the patient at {patient_row(int(np.argmax(inverse == j)), rows)} has no "
                                 "group label; every patient needs one")
            text[j] = g.strip() if isinstance(g, str) else str(g)
        return text[inverse]
    arr = np.asarray(groups, dtype=object)
    if arr.ndim == 0:
        arr = np.full(n_patients, arr.item(), dtype=object)
    if arr.shape != (n_patients,):
        raise ValueError(f"{name}: expected one group label per patient, shape ({n_patients},), got {arr.shape}")
    values = arr.tolist()
    try:  # each distinct value is checked and converted once (keyed by type: 1 and 1.0 are "1" and "1.0")
        text = {key: None for key in zip(map(type, values), values)}
    except TypeError:  # unhashable labels
        text = None
    for key in (text or {}):
        g = key[1]
        if g is None or (isinstance(g, float) and math.isnan(g)) or (isinstance(g, str) and not g.strip()):
            text = None  # find the first such patient below
            break
        text[key] = g.strip() if isinstance(g, str) else str(g)
    out = np.empty(n_patients, dtype=object)
    if text is not None:
        out[:] = [text[key] for key in zip(map(type, values), values)]
        return out
    for i, g in enumerate(values):
        if g is None or (isinstance(g, float) and math.isnan(g)) or (isinstance(g, str) and not g.strip()):
            raise ValueError(f"{name}: the patient at {patient_row(i, rows)} has no group label; every patient needs one")
        out[i] = g.strip() if isinstance(g, str) else str(g)
    return out


def group_index(labels) -> tuple[list, np.ndarray]:
    """``(names, index)``: the distinct labels sorted, and each patient's position in them (int64).

    >>> group_index(np.array(["b", "a", "b"], dtype=object))
    (['a', 'b'], array([1, 0, 1]))
    """
    values = [str(g) for g in np.asarray(labels, dtype=object).tolist()]
    names = sorted(set(values))
    position = {name: i for i, name in enumerate(names)}
    return names, np.array([position[g] for g in values], dtype=np.int64)


def check_groupings(groups, n_patients: int, *, rows=None) -> list[tuple[str, np.ndarray]]:
    """The groupings of ``groups`` as ``[(name, labels (N,) object)]`` ([] for None).

    Accepted: a 1-D array-like of labels (ONE grouping, named "segment"); a list or tuple of
    1-D array-likes (one grouping each, named "grouping 1", "grouping 2", ...); a 2-D array
    (N, G) or a DataFrame with one column per grouping (named by its columns); a dict
    name -> labels. Labels are checked as :func:`check_group_labels` (no empty cell). With
    several groupings a group holding a single patient is refused: it is never calibrated
    (its patient always gets the empty set), which is almost always a mislabelled row. Refusals
    name the group value and the patient's file row (:func:`patient_row`; ``rows``: the
    patients' file rows, :attr:`favmac.io.Dataset.rows`, when the labels come from a file).

    >>> [(name, labels.tolist()) for name, labels in check_groupings([[1, 1, 2, 2], ["a", "b", "a", "b"]], 4)]
    [('grouping 1', ['1', '1', '2', '2']), ('grouping 2', ['a', 'b', 'a', 'b'])]
    >>> [name for name, _ in check_groupings(["x", "y", "x"], 3)]
    ['segment']
    """
    if groups is None:
        return []
    if hasattr(groups, "columns") and hasattr(groups, "__getitem__"):  # a DataFrame
        named = [(str(column), groups[column].to_numpy(dtype=object)) for column in groups.columns]
    elif isinstance(groups, dict):
        named = [(str(name), labels) for name, labels in groups.items()]
    elif isinstance(groups, (list, tuple)) and groups and all(
            not isinstance(g, (str, bytes)) and np.ndim(g) == 1 for g in groups):
        named = [(f"grouping {i + 1}", labels) for i, labels in enumerate(groups)]
    else:
        arr = np.asarray(groups, dtype=object)
        if arr.ndim == 2:
            if arr.shape[0] != n_patients:
                raise ValueError(f"groups: a 2-D array holds one column per grouping, shape ({n_patients}, G); "
                                 f"got {arr.shape}")
            named = [(f"grouping {i + 1}", arr[:, i]) for i in range(arr.shape[1])]
        else:
            return [("segment", check_group_labels(groups, n_patients))]
    if not named:
        raise ValueError("groups: no grouping given; pass None for no segments")
    names = [name for name, _ in named]
    if len(set(names)) != len(names):
        raise ValueError(f"groups: two groupings share a name ({', '.join(names)}); give each its own")
    out = []
    for i, (name, labels) in enumerate(named):
        where = f"groups[{i}] ({name})" if len(named) > 1 else "groups"
        out.append((name, check_group_labels(labels, n_patients, name=where, rows=rows)))
    if len(out) > 1:
        for i, (name, labels) in enumerate(out):
            values, index = group_index(labels)
            counts = np.bincount(index, minlength=len(values))
            if (counts == 1).any():
                j = int(np.argmax(counts == 1))
                first = int(np.argmax(index == j))
                raise ValueError(f"groups[{i}] ({name}): group {str(values[j])!r} has a single patient (the patient at "
                                 f"{patient_row(first, rows)}); a one-patient group is never calibrated, so that patient "
                                 "would always get the empty set. Merge the group into another one, or correct its label.")
    return out


@dataclass
class GroupingResult:
    """One grouping's outcome in a replay with ``groups=``.

    Attributes
    ----------
    name : str
        The grouping (a column name, or "segment" / "grouping i").
    groups : ndarray (S,) of str
        Group of each predicted patient.
    thresholds : ndarray (T, S)
        This grouping's threshold for each predicted patient (its group's); the patient uses
        the smallest over the groupings (``ReplayResult.thresholds``).
    final_thresholds : dict
        Group label -> (T,) threshold calibrated on all of the group's patients.
    sizes : dict
        Group label -> its number of patients over the whole stream.
    final_targets : dict, optional
        Group label -> (T,) final adaptive target (with ``adaptive_rate``).
    """

    name: str
    groups: np.ndarray
    thresholds: np.ndarray
    final_thresholds: dict
    sizes: dict
    final_targets: dict | None = None


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


def smallest_group_thresholds(finals, labels, n_patients: int, target, c_max=None, delta=None):
    """New patients' thresholds under several groupings: each the smallest of its groups' final ones.

    ``finals`` holds one ``(name, {label: T}, {label: calibration patients} or None)`` per
    grouping and ``labels`` one label sequence (N,) per grouping, in the same order. A group
    a grouping's calibration lacks has T = -inf there (0 calibration patients, as one
    grouping's export does), so the patient gets the empty set. Shared by the in-memory
    export and the distributed engine's predict.

    Returns ``(thresholds (N,), segments, notes)``: ``segments`` reads ``name=label; ...``;
    a note joins each grouping's reason for an empty set (unseen, or too small for the
    target) with ``; ``, and otherwise names the binding grouping (the first on a tie).

    >>> t, seg, notes = smallest_group_thresholds([("plan", {"A": 2.0}, None), ("band", {"x": 1.5, "y": 3.0}, None)],
    ...                                           [["A", "A", "B"], ["x", "y", "y"]], 3, 1.0)
    >>> t.tolist(), seg[0], notes[1]
    ([1.5, 2.0, -inf], 'plan=A; band=x', 'binding grouping: plan')
    """
    names = [name for name, _, _ in finals]
    per_grouping, labels_of = [], []
    for (name, thresholds, sizes), given in zip(finals, labels):
        text = [str(g).strip() for g in np.asarray(given, dtype=object).tolist()]
        if len(text) != n_patients:
            raise ValueError(f"groups[{name!r}]: expected one label per new patient ({n_patients}), got {len(text)}")
        reasons = {}
        for label in set(text):
            if label not in thresholds:
                reasons[label] = (-math.inf, f"{name} {label!r} is not in the calibration data (0 calibration "
                                  "patients), so its set is empty")
                continue
            found = float(thresholds[label])
            why = None
            if sizes is not None and label in sizes and c_max is not None:
                why = too_small_reason(int(sizes[label]), target, c_max, delta)
            elif found == -math.inf:
                why = "its calibrated threshold is -inf (too few calibration patients for the target), so every set is empty"
            reasons[label] = (found, f"{name} {label!r}: {why}" if why else "")
        per_grouping.append(np.array([reasons[label][0] for label in text], dtype=float))
        labels_of.append((text, reasons))
    table = np.vstack(per_grouping)  # (G, N)
    out, binding = table.min(axis=0), table.argmin(axis=0)
    segments, notes = [], []
    for i in range(n_patients):
        segments.append("; ".join(f"{name}={text[i]}" for name, (text, _) in zip(names, labels_of)))
        why = [reasons[text[i]][1] for text, reasons in labels_of if reasons[text[i]][1]]
        notes.append("; ".join(why) if why else f"binding grouping: {names[binding[i]]}")
    return out, segments, notes


def segment_table(result, target_index: int = 0, grouping=None) -> pd.DataFrame:
    """One row per segment of a grouped replay: how each group fared against the target.

    Columns: ``segment``, ``patients`` (calibration patients of the group over the whole
    stream), ``predicted`` (its patients after the burn-in), ``threshold`` (the group's final
    threshold), ``mean_cost``, ``target``, ``violation_rate``, ``delta`` (NaN under expected
    control), ``bound`` (with an adaptive rate: the deterministic bound c + (c + gamma
    C_max) / (gamma S_g) on the segment's mean cost over its S_g predicted patients, with
    labels that arrive later c + (c + gamma (L + 1) C_max) / (gamma S_g), L the run's largest
    ``labels_pending`` (:func:`favmac.adaptive.adaptive_bound`); NaN
    otherwise), ``within_target`` (mean cost <= target — or <= ``bound`` when adaptive —
    under expected control, violation rate <= delta under violation control; empty when the
    group had no predicted patient), ``warning`` (why the group gets the empty set, if it
    is too small) and ``binds`` (the share of the group's predicted patients whose threshold
    is this grouping's, i.e. the smallest of their groupings' thresholds: 1 with one grouping;
    NaN when the group had no predicted patient).

    Parameters
    ----------
    result : ReplayResult
        A replay run with ``groups=`` (``result.groups`` set).
    target_index : int
        Which target's row of the result.
    grouping : str or int, optional
        Which grouping (its name or position in ``result.groupings``); default the first.
    """
    if result.groups is None or result.group_thresholds is None:
        raise ValueError("result: segment_table needs a replay run with groups= (segments on)")
    chosen = _grouping_of(result, grouping)
    target = float(result.targets[target_index])
    c_max = result.settings.get("c_max")
    used = np.asarray(result.thresholds[target_index], dtype=float)
    rows = []
    for label, final in chosen.final_thresholds.items():
        mine = chosen.groups == label
        predicted = int(mine.sum())
        costs = result.cost[target_index, mine]
        viol = result.violations[target_index, mine]
        n_cal = int(chosen.sizes[label])
        mean_cost = float(costs.mean()) if predicted else math.nan
        rate = float(viol.mean()) if predicted else math.nan
        bound = math.nan
        if result.adaptive_targets is not None and predicted and c_max is not None:
            from .adaptive import result_bound

            bound = result_bound(result, predicted, target_index)
        if not predicted:
            within = None
        elif result.delta is None:
            within = bool(mean_cost <= (target if math.isnan(bound) else bound) + 1e-12)
        else:
            within = bool(rate <= result.delta)
        reason = too_small_reason(n_cal, result.targets[target_index], c_max, result.delta) if c_max is not None else None
        own = np.asarray(chosen.thresholds[target_index], dtype=float)[mine] if chosen.thresholds is not None else None
        binds = math.nan if not predicted else 1.0 if own is None else float(np.mean(own == used[mine]))
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
            "binds": binds,
        })
    import pandas as pd  # imported on use: pandas is slow to import

    return pd.DataFrame(rows, columns=["segment", "patients", "predicted", "threshold", "mean_cost", "target",
                                       "violation_rate", "delta", "bound", "within_target", "warning", "binds"])


def grouping_tables(result, target_index: int = 0) -> dict:
    """Grouping name -> its :func:`segment_table` (one table per grouping, in the result's order).

    The ``binds`` column says, per group, how often that grouping's threshold was the one
    used: a grouping binds for a group where it is near 1.
    """
    return {g.name: segment_table(result, target_index, grouping=i) for i, g in enumerate(_groupings_of(result))}


def _groupings_of(result) -> list:
    if getattr(result, "groupings", None):
        return list(result.groupings)
    return [GroupingResult("segment", np.asarray(result.groups, dtype=object), None, result.group_thresholds,
                           result.group_sizes)]


def _grouping_of(result, grouping) -> GroupingResult:
    groupings = _groupings_of(result)
    if grouping is None:
        return groupings[0]
    if isinstance(grouping, (int, np.integer)) and not isinstance(grouping, bool):
        if not 0 <= grouping < len(groupings):
            raise ValueError(f"grouping: expected a position in 0..{len(groupings) - 1}, got {grouping}")
        return groupings[grouping]
    for g in groupings:
        if g.name == grouping:
            return g
    raise ValueError(f"grouping: no grouping named {grouping!r}; the result has {', '.join(g.name for g in groupings)}")


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
