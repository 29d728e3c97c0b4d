"""Benchmark: one FavMac (price) replay on one thread and on two (``favmac.parallel.using``), in one process.

    python scripts/bench_replay_threads.py [--patients 300000] [--codes 35] [--weights 3-decimal|float]
                                           [--repeat 2] [--trace]

The cohort, spec and grid are ``scripts/bench_large_cohort.py``'s (10 targets, burn-in 1,000). Each
repeat runs the replay with ``using(1)`` then ``using(2)`` (alternating which goes first), printing
wall and CPU seconds (``time.process_time``: every thread), the 1-minute load average before each,
and per step of the engine (steps nest: the points' ranking holds the counting pass, the keys' gather,
the merge and the unsort) its wall seconds and its critical-path CPU seconds: the main thread's CPU
plus, for each parallel call, the busiest worker thread's CPU. On a loaded machine the wall seconds
follow the load; the critical path estimates the wall time on idle cores (memory bandwidth shared by
the two threads aside). ``--trace``: the traced peak
(``tracemalloc``, data included, kernels warmed up first as the app does) of each, in the same process.
Every run's result must be the same bit for bit (checked: a hash of every array).
"""
from __future__ import annotations

import argparse
import gc
import hashlib
import os
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import numpy as np  # noqa: E402

from bench_large_cohort import cohort, grid, run_spec  # noqa: E402

STEPS = defaultdict(list)  # label -> [(begin, end)] of every call (calls on several threads overlap)
ESTIMATE = defaultdict(float)  # label -> the step's CPU on its critical path (main-thread calls only)
CRITICAL = [0.0]  # the parallel calls' critical path so far: per call, the busiest worker's CPU seconds
WORKERS = [None]  # the current parallel call's CPU seconds per worker thread


def covered(intervals) -> float:
    """The wall seconds covered by some (begin, end) intervals (overlapping calls counted once)."""
    total, reach = 0.0, -np.inf
    for begin, end in sorted(intervals):
        if end > reach:
            total += end - max(begin, reach)
            reach = end
    return total


def timed(owner, name, label):
    """Wrap ``owner.name`` (a function or method) with a wall-clock timer recorded in STEPS[label] and,
    called in the main thread, its critical-path CPU (this thread's CPU plus the busiest worker's of
    each parallel call inside it) in ESTIMATE[label]."""
    inner = getattr(owner, name)

    def wrapper(*args, **kwargs):
        main = threading.current_thread() is threading.main_thread()
        begin, cpu, critical = time.perf_counter(), time.thread_time(), CRITICAL[0]
        try:
            return inner(*args, **kwargs)
        finally:
            STEPS[label].append((begin, time.perf_counter()))
            if main:
                ESTIMATE[label] += time.thread_time() - cpu + CRITICAL[0] - critical

    setattr(owner, name, wrapper)


def parallel_calls(module):
    """Count each parallel call of ``module`` (map_chunks, ordered_chunks) on the critical path: the
    CPU seconds of its busiest worker (favmac.parallel runs every chunk through ``_one_thread``)."""
    for name in ("map_chunks", "ordered_chunks"):
        inner = getattr(module, name, None)
        if inner is None:
            continue

        def wrapper(*args, inner=inner, generator=name == "ordered_chunks", **kwargs):
            saved, WORKERS[0] = WORKERS[0], defaultdict(float)
            if not generator:
                try:
                    return inner(*args, **kwargs)
                finally:
                    CRITICAL[0] += max(WORKERS[0].values(), default=0.0)
                    WORKERS[0] = saved
            return _generator(inner(*args, **kwargs), saved)

        setattr(module, name, wrapper)


def _generator(results, saved):
    try:
        yield from results
    finally:
        CRITICAL[0] += max(WORKERS[0].values(), default=0.0)
        WORKERS[0] = saved


