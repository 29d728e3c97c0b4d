"""The calibration points of expected-cost control: every patient's keys and integer weights, ranked.

In expected-cost control patient i contributes points (key b, weight) (:func:`favmac.thresholds.calibration_points`)
that do not depend on the target, so they are computed once per replay: :func:`expected_points` ranks them
against the sorted keys of the whole stream; :func:`merged_points` ranks them by merging sorted chunks
(the keyless walk, :meth:`favmac.replay.engine.Engine.thresholds`), with :func:`point_weights` filled after
the keys are gone. Passes run in chunks of patients (:mod:`favmac.replay.sizes`) on the inner threads
(:mod:`favmac.parallel`), each writing only its own slices: the arrays are the same on any number of threads.
"""
from __future__ import annotations

import numpy as np

from ..parallel import inner_threads, map_chunks
from ..thresholds import calibration_points, calibration_weights
from ..universe import smallest_int
from . import sizes
from .sizes import patient_chunks

__all__ = ["expected_points", "merged_points", "rank_runs", "point_counts", "point_weights", "longest_run"]


def expected_points(cands, realized, costs, score):
    """(ptr, ranks, weights, sorted_keys) of every patient's calibration points; None when int64 would overflow.

    Patient i's points are ``ranks[ptr[i]:ptr[i + 1]]`` (positions in ``sorted_keys``, int32
    below 2^31 points) with ``weights`` (the smallest integer dtype that holds the largest,
    :func:`smallest_int`). Equal keys are not compacted: every point takes the first slot of its key
    (searchsorted, side "left") and the other slots keep weight 0, which never moves "the
    smallest key whose cdf exceeds the bound". (The keyless walk ranks its points without the
    sorted keys: :func:`merged_points`.)
    """
    n_patients = cands.n_patients
    counted = point_counts(cands, realized, costs, score)
    if counted is None:
        return None
    ptr, largest = counted
    chunks = patient_chunks(0, n_patients, sizes.POINTS_CHUNK)
    # The sorted keys first, before the per-point arrays exist, so that no two point-sized
    # float arrays are alive at once.
    sorted_keys = np.empty(ptr[-1])
    for start, stop in chunks:
        keys, increments = calibration_points(cands.subset(slice(start, stop)), realized[start:stop], score)
        sorted_keys[ptr[start] : ptr[stop]] = keys[increments > 0]
    sorted_keys.sort()
    ranks = np.empty(ptr[-1], dtype=np.int32 if len(sorted_keys) < 2**31 else np.int64)
    point_weights = np.empty(ptr[-1], dtype=smallest_int(largest))  # every weight fits it
    for first, last in patient_chunks(0, n_patients):
        # bisecting sorted queries walks the keys forward (cache friendly); random ones do not, and
        # the more queries at once the closer they are: a sizes.CHUNK of patients' keys is ranked at once,
        # computed in smaller steps (the keys' temporaries are several (rows, K) arrays)
        part = np.empty(ptr[last] - ptr[first])
        for start, stop in patient_chunks(first, last, sizes.POINTS_CHUNK):
            keys, increments = calibration_points(cands.subset(slice(start, stop)), realized[start:stop], score)
            positive = increments > 0
            point_weights[ptr[start] : ptr[stop]] = increments[positive]
            part[ptr[start] - ptr[first] : ptr[stop] - ptr[first]] = keys[positive]
            del keys, increments, positive
        order = np.argsort(part)
        for begin in range(0, len(order), sizes.RANK_BATCH):  # sorted queries, a batch at a time (small temporaries)
            batch = order[begin : begin + sizes.RANK_BATCH]
            ranks[batch + ptr[first]] = np.searchsorted(sorted_keys, part[batch])
        del part, order
    return ptr, ranks, point_weights, sorted_keys


