"""Benchmark: replay (numba, all targets in one pass) against naive baselines in the same run.

    python scripts/bench_replay.py [--patients 100000] [--million]

Figures: replay of 100,000 patients x 35 codes, ratio universe, 10 targets, expected
control; per-step cost against (a) the FavMac loop on the QuantileTree and (b) a naive
loop that re-sorts all calibration keys with numpy at every step. With --million it also
replays 1,000,000 x 35 with 10 targets in a fresh child process and reports its time and
peak memory; with --baseline-src DIR the same child runs on another checkout (e.g. the
main branch) for a before/after figure from the same run.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.environ.get("FAVMAC_BENCH_SOURCE") or str(ROOT))  # the checkout to measure

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


def stream_in_chunks(n_patients: int, seed: int = 1, chunk: int = 100_000):
    """``stream`` built chunk by chunk, so generating the data does not set the peak memory."""
    rng = np.random.RandomState(seed)
    prevalence = rng.uniform(0.01, 0.25, size=N_CODES)
    weights = np.round(rng.uniform(0.1, 2.5, size=N_CODES), 3)
    probs = np.empty((n_patients, N_CODES))
    labels = np.empty((n_patients, N_CODES), dtype=bool)
    for start in range(0, n_patients, chunk):
        rows = min(chunk, n_patients - start)
        part = rng.rand(rows, N_CODES) < prevalence
        logits = np.log(prevalence / (1 - prevalence)) + 2.5 * part + rng.randn(rows, N_CODES)
        labels[start : start + rows] = part
        probs[start : start + rows] = np.round(1 / (1 + np.exp(-logits)), 4)
    return probs, labels, weights


def million(n_patients: int, n_targets: int) -> None:
    probs, labels, w = stream_in_chunks(n_patients)
    value, cost = AdditiveValue(w), AdditiveCost(w)
    replay(probs[:2000], labels[:2000], value, cost, [1.0])  # compile / load the numba cache
    data_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    targets = [round(f * w.sum(), 3) for f in np.linspace(0.05, 0.5, n_targets)]
    started = time.perf_counter()
    res = replay(probs, labels, value, cost, targets, burn_in=1000)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    print(f"{seconds:.1f} s, peak memory {peak:.2f} GB (whole process; {data_peak:.2f} GB before the replay), "
          f"mean cost of target 1: {res.cost[0].mean():.4f}")


def million_row(label: str, source: Path, n_patients: int, n_targets: int) -> None:
    env = dict(os.environ, FAVMAC_BENCH_SOURCE=str(source))
    out = subprocess.run([sys.executable, __file__, "--child", str(n_patients), "--child-targets", str(n_targets)],
                         check=True, env=env, capture_output=True, text=True).stdout.strip()
    print(f"replay {n_patients:,} x {N_CODES}, {n_targets} targets, {label}: {out}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--patients", type=int, default=100_000)
    parser.add_argument("--million", action="store_true", help="also run 1,000,000 x 35 with 10 targets (fresh processes)")
    parser.add_argument("--baseline-src", type=Path, help="a checkout of the implementation to compare with (e.g. /work/main)")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child-targets", type=int, default=10, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        million(args.child, args.child_targets)
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
        million_row("this checkout", ROOT, 1_000_000, 10)
        if args.baseline_src:
            million_row(f"baseline {args.baseline_src}", args.baseline_src, 1_000_000, 10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
