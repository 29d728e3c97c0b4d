"""Benchmark: replay (numba, all targets in one pass) against naive baselines in the same run.

    python scripts/bench_replay.py [--patients 100000] [--million]

Figures: replay of 100,000 patients x 35 codes, ratio universe, 10 targets, expected
control; per-step cost against (a) the FavMac loop on the QuantileTree and (b) a naive
loop that re-sorts all calibration keys with numpy at every step. With --million it also
replays 1,000,000 x 35 with one target in a child process and reports its peak memory.
"""
from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from favmac import AdditiveCost, AdditiveValue, FavMac, replay  # noqa: E402
from favmac.thresholds import ExactCosts, calibration_points  # noqa: E402
from favmac.universe import candidate_sets  # noqa: E402

N_CODES = 35


def stream(n_patients: int, seed: int = 0):
    rng = np.random.RandomState(seed)
    prevalence = rng.uniform(0.01, 0.25, size=N_CODES)
    labels = rng.rand(n_patients, N_CODES) < prevalence
    logits = np.log(prevalence / (1 - prevalence)) + 2.5 * labels + rng.randn(n_patients, N_CODES)
    probs = np.round(1 / (1 + np.exp(-logits)), 4)
    weights = np.round(rng.uniform(0.1, 2.5, size=N_CODES), 3)
    return probs, labels, weights


def naive_thresholds(probs, labels, value, cost, target, steps):
    """Per step: collect all calibration points, sort with numpy, scan the cumulative sum."""
    cands = candidate_sets(probs, value, cost, "ratio")
    costs = ExactCosts.of(cost, probs.shape[1])
    keys, inc = calibration_points(cands, costs.realized(cands, labels))
    out = []
    for n in range(steps):
        k, w = keys[:n].ravel(), inc[:n].ravel().astype(float) / costs.scale
        order = np.argsort(k, kind="stable")
        cumulative = np.cumsum(w[order])
        margin = target * (n + 1) - float(costs.c_max)
        pos = np.searchsorted(cumulative, margin, side="right")
        out.append(-np.inf if margin < 0 else (np.inf if pos >= len(k) else k[order][pos]))
    return out


def million(n_patients: int) -> None:
    probs, labels, w = stream(n_patients, seed=1)
    value, cost = AdditiveValue(w), AdditiveCost(w)
    replay(probs[:2000], labels[:2000], value, cost, [1.0])  # compile / load the numba cache
    started = time.perf_counter()
    res = replay(probs, labels, value, cost, [round(0.1 * w.sum(), 3)], burn_in=1000)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    print(f"replay {n_patients:,} x {N_CODES}, 1 target: {seconds:.1f} s, peak memory {peak:.2f} GB (whole process), mean cost {res.cost.mean():.3f}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--patients", type=int, default=100_000)
    parser.add_argument("--million", action="store_true", help="also run 1,000,000 x 35 with one target")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        million(args.child)
        return 0
    probs, labels, w = stream(args.patients)
    value, cost = AdditiveValue(w), AdditiveCost(w)
    targets = [round(f * w.sum(), 3) for f in np.linspace(0.05, 0.5, 10)]
    replay(probs[:2000], labels[:2000], value, cost, targets[:1])  # compile / load the numba cache

    started = time.perf_counter()
    res = replay(probs, labels, value, cost, targets, burn_in=1000)
    fast = time.perf_counter() - started
    steps = res.n_steps
    per_step_fast = fast / (steps * len(targets)) * 1e6

    loop_steps = 3000
    started = time.perf_counter()
    fm = FavMac(value, cost, targets[0])
    for n in range(loop_steps):
        fm.threshold
        fm.predict(probs[n])
        fm.update(probs[n], labels[n])
    per_step_loop = (time.perf_counter() - started) / loop_steps * 1e6

    naive_steps = 1500
    started = time.perf_counter()
    naive_thresholds(probs[:naive_steps], labels[:naive_steps], value, cost, targets[0], naive_steps)
    per_step_naive = (time.perf_counter() - started) / naive_steps * 1e6

    print(f"replay benchmark: {args.patients:,} patients x {N_CODES} codes, ratio universe, expected control")
    print(f"replay, {len(targets)} targets, {steps:,} steps each: {fast:.2f} s  ({per_step_fast:.2f} us per step and target)")
    print(f"FavMac loop on QuantileTree (first {loop_steps:,} steps, 1 target): {per_step_loop:.0f} us per step -> replay is {per_step_loop / per_step_fast:.0f}x faster")
    print(f"naive numpy re-sort per step (first {naive_steps:,} steps, 1 target): {per_step_naive:.0f} us per step "
          f"(and growing with n) -> replay is {per_step_naive / per_step_fast:.0f}x faster")
    started = time.perf_counter()
    replay(probs, labels, value, cost, targets, burn_in=1000, delta=0.1)
    print(f"replay, violation control, {len(targets)} targets: {time.perf_counter() - started:.2f} s")
    if args.million:
        subprocess.run([sys.executable, __file__, "--child", "1000000"], check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
