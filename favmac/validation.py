"""Checks of array inputs, shared by FavMac, the replay engine and the baselines.

One wording for one fault: every message names the argument and the expected shape or
range ("probs: expected shape (N, K), got (3,)"). Each check returns the cleaned value.
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "check_burn_in",
    "check_c_max",
    "check_codes",
    "check_delta",
    "check_groups",
    "check_labels",
    "check_patient_ids",
    "check_probs",
    "check_stream",
    "check_targets",
    "check_window",
    "aligned_labels",
    "name_pairing",
    "MAX_WEIGHT",
]

# Largest per-code risk weight accepted anywhere (weights files, the app's table, settings files,
# RunSpec). Weights are relative (CMS-HCC factors are below 10); the bound keeps C_max and the
# replay's exact integer cost sums (6 decimal places x 100,000 codes) inside int64, and stops one
# absurd weight (1e300) from making every target meaningless.
MAX_WEIGHT = 1e6


def check_probs(probs, n_codes: int | None = None, *, name: str = "probs", batch: bool = False) -> np.ndarray:
    """Probabilities as a float (N, K) array: finite, in [0, 1].

    ``batch=True`` also accepts one patient's (K,) vector (returned as (1, K)).
    ``n_codes`` fixes K when known.

    >>> check_probs([[0.1, 1.0]]).shape
    (1, 2)
    >>> check_probs([0.5, 2.0], batch=True)
    Traceback (most recent call last):
    ...
    ValueError: probs: every probability must be a finite number in [0, 1]
    """
    arr = np.asarray(probs, dtype=float)
    if batch and arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        shape = "(K,) or (N, K)" if batch else "(N, K)"
        raise ValueError(f"{name}: expected shape {shape}, got {np.shape(probs)}")
    if n_codes is not None and arr.shape[1] != n_codes:
        raise ValueError(f"{name}: expected {n_codes} codes per patient, got {arr.shape[1]}")
    if not np.all(np.isfinite(arr)) or np.any((arr < 0) | (arr > 1)):
        raise ValueError(f"{name}: every probability must be a finite number in [0, 1]")
    return arr


def name_pairing(mine, theirs) -> str:
    """How two lists of names (a frame's codes or patients beside the frame it goes with) pair up: "same" (the
    same names in the same order), "reorder" (the same unique names in another order: pair by name), "position"
    (no name in common, e.g. ``prob_A`` beside ``label_A`` columns, or a RangeIndex beside patient ids: the frames
    name things differently, so they pair by position, as arrays do); a ValueError ("a ... is missing") when they
    share some names but not all, or one repeats a name (pairing by name or by position would both be a guess).

    >>> name_pairing(["A", "B"], ["A", "B"]), name_pairing(["B", "A"], ["A", "B"]), name_pairing(["label_A"], ["A"])
    ('same', 'reorder', 'position')
    """
    mine, theirs = list(mine), list(theirs)
    if mine == theirs:
        return "same"
    unique = len(set(mine)) == len(mine) and len(set(theirs)) == len(theirs)
    if unique and set(mine) == set(theirs):
        return "reorder"
    if not set(mine) & set(theirs):
        return "position"
    extra = [v for v in mine if v not in set(theirs)]
    missing = [v for v in theirs if v not in set(mine)]
    raise ValueError(f"{extra[0]!r} is not among them" if extra else f"{missing[0]!r} is missing" if missing
                     else "one appears twice")


def aligned_labels(probs, labels, *, name: str = "labels", like: str = "probs"):
    """``labels`` in ``probs``' row and column order when both are DataFrames (patients as the index, codes as
    the columns, as :func:`favmac.io.read_probabilities` and :func:`favmac.io.read_labels` give them, each in its
    file's order); anything else is returned as it is (arrays pair by position). Per axis (:func:`name_pairing`):
    the same names in another order are matched by name; names with nothing in common (``prob_A`` beside
    ``label_A``, a RangeIndex beside patient ids) pair by position; frames sharing some names but not all are a
    ValueError naming one.
    """
    if not all(hasattr(x, "index") and hasattr(x, "columns") and hasattr(x, "reindex") for x in (probs, labels)):
        return labels
    reorder = {}
    for axis, what in (("columns", "code"), ("index", "patient")):
        try:
            if name_pairing(getattr(labels, axis), getattr(probs, axis)) == "reorder":
                reorder[axis] = getattr(probs, axis)
        except ValueError as err:
            raise ValueError(f"{name}: a DataFrame is matched to {like} by {what} ({axis}), but its {what}s differ "
                             f"from {like}'s: {err}") from None
    return labels.reindex(**reorder) if reorder else labels


def check_labels(labels, shape, *, name: str = "labels", like: str = "probs") -> np.ndarray:
    """Labels as a bool array of ``shape`` (the probabilities' shape); every entry 0 or 1.

    A single patient's (K,) vector is accepted when ``shape`` has one row.

    >>> check_labels([[1, 0]], (1, 2)).tolist()
    [[True, False]]
    """
    arr = np.asarray(labels)
    if arr.ndim == 1 and len(shape) == 2 and shape[0] == 1:
        arr = arr[None, :]
    if arr.shape != tuple(shape):
        raise ValueError(f"{name}: expected shape {tuple(shape)} like {like}, got {np.shape(labels)}")
    if not np.all((arr == 0) | (arr == 1)):
        raise ValueError(f"{name}: every label must be 0 or 1")
    if arr.dtype in (np.int8, np.uint8):  # 0/1 bytes are bools already: no copy of a large cohort's labels
        return arr.view(bool)
    return arr.astype(bool, copy=False)


def check_targets(targets) -> np.ndarray:
    """Target costs as a non-empty 1-D float array of finite numbers.

    >>> check_targets(2).tolist()
    [2.0]
    """
    arr = np.atleast_1d(np.asarray(targets, dtype=float))
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(f"targets: expected one or more finite target costs (cost units), got {targets!r}")
    return arr


def check_target(target) -> float:
    """One finite target cost."""
    value = float(target)
    if not np.isfinite(value):
        raise ValueError(f"target: expected a finite target cost (cost units), got {target!r}")
    return value


def check_delta(delta) -> float | None:
    """None (expected-cost control) or a violation level strictly between 0 and 1.

    >>> check_delta(1.5)
    Traceback (most recent call last):
    ...
    ValueError: delta: expected a violation level between 0 and 1 (exclusive), e.g. 0.1, or None for expected-cost control; got 1.5
    """
    if delta is None:
        return None
    value = float(delta)
    if not 0 < value < 1:
        raise ValueError(f"delta: expected a violation level between 0 and 1 (exclusive), e.g. 0.1, or None for expected-cost control; got {delta!r}")
    return value


def check_c_max(c_max) -> float | None:
    """None (C_max is the cost's own: the sum of its weights) or the largest cost any set can have, a finite
    number > 0: the one rule for every entry point (:func:`favmac.replay.replay`, :class:`favmac.FavMac`,
    :meth:`favmac.runspec.RunSpec.validate`).

    >>> check_c_max(None), check_c_max(35)
    (None, 35.0)
    >>> check_c_max(-2)
    Traceback (most recent call last):
    ...
    ValueError: c_max: expected None (the sum of the cost weights) or a finite cost > 0, got -2
    """
    if c_max is None:
        return None
    if isinstance(c_max, (bool, np.bool_)) or not isinstance(c_max, (int, float, np.integer, np.floating)) or not (
            0 < c_max < np.inf):
        raise ValueError(f"c_max: expected None (the sum of the cost weights) or a finite cost > 0, got {c_max!r}")
    return float(c_max)


def check_burn_in(burn_in, n_patients: int | None) -> int:
    """Calibration-only patients: an integer in [0, n_patients] (n_patients None: not yet known, any integer >= 0).

    >>> check_burn_in(3, 5), check_burn_in(3, None)
    (3, 3)
    >>> check_burn_in(-1, None)
    Traceback (most recent call last):
    ...
    ValueError: burn_in: expected an integer >= 0, got -1
    """
    value = int(burn_in)
    if n_patients is None:
        if value != burn_in or value < 0:
            raise ValueError(f"burn_in: expected an integer >= 0, got {burn_in!r}")
    elif value != burn_in or not 0 <= value <= n_patients:
        raise ValueError(f"burn_in: expected an integer between 0 and the number of patients ({n_patients}), got {burn_in!r}")
    return value


def check_window(window) -> int | None:
    """Rolling window: None (all patients) or a positive number of patients."""
    if window is None:
        return None
    value = int(window)
    if value != window or value < 1:
        raise ValueError(f"window: expected None or a positive number of patients (>= 1), got {window!r}")
    return value


def check_codes(codes, n_codes: int) -> list | None:
    """Code names: None or one name per column."""
    if codes is None:
        return None
    codes = list(codes)
    if len(codes) != n_codes:
        raise ValueError(f"codes: expected one name per code ({n_codes}), got {len(codes)} names")
    return codes


def check_patient_ids(patient_ids, n_patients: int) -> np.ndarray | None:
    """Patient ids: None or one id per patient."""
    if patient_ids is None:
        return None
    arr = np.asarray(patient_ids)
    if arr.shape != (n_patients,):
        raise ValueError(f"patient_ids: expected one id per patient, shape ({n_patients},), got {arr.shape}")
    return arr


def check_groups(groups, n_patients: int) -> np.ndarray | None:
    """Segment labels: None or one group label per patient."""
    if groups is None:
        return None
    arr = np.asarray(groups)
    if arr.shape != (n_patients,):
        raise ValueError(f"groups: expected one group label per patient, shape ({n_patients},), got {arr.shape}")
    return arr


def check_stream(probs, labels, targets, delta=None, burn_in=0, window=None, codes=None, patient_ids=None):
    """All inputs of a replay (FavMac's or a baseline's) at once.

    Returns ``probs, labels, targets, delta, burn_in, window, codes, patient_ids`` cleaned.

    >>> out = check_stream([[0.2, 0.9]], [[0, 1]], 1.0)
    >>> out[1].tolist(), out[2].tolist(), out[4]
    ([[False, True]], [1.0], 0)
    """
    labels = aligned_labels(probs, labels)
    if codes is not None and hasattr(probs, "columns") and [str(c) for c in codes] != [str(c) for c in probs.columns]:
        raise ValueError(f"codes: {list(codes)[:10]} contradict the columns of the probs DataFrame "
                         f"({[str(c) for c in probs.columns][:10]}); give codes in the columns' order, or leave codes out")
    probs = check_probs(probs)
    labels = check_labels(labels, probs.shape)
    n_patients, n_codes = probs.shape
    return (
        probs,
        labels,
        check_targets(targets),
        check_delta(delta),
        check_burn_in(burn_in, n_patients),
        check_window(window),
        check_codes(codes, n_codes),
        check_patient_ids(patient_ids, n_patients),
    )
