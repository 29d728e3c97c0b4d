"""Ordered keys and exact sums: the histograms the partitions return and the coordinator adds.

A calibration point is a float64 key with an integer weight (docs/method.md "Distributed calibration").
Keys become uint64 patterns that sort like the floats (:func:`ordered_bits`); a histogram is
sparse — ``(ids, sums, counts)``: sorted unique bucket ids (a slice of the pattern's bits, or
whole patterns once a bucket is enumerated), the exact integer weight of each and its number
of points. Sums are int64 while they provably stay below ``INT64_LIMIT`` (2^62) and Python
integers beyond, so no sum is ever rounded and no partitioning changes the answer.

The coordinator resolves a key in up to three steps of ``WIDTHS`` bits (20, 22, 22): the
bucket where the running sum F crosses the bound (:func:`crossing`), then inside it
(:func:`descend`), until a bucket holds at most ``EXACT_LIMIT`` points and is enumerated.
"""
from __future__ import annotations

import numpy as np

from ..thresholds import INT64_LIMIT

__all__ = ["EXACT_LIMIT", "WIDTHS", "ordered_bits", "key_of_bits", "group_sum", "add", "merge", "cumsum",
           "sparse_histogram", "select", "bucket", "crossing", "descend"]

EXACT_LIMIT = 4_000_000  # a crossing bucket with at most this many points is enumerated exactly
WIDTHS = (20, 22, 22)  # bits of the ordered key pattern resolved at each depth (sum 64)
_LIMB_BITS = 26  # integer weights are summed in 26-bit limbs so float bincounts stay exact
_SAFE = INT64_LIMIT
_SIGN = np.uint64(1 << 63)


# ----------------------------------------------------------------------------- ordered keys


def ordered_bits(keys) -> np.ndarray:
    """uint64 patterns that sort like the float64 ``keys`` (-0.0 is mapped to 0.0).

    Non-negative floats order like their bits; negative ones are bit-flipped, and the sign bit
    is set on the non-negative ones so they come after. -inf and +inf land at the ends.

    >>> ordered_bits([-np.inf, -1.0, -0.0, 0.0, 1.0, np.inf]).argsort().tolist()
    [0, 1, 2, 3, 4, 5]
    >>> int(ordered_bits([-0.0])[0]) == int(ordered_bits([0.0])[0])
    True
    """
    keys = np.asarray(keys, dtype=np.float64) + 0.0  # -0.0 + 0.0 == +0.0
    if np.isnan(keys).any():
        raise ValueError("a calibration key is NaN")
    bits = keys.view(np.uint64)
    return np.where(bits & _SIGN, ~bits, bits | _SIGN)


def key_of_bits(pattern: int) -> float:
    """The float64 whose ordered pattern (see ``ordered_bits``) is ``pattern``.

    >>> key_of_bits(int(ordered_bits([2.5])[0]))
    2.5
    """
    pattern = np.uint64(pattern)
    bits = pattern ^ _SIGN if pattern & _SIGN else ~pattern
    return float(np.array([bits], dtype=np.uint64).view(np.float64)[0])


# ----------------------------------------------------------------------------- exact sums


