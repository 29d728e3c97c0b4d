"""Benchmark: replay with two groupings and a label delay against plain replay, in the same run.

    python scripts/bench_groupings_delay.py [--patients 100000] [--repeats 3]

Case (printed by the script): 100,000 patients x 35 codes (bench_replay's stream), ratio
universe, additive value and cost, 10 targets, burn-in 1,000, the hard case of random float
value weights (every patient's ratio order and price keys distinct) and cost weights with 3
decimals. Grouped run: groups=[plan (3 groups), age band
(5 groups)] and label_delay=1,000 stream positions. Each configuration is timed as the best
of ``--repeats`` runs (plain and grouped alternating) after a warm-up that compiles the numba
kernels (or loads them from numba's on-disk cache), in process CPU time (the machine may be
shared: wall-clock time is printed too). The warm-up's first calls are printed: the very first
(plain, expected control, cost score) compiles or loads every kernel the two share; the grouped
one after it only its own few. The goal is a ratio of at most 1.5 (grouped / plain) for each
control and score.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.environ.get("FAVMAC_BENCH_SOURCE") or str(ROOT))  # the checkout to measure
sys.path.insert(0, str(ROOT / "scripts"))

from bench_replay import stream  # noqa: E402

from favmac import AdditiveCost, AdditiveValue, replay  # noqa: E402

N_TARGETS = 10


def timed(run):
    """(process CPU seconds, wall seconds) of one call."""
    cpu, wall = time.process_time(), time.perf_counter()
    run()
    return time.process_time() - cpu, time.perf_counter() - wall


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--patients", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--delay", type=int, default=1000)
    args = parser.parse_args(argv)

    probs, labels, cost_weights = stream(args.patients)
    rng = np.random.RandomState(7)
    value = AdditiveValue(rng.uniform(0.1, 3.0, size=probs.shape[1]))  # random floats: the hard case
    cost = AdditiveCost(cost_weights)
    plan = rng.choice(["P1", "P2", "P3"], size=args.patients, p=[0.4, 0.35, 0.25])
    band = rng.choice(["<40", "40-54", "55-64", "65-74", "75+"], size=args.patients)
    c_max = float(np.sum(cost_weights))
    targets = list(np.round(np.linspace(0.02, 0.2, N_TARGETS) * c_max, 3))
    print(f"Case: {args.patients:,} patients x {probs.shape[1]} codes (bench_replay.stream, seed 0), ratio universe, "
          f"additive value with random float weights U(0.1, 3.0) (seed 7), additive cost weights with 3 decimals "
          f"(C_max {c_max:g}), {N_TARGETS} targets {[float(t) for t in targets]}, burn-in 1,000, no window.")
    print(f"Plain: no groupings, no delay. Grouped: 2 groupings (plan: 3 groups, age band: 5 groups), "
          f"label_delay={args.delay}. Best of {args.repeats} alternating runs, process CPU time; first calls "
          "(3,000 patients, 2 targets) include compiling the numba kernels or loading them from numba's cache.")
    small = slice(0, 3000)
    for delta in (None, 0.1):
        for score in ("cost", "price"):
            settings = dict(delta=delta, score=score, burn_in=1000)
            first_plain = timed(lambda: replay(probs[small], labels[small], value, cost, targets[:2], **settings))
            first_grouped = timed(lambda: replay(probs[small], labels[small], value, cost, targets[:2],
                                                 groups=[plan[small], band[small]], label_delay=10, **settings))
            plain, grouped = [], []
            for _ in range(args.repeats):  # alternating, so that a busy moment hits both
                plain.append(timed(lambda: replay(probs, labels, value, cost, targets, **settings)))
                grouped.append(timed(lambda: replay(probs, labels, value, cost, targets, groups=[plan, band],
                                                    label_delay=args.delay, **settings)))
            (p_cpu, p_wall), (g_cpu, g_wall) = min(plain), min(grouped)
            control = "expected" if delta is None else f"violation {delta}"
            print(f"  {control:14s} score {score:5s}: plain {p_cpu:6.2f} s CPU ({p_wall:5.2f} s wall), two groupings + "
                  f"delay {g_cpu:6.2f} s CPU ({g_wall:5.2f} s wall), ratio {g_cpu / p_cpu:4.2f}x CPU, "
                  f"{g_wall / p_wall:4.2f}x wall (first calls: plain {first_plain[0]:.2f} s, then grouped "
                  f"{first_grouped[0]:.2f} s CPU)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
