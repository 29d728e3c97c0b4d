"""The common result shape of every online method (FavMac and the baselines).

A replay walks a labelled stream: for every position ``n >= burn_in`` the method is
calibrated on patients ``0..n-1`` and predicts a set for patient ``n``, whose labels then
join the calibration data. Results are stored per target (axis 0) and per step (axis 1).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class ReplayResult:
    """Per-step outcome of an online method for several targets.

    Attributes
    ----------
    method : str
        Display name, e.g. ``"FavMac (ratio)"`` or ``"ClassWise"``.
    targets : ndarray, shape (T,)
        Target costs c, in the cost's own units.
    delta : float or None
        Violation level for violation control; None for expected-cost control.
    burn_in : int
        Number of calibration-only patients at the head of the stream.
    thresholds : ndarray, shape (T, S)
        Threshold used at each step (may be +-inf; NaN for methods without one scalar threshold).
    selected : ndarray of bool, shape (T, S, K)
        Chosen set for the patient at stream position ``burn_in + s``. A replay stores the
        sets compactly (``chosen``) and builds this array on first access.
    cost, value : ndarray, shape (T, S)
        Realized cost C(S_hat; y) and value V(S_hat; y) of that set.
    codes : list of str, optional
        Code names (length K).
    patient_ids : ndarray, shape (S,), optional
        Ids of the predicted patients, in stream order.
    settings : dict
        Everything needed to reproduce the run (universe, window, ...).
    exceeds : ndarray of bool, shape (T, S), optional
        Exact "cost > target" flags (decimal arithmetic, :meth:`favmac.thresholds.ExactCosts.exceeds`;
        float costs can blur exact ties). Every method of the package (``replay`` and all
        baselines) fills it; read it through :attr:`violations`, never as ``cost > target``.
        Only a hand-built result may leave it out (``violations`` then compares floats).
    final_thresholds : ndarray, shape (T,), optional
        Threshold calibrated on the whole stream (all N patients): the one to use for new,
        unlabelled patients. With segments it is the pooled threshold at the base target
        (for patients without a segment); ``group_thresholds`` hold each segment's.
    groups : ndarray of str, shape (S,), optional
        Segment of each predicted patient (a replay with ``groups=``).
    group_thresholds : dict, optional
        Segment label -> (T,) final threshold calibrated on all of that segment's patients
        (at the segment's final adaptive target when adaptive); -inf for a segment too small
        for the target (:func:`favmac.segments.too_small_reason` says why).
    group_sizes : dict, optional
        Segment label -> its number of calibration patients over the whole stream.
    adaptive_targets : ndarray, shape (T, S), optional
        The adaptive target c_n used at each step (a replay with ``adaptive_rate=``).
    final_adaptive_targets : ndarray, shape (T,) or dict, optional
        c_N after the last patient (the target behind ``final_thresholds``); with segments, a
        dict label -> (T,) per segment.
    chosen : favmac.universe.ChosenSets or favmac.baselines.common.ThresholdSets, optional
        The chosen sets in compact form (a replay: candidate index per target and step; a
        baseline: its threshold rule); with it, ``selected`` may be given as None and is built
        from it (``chosen.masks()``) when first read.
    groupings : list of favmac.segments.GroupingResult, optional
        One per grouping of a replay with ``groups=`` (several groupings: each patient used
        the smallest of its groupings' thresholds). ``groups``, ``group_thresholds`` and
        ``group_sizes`` are the first grouping's.
    labels_pending : ndarray (S,) of int, optional
        Patients predicted before each step whose labels had not arrived yet (0 without a delay).
    calibration_sizes : ndarray (S,) of int, optional
        Labelled patients the pooled calibration data held at each step (the last ``window``
        arrived); a grouped patient's own group holds fewer.
    """

    method: str
    targets: np.ndarray
    delta: float | None
    burn_in: int
    thresholds: np.ndarray
    selected: np.ndarray
    cost: np.ndarray
    value: np.ndarray
    codes: list | None = None
    patient_ids: np.ndarray | None = None
    settings: dict = field(default_factory=dict)
    final_thresholds: np.ndarray | None = None
    exceeds: np.ndarray | None = None
    groups: np.ndarray | None = None
    group_thresholds: dict | None = None
    group_sizes: dict | None = None
    adaptive_targets: np.ndarray | None = None
    final_adaptive_targets: object = None
    chosen: object | None = None
    groupings: list | None = None
    labels_pending: np.ndarray | None = None
    calibration_sizes: np.ndarray | None = None

    @property
    def violations(self) -> np.ndarray:
        """(T, S) bool: realized cost above the target (the exact ``exceeds`` flags)."""
        if self.exceeds is not None:
            return self.exceeds
        return self.cost > self.targets[:, None]

    @property
    def n_steps(self) -> int:
        return self.cost.shape[1]

    def to_frame(self) -> pd.DataFrame:
        """Tidy table: one row per (target, step).

        Columns: method, target, step, position, patient_id, threshold, n_selected,
        selected_codes (``;``-joined), cost, value, violation (:attr:`violations`, exact);
        then ``segment`` with segments (the first grouping; ``segment_<name>`` for each further
        grouping), ``adaptive_target`` (c_n) with an adaptive rate, and ``labels_pending`` and
        ``calibration_size`` when labels arrive later.
        """
        n_targets, n_steps = self.cost.shape
        codes = self.codes if self.codes is not None else [str(k) for k in range(self.selected.shape[2])]
        target_col = np.repeat(self.targets, n_steps)
        step = np.tile(np.arange(n_steps), n_targets)
        flat_sel = self.selected.reshape(n_targets * n_steps, -1)
        selected_codes = join_codes(flat_sel, codes)
        ids = self.patient_ids if self.patient_ids is not None else np.arange(self.burn_in, self.burn_in + n_steps)
        import pandas as pd  # imported on use: pandas is slow to import
        frame = pd.DataFrame(
            {
                "method": self.method,
                "target": target_col,
                "step": step,
                "position": step + self.burn_in,
                "patient_id": np.tile(np.asarray(ids, dtype=object), n_targets),
                "threshold": self.thresholds.reshape(-1),
                "n_selected": flat_sel.sum(axis=1),
                "selected_codes": selected_codes,
                "cost": self.cost.reshape(-1),
                "value": self.value.reshape(-1),
            }
        )
        frame["violation"] = self.violations.reshape(-1)
        if self.groups is not None:
            frame["segment"] = np.tile(np.asarray(self.groups, dtype=object), n_targets)
        for grouping in (self.groupings or [])[1:]:
            frame[f"segment_{grouping.name}"] = np.tile(np.asarray(grouping.groups, dtype=object), n_targets)
        if self.adaptive_targets is not None:
            frame["adaptive_target"] = self.adaptive_targets.reshape(-1)
        if self.labels_pending is not None and ("label_delay" in self.settings or "label_arrivals" in self.settings):
            frame["labels_pending"] = np.tile(self.labels_pending, n_targets)
            frame["calibration_size"] = np.tile(self.calibration_sizes, n_targets)
        return frame


def join_codes(selected: np.ndarray, codes, sep: str = ";") -> np.ndarray:
    """``sep``-joined code names (or any per-code text) of each row of a boolean (R, K) matrix.

    Rows are grouped by their set first, so the Python join runs once per distinct set
    rather than once per row.

    >>> join_codes(np.array([[True, False, True], [False, False, False], [True, False, True]]), ["a", "b", "c"]).tolist()
    ['a;c', '', 'a;c']
    """
    selected = np.asarray(selected, dtype=bool)
    codes_arr = np.asarray(list(codes), dtype=object)
    if selected.shape[0] == 0:
        return np.array([], dtype=object)
    packed = np.packbits(selected, axis=1)
    rows = np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1]))).ravel()
    unique_rows, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    joined = np.array([sep.join(codes_arr[selected[i]]) for i in first], dtype=object)
    return joined[inverse.ravel()]


def _get_selected(self) -> np.ndarray:
    selected = self.__dict__.get("_selected")
    if selected is None and self.chosen is not None:
        selected = self.__dict__["_selected"] = self.chosen.masks()
    return selected


def _set_selected(self, selected) -> None:
    self.__dict__["_selected"] = selected


# ``selected`` stays a constructor field (dataclass) but is read through this property, so a
# result holding compact ``chosen`` sets builds the (T, S, K) booleans only when asked.
ReplayResult.selected = property(_get_selected, _set_selected, doc="(T, S, K) bool chosen sets (built on first use from ``chosen``).")