def group_sum(ids: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    """Exact per-id sums of integer ``weights`` (ids in [0, size)).

    int64 weights are cut into 26-bit limbs and each limb is bincounted in float64, exact
    while a call adds fewer than 2^27 values; the result is int64 when it provably fits
    (count x max weight < 2^62), else an object array of Python ints.

    >>> group_sum(np.array([0, 1, 1]), np.array([5, 2**40, 3]), 2).tolist()
    [5, 1099511627779]
    """
    if len(ids) >= 2**27:  # keep every float64 limb sum below 2^53
        half = len(ids) // 2
        return add(group_sum(ids[:half], weights[:half], size), group_sum(ids[half:], weights[half:], size))
    if weights.dtype == object or (len(weights) and int(weights.max()) * len(weights) >= _SAFE):
        out = np.zeros(size, dtype=object)
        np.add.at(out, ids, weights.astype(object))
        return out
    weights = weights.astype(np.int64, copy=False)
    out = np.zeros(size, dtype=np.int64)
    shift = 0
    mask = (1 << _LIMB_BITS) - 1
    while True:
        limb = weights & mask
        if limb.any():
            out += np.bincount(ids, weights=limb, minlength=size).astype(np.int64) << shift
        weights = weights >> _LIMB_BITS
        shift += _LIMB_BITS
        if not weights.any():
            return out


def add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a + b exactly: int64 while both stay below 2^62, Python ints once either might not."""
    if a.dtype == object or b.dtype == object or (len(a) and (int(a.max()) >= _SAFE or int(b.max()) >= _SAFE)):
        return a.astype(object) + b.astype(object)
    return a + b


def merge(parts):
    """Merge sparse histograms [(ids, sums, counts)] into one with sorted unique ids."""
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    ids = np.concatenate([p[0] for p in parts])
    object_sums = any(p[1].dtype == object for p in parts)
    sums = np.concatenate([p[1].astype(object) if object_sums else p[1] for p in parts])
    counts = np.concatenate([p[2] for p in parts])
    unique, inverse = np.unique(ids, return_inverse=True)
    return unique, group_sum(inverse, sums, len(unique)), np.bincount(inverse, weights=counts, minlength=len(unique)).astype(np.int64)


def cumsum(sums: np.ndarray, start: int) -> np.ndarray:
    """start + running sums, exact (int64 while the total fits, Python ints otherwise)."""
    if sums.dtype != object and start + int(sums.sum(dtype=object)) < _SAFE:
        return start + np.cumsum(sums, dtype=np.int64)
    return start + np.cumsum(sums.astype(object))


def sparse_histogram(ids: np.ndarray, weights: np.ndarray):
    """(sorted unique ids, exact summed weights, counts) of a batch's points."""
    unique, inverse = np.unique(ids, return_inverse=True)
    return unique, group_sum(inverse, weights, len(unique)), np.bincount(inverse, minlength=len(unique)).astype(np.int64)


# ----------------------------------------------------------------------------- buckets and the search


def select(patterns: np.ndarray, depth: int, prefix: int) -> np.ndarray:
    """Mask of the patterns whose top sum(WIDTHS[:depth]) bits equal ``prefix``."""
    used = sum(WIDTHS[:depth])
    if used == 0:
        return np.ones(len(patterns), dtype=bool)
    return (patterns >> np.uint64(64 - used)) == np.uint64(prefix)


def bucket(patterns: np.ndarray, depth: int) -> np.ndarray:
    """The next WIDTHS[depth] bits after a depth-``depth`` prefix, as int64 bucket ids."""
    used = sum(WIDTHS[: depth + 1])
    ids = patterns >> np.uint64(64 - used)
    return (ids & np.uint64((1 << WIDTHS[depth]) - 1)).astype(np.int64)


def crossing(cum: np.ndarray, need: int) -> int:
    """Index of the first running sum above ``need``."""
    if cum.dtype != object:
        return int(np.searchsorted(cum, need, side="right"))
    return next(i for i, v in enumerate(cum) if v > need)


def descend(key, need, depth, prefix, below, ids, sums, counts):
    """The next region to ask for: the bucket of this histogram where F crosses ``need``.

    Returns ``(key, need, depth, prefix, exact, below)``: the region at the new depth is
    either enumerated exactly (``exact``) or histogrammed one level deeper; ``below`` is the
    weight of every key before it.
    """
    cum = cumsum(sums, below)
    j = crossing(cum, need)
    new_below = below if j == 0 else int(cum[j - 1])
    new_prefix = (prefix << WIDTHS[depth]) | int(ids[j])
    new_depth = depth + 1
    exact_mode = int(counts[j]) <= EXACT_LIMIT or new_depth == len(WIDTHS) - 1
    return (key, need, new_depth, new_prefix, exact_mode, new_below)
