"""Compiled inner loops of the replay engine (numba).

Every kernel walks the stream in order and keeps, per group of one grouping (a single group
without segments), the exact int64 weight of each key slot that group will ever fill (known
up front in a replay) in a *blocked* tree: ``leaf`` holds each slot's weight and a Fenwick
tree (:mod:`favmac.fenwick`) per group holds the totals of blocks of ``BLOCK`` slots. Adding a
point touches one leaf and the small block tree (which stays in cache); a query descends the
block tree and then scans one block of leaves. Answers equal those of one Fenwick tree per
group over its own sorted keys.

The slots of a grouping are laid out one of two ways (a :class:`Layout`):

* per group (``owner`` empty): group g's keys are ``keys[lstart[g]:lstart[g] + lsize[g]]``
  (sorted) and its leaves are ``leaf[lstart[g] + slot]``; one group: the whole stream's;
* shared (``owner`` given, few groups): every group uses the whole stream's sorted keys
  (``lstart[g] = 0``, one slot per point) and the leaves of all groups share one array;
  ``owner[slot]`` is the group of the point in that slot, and a group's block tree and block
  scan count only its own slots. No per-group re-ranking of the points is needed.

Group g's block tree is ``btree[bstart[g]:bstart[g + 1]]``.

At each stream position n the kernel first queries the threshold of n's group (n >= burn_in),
then lets the labels that arrive right after n's prediction join their groups (:mod:`favmac.arrivals`:
``order[arrival_ptr[n]:arrival_ptr[n + 1]]``), each one evicting ``evict[e]`` from its group's
rolling window (-1: none). Position N gives every group's final threshold. Kernels resume from
``start`` so the caller can run them in chunks and report progress. The rank edge rule is
:func:`favmac.thresholds.rank_edge`, compiled here.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from . import thresholds
from .fenwick import add

__all__ = ["BLOCK", "adaptive_thresholds", "calibration_count", "choose_prefixes", "expected_slots_range", "expected_thresholds", "group_slots",
           "mark_slots", "marked_patients", "merge_part", "merge_ranks", "range_btree", "rank_order", "record_slot_keys", "slot_keys", "slot_prefix", "violation_thresholds", "rank_edge",
           "slot_owner", "split_runs", "unique_slots", "unsort_ranks", "weight_below", "weight_totals"]

#: :func:`favmac.thresholds.rank_edge`, compiled for the kernels.
rank_edge = njit(cache=True, nogil=True)(thresholds.rank_edge)
#: :func:`favmac.thresholds.calibration_count`, compiled for the kernels.
calibration_count = njit(cache=True, nogil=True)(thresholds.calibration_count)

_SHIFT = 6
#: Slots per leaf block of the blocked trees (and blocks per superblock).
BLOCK = 1 << _SHIFT


def block_count(n_slots: int) -> int:
    """Length of one group's block region over ``n_slots`` slots: the block totals, then a
    Fenwick tree (:mod:`favmac.fenwick`) over superblocks of ``BLOCK`` blocks."""
    blocks = (int(n_slots) + BLOCK - 1) >> _SHIFT
    return blocks + ((blocks + BLOCK - 1) >> _SHIFT) + 1


@njit(cache=True, nogil=True)
def rank_order(ptr, point_rank, n_ranks, first_slots):
    """The points ordered by rank (stable: ties in point order), by a counting sort. O(P + n_ranks).

    ``first_slots``: every rank is the first of as many slots as points share it (the replay's
    expected-control ranks, one slot per point), so the counts are known without counting.
    Returns ``(by_rank, patient, rank)``: the j-th point in that order is ``by_rank[j]``, of
    patient ``patient[j]`` (int32) with rank ``rank[j]`` (non-decreasing), so that
    :func:`group_slots` reads them in sequence.
    """
    n_points = point_rank.shape[0]
    n_patients = ptr.shape[0] - 1
    if first_slots:
        fill = np.arange(n_ranks + 1, dtype=np.int64)
    else:
        fill = np.zeros(n_ranks + 1, dtype=np.int64)
        for p in range(n_points):
            fill[point_rank[p] + 1] += 1
        for r in range(n_ranks):
            fill[r + 1] += fill[r]
    by_rank = np.empty(n_points, dtype=np.int64)
    patient = np.empty(n_points, dtype=np.int32)
    rank = np.empty(n_points, dtype=np.int32)
    for i in range(n_patients):
        for p in range(ptr[i], ptr[i + 1]):
            r = point_rank[p]
            j = fill[r]
            by_rank[j] = p
            patient[j] = i
            rank[j] = r
            fill[r] = j + 1
    return by_rank, patient, rank


@njit(cache=True, nogil=True)
def group_slots(ptr, group, by_rank, patient, rank, keys, n_groups):
    """Each point's rank inside its group's sorted keys, and those keys laid end to end: points
    ordered by (group, global rank, index), walking the points in rank order once
    (:func:`rank_order`'s arrays). O(P + N + n_groups).

    Returns ``(local, grouped_keys, key_start)``: ``local[p]`` is point p's rank inside its
    group's keys ``grouped_keys[key_start[g]:key_start[g + 1]]``.
    """
    n_points = by_rank.shape[0]
    key_start = np.zeros(n_groups + 1, dtype=np.int64)
    for i in range(group.shape[0]):
        key_start[group[i] + 1] += ptr[i + 1] - ptr[i]
    for g in range(n_groups):
        key_start[g + 1] += key_start[g]
    running = key_start[:-1].copy()
    local = np.empty(n_points, dtype=np.int64)
    grouped_keys = np.empty(n_points)
    for j in range(n_points):
        g = group[patient[j]]
        slot = running[g]
        grouped_keys[slot] = keys[rank[j]]
        local[by_rank[j]] = slot - key_start[g]
        running[g] = slot + 1
    return local, grouped_keys, key_start


@njit(cache=True, nogil=True)
def weight_totals(ptr, ranks, weights, patients, n_keys):
    """(n_keys,) int64: the total weight at each key rank of the points of ``patients``. O(points)."""
    out = np.zeros(n_keys, dtype=np.int64)
    for i in patients:
        for q in range(ptr[i], ptr[i + 1]):
            out[ranks[q]] += weights[q]
    return out


@njit(cache=True, nogil=True)
def mark_slots(slots, bits):
    """Set bit s of the bit set ``bits`` (uint64 words) for every finite value s of ``slots``
    (2-D float: the answers of a keyless walk, with -inf/+inf for none). O(size)."""
    one = np.uint64(1)
    for t in range(slots.shape[0]):
        for j in range(slots.shape[1]):
            value = slots[t, j]
            if math.isfinite(value):
                s = np.int64(value)
                bits[s >> 6] |= one << np.uint64(s & 63)


@njit(cache=True, nogil=True)
def _popcount(word):
    """Set bits of a uint64 (SWAR: no loop over the bits)."""
    word = word - ((word >> np.uint64(1)) & np.uint64(0x5555555555555555))
    word = (word & np.uint64(0x3333333333333333)) + ((word >> np.uint64(2)) & np.uint64(0x3333333333333333))
    word = (word + (word >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((word * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True, nogil=True)
def slot_prefix(bits):
    """(words + 1,) int64: the set bits before each word of ``bits``; the last entry counts them all."""
    out = np.zeros(bits.shape[0] + 1, dtype=np.int64)
    for w in range(bits.shape[0]):
        out[w + 1] = out[w] + _popcount(bits[w])
    return out


@njit(cache=True, nogil=True)
def _slot_index(bits, prefix, s):
    """The place of slot s among the set bits (s's bit set), or -1 when s's bit is not set."""
    word = bits[s >> 6]
    bit = np.uint64(s & 63)
    if (word >> bit) & np.uint64(1) == np.uint64(0):
        return -1
    return prefix[s >> 6] + _popcount(word & ((np.uint64(1) << bit) - np.uint64(1)))


@njit(cache=True, nogil=True)
def record_slot_keys(ranks, keys, bits, prefix, found):
    """``found[i] = keys[q]`` for every point q whose rank is the i-th marked slot (points sharing
    a rank share their key). O(points)."""
    for q in range(ranks.shape[0]):
        i = _slot_index(bits, prefix, np.int64(ranks[q]))
        if i >= 0:
            found[i] = keys[q]


@njit(cache=True, nogil=True)
def marked_patients(ptr, ranks, bits):
    """(N,) bool: whether patient i has a point (``ranks[ptr[i]:ptr[i + 1]]``) in a slot marked in ``bits``. O(points)."""
    out = np.zeros(ptr.shape[0] - 1, dtype=np.bool_)
    one = np.uint64(1)
    for i in range(ptr.shape[0] - 1):
        for q in range(ptr[i], ptr[i + 1]):
            s = np.int64(ranks[q])
            if (bits[s >> 6] >> np.uint64(s & 63)) & one:
                out[i] = True
                break
    return out


@njit(cache=True, nogil=True)
def slot_keys(slots, bits, prefix, found):
    """Replace every finite slot of ``slots`` (2-D, in place) by its key ``found`` (:func:`record_slot_keys`)."""
    for t in range(slots.shape[0]):
        for j in range(slots.shape[1]):
            value = slots[t, j]
            if math.isfinite(value):
                slots[t, j] = found[_slot_index(bits, prefix, np.int64(value))]


@njit(cache=True, nogil=True)
def unique_slots(ranks, keys):
    """One slot per point: a point whose rank (the first slot of its key in the sorted ``keys``)
    it shares with earlier points moves to the next free slot of that key, in point order.
    The ranks themselves when every key differs."""
    n_slots = keys.shape[0]
    tied = np.zeros(n_slots, dtype=np.bool_)  # first slots shared by several points
    any_tied = False
    for r in range(n_slots - 1):
        if keys[r + 1] == keys[r]:
            tied[r] = True
            any_tied = True
    if not any_tied:
        return ranks
    out = ranks.copy()
    taken = np.zeros(n_slots, dtype=np.int32)
    for p in range(ranks.shape[0]):
        r = ranks[p]
        if tied[r]:
            out[p] = r + taken[r]
            taken[r] += 1
    return out


@njit(cache=True, nogil=True)
def slot_owner(ptr, slots, group, owner):
    """``owner[slots[q]] = group[i]`` for every point q of every patient i (``ptr`` as the points')."""
    for i in range(ptr.shape[0] - 1):
        g = group[i]
        for q in range(ptr[i], ptr[i + 1]):
            owner[slots[q]] = g


@njit(cache=True, nogil=True)
def _add(leaf, btree, lstart, lsize, bstart, g, slot, weight):
    """Add ``weight`` at ``slot`` of group g: its leaf, its block's total and its superblock's tree."""
    leaf[lstart[g] + slot] += weight
    block = slot >> _SHIFT
    btree[bstart[g] + block] += weight
    add(btree[bstart[g] + ((lsize[g] + BLOCK - 1) >> _SHIFT) : bstart[g + 1]], block >> _SHIFT, weight)


@njit(cache=True, nogil=True)
def _locate(btree, lsize, bstart, g, bound):
    """(first slot of the block where group g's running total first exceeds ``bound`` (>= 0),
    the total before that block); the slot is >= ``lsize[g]`` when the total never does."""
    n_blocks = (lsize[g] + BLOCK - 1) >> _SHIFT
    tree = bstart[g] + n_blocks  # the superblocks' Fenwick tree: index 0 unused
    size = bstart[g + 1] - tree - 1
    step = 1
    while step * 2 <= size:
        step *= 2
    supers = 0
    acc = 0
    while step > 0:  # the most whole superblocks whose total stays <= bound
        nxt = supers + step
        if nxt <= size and acc + btree[tree + nxt] <= bound:
            supers = nxt
            acc += btree[tree + nxt]
        step //= 2
    block = supers << _SHIFT
    last = min(block + BLOCK, n_blocks)
    while block < last:  # then whole blocks
        total = btree[bstart[g] + block]
        if acc + total > bound:
            break
        acc += total
        block += 1
    return block << _SHIFT, acc


@njit(cache=True, nogil=True)
def _scan(leaf, lstart, lsize, owner, g, bound, j, acc):
    """From slot j of :func:`_locate` (``acc`` the total before it): the first slot of group g
    where the running total exceeds ``bound``; ``lsize[g]`` when there is none."""
    end = min(j + BLOCK, lsize[g])
    first = lstart[g]
    if owner.shape[0] == 0:
        while j < end:
            acc += leaf[first + j]
            if acc > bound:
                return j
            j += 1
    else:
        while j < end:
            if owner[j] == g:
                acc += leaf[j]
                if acc > bound:
                    return j
            j += 1
    return lsize[g]


@njit(cache=True, nogil=True)
def _first_over(leaf, btree, lstart, lsize, bstart, owner, g, bound):
    """Group g's first slot where the running total of its weights exceeds ``bound`` (>= 0);
    ``lsize[g]`` when it never does. (:func:`favmac.fenwick.count_le` of the group's own tree.)"""
    j, acc = _locate(btree, lsize, bstart, g, bound)
    return _scan(leaf, lstart, lsize, owner, g, bound, j, acc)


@njit(cache=True, nogil=True)
def _smallest_keys_over(leaf, btree, keys, lstart, lsize, bstart, owner, g, bounds, m, out, column, where, below):
    """``out[t, column]`` = :func:`_smallest_key_over` of ``bounds[t, m]`` for every target t: the
    blocks of all targets first, then the leaf scans (whose cache misses then overlap).
    ``where``/``below``: scratch (T,) int64. Empty ``keys`` (a keyless walk): the answer's slot
    (as a float, exact below 2^53) instead of its key; :func:`mark_slots` and :func:`slot_keys`
    turn slots into keys afterwards."""
    n_targets = bounds.shape[0]
    for t in range(n_targets):
        if bounds[t, m] >= 0:
            where[t], below[t] = _locate(btree, lsize, bstart, g, bounds[t, m])
    for t in range(n_targets):
        bound = bounds[t, m]
        if bound < 0:
            out[t, column] = -np.inf
            continue
        pos = _scan(leaf, lstart, lsize, owner, g, bound, where[t], below[t])
        if pos >= lsize[g]:
            out[t, column] = np.inf
        elif keys.shape[0] == 0:
            out[t, column] = float(lstart[g] + pos)
        else:
            out[t, column] = keys[lstart[g] + pos]


@njit(cache=True, nogil=True)
def _smallest_key_over(leaf, btree, keys, lstart, lsize, bstart, owner, g, bound):
    """Smallest key b of group g with F(b) > bound; -inf for a negative bound, +inf if F never exceeds it."""
    if bound < 0:
        return -np.inf
    pos = _first_over(leaf, btree, lstart, lsize, bstart, owner, g, bound)
    return np.inf if pos >= lsize[g] else keys[lstart[g] + pos]


@njit(cache=True, nogil=True)
def _move(leaf, btree, lstart, lsize, bstart, g, ptr, slots, weights, i, sign):
    """:func:`_add` of patient i's points, the leaves and block totals first (independent
    memory accesses, so their cache misses overlap), then the superblock trees."""
    first, blocks = lstart[g], bstart[g]
    for q in range(ptr[i], ptr[i + 1]):
        slot = slots[q]
        leaf[first + slot] += sign * weights[q]
        btree[blocks + (slot >> _SHIFT)] += sign * weights[q]
    tree = btree[blocks + ((lsize[g] + BLOCK - 1) >> _SHIFT) : bstart[g + 1]]
    for q in range(ptr[i], ptr[i + 1]):
        add(tree, slots[q] >> (2 * _SHIFT), sign * weights[q])


@njit(cache=True, nogil=True)
def _join(leaf, btree, lstart, lsize, bstart, g, ptr, slots, weights, counts, i, evicted):
    """Patient i's labels arrive: its points join group g's tree, ``evicted`` (>= 0) leaves the window."""
    _move(leaf, btree, lstart, lsize, bstart, g, ptr, slots, weights, i, 1)
    counts[g] += 1
    if evicted >= 0:
        _move(leaf, btree, lstart, lsize, bstart, g, ptr, slots, weights, evicted, -1)


@njit(cache=True, nogil=True)
def expected_thresholds(ptr, slots, weights, keys, lstart, lsize, bstart, owner, group, order, arrival_ptr, evict,
                        bounds, low, burn_in, window, start, stop, leaf, btree, counts, out, final):
    """Expected-cost thresholds for stream positions start..stop-1 (all targets at once).

    out[t, n - burn_in] = smallest key b with F(b) > bounds[t, m - low] for n's group, F the weight
    of the group's arrived calibration points (the last ``window`` arrived), m their number and
    bounds[t, m - low] = floor((c_t (m + 1) - C_max) * scale) (the caller gives the sizes m >= low
    the positions start..stop-1 can meet). Position N fills final[t, g] per group. With empty
    ``keys`` the answers are slots (:func:`_smallest_keys_over`): the walk then needs no keys.
    Patient i's points are ``slots[ptr[i]:ptr[i + 1]]`` (slots of its group's layout) with
    ``weights``; ``counts[g]`` counts the group's arrived patients (kept between calls).
    """
    n_patients = group.shape[0]
    where = np.zeros(bounds.shape[0], dtype=np.int64)
    below = np.zeros(bounds.shape[0], dtype=np.int64)
    for n in range(start, stop):
        if n == n_patients:
            for g in range(lstart.shape[0]):
                _smallest_keys_over(leaf, btree, keys, lstart, lsize, bstart, owner, g, bounds,
                                    calibration_count(counts[g], window) - low, final, g, where, below)
            continue
        if n >= burn_in:
            g = group[n]
            _smallest_keys_over(leaf, btree, keys, lstart, lsize, bstart, owner, g, bounds,
                                calibration_count(counts[g], window) - low, out, n - burn_in, where, below)
        for e in range(arrival_ptr[n], arrival_ptr[n + 1]):
            i = order[e]
            _join(leaf, btree, lstart, lsize, bstart, group[i], ptr, slots, weights, counts, i, evict[e])


@njit(cache=True, nogil=True)
def weight_below(ptr, slots, weights, lo):
    """(N,) int64: each patient's weight in the slots below ``lo`` (:func:`expected_slots_range`). O(points)."""
    out = np.zeros(ptr.shape[0] - 1, dtype=np.int64)
    for i in range(ptr.shape[0] - 1):
        total = 0
        for q in range(ptr[i], ptr[i + 1]):
            if slots[q] < lo:
                total += weights[q]
        out[i] = total
    return out


@njit(cache=True, nogil=True)
def range_btree(leaf, lo, hi):
    """The block region (:func:`block_count`) of the slots [lo, hi) of ``leaf``, built from the leaves:
    block totals, then the superblocks' Fenwick tree. O(hi - lo)."""
    size = hi - lo
    n_blocks = (size + BLOCK - 1) >> _SHIFT
    btree = np.zeros(n_blocks + ((n_blocks + BLOCK - 1) >> _SHIFT) + 1, dtype=np.int64)
    for j in range(size):
        btree[j >> _SHIFT] += leaf[lo + j]
    tree = btree[n_blocks:]
    for block in range(n_blocks):
        add(tree, block >> _SHIFT, btree[block])
    return btree


@njit(cache=True, nogil=True)
def _move_range(leaf, btree, lo, hi, n_blocks, ptr, slots, weights, i, sign):
    """:func:`_move` of patient i's points in the slots [lo, hi) only; returns the weight moved."""
    moved = 0
    for q in range(ptr[i], ptr[i + 1]):
        slot = slots[q]
        if lo <= slot < hi:
            leaf[slot] += sign * weights[q]
            btree[(slot - lo) >> _SHIFT] += sign * weights[q]
            moved += weights[q]
    if moved:
        tree = btree[n_blocks:]
        for q in range(ptr[i], ptr[i + 1]):
            slot = slots[q]
            if lo <= slot < hi:
                add(tree, (slot - lo) >> (2 * _SHIFT), sign * weights[q])
    return sign * moved


@njit(cache=True, nogil=True)
def _answer_range(leaf, btree, lstart, lsize, bstart, owner, bounds, m, base, total, last, out, column, mine, where, acc):
    """The answers in slots [lo, hi) (``lstart[0]``, ``lsize[0]``) of the queries ``bounds[:, m]``:
    the first slot whose running total over every slot exceeds the bound lies in this range when
    ``base`` (the weight below lo) <= bound < base + ``total`` (the weight in the range); -inf for a
    negative bound (the first range writes it), +inf beyond every slot (the last range)."""
    n_targets = bounds.shape[0]
    lo = lstart[0]
    for t in range(n_targets):  # the blocks of all this range's queries first, then the leaf scans
        bound = bounds[t, m]
        mine[t] = False
        if bound < 0:
            if lo == 0:
                out[t, column] = -np.inf
            continue
        if bound >= base + total:
            if last:
                out[t, column] = np.inf
            continue
        if bound < base:
            continue
        mine[t] = True
        where[t], acc[t] = _locate(btree, lsize, bstart, 0, bound - base)
    for t in range(n_targets):
        if mine[t]:
            pos = _scan(leaf, lstart, lsize, owner, 0, bounds[t, m] - base, where[t], acc[t])
            out[t, column] = float(lo + pos)


@njit(cache=True, nogil=True)
def expected_slots_range(ptr, slots, weights, lo, hi, last, below, order, arrival_ptr, evict, bounds, low, burn_in,
                         window, start, stop, leaf, btree, state, out, final):
    """:func:`expected_thresholds` of one group without keys (the answers are slots), restricted to the
    slots [lo, hi): this range's points join and leave its leaves ``leaf[lo:hi]`` and its own block
    region ``btree`` (:func:`range_btree`), and it writes the answers that fall in it
    (:func:`_answer_range`). Ranges that split the slots, walked side by side on several threads over
    one leaf array, write every answer of the one-range walk exactly once. ``below[i]``: patient i's
    weight below ``lo`` (:func:`weight_below`; empty when ``lo`` is 0). ``state``: int64
    (arrived patients, weight arrived below lo, weight in the range), kept between calls."""
    n_patients = arrival_ptr.shape[0] - 1
    size = hi - lo
    n_blocks = (size + BLOCK - 1) >> _SHIFT
    lstart = np.full(1, lo, dtype=np.int64)
    lsize = np.full(1, size, dtype=np.int64)
    bstart = np.array([0, btree.shape[0]], dtype=np.int64)
    owner = np.zeros(0, dtype=np.int8)
    n_targets = bounds.shape[0]
    mine = np.zeros(n_targets, dtype=np.bool_)
    where = np.zeros(n_targets, dtype=np.int64)
    acc = np.zeros(n_targets, dtype=np.int64)
    some_below = below.shape[0] > 0
    for n in range(start, stop):
        if n == n_patients or n >= burn_in:
            m = calibration_count(state[0], window) - low
            if n == n_patients:
                _answer_range(leaf, btree, lstart, lsize, bstart, owner, bounds, m, state[1], state[2], last, final, 0,
                              mine, where, acc)
                continue
            _answer_range(leaf, btree, lstart, lsize, bstart, owner, bounds, m, state[1], state[2], last, out,
                          n - burn_in, mine, where, acc)
        for e in range(arrival_ptr[n], arrival_ptr[n + 1]):
            i = order[e]
            state[2] += _move_range(leaf, btree, lo, hi, n_blocks, ptr, slots, weights, i, 1)
            state[0] += 1
            if some_below:
                state[1] += below[i]
            gone = evict[e]
            if gone >= 0:
                state[2] += _move_range(leaf, btree, lo, hi, n_blocks, ptr, slots, weights, gone, -1)
                if some_below:
                    state[1] -= below[gone]


@njit(cache=True, nogil=True)
def _kth_largest(leaf, btree, keys, lstart, lsize, bstart, owner, g, k, m):
    edge = rank_edge(k, m)
    if not math.isnan(edge):
        return edge
    # k-th largest = smallest score whose count of scores <= it reaches m - k + 1
    return keys[lstart[g] + _first_over(leaf, btree, lstart, lsize, bstart, owner, g, m - k)]


@njit(cache=True, nogil=True)
def violation_thresholds(slots, keys, lstart, lsize, bstart, owner, group, order, arrival_ptr, evict, ranks_k, burn_in,
                         window, start, stop, leaf, btree, counts, out, final):
    """Violation-control thresholds (one target): the k-th largest score T_i among n's group's
    arrived calibration patients, ``ranks_k[m]`` = k = ceil((1 - delta)(m + 1)) for m of them.
    Patient i's score is ``keys[lstart[g] + slots[i]]``. Position N fills final[g]."""
    n_patients = group.shape[0]
    for n in range(start, stop):
        if n == n_patients:
            for g in range(lstart.shape[0]):
                m = calibration_count(counts[g], window)
                final[g] = _kth_largest(leaf, btree, keys, lstart, lsize, bstart, owner, g, ranks_k[m], m)
            continue
        if n >= burn_in:
            g = group[n]
            m = calibration_count(counts[g], window)
            out[n - burn_in] = _kth_largest(leaf, btree, keys, lstart, lsize, bstart, owner, g, ranks_k[m], m)
        for e in range(arrival_ptr[n], arrival_ptr[n + 1]):
            i = order[e]
            g = group[i]
            _add(leaf, btree, lstart, lsize, bstart, g, slots[i], 1)
            counts[g] += 1
            if evict[e] >= 0:
                _add(leaf, btree, lstart, lsize, bstart, g, slots[evict[e]], -1)


@njit(cache=True, nogil=True)
def adaptive_thresholds(ptr, slots, weights, keys, lstart, lsize, bstart, owner, group, order, arrival_ptr, evict,
                        cand_keys, preference, realized, start_targets, target_base, rate_scaled, cost_to_base, ratio,
                        c_max_big, burn_in, window, limit, leaf, btree, out, targets_out, final, final_targets):
    """Expected-cost thresholds with the adaptive target c_n (per group), walking the stream step by step.

    * ``targets_out[t, n - burn_in]`` = c_n * S of n's group (S the adaptive scale; every group
      starts at ``start_targets``);
    * ``out[t, n - burn_in]`` = smallest key b of n's group with F(b) > c_n (m + 1) - C_max, i.e.
      F (at the costs' scale) > floor((c_n S (m + 1) - C_max S) / ratio), ratio = S / cost scale;
      -inf when that margin is negative;
    * the chosen candidate is the first of ``preference[n]`` whose ``cand_keys`` is below the
      threshold (the empty set, candidate 0, when none is); its realized cost C_n waits for n's labels;
    * when patient i's labels arrive (a predicted patient, i >= burn_in), its group's target moves:
      c S += rate_scaled (target_base - C_i cost_to_base). Without a delay that is right after
      i's own prediction: c_{n+1} = c_n + gamma (c - C_n).

    Position N fills ``final[t, g]`` and ``final_targets[t, g]``. Returns False (and stops) when
    |c_n S| (m + 1) would reach ``limit`` (int64 overflow): the caller then falls back to an
    exact Python loop.
    """
    n_patients = group.shape[0]
    n_targets = start_targets.shape[0]
    n_groups = lstart.shape[0]
    n_cands = preference.shape[1]
    current = np.empty((n_groups, n_targets), dtype=np.int64)
    for g in range(n_groups):
        current[g] = start_targets
    counts = np.zeros(n_groups, dtype=np.int64)
    chosen_cost = np.zeros((n_targets, n_patients), dtype=np.int64)
    for n in range(n_patients + 1):
        first, last = (0, n_groups) if n == n_patients else (group[n], group[n] + 1)
        if n >= burn_in:
            for g in range(first, last):
                m = calibration_count(counts[g], window)
                for t in range(n_targets):
                    if abs(current[g, t]) >= limit // (m + 1):
                        return False
                    margin = current[g, t] * (m + 1) - c_max_big
                    threshold = _smallest_key_over(leaf, btree, keys, lstart, lsize, bstart, owner, g,
                                                   -1 if margin < 0 else margin // ratio)
                    if n == n_patients:
                        final[t, g] = threshold
                        final_targets[t, g] = current[g, t]
                        continue
                    out[t, n - burn_in] = threshold
                    targets_out[t, n - burn_in] = current[g, t]
                    chosen = 0
                    for j in range(n_cands):
                        candidate = preference[n, j]
                        if cand_keys[n, candidate] < threshold:
                            chosen = candidate
                            break
                    chosen_cost[t, n] = realized[n, chosen]
        if n == n_patients:
            break
        for e in range(arrival_ptr[n], arrival_ptr[n + 1]):
            i = order[e]
            g = group[i]
            _join(leaf, btree, lstart, lsize, bstart, g, ptr, slots, weights, counts, i, evict[e])
            if i >= burn_in:
                for t in range(n_targets):
                    current[g, t] += rate_scaled * (target_base[t] - chosen_cost[t, i] * cost_to_base)
    return True


@njit(cache=True, nogil=True)
def _below(a, b):
    """``a < b`` in numpy's sort order (NaN after every number), as ``np.searchsorted`` compares."""
    return a < b or (b != b and a == a)


@njit(cache=True, nogil=True)
def merge_ranks(keys, starts):
    """Rank the points of sorted runs by merging them, in place: ``keys[starts[r]:starts[r + 1]]``
    is run r, sorted. Every key is replaced by its rank among all keys (as a float, exact below
    2^53): the number of keys strictly below it, i.e. ``np.searchsorted(np.sort(keys), key)``
    (equal keys share the first slot of their key). Returns the most keys sharing one rank (0 for none).
    A heap of the runs' heads (their values kept beside it): O(P log runs), no second key-sized array.
    :func:`split_runs` and :func:`merge_part` do the same in parts that threads can merge side by side."""
    return merge_part(keys, starts[:-1], starts[1:], 0)


def split_runs(keys, starts, parts: int) -> list:
    """Split the sorted runs of :func:`merge_ranks` into ``parts`` key ranges that :func:`merge_part`
    ranks independently: ``[(lo, hi, first), ...]``, part k being ``keys[lo[r]:hi[r]]`` of every run r
    (the keys of [v_k, v_{k+1}) in numpy's order, v_k sampled from the keys so that the parts are
    about equal) and ``first`` the keys of the parts before it. Equal keys (-0.0 and 0.0, every NaN)
    fall in one part, so each part's ranks plus ``first`` are the global ranks and the longest run of
    equal keys is the longest of the parts'. O(runs parts log P + samples)."""
    starts = np.asarray(starts, dtype=np.int64)
    n_runs = len(starts) - 1
    total = int(starts[-1] - starts[0]) if n_runs >= 0 else 0
    if parts <= 1 or total == 0:
        return [(starts[:-1].copy(), starts[1:].copy(), 0)]
    stride = max(1, total // (64 * parts))  # every sample stands for ``stride`` keys of its run
    samples = np.sort(np.concatenate([keys[starts[r]:starts[r + 1]:stride] for r in range(n_runs)]))
    splitters = samples[(np.arange(1, parts) * len(samples)) // parts]
    cuts = np.empty((parts + 1, n_runs), dtype=np.int64)
    cuts[0], cuts[-1] = starts[:-1], starts[1:]
    for r in range(n_runs):  # numpy's order, as the runs were sorted: side "left" keeps equal keys together
        cuts[1:-1, r] = starts[r] + np.searchsorted(keys[starts[r]:starts[r + 1]], splitters, side="left")
    before = np.concatenate([[0], np.cumsum((cuts[1:] - cuts[:-1]).sum(axis=1))])
    return [(cuts[k], cuts[k + 1], int(before[k])) for k in range(parts)]


@njit(cache=True, nogil=True)
def merge_part(keys, lo, hi, first):
    """:func:`merge_ranks` of the segments ``keys[lo[r]:hi[r]]`` (each sorted), in place: each key
    becomes ``first`` plus the number of the segments' keys strictly below it. Returns the most keys
    sharing one rank (0 for none). Touches only the segments, so parts of :func:`split_runs` can be
    merged on several threads at once."""
    n_runs = lo.shape[0]
    pos = lo.copy()
    head = np.empty(n_runs)  # the heap: each entry's run and its head's key
    run = np.empty(n_runs, dtype=np.int64)
    size = 0
    for r in range(n_runs):  # the non-empty runs, then heapified
        if hi[r] > lo[r]:
            head[size], run[size] = keys[lo[r]], r
            size += 1
    for root in range(size // 2 - 1, -1, -1):
        _sift(head, run, size, root)
    j = 0
    rank = 0
    shared = 0
    best = 0
    prev = 0.0
    while size > 0:
        r = run[0]
        value = head[0]
        if j > 0 and not _below(prev, value):
            shared += 1  # the same key as the last one: its first slot
        else:
            rank, shared, prev = j, 1, value
        if shared > best:
            best = shared
        keys[pos[r]] = first + rank
        pos[r] += 1
        j += 1
        if pos[r] == hi[r]:  # run r is done: the last entry takes the top
            size -= 1
            head[0], run[0] = head[size], run[size]
        else:
            head[0] = keys[pos[r]]
        if size > 1:
            _sift(head, run, size, 0)
    return best


@njit(cache=True, nogil=True)
def _sift(head, run, size, at):
    """Sift entry ``at`` of the heap (``head`` values, ``run`` ids) down: the smallest head on top."""
    value, r = head[at], run[at]
    while True:
        child = 2 * at + 1
        if child >= size:
            break
        if child + 1 < size and _below(head[child + 1], head[child]):
            child += 1
        if not _below(head[child], value):
            break
        head[at], run[at] = head[child], run[child]
        at = child
    head[at], run[at] = value, r


@njit(cache=True, nogil=True)
def unsort_ranks(ranked, starts, ranks):
    """After :func:`merge_ranks`: ``ranks[starts[r]:starts[r + 1]]`` holds run r's sort order (the
    offset in the run of its i-th smallest point) and ``ranked`` the ranks in that sorted order;
    write each point's rank at its own place in ``ranks``. O(P); one run's copy of the order at a time."""
    for r in range(starts.shape[0] - 1):
        first = starts[r]
        order = ranks[first : starts[r + 1]].copy()
        for i in range(order.shape[0]):
            ranks[first + order[i]] = np.int64(ranked[first + i])


@njit(cache=True, nogil=True)
def choose_prefixes(scores, best, thresholds, cost_table, value_table, exact_cost, bounds, index, cost, value, exceeds):
    """:meth:`favmac.universe.Candidates.choose` of nested sequences for every target at once, with the
    chosen set's cost, value and exact "cost > target" flag: for target t and patient i, the candidates
    whose score is below ``thresholds[t, i]`` are counted (c), and the chosen one is ``best[i, max(c - 1, 0)]``
    (:meth:`~favmac.universe.Candidates.best_prefix`). ``index``, ``cost``, ``value``, ``exceeds`` are (T, rows)."""
    n_candidates = scores.shape[1]
    for t in range(thresholds.shape[0]):
        for i in range(scores.shape[0]):
            limit = thresholds[t, i]
            below = 0
            for j in range(n_candidates):
                if scores[i, j] < limit:
                    below += 1
            k = best[i, below - 1 if below > 0 else 0]
            index[t, i] = k
            cost[t, i] = cost_table[i, k]
            value[t, i] = value_table[i, k]
            exceeds[t, i] = exact_cost[i, k] > bounds[t]
