"""Fenwick (binary indexed) tree over ranks: the compiled counting structure of the replays.

A tree is a 1-D integer numpy array of length ``size + 1``; position ``i`` (0-based rank)
lives at index ``i + 1`` and index 0 is unused. Invariant: ``tree[i]`` holds the total
weight of positions ``i - lowbit(i) .. i - 1`` (lowbit(i) = ``i & -i``), so a prefix total
is the sum of O(log size) entries. Weights are exact integers (int32/int64 counts or
scaled costs). Used by the replay kernels (:mod:`favmac.replay_kernels`) and by the
baselines; :class:`favmac.quantile_tree.QuantileTree` is the dynamic (unknown keys)
counterpart.

All functions are numba-compiled; call them from Python or from other kernels.

>>> import numpy as np
>>> tree = np.zeros(5, dtype=np.int64)   # 4 positions
>>> for position, weight in [(0, 2), (2, 1), (3, 4)]:
...     add(tree, position, weight)
>>> int(prefix_total(tree, 3)), int(count_le(tree, 3)), int(kth(tree, 3, top_bit(4)))
(3, 3, 2)
"""
from __future__ import annotations

from numba import njit

__all__ = ["add", "prefix_total", "count_le", "count_below", "kth", "top_bit"]


@njit(cache=True, nogil=True)
def add(tree, position, weight):
    """Add ``weight`` at 0-based ``position`` (negative to delete). O(log size)."""
    i = position + 1
    size = tree.shape[0]
    while i < size:
        tree[i] += weight
        i += i & -i


@njit(cache=True, nogil=True)
def prefix_total(tree, stop):
    """Total weight at positions ``< stop``. O(log size)."""
    total = 0
    i = stop
    while i > 0:
        total += tree[i]
        i -= i & (-i)
    return total


@njit(cache=True, nogil=True)
def count_le(tree, bound):
    """Largest ``c`` such that the total weight at positions ``< c`` is <= ``bound``.

    With non-negative weights this is the position of the first point where the running
    total F first exceeds ``bound`` (``size`` when it never does). O(log size).
    """
    size = tree.shape[0] - 1
    step = 1
    while step * 2 <= size:
        step *= 2
    pos = 0
    acc = 0
    while step > 0:
        nxt = pos + step
        if nxt <= size and acc + tree[nxt] <= bound:
            pos = nxt
            acc += tree[nxt]
        step //= 2
    return pos


@njit(cache=True, nogil=True)
def count_below(tree, bound):
    """Largest ``c`` such that the total weight at positions ``< c`` is < ``bound`` (strict).

    With non-negative weights, ``count_below(tree, x) + 1`` is the smallest ``r`` whose
    total at positions ``< r`` reaches ``x`` (for ``x > 0``); works for integer and float
    weights alike. O(log size).
    """
    size = tree.shape[0] - 1
    step = 1
    while step * 2 <= size:
        step *= 2
    pos = 0
    acc = tree[0] - tree[0]  # a zero of the tree's type
    while step > 0:
        nxt = pos + step
        if nxt <= size and acc + tree[nxt] < bound:
            pos = nxt
            acc += tree[nxt]
        step //= 2
    return pos


@njit(cache=True, nogil=True)
def kth(tree, k, top):
    """0-based position of the k-th smallest unit (``1 <= k <=`` total). O(log size).

    ``top`` is :func:`top_bit` of the number of positions.
    """
    pos = 0
    rem = k
    step = top
    size = tree.shape[0]
    while step > 0:
        nxt = pos + step
        if nxt < size and tree[nxt] < rem:
            pos = nxt
            rem -= tree[nxt]
        step >>= 1
    return pos


def top_bit(n: int) -> int:
    """Largest power of two <= n (0 for n <= 0): the first step of :func:`kth`.

    >>> top_bit(5), top_bit(8), top_bit(0)
    (4, 8, 0)
    """
    return 1 << max(int(n).bit_length() - 1, 0) if n > 0 else 0
