"""FavMac: the online value-maximizing controller with conformal cost control."""
from __future__ import annotations

import math
from collections import deque
from fractions import Fraction

import numpy as np
import pandas as pd

from ._calibration import ExactCosts, calibration_points, violation_rank, violation_scores
from ._exact import exact
from .quantile_tree import QuantileTree
from .universe import candidate_sets, check_universe

__all__ = ["FavMac"]

_INF = math.inf


def _as_batch(array, name: str, n_codes: int | None, dtype=float) -> np.ndarray:
    arr = np.asarray(array, dtype=dtype)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected shape (K,) or (N, K), got {np.shape(array)}")
    if n_codes is not None and arr.shape[1] != n_codes:
        raise ValueError(f"{name}: expected {n_codes} codes per patient, got {arr.shape[1]}")
    return arr


class FavMac:
    """Online FavMac: prediction sets that maximize value with controlled cost.

    Constructing only stores the settings; ``update`` adds labelled patients, ``threshold``
    is calibrated on everything added so far, ``predict`` chooses sets.

    Parameters
    ----------
    value, cost : value and cost functions (``AdditiveValue``/``FormulaValue``, ``AdditiveCost``)
    target : float
        Target cost c, in the cost's own units.
    delta : float or None
        None: expected-cost control, E[C] <= c. A float in (0, 1): violation control,
        P(C > c) <= delta.
    universe : {"ratio", "prob", "value", "full"}
    c_max : float, optional
        Largest possible cost (default: the sum of the cost weights).
    window : int, optional
        Keep only the last ``window`` patients (rolling window for distribution shift).

    Examples
    --------
    >>> import numpy as np
    >>> from favmac import AdditiveValue, AdditiveCost
    >>> fm = FavMac(AdditiveValue(), AdditiveCost(), target=1.5)
    >>> fm.update(np.array([[0.9, 0.2, 0.6]]), np.array([[1, 0, 0]]))
    >>> fm.threshold, fm.predict([0.95, 0.1, 0.5]).tolist()
    (0.5, [True, False, False])
    """

    def __init__(self, value, cost, target, *, delta=None, universe: str = "ratio", c_max=None, window=None):
        self.value = value
        self.cost = cost
        self.target = float(target)
        self.delta = None if delta is None else float(delta)
        if self.delta is not None and not 0 < self.delta < 1:
            raise ValueError(f"delta must be in (0, 1) or None, got {delta!r}")
        if not math.isfinite(self.target):
            raise ValueError(f"target must be finite, got {target!r}")
        self.universe = universe
        self.c_max = c_max
        if window is not None and int(window) < 1:
            raise ValueError(f"window must be a positive number of patients, got {window!r}")
        self.window = None if window is None else int(window)
        self._n_codes: int | None = None
        self._tree = QuantileTree()
        self._history: deque = deque()
        self._costs: ExactCosts | None = None

    # -------------------------------------------------------------- bookkeeping
    def _bind(self, n_codes: int) -> None:
        if self._n_codes is None:
            check_universe(self.universe, n_codes)
            self._n_codes = n_codes
            self._costs = ExactCosts(self.cost, n_codes, self.c_max)

    @property
    def n_calibration(self) -> int:
        """Number of labelled patients the threshold is calibrated on."""
        return len(self._history)

    @property
    def c_max_exact(self) -> Fraction | None:
        return None if self._costs is None else self._costs.c_max

    # -------------------------------------------------------------- learning
    def update(self, p, y) -> None:
        """Add labelled patient(s): p, y of shape (K,) or (N, K)."""
        probs = _as_batch(p, "p", self._n_codes)
        labels = _as_batch(y, "y", probs.shape[1])
        if not np.all((labels == 0) | (labels == 1)):
            raise ValueError("y: labels must be 0 or 1")
        self._bind(probs.shape[1])
        cands = candidate_sets(probs, self.value, self.cost, self.universe)
        realized = self._costs.realized(cands, labels.astype(bool))
        scale = self._costs.scale
        if self.delta is None:
            keys, increments = calibration_points(cands, realized)
            for row_keys, row_inc in zip(keys.tolist(), increments.tolist()):
                self._tree.insert_many(row_keys, row_inc, scale)
                self._remember((row_keys, row_inc, scale))
        else:
            scores = violation_scores(cands, realized, self._costs.bound(self.target))
            for score in scores.tolist():
                self._tree.insert(score, 1)
                self._remember(([score], [1], 1))

    def _remember(self, points) -> None:
        """Keep a patient's points (keys, numerators, denominator) for the rolling window."""
        self._history.append(points)
        if self.window is not None and len(self._history) > self.window:
            self._tree.delete_many(*self._history.popleft())

    # -------------------------------------------------------------- threshold
    @property
    def threshold(self) -> float:
        """Current threshold T, calibrated on all patients added so far (may be +-inf)."""
        n = self.n_calibration
        if self.delta is None:
            if self._costs is None and self.c_max is None:
                return -_INF  # K (hence C_max) is unknown until the first update/predict
            c_max = self._costs.c_max if self._costs is not None else exact(self.c_max)
            margin = exact(self.target) * (n + 1) - c_max
            if margin < 0:
                return -_INF
            return self._tree.search_greater(margin)
        k = violation_rank(self.delta, n)
        if k > n:
            return -_INF
        if k <= 0:
            return _INF
        return self._tree.search_greater(n - k)  # the k-th largest T_i

    # -------------------------------------------------------------- prediction
    def predict(self, p) -> np.ndarray:
        """Boolean mask(s) of the chosen set: (K,) for one patient, (N, K) for a batch."""
        single = np.asarray(p).ndim == 1
        probs = _as_batch(p, "p", self._n_codes)
        self._bind(probs.shape[1])
        cands = candidate_sets(probs, self.value, self.cost, self.universe)
        masks = cands.masks(cands.choose(self.threshold))
        return masks[0] if single else masks

    def explain(self, p, codes=None) -> pd.DataFrame:
        """The greedy order for one patient and where the threshold cuts it.

        One row per step: rank, code, prob, value_weight, cost_weight, chat (cumulative cost
        proxy after adding the code), vhat (cumulative value proxy), selected.
        """
        probs = _as_batch(p, "p", self._n_codes)
        if probs.shape[0] != 1:
            raise ValueError("explain takes one patient's probabilities")
        n_codes = probs.shape[1]
        if self.universe == "full":
            raise ValueError("explain shows a greedy order; the 'full' universe has none")
        codes = list(codes) if codes is not None else [str(k) for k in range(n_codes)]
        cands = candidate_sets(probs, self.value, self.cost, self.universe)
        chosen = int(cands.choose(self.threshold)[0])
        order = cands.order[0]
        return pd.DataFrame(
            {
                "rank": np.arange(1, n_codes + 1),
                "code": [codes[k] for k in order],
                "prob": probs[0, order],
                "value_weight": self.value.weights_for(n_codes)[order],
                "cost_weight": self.cost.weights_for(n_codes)[order],
                "chat": cands.chat[0, 1:],
                "vhat": cands.vhat[0, 1:],
                "selected": np.arange(1, n_codes + 1) <= chosen,
            }
        )

    def __repr__(self):
        control = "expected" if self.delta is None else f"violation, delta={self.delta}"
        return f"FavMac(target={self.target}, {control}, universe={self.universe!r}, n_calibration={self.n_calibration})"