def instrument():
    import importlib

    engine, points, session, replay_kernels, universe, parallel = (
        importlib.import_module(f"favmac.{name}")
        for name in ("replay.engine", "replay.points", "replay.session", "replay_kernels", "universe", "parallel"))
    one_thread = parallel._one_thread

    def counted(fn, item):
        cpu = time.thread_time()
        try:
            return one_thread(fn, item)
        finally:
            if WORKERS[0] is not None:
                WORKERS[0][threading.get_ident()] += time.thread_time() - cpu

    parallel._one_thread = counted
    for module in (engine, points, session, universe):  # each module's own map_chunks / ordered_chunks
        parallel_calls(module)
    timed(session, "candidates_in_chunks", "candidate sets")
    timed(points, "point_counts", "ranking: counting pass")  # called by points.merged_points
    timed(engine, "merged_points", "ranking (all)")  # as the engine calls them
    timed(points, "rank_runs", "ranking: merge+unsort")
    timed(engine, "point_weights", "weights")
    timed(replay_kernels, "expected_thresholds", "walk: first chunk")
    timed(engine.Engine, "_walk_in_ranges", "walk: in ranges")
    timed(engine.Engine, "_slot_keys", "slot keys")
    timed(session.Session, "select", "choosing the sets")
    timed(engine.Engine, "_near_ties", "near-ties")
    timed(session.Session, "run", "whole replay")


def digest(result) -> str:
    h = hashlib.sha256()
    for array in (result.thresholds, result.cost, result.value, result.exceeds, result.final_thresholds,
                  result.chosen.index):
        h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()[:16]


def tables_digest(out) -> str:
    """A hash of a Trade-offs run's points and each method's summary (their CSV)."""
    text = "".join(frame.to_csv() for frame in (out["points"], *out["summaries"].values()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patients", type=int, default=300_000)
    parser.add_argument("--codes", type=int, default=35)
    parser.add_argument("--weights", choices=["3-decimal", "float"], default="3-decimal")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--tradeoffs", action="store_true",
                        help="time the Trade-offs computation (favmac.tradeoffs.run_comparison, its methods one after "
                             "another in this thread) instead of one replay")
    args = parser.parse_args(argv)

    from favmac import parallel
    from favmac.methods import run_method

    probs, labels, weights, codes, ids = cohort(args.patients, args.codes, weights_kind=args.weights)
    spec = run_spec(*probs.shape, weights)
    targets, _ = grid(spec, args.codes)
    spec = spec.replace(targets=tuple(float(t) for t in targets))
    data = probs.nbytes + labels.nbytes + np.asarray(weights).nbytes
    run = lambda: run_method(spec, "FavMac (price)", probs, labels, codes=codes, patient_ids=ids)  # noqa: E731
    if args.tradeoffs:
        from favmac import tradeoffs

        tradeoffs.TRADEOFF_WORKERS = 1  # the methods one after another, each on the inner threads
        _, methods = grid(spec, args.codes)
        run = lambda: tradeoffs.run_comparison(probs, labels, codes, ids, spec, spec.targets, methods)  # noqa: E731
    with parallel.using(2):  # compile the kernels (the walk in ranges needs more than one chunk of patients)
        run_method(spec.replace(burn_in=10), "FavMac (price)", probs[:50_000], labels[:50_000])
    print(f"{args.patients:,} x {args.codes}, {args.weights} weights, data {data / 1e6:.1f} MB")
    if args.trace:
        import tracemalloc

        for threads in (1, 2):
            gc.collect()
            tracemalloc.start()
            with parallel.using(threads):
                kept = run()
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            print(f"  peak traced, {threads} thread(s): {(peak + data) / 1e6:.0f} MB = {(peak + data) / data:.2f}x the data")
            del kept
        return 0
    instrument()
    hashes = set()
    for repeat in range(args.repeat):
        for threads in ((1, 2) if repeat % 2 == 0 else (2, 1)):
            gc.collect()
            STEPS.clear()
            ESTIMATE.clear()
            load = os.getloadavg()[0]
            wall, cpu, main, critical = time.perf_counter(), time.process_time(), time.thread_time(), CRITICAL[0]
            with parallel.using(threads):
                result = run()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            path = time.thread_time() - main + CRITICAL[0] - critical
            hashes.add(digest(result) if not args.tradeoffs else tables_digest(result))
            steps = ", ".join(f"{name} {covered(intervals):.2f}/{ESTIMATE[name]:.2f}" for name, intervals in STEPS.items())
            print(f"  {threads} thread(s): wall {wall:.2f} s, CPU {cpu:.2f} s, critical-path CPU {path:.2f} s, load {load:.1f} | "
                  f"steps, wall/critical-path CPU: {steps}")
            del result
    print(f"  results: {'identical' if len(hashes) == 1 else 'DIFFER'} ({', '.join(sorted(hashes))})")
    return 0 if len(hashes) == 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
