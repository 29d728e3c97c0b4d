"""Compiled loops of the baselines (numba), imported on first use so ``import favmac`` stays fast.

Every kernel releases the GIL (``nogil=True``): the Trade-offs page runs a baseline on one
thread while a FavMac replay runs on another (:func:`favmac.tradeoffs.run_methods`), or one
baseline's chunks on :func:`favmac.parallel.inner_threads` threads (its outcomes by steps, CRC's
keys by parts: :func:`rule_outcomes`, :func:`sorted_value_key_parts`).

The Fenwick trees come from :mod:`favmac.fenwick`; the rank edge rule is
:func:`favmac.thresholds.rank_edge`, compiled once in :mod:`favmac.replay_kernels`.
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from .. import fenwick
from ..replay_kernels import calibration_count, rank_edge


@njit(cache=True, nogil=True)
def masked_sums(selected, per_code):
    """out[t, s] = sum_k selected[t, s, k] * per_code[s, k] (additive value or cost of each set)."""
    n_targets, n_steps, n_codes = selected.shape
    out = np.zeros((n_targets, n_steps))
    for t in range(n_targets):
        for s in range(n_steps):
            total = 0.0
            for k in range(n_codes):
                total += selected[t, s, k] * per_code[s, k]  # branch-free: sets are unpredictable
            out[t, s] = total
    return out


@njit(cache=True, nogil=True)
def _tally(chosen, present, cost_weights, value_weights, exact_weights, with_value):
    """(cost, value, exact cost) of one chosen set (``chosen``, ``present``: (K,) bool): the
    additions of :func:`set_outcomes`, in code order."""
    cost_total = 0.0
    value_total = 0.0
    exact_total = np.int64(0)
    for k in range(chosen.shape[0]):
        pick = chosen[k]
        here = present[k]
        cost_total += pick * (0.0 if here else cost_weights[k])
        if with_value:
            value_total += pick * (value_weights[k] if here else 0.0)
        if pick and not here:
            exact_total += exact_weights[k]
    return cost_total, value_total, exact_total


@njit(cache=True, nogil=True)
def set_outcomes(selected, labels, cost_weights, value_weights, exact_weights, bounds):
    """Realized cost, value and exact "cost > target" of every chosen set, in one pass.

    ``cost[t, s]`` is :func:`masked_sums` of the per-code cost ``cost_weights[k]`` where code k
    is absent (``labels[s, k]`` False), else 0.0; ``value[t, s]`` the same with
    ``value_weights[k]`` where it is present: the same additions in the same order, so the same
    floats, without the (S, K) per-code tables (an empty ``value_weights`` leaves ``value`` zero
    for the caller to fill). ``exceeds[t, s]`` compares the int64 sum of ``exact_weights`` (the
    costs' integers at their decimal scale) over the set's false positives with ``bounds[t]``, as
    :meth:`favmac.thresholds.ExactCosts.exceeds` does, without its (T, S, K) integer copy.
    """
    n_targets, n_steps, n_codes = selected.shape
    with_value = value_weights.shape[0] > 0
    cost = np.zeros((n_targets, n_steps))
    value = np.zeros((n_targets, n_steps))
    exceeds = np.zeros((n_targets, n_steps), dtype=np.bool_)
    for t in range(n_targets):
        for s in range(n_steps):
            c, v, exact = _tally(selected[t, s], labels[s], cost_weights, value_weights, exact_weights, with_value)
            cost[t, s] = c
            value[t, s] = v
            exceeds[t, s] = exact > bounds[t]
    return cost, value, exceeds


def rule_outcomes(scores, levels, rule, labels, cost_weights, value_weights, exact_weights, bounds):
    """:func:`set_outcomes` of the sets of a rule (:class:`favmac.baselines.common.ThresholdSets`):
    code k is chosen for target t at step s iff ``scores[s, k]`` is ``>=`` (``rule`` 0), ``>`` (1)
    or ``<=`` (2) ``levels[t, s]`` (``levels`` (T, 1): one level per target). The same numbers,
    without the (T, S, K) booleans (each (t, s) sums its codes in code order, whatever the loops' order).

    The steps are cut into :func:`favmac.parallel.work_chunks` run on
    :func:`favmac.parallel.inner_threads` threads (:func:`rule_outcomes_rows`: each chunk writes its
    own columns), so the numbers do not depend on the threads."""
    from .. import parallel

    n_steps = scores.shape[0]
    n_targets = levels.shape[0]
    cost = np.zeros((n_targets, n_steps))
    value = np.zeros((n_targets, n_steps))
    exceeds = np.zeros((n_targets, n_steps), dtype=np.bool_)
    parallel.map_chunks(lambda steps: rule_outcomes_rows(scores, levels, rule, labels, cost_weights, value_weights, exact_weights,
                                                         bounds, steps.start, steps.stop, cost, value, exceeds),
                        parallel.work_chunks(n_steps))
    return cost, value, exceeds


@njit(cache=True, nogil=True)
def rule_outcomes_rows(scores, levels, rule, labels, cost_weights, value_weights, exact_weights, bounds, start, stop,
                       cost, value, exceeds):
    """:func:`rule_outcomes` of the steps ``start..stop - 1``, written into ``cost``, ``value`` and ``exceeds`` (T, S)."""
    n_codes = scores.shape[1]
    n_targets = levels.shape[0]
    per_step = levels.shape[1] != 1
    with_value = value_weights.shape[0] > 0
    chosen = np.empty(n_codes, dtype=np.bool_)
    for s in range(start, stop):  # steps outside: a step's scores and labels are read once for every target
        for t in range(n_targets):
            level = levels[t, s] if per_step else levels[t, 0]
            for k in range(n_codes):
                if rule == 0:
                    chosen[k] = scores[s, k] >= level
                elif rule == 1:
                    chosen[k] = scores[s, k] > level
                else:
                    chosen[k] = scores[s, k] <= level
            c, v, exact = _tally(chosen, labels[s], cost_weights, value_weights, exact_weights, with_value)
            cost[t, s] = c
            value[t, s] = v
            exceeds[t, s] = exact > bounds[t]


@njit(cache=True, nogil=True)
def classwise_code(column, order, negative, needs_by_size, burn_in, window, top, passed, final, tree, rank, below):
    """ClassWise for one code: for every step, how many of the targets do *not* predict it
    (``passed[s]``), and its final thresholds (``final[i]``).

    ``column`` (N): scores p_k(x_i); ``order``: ``np.argsort(column)`` (numpy's sort, several
    times faster than a compiled one); ``negative`` (N): y_ik = 0; ``needs_by_size[m, i]``: rank j
    of the quantile among m negatives plus +inf for the i-th target of an order in which j never
    grows (:func:`favmac.baselines.classwise.classwise`: decreasing beta).
    p > (j-th smallest negative score)  <=>  #{negative scores < p} >= j, so the code is predicted
    for the order's targets ``i >= passed[s]``: one byte per step and code, written in order,
    instead of one per step and target strided across the (T, S, K) sets. ``tree`` (N + 1,
    int32), ``rank`` and ``below`` (N, int64) are work space, reused from code to code.
    """
    n_patients = column.shape[0]
    n_targets = needs_by_size.shape[1]
    run_start = 0  # below[i] = #{i' : p_i' < p_i}: the start of p_i's run of ties (any order of ties works)
    for r in range(n_patients):
        if r > 0 and column[order[r]] != column[order[r - 1]]:
            run_start = r
        rank[order[r]] = r
        below[order[r]] = run_start
    tree[:] = 0
    m = 0
    for n in range(n_patients):
        if n >= burn_in:
            q = fenwick.prefix_total(tree, below[n])
            needs = needs_by_size[m]
            lo = 0
            hi = n_targets
            while lo < hi:  # the first target of the order whose rank q reaches
                mid = (lo + hi) // 2
                if q >= needs[mid]:
                    hi = mid
                else:
                    lo = mid + 1
            passed[n - burn_in] = lo
        if negative[n]:
            fenwick.add(tree, rank[n], 1)
            m += 1
        if window > 0 and n - window >= 0 and negative[n - window]:
            fenwick.add(tree, rank[n - window], -1)
            m -= 1
    for i in range(n_targets):
        j = needs_by_size[m, i]
        edge = rank_edge(m + 1 - j, m)  # the j-th smallest is the (m + 1 - j)-th largest
        final[i] = edge if not np.isnan(edge) else column[order[fenwick.kth(tree, j, top)]]


@njit(cache=True, nogil=True)
def inner_set_kernel(rank, sorted_scores, ranks_needed, burn_in, window, top, thresholds, final):
    """InnerSet's tau for every target of ``ranks_needed`` and every step (rule: predict k iff
    p_k > tau), written into ``thresholds`` (T, S), and after the stream into ``final`` (T,). Each
    call keeps its own tree, so groups of targets can run on threads of their own."""
    n_patients = rank.shape[0]
    n_targets = ranks_needed.shape[0]
    tree = np.zeros(n_patients + 1, dtype=np.int32)
    for n in range(n_patients + 1):
        if n >= burn_in:
            n_cal = calibration_count(n, window)
            for t in range(n_targets):
                j = ranks_needed[t, n_cal]
                tau = rank_edge(n_cal + 1 - j, n_cal)  # the j-th smallest is the (n_cal + 1 - j)-th largest
                if np.isnan(tau):
                    tau = sorted_scores[fenwick.kth(tree, j, top)]
                if n == n_patients:
                    final[t] = tau
                else:
                    thresholds[t, n - burn_in] = tau
        if n < n_patients:
            fenwick.add(tree, rank[n], 1)
            if window > 0 and n - window >= 0:
                fenwick.add(tree, rank[n - window], -1)


@njit(cache=True, nogil=True)
def add_patient(running, patient, n_above, weights_row, sign):
    n_grid = running.shape[0] - 1
    for k in range(n_above.shape[0]):
        patient[n_above[k]] += weights_row[k]
    acc = patient[n_grid] - patient[n_grid]  # a zero of the weights' type (int64 or float)
    for j in range(n_grid - 1, -1, -1):
        acc += patient[j + 1]
        running[j] += sign * acc
    patient[:] = 0


@njit(cache=True, nogil=True)
def grid_kernel(probs, negative_weight, bounds, burn_in, window, grid):
    """Smallest grid index j with R[j] <= bound, R[j] = summed cost of S_{grid[j]} in the window.

    ``n_above[k]`` = number of grid points <= p_k, so k is in S_{grid[j]} iff n_above > j.
    Index G (one past the grid) is lambda = +inf, the empty set, with R[G] = 0.
    ``bounds[t, m]`` is the largest accepted R with m calibration patients. Weights and
    bounds are both int64 (scaled costs: exact) or both float (the fallback above 2^62).
    """
    n_patients, n_codes = probs.shape
    n_grid = grid.shape[0]
    n_targets = bounds.shape[0]
    n_steps = n_patients - burn_in
    running = np.zeros(n_grid + 1, dtype=negative_weight.dtype)
    patient = np.zeros(n_grid + 1, dtype=negative_weight.dtype)
    n_above = np.zeros(n_codes, dtype=np.int64)
    thresholds = np.empty((n_targets, n_steps))
    final = np.empty(n_targets)
    for n in range(n_patients + 1):
        if n < n_patients:
            n_above[:] = np.searchsorted(grid, probs[n], side="right")
        if n >= burn_in:
            n_cal = calibration_count(n, window)
            for t in range(n_targets):
                bound = bounds[t, n_cal]
                lo = 0
                hi = n_grid
                while lo < hi:  # running is non-increasing in j
                    mid = (lo + hi) // 2
                    if running[mid] <= bound:
                        hi = mid
                    else:
                        lo = mid + 1
                lam = grid[lo] if lo < n_grid else np.inf
                if n == n_patients:
                    final[t] = lam
                else:  # the set {k : n_above[k] > lo} = {k : p_k >= lam}
                    thresholds[t, n - burn_in] = lam
        if n < n_patients:
            add_patient(running, patient, n_above, negative_weight[n], 1.0)
            if window > 0 and n - window >= 0:
                old = n - window
                add_patient(running, patient, np.searchsorted(grid, probs[old], side="right"),
                             negative_weight[old], -1.0)
    return thresholds, final


@njit(cache=True, nogil=True)
def hoeffding_gap(r, alpha, level):
    """h1(r, alpha) - level, and its derivative in r, for 0 <= r < alpha < 1."""
    first = r * np.log(r / alpha) if r > 0 else 0.0
    gap = first + (1 - r) * np.log((1 - r) / (1 - alpha)) - level
    slope = np.log(r * (1 - alpha) / (alpha * (1 - r))) if r > 0 else -np.inf
    return gap, slope


@njit(cache=True, nogil=True)
def rcps_bound_kernel(n_max, alpha, delta):
    """Largest summed normalized risk S accepted by the HB test, for n = 0..n_max.

    Accept iff ``ceil(S) <= k*`` (Bentkus: k* = largest k with e·F(k; n, alpha) <= delta)
    or ``S / n <= r_H`` (Hoeffding: h1(r_H, alpha) = log(1/delta) / n), i.e. iff
    ``S <= max(k*, n r_H)``; -inf when neither part accepts anything (then only the empty
    set qualifies). k*(n) is non-decreasing and grows by at most 1 per step, so one pass
    with the binomial pmf/cdf recurrences (n -> n + 1) finds it in O(1) per n. r_H(n)
    is found only when it beats k*: safeguarded Newton from k*/n (h1 is convex and
    decreasing on [0, alpha], so Newton from the left never overshoots).
    """
    out = np.full(n_max + 1, -np.inf)
    log_inv_delta = np.log(1.0 / delta)
    e = np.e
    k = -1
    cdf = 0.0
    pmf = 0.0
    for n in range(1, n_max + 1):
        # Bentkus part: F(k; n) and pmf(k; n) from n - 1, then try k + 1.
        if k < 0:
            first = np.exp(n * np.log1p(-alpha))
            if e * first <= delta:
                k = 0
                cdf = first
                pmf = first
        else:
            cdf = cdf - alpha * pmf
            pmf = pmf * (1 - alpha) * n / (n - k)
            up_pmf = pmf * (n - k) / (k + 1) * alpha / (1 - alpha)
            up_cdf = cdf + up_pmf
            if k + 1 <= n and e * up_cdf <= delta:
                k += 1
                cdf = up_cdf
                pmf = up_pmf
        best = float(k) if k >= 0 else -np.inf
        # Hoeffding part: it can only matter if it accepts a larger S than k*, i.e. if
        # h1(max(k*, 0)/n) >= level; then the root lies in [max(k*, 0)/n, alpha).
        level = log_inv_delta / n
        start = max(best, 0.0) / n
        if start < alpha:
            gap, _ = hoeffding_gap(start, alpha, level)
            if gap >= 0:
                lo = start
                hi = alpha
                x = lo
                for _ in range(200):
                    gap, slope = hoeffding_gap(x, alpha, level)
                    if gap >= 0:
                        lo = x
                    else:
                        hi = x
                    nxt = x - gap / slope if np.isfinite(slope) and slope < 0 else 0.5 * (lo + hi)
                    if not (lo < nxt < hi):
                        nxt = 0.5 * (lo + hi)
                    if nxt == x or hi - lo <= 1e-16 * hi:
                        break
                    x = nxt
                best = max(best, n * lo)
        out[n] = best
    return out


def occupancy_levels(n_positions: int) -> np.ndarray:
    """Word offsets of the levels of an occupancy bit set over ``n_positions`` positions
    (:func:`occupy`, :func:`next_occupied`): level 0 has one bit per position, each level above
    one bit per word of the level below, up to a single word; the last offset is the total.

    >>> occupancy_levels(5000).tolist()  # 79 words of positions, 2 words above them, then 1
    [0, 79, 81, 82]
    """
    offsets, words = [0], max(1, -(-int(n_positions) // 64))
    while True:
        offsets.append(offsets[-1] + words)
        if words == 1:
            return np.array(offsets, dtype=np.int64)
        words = -(-words // 64)


@njit(cache=True, nogil=True)
def occupy(bits, offsets, position):
    """Mark ``position`` occupied (and the words above it). O(levels), about 4 for 2^24 positions."""
    i = position
    for level in range(offsets.shape[0] - 1):
        word = offsets[level] + (i >> 6)
        was = bits[word]
        bits[word] = was | (np.uint64(1) << np.uint64(i & 63))
        if was != 0:
            return  # the levels above already know this word is not empty
        i >>= 6


@njit(cache=True, nogil=True)
def vacate(bits, offsets, position):
    """Mark ``position`` free (and every word above it that becomes empty). O(levels)."""
    i = position
    for level in range(offsets.shape[0] - 1):
        word = offsets[level] + (i >> 6)
        bits[word] &= ~(np.uint64(1) << np.uint64(i & 63))
        if bits[word] != 0:
            return
        i >>= 6


@njit(cache=True, nogil=True)
def next_occupied(bits, offsets, position):
    """The smallest occupied position >= ``position``, or -1. O(levels): up while the rest of
    a word is empty, then down along the lowest set bits."""
    n_levels = offsets.shape[0] - 1
    i = position
    level = 0
    while True:
        if level == n_levels or (i >> 6) >= offsets[level + 1] - offsets[level]:
            return -1
        rest = bits[offsets[level] + (i >> 6)] >> np.uint64(i & 63)  # this word's bits from i on
        if rest != 0:
            i += np.int64(trailing_zeros(rest))
            break
        i = (i >> 6) + 1  # the next word, as a position of the level above
        level += 1
    while level > 0:
        level -= 1
        i = (i << 6) + np.int64(trailing_zeros(bits[offsets[level] + i]))
    return i


#: Positions per block of :func:`block_add` / :func:`first_reaching` (and blocks per superblock).
BLOCK_SHIFT = 6


@njit(cache=True, nogil=True)
def block_add(leaf, blocks, supers, position, weight):
    """Add ``weight`` at ``position`` of a blocked prefix tree: ``leaf`` (one total per position,
    any integer or float dtype that holds it), ``blocks`` (the totals of ``2**BLOCK_SHIFT``
    positions) and ``supers`` (a Fenwick tree, :mod:`favmac.fenwick`, over superblocks of
    ``2**BLOCK_SHIFT`` blocks). One leaf and one block total are touched where a Fenwick tree
    over every position touches O(log U) entries spread over the whole array: the blocks and
    superblocks are small enough to stay in cache. O(log(U / 4096))."""
    leaf[position] += weight
    blocks[position >> BLOCK_SHIFT] += weight
    fenwick.add(supers, position >> (2 * BLOCK_SHIFT), weight)


@njit(cache=True, nogil=True)
def first_reaching(leaf, blocks, supers, x):
    """The first position whose running total (itself included) reaches ``x`` > 0, or
    ``len(leaf)`` when the total stays below it (weights >= 0): the superblock tree's search,
    then at most one block's totals and one block's leaves, each scanned in order. Equals
    ``favmac.fenwick.count_below(tree, x)`` of one Fenwick tree over every position."""
    whole = fenwick.count_below(supers, x)  # superblocks whose running total stays below x
    acc = fenwick.prefix_total(supers, whole)
    block = whole << BLOCK_SHIFT
    last = min(block + (1 << BLOCK_SHIFT), blocks.shape[0])
    while block < last and acc + blocks[block] < x:
        acc += blocks[block]
        block += 1
    position = block << BLOCK_SHIFT
    end = min(position + (1 << BLOCK_SHIFT), leaf.shape[0])
    while position < end:
        acc += leaf[position]
        if acc >= x:
            return position
        position += 1
    return leaf.shape[0]


#: The sign bit of a float64's bits (:func:`order_keys`).
_SIGN = np.uint64(1) << np.uint64(63)


@njit(cache=True, nogil=True)
def _order_bits(bits):
    """A float64's bits (as uint64) mapped to a uint64 in the float's order: positive floats with
    the sign bit set, negative ones bit-inverted; -0.0 as 0.0 (they are equal)."""
    if bits == _SIGN:
        bits = np.uint64(0)
    return bits | _SIGN if bits < _SIGN else ~bits


@njit(cache=True, nogil=True)
def order_keys(bits, shift, keys, first=0):
    """``keys[i]``: the top ``64 - shift`` bits of ``bits[i]``'s order (:func:`_order_bits`; ``bits``
    is a float64 array viewed as uint64) above the index ``first + i`` in the low ``shift`` bits
    (``first + i < 2**shift``; ``first``: where a slice of the values starts).
    Sorting the keys sorts the indices by value, up to values that agree in the kept bits
    (:func:`rank_sorted_keys` orders those exactly). O(N), sequential."""
    for i in range(bits.shape[0]):
        keys[i] = ((_order_bits(bits[i]) >> shift) << shift) | np.uint64(first + i)


@njit(cache=True, nogil=True)
def split_keys(keys, pivot):
    """Reorder ``keys`` in place so that those below ``pivot`` come first; returns how many there
    are (Hoare's partition: one pass, swaps only). O(N)."""
    lo = 0
    hi = keys.shape[0] - 1
    while True:
        while lo <= hi and keys[lo] < pivot:
            lo += 1
        while lo <= hi and keys[hi] >= pivot:
            hi -= 1
        if lo >= hi:
            return lo
        keys[lo], keys[hi] = keys[hi], keys[lo]
        lo += 1
        hi -= 1


@njit(cache=True, nogil=True)
def order_runs(keys, bits, shift):
    """After ``keys.sort()`` (:func:`order_keys`): put each run of keys that share their kept bits
    (equal values, or values less than about 2^(shift - 52) apart relative to their size) in the
    order of their full values, read from ``bits`` (the only random reads of values); equal values
    stay in index order. Then the keys' indices are in value order, ties by index:
    ``np.argsort(values, kind="stable")``. O(N) plus O(L log L) per run of L > 1 keys."""
    n = keys.shape[0]
    mask = (np.uint64(1) << shift) - np.uint64(1)
    small = 16
    held = np.empty(small, dtype=np.uint64)  # a short run's full values
    start = 0
    while start < n:
        high = keys[start] >> shift
        stop = start + 1
        while stop < n and keys[stop] >> shift == high:
            stop += 1
        size = stop - start
        if size == 1:
            start = stop
            continue
        if size <= small:  # insertion sort by the full value (strict: equal values keep index order)
            for j in range(size):
                key = keys[start + j]
                v = _order_bits(bits[np.int64(key & mask)])
                m = j
                while m > 0 and held[m - 1] > v:
                    held[m] = held[m - 1]
                    keys[start + m] = keys[start + m - 1]
                    m -= 1
                held[m] = v
                keys[start + m] = key
        else:
            values = np.empty(size, dtype=np.uint64)
            for j in range(size):
                values[j] = _order_bits(bits[np.int64(keys[start + j] & mask)])
            if values.min() != values.max():  # several values: order them, ties in index order
                order = np.argsort(values, kind="mergesort")
                keys[start:stop] = keys[start:stop][order]
        start = stop


@njit(cache=True, nogil=True)
def rank_sorted_keys(keys, bits, shift, ranks, first=0):
    """Along keys in value order (:func:`order_keys`, ``sort``, :func:`order_runs`): ``ranks[i]`` =
    ``first`` + the position of value i among the distinct values of ``keys`` (``np.unique``'s
    inverse; ``first``: the distinct values of the parts before these keys, which share no kept
    bits with them, :func:`sorted_value_key_parts`). Keys whose kept bits differ hold different
    values; within a run the full values are compared. Returns (the number of distinct values, the
    most indices sharing one); an empty ``ranks`` only counts. O(N)."""
    n = keys.shape[0]
    write = ranks.shape[0] > 0
    mask = (np.uint64(1) << shift) - np.uint64(1)
    n_distinct = 0
    longest = 0
    run = 0
    previous = np.uint64(0)
    for r in range(n):
        i = np.int64(keys[r] & mask)
        same = False
        if r > 0 and keys[r] >> shift == keys[r - 1] >> shift:
            v = _order_bits(bits[i])
            same = v == previous
            previous = v
        elif r + 1 < n and keys[r + 1] >> shift == keys[r] >> shift:
            previous = _order_bits(bits[i])  # a run starts: its first full value
        if not same:
            n_distinct += 1
            run = 0
        run += 1
        longest = max(longest, run)
        if write:
            ranks[i] = first + n_distinct - 1
    return n_distinct, longest


#: Values from which :func:`sorted_value_key_parts` cuts the keys into one part per inner thread
#: (below it a part's sort is too short to pay for the partition pass).
SPLIT_FROM = 1 << 20


def sorted_value_key_parts(values):
    """(keys, shift, edges): ``values`` (1-D float64, C-contiguous, no NaN) as uint64 keys in value
    order, ties in index order, each key's index in its low ``shift`` bits; ``edges`` (0 = first <
    ... <= last = N) cut the keys into parts whose kept bits differ from part to part, so a run of
    keys sharing their kept bits (:func:`order_runs`) never straddles two parts.

    :func:`order_keys` over index ranges, then, from :data:`SPLIT_FROM` values on with several
    :func:`favmac.parallel.inner_threads`, one part per thread: pivots at a sample's quantiles
    (rounded down to their kept bits) and :func:`split_keys`; each part sorted by numpy's
    vectorized sort of integers (in place; it releases the GIL) and :func:`order_runs` on its
    thread. The keys are distinct (their indices), so every split sorts them into the same array:
    the result does not depend on the threads. 8 bytes per value, several times faster than an
    argsort of the floats; the sample is at most 4,096 keys per part."""
    from .. import parallel

    n = values.size
    shift = np.uint64(max(1, (n - 1).bit_length()))
    keys = np.empty(n, dtype=np.uint64)
    if n == 0:
        return keys, shift, [0, 0]
    bits = values.view(np.uint64)
    threads = parallel.inner_threads()
    parallel.map_chunks(lambda part: order_keys(bits[part.start:part.stop], shift, keys[part.start:part.stop], part.start),
                        parallel.chunk_ranges(n, threads))
    edges = [0]
    parts = threads if n >= SPLIT_FROM else 1
    if parts > 1:
        sample = np.sort(keys[:: max(1, n // (4096 * parts))])
        for j in range(1, parts):
            pivot = (sample[len(sample) * j // parts] >> shift) << shift
            start = edges[-1]
            edges.append(start + int(split_keys(keys[start:], pivot)))
    edges.append(n)

    def sort(part):
        keys[part.start:part.stop].sort()  # in place
        order_runs(keys[part.start:part.stop], bits, shift)

    parallel.map_chunks(sort, [range(a, b) for a, b in zip(edges[:-1], edges[1:])])
    return keys, shift, edges


def sorted_value_keys(values):
    """(keys, shift): ``values`` (1-D float64, C-contiguous, no NaN) as uint64 keys in value order,
    ties in index order, each key's index in its low ``shift`` bits (:func:`sorted_value_key_parts`).

    >>> keys, shift = sorted_value_keys(np.array([0.5, 0.1, 0.5, 0.9]))
    >>> (keys & ((1 << int(shift)) - 1)).tolist()
    [1, 0, 2, 3]
    """
    keys, shift, _ = sorted_value_key_parts(values)
    return keys, shift


def stable_argsort(values):
    """``np.argsort(values, kind="stable")`` (int64) of a 1-D float array without NaN, from
    :func:`sorted_value_keys` (the indices kept in the keys' own buffer: no other array).

    >>> stable_argsort(np.array([0.5, 0.1, 0.5, -0.0, 0.0])).tolist()
    [3, 4, 1, 0, 2]
    """
    keys, shift = sorted_value_keys(np.ascontiguousarray(values, dtype=float))
    keys &= (np.uint64(1) << shift) - np.uint64(1)
    return keys.view(np.int64)


@njit(cache=True, nogil=True)
def crc_kernel(ranks, labels, weights, leaf, bounds, burn_in, window, offsets):
    """Exact CRC thresholds as *positions*: lambda = the smallest of {0} ∪ {calibration
    probabilities} ∪ {+inf} whose summed calibration cost R(lambda) = sum of w_k over false positives
    with p_k >= lambda is <= ``bounds[t, m]`` (m calibration patients). Returns (thresholds (T, S),
    final (T,)): a calibration probability as its position among the stream's sorted distinct
    probabilities (a float, exact: :func:`favmac.baselines.crc.crc` looks the values up after the
    walk, so no table of the values sits beside the tree), 0 as -inf, +inf as itself. The chosen
    sets are ``p >= lambda``.

    ``ranks`` (N, K) is each probability's position (:func:`rank_sorted_keys`). A blocked prefix
    tree over those positions (``leaf``, one zero per position of a dtype that holds any
    position's total; :func:`block_add`) holds the calibration cost (``weights``, int64 at the
    costs' scale, or float above 2^62): R(lambda at position r) = total - (cost at positions < r),
    non-increasing in r, so the cut-off position is one search (:func:`first_reaching`). Which
    positions hold a calibration probability now is an occupancy bit set (levels at ``offsets``,
    :func:`occupancy_levels`; with a window, a count per position says when one empties): the
    candidate is the first occupied position from the cut-off on (never position 0: the cut-off is
    at least 1), O(log_64 U). A code's cost is ``weights[k]`` where it is absent (``labels[n, k]``
    False), read here rather than from an (N, K) table. O(T log U) per prediction, O(K log U) per
    patient inserted or removed, with one cache miss per point where a Fenwick tree over every
    position had several.
    """
    n_patients, n_codes = ranks.shape
    n_values = leaf.shape[0]
    n_targets = bounds.shape[0]
    n_steps = n_patients - burn_in
    n_blocks = (n_values + (1 << BLOCK_SHIFT) - 1) >> BLOCK_SHIFT
    blocks = np.zeros(max(n_blocks, 1), dtype=weights.dtype)
    supers = np.zeros(((n_blocks + (1 << BLOCK_SHIFT) - 1) >> BLOCK_SHIFT) + 1, dtype=weights.dtype)
    bits = np.zeros(offsets[-1], dtype=np.uint64)
    copies = np.zeros(n_values if window > 0 else 0, dtype=np.int32)  # a window removes points: how many per position
    total = blocks[0]  # a zero of the weights' type
    thresholds = np.empty((n_targets, n_steps))
    final = np.empty(n_targets)
    for n in range(n_patients + 1):
        if n >= burn_in:
            n_cal = calibration_count(n, window)
            for t in range(n_targets):
                bound = bounds[t, n_cal]
                if bound < 0:
                    lam = np.inf  # even the empty set (R = 0) is refused: nothing better exists
                elif total <= bound:
                    lam = -np.inf  # every set qualifies: every code (lambda 0, written after the look-up)
                else:
                    cut = first_reaching(leaf, blocks, supers, total - bound) + 1  # first position with R <= bound
                    found = next_occupied(bits, offsets, cut) if cut < n_values else -1
                    lam = np.inf if found < 0 else np.float64(found)
                if n == n_patients:
                    final[t] = lam
                else:
                    thresholds[t, n - burn_in] = lam
        if n < n_patients:
            for k in range(n_codes):
                occupy(bits, offsets, ranks[n, k])
                if window > 0:
                    copies[ranks[n, k]] += 1
                if not labels[n, k] and weights[k] != 0:
                    block_add(leaf, blocks, supers, ranks[n, k], weights[k])
                    total += weights[k]
            if window > 0 and n - window >= 0:
                old = n - window
                for k in range(n_codes):
                    copies[ranks[old, k]] -= 1
                    if copies[ranks[old, k]] == 0:
                        vacate(bits, offsets, ranks[old, k])
                    if not labels[old, k] and weights[k] != 0:
                        block_add(leaf, blocks, supers, ranks[old, k], -weights[k])
                        total -= weights[k]
    return thresholds, final


@njit(cache=True, nogil=True)
def classwise_queries(column, negative, queries, prefix, order, needs_by_size, window, passed):
    """ClassWise for one code when the patients predicted are not the calibration stream's own
    next patients (segments, labels that arrive later): ``passed[q]``, as :func:`classwise_code`'s,
    for query q, whose score is ``queries[q]`` and whose calibration data are the first
    ``prefix[q]`` patients of the calibration sequence (``column``, ``negative``: in the order
    their labels join; the last ``window`` of them when ``window`` > 0). ``prefix`` is
    non-decreasing. ``order``: a stable argsort of ``column`` followed by ``queries`` (one
    ranking of both, so "negative scores < p" counts the same ties as the stream's kernel).
    """
    n_cal = column.shape[0]
    n_queries = queries.shape[0]
    total = n_cal + n_queries
    n_targets = needs_by_size.shape[1]
    rank = np.empty(total, dtype=np.int64)
    below = np.empty(total, dtype=np.int64)
    run_start = 0
    previous = 0.0
    for r in range(total):
        i = order[r]
        v = column[i] if i < n_cal else queries[i - n_cal]
        if r > 0 and v != previous:
            run_start = r
        previous = v
        rank[i] = r
        below[i] = run_start
    tree = np.zeros(total + 1, dtype=np.int32)
    m = 0
    joined = 0
    for q in range(n_queries):
        while joined < prefix[q]:
            if negative[joined]:
                fenwick.add(tree, rank[joined], 1)
                m += 1
            if window > 0 and joined - window >= 0 and negative[joined - window]:
                fenwick.add(tree, rank[joined - window], -1)
                m -= 1
            joined += 1
        count = fenwick.prefix_total(tree, below[n_cal + q])
        needs = needs_by_size[m]
        lo = 0
        hi = n_targets
        while lo < hi:
            mid = (lo + hi) // 2
            if count >= needs[mid]:
                hi = mid
            else:
                lo = mid + 1
        passed[q] = lo
