"""Calibration quantities shared by the online controller and the replay engine.

Realized costs are exact integers at a scale 10^d (see ``favmac._exact``), so the running
maximum C+, its increments and the comparisons "C(S) > c" are exact.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from ._exact import common_scale, exact, scaled_int

__all__ = ["ExactCosts", "calibration_points", "violation_scores", "violation_rank"]


class ExactCosts:
    """Per-code cost weights as integers at scale ``scale`` (weights * scale)."""

    def __init__(self, cost, n_codes: int, c_max=None):
        weights = cost.weights_for(n_codes)
        self.scale = common_scale([float(w) for w in weights] + ([c_max] if c_max is not None else []))
        ints = [scaled_int(float(w), self.scale) for w in weights]
        largest = sum(ints)  # the largest realized cost, as an integer
        dtype = np.int32 if largest < 2**31 else (np.int64 if largest < 2**62 else object)
        self.weights = np.array(ints, dtype=dtype)
        self.c_max = exact(c_max) if c_max is not None else Fraction(sum(ints), self.scale)

    def realized(self, candidates, labels) -> np.ndarray:
        """(N, M) exact realized cost C(S; y) * scale of every candidate set."""
        labels = np.atleast_2d(np.asarray(labels, dtype=bool))
        false_pos = np.where(labels, 0, self.weights[None, :]).astype(self.weights.dtype)
        if candidates.subsets is not None:
            return false_pos @ candidates.subsets.T.astype(self.weights.dtype)
        rows = np.arange(labels.shape[0])[:, None]
        steps = false_pos[rows, candidates.order]
        zeros = np.zeros((labels.shape[0], 1), dtype=self.weights.dtype)
        return np.concatenate([zeros, np.cumsum(steps, axis=1)], axis=1)

    def bound(self, target) -> int:
        """floor(target * scale): an integer cost exceeds ``target`` iff it exceeds this."""
        q = exact(target) * self.scale
        return q.numerator // q.denominator


def calibration_points(candidates, realized: np.ndarray):
    """Keys (Chat, sorted within each patient) and weights (increments of the running max of C).

    Returns ``keys`` (N, M) float and ``increments`` (N, M) exact integers; zero increments
    carry no weight and may be skipped by the caller.
    """
    chat = candidates.chat
    if candidates.nested:  # Chat and C are both non-decreasing along a nested sequence
        keys, running = chat, realized
    else:
        idx = np.argsort(chat, axis=1, kind="stable")
        keys = np.take_along_axis(chat, idx, axis=1)
        running = np.maximum.accumulate(np.take_along_axis(realized, idx, axis=1), axis=1)
    increments = np.diff(running, axis=1, prepend=np.zeros((running.shape[0], 1), dtype=running.dtype))
    return keys, increments


def violation_scores(candidates, realized: np.ndarray, bound: int) -> np.ndarray:
    """T_i = min{Chat(S) : C(S; z_i) > c} per patient (+inf when no set exceeds c)."""
    over = realized > bound
    return np.min(np.where(over, candidates.chat, np.inf), axis=1)


def violation_rank(delta, n_calibration: int) -> int:
    """k = ceil((1 - delta)(N + 1)), exactly (delta read as its decimal).

    >>> violation_rank(0.1, 19)
    18
    """
    q = (1 - exact(delta)) * (n_calibration + 1)
    return -((-q.numerator) // q.denominator)
