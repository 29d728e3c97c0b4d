"""Benchmark: formula (general) values, compiled kernel against the reference path, same run.

    python scripts/bench_formula.py [--patients 20000] [--reference-patients 300]

Two cases, each in a fresh child process (so the first call includes loading the numba
cache, or compiling it when the cache is cold, and is reported on its own line):

* K = 10, exact enumeration: the paper's V_GEN on the authors' MNIST predictions
  (``../shared/data/favmac_mnist_predictions.csv``; a synthetic stream when it is absent);
* K = 35, Monte Carlo (256 draws): V_GEN over random float code values on a synthetic
  HCC-like stream (prevalence 1-25 %).

For each: the greedy ratio universe (orders + Vhat of every prefix) per patient, compiled
vs the reference path (simpleeval over numpy, one patient at a time — the implementation
before the kernel), whether both give the same orders, and a whole ``replay`` (10 targets,
expected control) per patient with the compiled path and with the reference path.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from favmac import AdditiveCost, FormulaValue, replay  # noqa: E402
from favmac.universe import general_sequences  # noqa: E402

V_GEN = "prod_hits((v + 5) / 10) + sum_hits((v - 5) ** 2)"
MNIST = ROOT.parent.parent / "shared" / "data" / "favmac_mnist_predictions.csv"
if not MNIST.exists():
    MNIST = ROOT / ".." / "shared" / "data" / "favmac_mnist_predictions.csv"


class ReferenceFormula(FormulaValue):
    """The same formula with the compiled path switched off: the baseline."""

    def compiled(self, n_codes):
        return None


def mnist_case(n_patients: int):
    if MNIST.exists():
        import pandas as pd

        frame = pd.read_csv(MNIST)
        probs = frame[[f"P{k}" for k in range(10)]].to_numpy(float)
        labels = frame[[f"Y{k}" for k in range(10)]].to_numpy(bool)
        source = f"MNIST predictions ({len(frame):,} rows, repeated to {n_patients:,})"
        reps = -(-n_patients // len(frame))
        probs, labels = np.tile(probs, (reps, 1))[:n_patients], np.tile(labels, (reps, 1))[:n_patients]
    else:
        rng = np.random.RandomState(0)
        labels = rng.rand(n_patients, 10) < 0.2
        probs = np.clip(labels * 0.7 + rng.rand(n_patients, 10) * 0.3, 0, 1).round(4)
        source = "synthetic stand-in (MNIST file absent)"
    digits = np.array([10, 1, 2, 3, 4, 5, 6, 7, 8, 9], dtype=float)
    targets = [k + 0.1 for k in range(1, 6)] + [k + 0.6 for k in range(1, 6)]
    return "K = 10, exact enumeration, paper's V_GEN", source, probs, labels, digits, AdditiveCost(), targets


def hcc_case(n_patients: int):
    n_codes = 35
    rng = np.random.RandomState(0)
    prevalence = rng.uniform(0.01, 0.25, size=n_codes)
    labels = rng.rand(n_patients, n_codes) < prevalence
    logits = np.log(prevalence / (1 - prevalence)) + 2.5 * labels + rng.randn(n_patients, n_codes)
    probs = np.round(1 / (1 + np.exp(-logits)), 4)
    values = rng.uniform(0.1, 9.0, size=n_codes)  # random floats, not short decimals
    cost_weights = np.round(rng.uniform(0.1, 2.5, size=n_codes), 3)
    targets = [round(f * cost_weights.sum(), 3) for f in np.linspace(0.02, 0.2, 10)]
    return ("K = 35, Monte Carlo (256 draws), V_GEN over random float values", "synthetic HCC-like stream",
            probs, labels, values, AdditiveCost(cost_weights), targets)


def run_case(name: str, n_patients: int, n_reference: int) -> None:
    title, source, probs, labels, values, cost, targets = (mnist_case if name == "mnist" else hcc_case)(n_patients)
    fast, slow = FormulaValue(V_GEN, weights=values), ReferenceFormula(V_GEN, weights=values)
    started = time.perf_counter()
    general_sequences(probs[:1], fast, cost)
    first_call = time.perf_counter() - started

    started = time.perf_counter()
    order, vhat = general_sequences(probs, fast, cost)
    per_fast = (time.perf_counter() - started) / n_patients * 1e3
    started = time.perf_counter()
    ref_order, ref_vhat = general_sequences(probs[:n_reference], slow, cost)
    per_ref = (time.perf_counter() - started) / n_reference * 1e3
    same = bool(np.array_equal(order[:n_reference], ref_order))
    gap = float(np.max(np.abs(vhat[:n_reference] - ref_vhat) / np.maximum(1.0, np.abs(ref_vhat))))

    burn_in = min(1000, n_patients // 5)
    started = time.perf_counter()
    result = replay(probs, labels, fast, cost, targets, burn_in=burn_in)
    per_replay = (time.perf_counter() - started) / n_patients * 1e3
    ref_burn_in = n_reference // 5
    started = time.perf_counter()
    ref_result = replay(probs[:n_reference], labels[:n_reference], slow, cost, targets, burn_in=ref_burn_in)
    per_ref_replay = (time.perf_counter() - started) / n_reference * 1e3
    check = replay(probs[:n_reference], labels[:n_reference], fast, cost, targets, burn_in=ref_burn_in)
    same_replay = bool(np.array_equal(check.selected, ref_result.selected) and np.array_equal(check.thresholds, ref_result.thresholds))

    print(f"{title} — {source}")
    print(f"  first call in a fresh process (numba cache load or compile): {first_call:.2f} s")
    print(f"  greedy universe, compiled ({n_patients:,} patients): {per_fast:8.3f} ms/patient   "
          f"reference ({n_reference:,} patients): {per_ref:8.3f} ms/patient   -> {per_ref / per_fast:5.1f}x faster")
    print(f"  same orders as the reference: {same}; largest Vhat gap {gap:.1e} (relative)")
    print(f"  replay, {len(targets)} targets, compiled ({n_patients:,} patients): {per_replay:8.3f} ms/patient   "
          f"reference ({n_reference:,}): {per_ref_replay:8.3f} ms/patient   -> {per_ref_replay / per_replay:5.1f}x faster")
    print(f"  replay: same sets and thresholds as the reference on the first {n_reference:,} patients: {same_replay}"
          f"; {n_patients:,} patients take {per_replay * n_patients / 1e3:.1f} s (mean cost {result.cost.mean():.3f})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--patients", type=int, default=20_000)
    parser.add_argument("--reference-patients", type=int, default=300)
    parser.add_argument("--case", choices=["mnist", "hcc"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        run_case(args.case, args.patients, args.reference_patients)
        return 0
    print("Formula values: compiled kernel vs reference path, each case in a fresh process (wall clock)")
    for case in ("mnist", "hcc"):
        subprocess.run([sys.executable, __file__, "--case", case, "--patients", str(args.patients),
                        "--reference-patients", str(args.reference_patients)], check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
