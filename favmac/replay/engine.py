"""The threshold engine of a replay: the thresholds of one partition of the stream, for every target.

:class:`Engine` computes the threshold each predicted patient meets (calibrated on the patients whose
labels have arrived, in its group) and each group's final threshold, under expected-cost control
(Fenwick trees over the ranked calibration points, :mod:`favmac.replay.points`; one pass serves every
target), violation control (the violation scores' ranks), the adaptive target, weights with many
decimals (two bracket engines and :mod:`favmac.near_ties`), or, where int64 would overflow, the exact
FavMac loop (:class:`favmac.controller.FavMac`). The compiled walks are :mod:`favmac.replay_kernels`.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from ..adaptive import AdaptiveTarget
from ..protocols import bind_rows
from ..parallel import inner_threads, map_chunks, ordered_chunks
from ..thresholds import (
    INT64_LIMIT,
    ExactCosts,
    calibration_count,
    calibration_points,
    common_scale,
    expected_bounds,
    rank_edge,
    scaled_int,
    violation_rank,
    violation_ranks,
    violation_scores,
)
from ..universe import smallest_int
from . import sizes
from .points import expected_points, longest_run, merged_points, point_weights
from .realized import RealizedRows, rows_of
from .sizes import patient_chunks

__all__ = ["Engine", "Thresholds", "range_splits"]


_SHARED_GROUPS = 32  # up to this many groups in a grouping share the stream's key slots (Engine._layout)


_NO_OWNER = np.zeros(0, dtype=np.int8)


@dataclass
class Thresholds:
    """The thresholds of one partition of the stream (one grouping, or the pooled stream)."""

    steps: np.ndarray  # (T, S): the threshold of each predicted patient's group
    final: np.ndarray  # (T, G): each group's threshold after the whole stream
    step_targets: np.ndarray | None = None  # (T, S) adaptive c_n
    final_targets: np.ndarray | None = None  # (T, G)


class Engine:
    """Thresholds of one partition of the stream (``thresholds``), sharing the calibration
    points of the whole stream between partitions; the exact FavMac loop when int64 would overflow."""

    def __init__(self, session, cands, realized, costs, keyless: bool = False):
        self.session, self.cands, self.realized, self.costs = session, cands, realized, costs
        # keyless: the one pooled expected pass is the points' last use, so it drops the sorted
        # keys before the walk and looks up only the answers' keys afterwards (_expected)
        self.keyless = keyless
        self._points = self._scores = self._leaf = None
        self._leaf_full = False
        self._by_rank, self._ranked, self._unique = {}, {}, {}
        self._brackets = None

    def use(self, points, scores, brackets=None) -> None:
        """Take the calibration points (expected control) or violation scores of these patients, in this
        stream's order, from :class:`~favmac.replay.work.PatientWork` instead of computing them;
        ``brackets``: the bracket engines' points (weights with many decimals)."""
        self._points, self._scores = points, scores
        for bracket, bracket_points in zip(self.bracket_engines() if brackets else (), brackets or ()):
            bracket._points = bracket_points

    def thresholds(self, group, n_groups, burn_in, rate, report) -> Thresholds:
        """Thresholds with ``group`` (N,) int64 in [0, n_groups): each patient calibrated on its group."""
        s = self.session
        window = 0 if s.window is None else int(s.window)
        evict = s.schedule.evictions(group, window)
        if s.delta is not None:
            out = self._violation(group, n_groups, burn_in, window, evict, report)
        elif rate is not None:
            out = self._adaptive(group, n_groups, burn_in, window, evict, rate)
        else:
            out = self._expected(group, n_groups, burn_in, window, evict, report)
            if out is None:  # weights with many decimals: bracket the exact answer at a coarser scale
                out = self._bracketed(group, n_groups, burn_in, window, evict, report)
        if out is None:
            warnings.warn("costs too large for exact int64 arithmetic; replaying with the (slower) exact FavMac loop")
            out = self._loop(group, n_groups, burn_in, rate)
        return out

    def pooled_final(self) -> np.ndarray:
        """(T,) thresholds calibrated on the whole stream (the last ``window`` arrived), at the base
        targets: the final query of a one-group pass, computed directly from the points (no walk)."""
        s = self.session
        schedule, window, n_patients = s.schedule, s.window, self.cands.n_patients
        patients = schedule.order[-window:] if window else schedule.order
        m = len(patients)
        if s.delta is not None:
            out = np.empty(len(s.targets))
            for t, scores in enumerate(self.scores()):
                k = violation_rank(s.delta, m)
                edge = rank_edge(k, m)
                out[t] = edge if not math.isnan(edge) else np.partition(scores[patients], m - k)[m - k]
            return out
        points = self.points()
        if points is None:
            engines = self.bracket_engines()  # brackets of the exact thresholds (_bracketed)
            if engines is None:
                return self._loop(np.zeros(n_patients, dtype=np.int64), 1, n_patients, None).final[:, 0]
            down, up = np.asarray(engines[0].pooled_final()), np.asarray(engines[1].pooled_final())
            differ = np.flatnonzero(down != up)
            if len(differ):
                pooled = np.zeros(n_patients, dtype=np.int64)
                cells = [(t, 0, len(schedule.order), up[t], down[t]) for t in differ]  # every patient, as above
                exact = self._near_ties(engines[0].costs, pooled, window or 0, cells)
                if exact is None:
                    exact = self._loop(pooled, 1, n_patients, None, only=differ.tolist()).final[differ, 0]
                down[differ] = exact
            return down
        from ..replay_kernels import weight_totals

        ptr, ranks, weights, keys = points
        if self._leaf_full and not window:  # an expected pass left every point's weight in its key's slots
            leaf, self._leaf, self._leaf_full = self._leaf, None, False
            cumulative = np.cumsum(leaf, out=leaf) if leaf.dtype == np.int64 else np.cumsum(leaf, dtype=np.int64)
            del leaf
        else:
            cumulative = np.cumsum(weight_totals(ptr, ranks, weights, np.sort(patients), len(keys)))
        bounds = expected_bounds(s.targets, self.costs, m, first=m)[:, 0]
        found = np.searchsorted(cumulative, bounds, side="right")  # first key whose F exceeds the bound
        return np.where(bounds < 0, -np.inf, np.where(found >= len(keys), np.inf, keys[np.minimum(found, len(keys) - 1)]
                                                      if len(keys) else np.inf))

    def scores(self) -> list:
        """Violation scores T_i of every patient, one (N,) array per target (computed once)."""
        if self._scores is None:
            s = self.session
            self._scores = [violation_scores(self.cands, self.realized, self.costs.bound(target), s.score)
                            for target in s.targets]
        return self._scores

    def ranked_scores(self, t: int):
        """(scores of target t sorted, each patient's slot in them): ties take consecutive slots in
        stream order; kept for the next grouping when there are several."""
        if t in self._ranked:
            return self._ranked[t]
        scores = self.scores()[t]
        order = np.argsort(scores, kind="stable")
        slots = np.empty(len(scores), dtype=np.int64)
        slots[order] = np.arange(len(scores))
        out = (scores[order], slots)
        if len(self.session.groupings) > 1:
            self._ranked[t] = out
        return out

    # ------------------------------------------------------------------ shared arrays
    def points(self):
        """(ptr, ranks, weights, sorted_keys) of the whole stream's calibration points (expected
        control), or None when int64 would overflow. Gathered in chunks of patients (count, keys,
        then ranks and weights); keys are ranked by bisecting the sorted keys; ranks are int32 and
        weights keep the realized costs' int32 when they fit: no (N, M) temporaries."""
        if self._points is None:
            self._points = expected_points(self.cands, self.realized, self.costs, self.session.score)
        return self._points

    def points_by_rank(self, ptr, ranks, n_ranks, key):
        """:func:`~favmac.replay_kernels.rank_order` of some points (``key`` names them), kept for
        the next grouping."""
        from ..replay_kernels import rank_order

        if key not in self._by_rank:  # every rank is the first of its key's slots (equal keys share it)
            self._by_rank[key] = rank_order(ptr, ranks, n_ranks, True)
        return self._by_rank[key]

    def _unique_slots(self, ranks, keys, key):
        """The points' ranks with equal keys spread over their keys' slots (one point per slot);
        the ranks themselves when all keys differ. Kept for the next grouping."""
        from ..replay_kernels import unique_slots

        if key not in self._unique:
            self._unique[key] = unique_slots(ranks, keys)
        return self._unique[key]

    def _layout(self, ptr, ranks, keys, group, n_groups, key, n_keys=None) -> tuple:
        """Where a grouping's groups keep their points in the blocked trees (:mod:`favmac.replay_kernels`):
        ``(slots, keys, lstart, lsize, bstart, owner)``. One group: the given ranks and keys.
        Up to ``_SHARED_GROUPS`` groups: every group on the whole stream's slots (one per point),
        ``owner`` naming each slot's group. More groups: each its own sorted keys
        (:func:`~favmac.replay_kernels.group_slots`). ``n_keys``: the slots, when ``keys`` is
        empty (one group, a keyless walk)."""
        from ..replay_kernels import block_count, group_slots, slot_owner

        n_keys = len(keys) if n_keys is None else n_keys
        if n_groups == 1:
            return (ranks, keys, np.zeros(1, dtype=np.int64), np.array([n_keys], dtype=np.int64),
                    np.array([0, block_count(n_keys)], dtype=np.int64), _NO_OWNER)
        if n_groups <= _SHARED_GROUPS:
            slots = self._unique_slots(ranks, keys, key) if key == "points" else ranks  # the scores' are unique
            owner = np.empty(n_keys, dtype=np.int8 if n_groups <= 127 else np.int16)
            slot_owner(ptr, slots, group, owner)
            return (slots, keys, np.zeros(n_groups, dtype=np.int64), np.full(n_groups, n_keys, dtype=np.int64),
                    np.arange(n_groups + 1, dtype=np.int64) * block_count(n_keys), owner)
        local, grouped_keys, key_start = group_slots(ptr, group, *self.points_by_rank(ptr, ranks, n_keys, key), keys,
                                                     n_groups)
        sizes = np.diff(key_start)
        blocks = np.array([block_count(size) for size in sizes], dtype=np.int64)
        return (local, grouped_keys, key_start[:-1].copy(), sizes, np.concatenate([[0], np.cumsum(blocks)]),
                _NO_OWNER)

    def _trees(self, layout, largest: int):
        """Empty (leaf, btree) arrays of a layout; the leaves reuse the last pass's (``_done``)
        when they fit: a fresh array of that size costs its page faults again. ``largest``
        bounds what one leaf can hold (:meth:`_leaf_bound`): the leaves take the smallest
        integer dtype for it; the block trees (sums of many leaves) stay int64."""
        _, keys, lstart, lsize, bstart, owner = layout
        n_slots = int(np.max(lstart + lsize)) if len(lstart) else 0  # the keys may be left out (a keyless walk)
        dtype = smallest_int(largest)
        leaf, self._leaf, self._leaf_full = self._leaf, None, False
        if leaf is not None and len(leaf) == n_slots and leaf.dtype == dtype:
            leaf.fill(0)
        else:
            leaf = None  # the old leaves go before the new ones are allocated
            leaf = np.zeros(n_slots, dtype=dtype)
        return leaf, np.zeros(int(bstart[-1]), dtype=np.int64)

    @staticmethod
    def _leaf_bound(layout, ranks, weights) -> int:
        """The most one leaf of ``layout`` can hold: the largest weight times the most points
        that share a slot (with the given ``ranks`` as slots, every point of a key is in its
        key's first slot: the longest run of equal keys; the other layouts give each point a
        slot of its own). Every leaf is a sum of some of its slot's points' weights, all >= 0."""
        if len(weights) == 0:
            return 0
        sharing = longest_run(layout[1]) if layout[0] is ranks else 1
        return int(weights.max()) * int(sharing)

    def _done(self, leaf, full=False):
        """Keep a pass's leaves for the next pass; ``full``: they hold every calibration point's
        weight in its slot of the whole stream's sorted keys (for :meth:`pooled_final`)."""
        self._leaf, self._leaf_full = leaf, full

    def _schedule_args(self, group):
        schedule = self.session.schedule
        return group, schedule.order, schedule.ptr

    def _expected(self, group, n_groups, burn_in, window, evict, report):
        s = self.session
        keyless = self.keyless and n_groups == 1 and self._points is None
        if keyless:  # the walk records the answers' slots; their keys are looked up after it (_slot_keys)
            # the points ranked without the sorted keys or their weights, which are filled once the keys are gone
            ranked = merged_points(self.cands, self.realized, self.costs, s.score)
            if ranked is None:
                return None
            ptr, ranks, heaviest, n_keys, sharing = ranked
            # _leaf_bound of these ranks (every point in its key's first slot): the heaviest weight
            # times the longest run of equal keys
            largest = heaviest * sharing
            del ranked
            weights = point_weights(self.cands, self.realized, s.score, ptr, heaviest)
        else:
            points = self.points()
            if points is None:
                return None
            ptr, ranks, weights, sorted_keys = points
            n_keys = len(sorted_keys)
        from ..replay_kernels import expected_thresholds

        n_patients = len(group)
        if keyless:
            layout = self._layout(ptr, ranks, np.empty(0), group, n_groups, "points", n_keys)
        else:
            layout = self._layout(ptr, ranks, sorted_keys, group, n_groups, "points")
            largest = self._leaf_bound(layout, ranks, weights)
        leaf, btree = self._trees(layout, largest)
        counts = np.zeros(n_groups, dtype=np.int64)
        out = np.empty((len(s.targets), n_patients - burn_in))
        final = np.empty((len(s.targets), n_groups))
        arrived = s.schedule.ptr  # labels arrived before position n: arrived[n]
        chunks = patient_chunks(0, n_patients + 1)
        if keyless and inner_threads() > 1 and n_keys and len(chunks) > 1:  # the first chunk on one tree, then ranges
            chunks, ranges = chunks[:1], chunks[1:]
        else:
            ranges = None
        for start, stop in chunks:
            # the bounds of the calibration sizes this chunk can meet only: from the smallest
            # group's now to every label that arrives in the chunk (not a (T, N + 1) table)
            low = min(calibration_count(int(count), window) for count in counts)
            high = calibration_count(int(arrived[min(stop, n_patients)]), window)
            bounds = expected_bounds(s.targets, self.costs, high, first=low)
            expected_thresholds(ptr, layout[0], weights, *layout[1:], *self._schedule_args(group), evict, bounds, low,
                                burn_in, window, start, stop, leaf, btree, counts, out, final)
            report(stop / (n_patients + 1))
        if ranges:
            self._walk_in_ranges(ptr, ranks, weights, n_keys, leaf, int(counts[0]), group, burn_in, window, evict, ranges,
                                 out, final, report)
        if keyless:
            del leaf, btree, layout, weights
            self._slot_keys(ptr, ranks, n_keys, out, final)
            return Thresholds(out, final)
        self._done(leaf, full=not window and layout[1] is sorted_keys)  # no window, the stream's own keys
        return Thresholds(out, final)

    def _walk_in_ranges(self, ptr, slots, weights, n_keys, leaf, arrived_count, group, burn_in, window, evict, chunks,
                        out, final, report):
        """The rest of a one-group keyless walk (positions ``chunks``) on the inner threads: the slots
        split into one range per thread (:func:`range_splits`, from where the answers so far fell), each
        thread walking the stream over its own range of the one ``leaf`` array with its own block tree
        (:func:`~favmac.replay_kernels.expected_slots_range`). Every answer is the one-range walk's
        (integer sums, each written by the range that holds it); no key-sized array is added."""
        from ..replay_kernels import expected_slots_range, range_btree, weight_below

        s = self.session
        schedule = s.schedule
        n_patients = len(group)
        done = chunks[0][0]
        edges = range_splits(out[:, : max(0, done - burn_in)], n_keys, ptr[-1] / max(n_patients, 1), inner_threads())

        def prepare(edge):  # a range's walk state from the leaves so far: (lo, hi, last, below, btree, state)
            lo, hi = edge
            state = np.array([arrived_count, leaf[:lo].sum(dtype=np.int64), leaf[lo:hi].sum(dtype=np.int64)], dtype=np.int64)
            below = weight_below(ptr, slots, weights, lo) if lo else np.zeros(0, dtype=np.int64)
            return lo, hi, hi == n_keys, below, range_btree(leaf, lo, hi), state

        ranges = map_chunks(prepare, zip(edges[:-1], edges[1:]))
        for start, stop in chunks:
            low = calibration_count(int(ranges[0][-1][0]), window)
            high = calibration_count(int(schedule.ptr[min(stop, n_patients)]), window)
            bounds = expected_bounds(s.targets, self.costs, high, first=low)

            def walk(part, start=start, stop=stop, low=low, bounds=bounds):
                lo, hi, last, below, btree, state = part
                expected_slots_range(ptr, slots, weights, lo, hi, last, below, schedule.order, schedule.ptr, evict,
                                     bounds, low, burn_in, window, start, stop, leaf, btree, state, out, final)

            map_chunks(walk, ranges)
            report(stop / (n_patients + 1))

    def bracket_engines(self):
        """Two engines over the same candidate sets at a coarser integer scale, with every cost weight
        rounded down and up (:meth:`ExactCosts.brackets`), for per-code weights whose exact sums
        overflow int64; None for other costs (set costs). Built once, kept for the next grouping."""
        if self._brackets is None:
            if not isinstance(self.costs, ExactCosts):
                return None
            s = self.session
            self._brackets = [Engine(s, self.cands, RealizedRows(self.cands, s.labels, costs, s.cost), costs,
                                     keyless=self.keyless)
                              for costs in self.costs.brackets(self.cands.n_patients)]
        return self._brackets

    def _bracketed(self, group, n_groups, burn_in, window, evict, report):
        """Expected-cost thresholds when the exact sums overflow int64 (weights with many decimals).

        Each calibration sum F(b) of the low engine is at most the exact one (divided by the same D)
        and each of the high engine at least, and both compare with floor(M / D): the exact
        threshold, the smallest key with F(b) > M, lies between the high engine's and the low
        engine's. Where the two agree a threshold is exact; where they differ (a near-tie finer than the
        coarse scale, more likely the longer the stream) :meth:`_near_ties` decides it exactly, and only
        when those are too many or too wide does the exact loop replay the targets concerned. None for
        costs without brackets (set costs)."""
        engines = self.bracket_engines()
        if engines is None:
            return None
        down = engines[0]._expected(group, n_groups, burn_in, window, evict, lambda f: report(f / 2))
        up = engines[1]._expected(group, n_groups, burn_in, window, evict, lambda f: report(0.5 + f / 2))
        if down is None or up is None:
            return None
        steps, finals = np.argwhere(down.steps != up.steps), np.argwhere(down.final != up.final)
        if len(steps) or len(finals):  # near-ties: the weights rounded up answer below the exact key, down above it
            arrived = self.session.schedule.ptr
            cells = ([(t, group[burn_in + i], arrived[burn_in + i], up.steps[t, i], down.steps[t, i]) for t, i in steps]
                     + [(t, g, arrived[-1], up.final[t, g], down.final[t, g]) for t, g in finals])
            exact = self._near_ties(engines[0].costs, group, window, cells)
            if exact is not None:
                down.steps[tuple(steps.T)], down.final[tuple(finals.T)] = exact[: len(steps)], exact[len(steps):]
            else:
                differ = sorted({int(t) for t, *_ in cells})
                warnings.warn(f"costs too large for exact int64 arithmetic; near-ties at {len(differ)} of {len(down.steps)} "
                              "targets are decided by the (slower) exact FavMac loop (cost weights with fewer decimals avoid it)")
                exact = self._loop(group, n_groups, burn_in, None, only=differ)
                down.steps[differ], down.final[differ] = exact.steps[differ], exact.final[differ]
        return down

    def _near_ties(self, floor_costs, group, window, cells):
        """Exact thresholds of the queries where the brackets differ (:func:`favmac.near_ties.resolve`):
        ``cells`` holds (target, group, arrived, lowest key, highest key) per query, the calibration
        patients being the group's first ``arrived`` labels in arrival order (the last ``window`` of them).
        None when there are too many or their brackets are too wide: the caller runs the exact loop."""
        from ..near_ties import CostLimbs, NearTieQueries, fits, resolve

        if not fits(floor_costs.divisor, len(self.costs.weights)):
            return None
        s = self.session
        n_patients = self.cands.n_patients
        position = np.empty(n_patients, dtype=np.int64)
        position[s.schedule.order] = np.arange(n_patients)
        members = {}
        queries = NearTieQueries()
        for t, g, stop, low, high in cells:
            if g not in members:
                members[g] = np.sort(position[group == g])
            count = int(np.searchsorted(members[g], stop))
            first = int(members[g][count - window]) if window and count > window else 0
            queries.add(int(t), int(g), first, int(stop), min(count, window) if window else count, float(low), float(high))
        limbs = (floor_costs.divisor, floor_costs, self.costs.remainders(floor_costs.divisor))

        def chunk(rows):  # computed on the inner threads, used by resolve in order
            start, stop = rows
            part = self.cands.subset(slice(start, stop))
            exact = CostLimbs.realized(self.costs, part, s.labels[start:stop], limbs)
            keys, floor_part, rest_part = part.scores(s.score), exact.low, exact.rest
            if not part.nested:  # the full universe: its sets in key order
                idx = np.argsort(keys, axis=1, kind="stable")
                keys, floor_part, rest_part = (np.take_along_axis(a, idx, axis=1) for a in (keys, floor_part, rest_part))
            return np.arange(start, stop), keys, floor_part, rest_part

        return resolve(queries, ordered_chunks(chunk, patient_chunks(0, n_patients, sizes.POINTS_CHUNK)), self.costs,
                       floor_costs.divisor, s.targets, np.ascontiguousarray(group, dtype=np.int64), position)

    def _slot_keys(self, ptr, ranks, n_keys, *answers):
        """Replace the slots a keyless walk wrote in ``answers`` (2-D arrays) by their keys, in place:
        one pass over the patients with a point in an answered slot (their keys recomputed chunk by
        chunk; the others' keys are not needed) keeps the keys of the marked slots only (a bit set over
        the slots and one float per answer slot), not the sorted keys of every point. The same floats:
        a slot's key is the key of every point ranked there, the last one in point order as before."""
        from ..replay_kernels import mark_slots, marked_patients, record_slot_keys, slot_keys, slot_prefix

        bits = np.zeros((n_keys + 63) >> 6, dtype=np.uint64)
        for table in answers:
            mark_slots(table, bits)
        prefix = slot_prefix(bits)
        found = np.empty(int(prefix[-1]))
        chunks = patient_chunks(0, self.cands.n_patients, sizes.CHUNK)

        def holders(chunk):  # the patients with a point in a marked slot: at 300,000 x 35 about one in seven
            start, stop = chunk
            return start + np.flatnonzero(marked_patients(ptr[start : stop + 1], ranks, bits))

        def slot_points(rows):  # the ranks and keys of these patients' points, in point order
            if not len(rows):
                return None
            keys, increments = calibration_points(self.cands.subset(rows), rows_of(self.realized, rows),
                                                  self.session.score)
            counts = ptr[rows + 1] - ptr[rows]
            points = np.repeat(ptr[rows] - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
            return ranks[points], keys[increments > 0]

        # the keys computed on the threads, recorded here in point order (the last write of a slot wins
        # as on one thread: -0.0 and 0.0 share a slot)
        for found_points in ordered_chunks(slot_points, map_chunks(holders, chunks)):
            if found_points is not None:
                record_slot_keys(*found_points, bits, prefix, found)
            del found_points
        for table in answers:
            slot_keys(table, bits, prefix, found)

    def _violation(self, group, n_groups, burn_in, window, evict, report):
        from ..replay_kernels import violation_thresholds

        s = self.session
        n_patients = len(group)
        ranks_k = violation_ranks(s.delta, n_patients)
        out = np.empty((len(s.targets), n_patients - burn_in))
        final = np.empty((len(s.targets), n_groups))
        ptr = np.arange(n_patients + 1)
        for t in range(len(s.targets)):
            sorted_scores, score_slots = self.ranked_scores(t)
            layout = self._layout(ptr, score_slots, sorted_scores, group, n_groups, ("scores", t))
            leaf, btree = self._trees(layout, 1)  # a patient's score has a slot of its own: counts 0 or 1
            counts = np.zeros(n_groups, dtype=np.int64)
            for start, stop in patient_chunks(0, n_patients + 1):
                violation_thresholds(*layout, *self._schedule_args(group), evict, ranks_k, burn_in, window, start, stop,
                                     leaf, btree, counts, out[t], final[t])
            self._done(leaf)
            report((t + 1) / len(s.targets))
        return Thresholds(out, final)

    def _adaptive(self, group, n_groups, burn_in, window, evict, rate):
        """Thresholds and adaptive targets c_n; None when int64 would overflow."""
        from ..replay_kernels import adaptive_thresholds

        s, costs = self.session, self.costs
        n_patients = len(group)
        floor = math.lcm(costs.scale, common_scale(s.targets))  # one scale S for every target
        rules = [AdaptiveTarget(target, rate, costs.scale, min_scale=floor) for target in s.targets]
        big = rules[0].scale
        if self.realized.dtype == object or not costs.exact_sums(n_patients):
            return None
        c_max_big = scaled_int(costs.c_max, big)
        largest = max(rule.largest(costs.c_max, n_patients) for rule in rules)
        if largest * (n_patients + 1) + c_max_big >= INT64_LIMIT:
            return None
        points = self.points()
        if points is None:
            return None
        ptr, ranks, weights, sorted_keys = points
        layout = self._layout(ptr, ranks, sorted_keys, group, n_groups, "points")
        leaf, btree = self._trees(layout, self._leaf_bound(layout, ranks, weights))
        steps = n_patients - burn_in
        out = np.empty((len(s.targets), steps))
        targets_out = np.empty((len(s.targets), steps), dtype=np.int64)
        final = np.empty((len(s.targets), n_groups))
        final_targets = np.empty((len(s.targets), n_groups), dtype=np.int64)
        ok = adaptive_thresholds(
            ptr, layout[0], weights.astype(np.int64), *layout[1:], *self._schedule_args(group), evict,
            np.ascontiguousarray(self.cands.scores(s.score), dtype=float), _preference(self.cands),
            np.ascontiguousarray(self.realized, dtype=np.int64), np.array([rule.start for rule in rules], dtype=np.int64),
            np.array([rule.target_base for rule in rules], dtype=np.int64), np.int64(rules[0].rate_scaled),
            np.int64(rules[0].cost_to_base), np.int64(big // costs.scale), np.int64(c_max_big), burn_in, window,
            np.int64(INT64_LIMIT), leaf, btree, out, targets_out, final, final_targets)
        self._done(leaf)
        if not ok:
            return None
        return Thresholds(out, final, targets_out / big, final_targets / big)

    def _loop(self, group, n_groups, burn_in, rate, only=None):
        """The exact (Python integers) FavMac loop, one controller per group, labels joining as they arrive
        (``only``: the indices of the targets to replay; the other rows are left unset)."""
        from ..controller import FavMac

        s = self.session
        schedule = s.schedule
        if rate is not None and schedule.delayed:
            raise ValueError("costs too large for exact int64 arithmetic with an adaptive target and delayed labels; "
                             "round the cost weights or the target to fewer decimals")
        n_patients, n_codes = s.probs.shape
        out = np.empty((len(s.targets), n_patients - burn_in))
        final = np.empty((len(s.targets), n_groups))
        step_targets = np.empty_like(out) if rate is not None else None
        final_targets = np.empty_like(final) if rate is not None else None
        for t in range(len(s.targets)) if only is None else only:
            target = s.targets[t]
            fms = [FavMac(s.value, s.cost, target, delta=s.delta, universe=s.universe, c_max=s.c_max,
                          window=s.window, n_codes=n_codes, adaptive_rate=rate, score=s.score)
                   for _ in range(n_groups)]
            for n in range(n_patients):
                if n >= burn_in:
                    out[t, n - burn_in] = fms[group[n]].threshold
                    if rate is not None:
                        step_targets[t, n - burn_in] = float(fms[group[n]].current_target)
                for i in schedule.order[schedule.ptr[n] : schedule.ptr[n + 1]]:
                    fms[group[i]].update(s.probs[i], s.labels[i], adapt=bool(i >= burn_in), value=bind_rows(s.value, i))
            for g, fm in enumerate(fms):
                final[t, g] = fm.threshold
                if rate is not None:
                    final_targets[t, g] = float(fm.current_target)
        return Thresholds(out, final, step_targets, final_targets)


def range_splits(answers, n_keys: int, points_per_position: float, parts: int, query_cost: float = 4.0) -> np.ndarray:
    """Slot edges ``0 = e_0 < ... < e_k = n_keys`` (k <= ``parts``) splitting a keyless walk's slots into
    ranges of about equal work (:meth:`Engine._walk_in_ranges`). A position's work in a range is its
    joining points there (the slots are ranks: about (hi - lo) / n_keys of ``points_per_position``) and
    ``query_cost`` (in joining points) per answer there, the answers' places estimated from the walk's
    answers so far (``answers``: (T, positions) slots, +-inf; an answer stays near its place while the
    stream is stationary). Any edges give the same answers: only the balance depends on them.

    >>> answers = np.array([[10.0] * 5, [60.0] * 5, [np.inf] * 5])  # 3 targets, 5 positions
    >>> range_splits(answers, 100, 4.0, 2).tolist()  # each range: 2 joining points and 1 answer per position
    [0, 50, 100]
    """
    grid = np.linspace(0, n_keys, 1025)
    work = grid / n_keys * points_per_position  # the work of the slots below each grid point, per position
    if answers.size:
        finite = np.sort(answers[np.isfinite(answers)])
        work = work + query_cost * np.searchsorted(finite, grid, side="left") / answers.shape[1]
    places = np.searchsorted(work, work[-1] * np.arange(1, parts) / parts)
    return np.unique(np.concatenate([[0], np.ceil(grid[np.minimum(places, len(grid) - 1)]), [n_keys]])).astype(np.int64)


def _preference(cands) -> np.ndarray:
    """(N, M) candidate indices in the order ``Candidates.choose`` prefers them: the first one
    under the threshold is S_hat (nested: larger Vhat, then the longer prefix; full: larger
    Vhat, then smaller C-hat, then enumeration order)."""
    shape = cands.chat.shape
    steps = np.broadcast_to(np.arange(shape[1]), shape)
    if cands.nested and cands.monotone:
        return np.ascontiguousarray(np.broadcast_to(np.arange(shape[1])[::-1], shape), dtype=np.int64)
    if cands.nested:
        return np.lexsort((-steps, -cands.vhat), axis=-1).astype(np.int64)
    return np.lexsort((steps, cands.chat, -cands.vhat), axis=-1).astype(np.int64)