def merged_points(cands, realized, costs, score):
    """(ptr, ranks, heaviest, n_keys, sharing) of the keyless walk's calibration points: the ranks
    :func:`expected_points` gives (each point's first slot in the sorted keys), without the sorted
    keys; None when int64 would overflow. ``heaviest`` is the largest weight (the weights are filled
    later by :func:`point_weights`), ``n_keys`` the number of points (slots) and ``sharing`` the most
    points sharing one slot (the longest run of equal keys).

    Each chunk of patients' keys is sorted as it is gathered (its sort order kept in ``ranks``), then
    the sorted chunks are merged (:func:`rank_runs`): no sort of every key and no second pass of keys
    to bisect (the keys are computed once here). The chunks run on the inner threads
    (:mod:`favmac.parallel`), each writing only its own slices of the keys and ranks."""
    counted = point_counts(cands, realized, costs, score)
    if counted is None:
        return None
    ptr, heaviest = counted
    # on n threads, runs of 1/n the patients: n chunks' sort buffers at once take one chunk's memory
    chunks = patient_chunks(0, cands.n_patients, max(1, sizes.CHUNK // inner_threads()))
    keys = np.empty(ptr[-1])  # each chunk's keys, sorted, then their ranks (merge_ranks)
    ranks = np.empty(ptr[-1], dtype=np.int32 if len(keys) < 2**31 else np.int64)

    def gather(chunk):  # one chunk's keys, sorted in place (threads: each chunk writes its own slices)
        first, last = chunk
        part = keys[ptr[first] : ptr[last]]
        for start, stop in patient_chunks(first, last, sizes.POINTS_CHUNK):  # the keys' temporaries are (rows, K) arrays
            step_keys, increments = calibration_points(cands.subset(slice(start, stop)), realized[start:stop], score)
            part[ptr[start] - ptr[first] : ptr[stop] - ptr[first]] = step_keys[increments > 0]
            del step_keys, increments
        order = np.argsort(part)
        ranks[ptr[first] : ptr[last]] = order  # offsets in the chunk (below its points, so they fit)
        part[:] = part[order]

    map_chunks(gather, chunks)
    starts = ptr[[first for first, _ in chunks] + [cands.n_patients]] if chunks else np.zeros(1, dtype=np.int64)
    sharing = rank_runs(keys, starts, ranks)
    return ptr, ranks, heaviest, len(keys), sharing


def rank_runs(keys, starts, ranks) -> int:
    """:func:`~favmac.replay_kernels.merge_ranks` then :func:`~favmac.replay_kernels.unsort_ranks` of the
    sorted runs ``keys[starts[r]:starts[r + 1]]`` (their sort orders in ``ranks``), on the inner threads:
    the merge in key ranges (:func:`~favmac.replay_kernels.split_runs`; two per thread, one on one
    thread), the unsort run by run. Returns the longest run of equal keys; ``ranks`` holds the ranks."""
    from ..replay_kernels import merge_part, split_runs, unsort_ranks

    threads = inner_threads()
    parts = split_runs(keys, starts, 1 if threads == 1 else 2 * threads)
    sharing = max(map_chunks(lambda part: merge_part(keys, *part), parts))
    map_chunks(lambda r: unsort_ranks(keys, starts[r : r + 2], ranks), range(len(starts) - 1))
    return int(sharing)


def point_counts(cands, realized, costs, score):
    """(ptr, heaviest) of the calibration points (:func:`expected_points`): patient i's points are
    ``ptr[i]:ptr[i + 1]``, ``heaviest`` the largest weight; None when int64 would overflow."""
    n_patients = cands.n_patients
    if realized.dtype == object or not costs.exact_sums(n_patients):
        return None
    counts = np.zeros(n_patients, dtype=np.int64)

    def count(chunk):  # the largest weight of one chunk (threads: each chunk writes its own counts)
        largest = 0
        for start, stop in patient_chunks(*chunk, sizes.POINTS_CHUNK):  # the weights' temporaries are (rows, K) arrays
            increments = calibration_weights(cands.subset(slice(start, stop)), realized[start:stop], score)  # no keys
            counts[start:stop] = np.count_nonzero(increments > 0, axis=1)
            largest = max(largest, int(increments.max(initial=0)))
        return largest

    largest = max(map_chunks(count, patient_chunks(0, n_patients)), default=0)  # the largest weight, for the weights' dtype
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return ptr, largest


def point_weights(cands, realized, score, ptr, largest: int) -> np.ndarray:
    """The calibration points' weights (:func:`expected_points`) in one pass over the patients,
    in the smallest integer dtype that holds ``largest``: the same integers in the same places."""
    out = np.empty(ptr[-1], dtype=smallest_int(largest))

    def fill(chunk):  # threads: each chunk writes its own points
        for start, stop in patient_chunks(*chunk, sizes.POINTS_CHUNK):
            increments = calibration_weights(cands.subset(slice(start, stop)), realized[start:stop], score)
            out[ptr[start] : ptr[stop]] = increments[increments > 0]
            del increments

    map_chunks(fill, patient_chunks(0, cands.n_patients))
    return out


def longest_run(keys, block: int = 1 << 16) -> int:
    """The most equal values in a row of sorted ``keys`` (0 for none), in blocks of ``block``
    comparisons (plain numpy: no key-sized temporaries, and no compiled kernel to load while
    the sorted keys are alive).

    >>> longest_run(np.array([1.0, 1.0, 2.0, 2.0, 2.0, 3.0]), block=2), longest_run(np.array([5.0])), longest_run(np.array([]))
    (3, 1, 0)
    """
    n = len(keys)
    if n == 0:
        return 0
    best = carry = 0  # carry: the equal pairs in a row at the end of the blocks so far
    for start in range(0, n - 1, block):
        stop = min(start + block, n - 1)
        same = keys[start + 1 : stop + 1] == keys[start:stop]  # pairs (j, j + 1)
        breaks = np.flatnonzero(~same)
        if len(breaks) == 0:
            carry += len(same)
            best = max(best, carry)
            continue
        best = max(best, carry + int(breaks[0]))
        if len(breaks) > 1:
            best = max(best, int(np.diff(breaks).max()) - 1)
        carry = len(same) - 1 - int(breaks[-1])
        best = max(best, carry)
    return best + 1
