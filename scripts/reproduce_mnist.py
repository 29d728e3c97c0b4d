"""Reproduce the paper's MNIST table (docs/method.md "Evaluation protocol") from the authors' predictions.

    python scripts/reproduce_mnist.py [--data PATH] [--seeds 10]

Reads ../shared/data/favmac_mnist_predictions.csv (never copied into this repo); exits 0
with a message when the file is absent. Value = weighted TP with v_k = k (code 0 counts as
10, sum 55), reported as V/55*100; cost = false positives; targets c = k + 0.1 FPs, k = 1..5
(10..50 on the 0-100 scale); per seed s: RandomState(s).permutation, first 3000 patients,
1000 burn-in, 2000 online predictions; delta = 0.1 for violation control.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from favmac import AdditiveCost, AdditiveValue, replay  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "favmac_mnist_predictions.csv"
PAPER = {
    ("expected", "prob"): ("37.71±0.25", 37.71),
    ("expected", "value"): ("38.06±0.26", 38.08),
    ("expected", "ratio"): ("38.20±0.26", 38.17),
    ("violation", "prob"): ("36.70±0.22", 36.69),
    ("violation", "value"): ("37.13±0.24", 37.20),
    ("violation", "ratio"): ("37.31±0.25", 37.29),
}
TARGETS = [k + 0.1 for k in range(1, 6)]
DIGIT_VALUES = np.array([10.0] + [float(k) for k in range(1, 10)])  # code "0" counts as 10


def load(path: Path):
    frame = pd.read_csv(path)
    probs = frame[[f"P{k}" for k in range(10)]].to_numpy(dtype=float)
    labels = frame[[f"Y{k}" for k in range(10)]].to_numpy() > 0.5
    return probs, labels


def run(probs, labels, seeds: int):
    value, cost = AdditiveValue(DIGIT_VALUES), AdditiveCost()
    rows = []
    for control, delta in (("expected", None), ("violation", 0.1)):
        for universe in ("prob", "value", "ratio"):
            per_seed = []
            for seed in range(seeds):
                perm = np.random.RandomState(seed).permutation(len(probs))[:3000]
                res = replay(probs[perm], labels[perm], value, cost, TARGETS, delta=delta, universe=universe, burn_in=1000,
                             score="cost")  # the paper's rule (docs/method.md "Default score")
                per_seed.append(
                    (
                        res.value.mean() / DIGIT_VALUES.sum() * 100,
                        (res.cost.mean(axis=1) - res.targets).mean() / 10 * 100,
                        res.violations.mean() * 100,
                    )
                )
            per_seed = np.array(per_seed)
            rows.append((control, universe, per_seed.mean(axis=0), per_seed.std(axis=0)))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"skipped: {args.data} not found (the authors' MNIST predictions live in ../shared/data)")
        return 0
    probs, labels = load(args.data)
    started = time.perf_counter()
    rows = run(probs, labels, args.seeds)
    print(f"MNIST, {len(probs)} rows, seeds 0..{args.seeds - 1}, {time.perf_counter() - started:.1f} s")
    print(f"{'control':<10} {'universe':<8} {'value (ours)':>14} {'paper':>12} {'re-impl.':>9} {'diff':>6} {'excess cost':>12} {'violation %':>12}")
    for control, universe, mean, std in rows:
        paper, reimpl = PAPER[(control, universe)]
        print(
            f"{control:<10} {universe:<8} {mean[0]:>8.2f}±{std[0]:.2f} {paper:>12} {reimpl:>9.2f} {mean[0] - reimpl:>+6.2f}"
            f" {mean[1]:>+12.2f} {mean[2]:>12.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
