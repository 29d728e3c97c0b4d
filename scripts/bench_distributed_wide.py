"""Benchmark: the Dask engine (favmac.distributed.calibrate) on wide files with many code columns.

    python scripts/bench_distributed_wide.py --codes 2000,5000,10000 --rows 300 --baseline-src /work/wt-base

A hostile-input audit found a 25,000-code file not done in 900 s. Every measurement runs in a
child process on the synchronous scheduler (one core, no cluster start-up) after a warm-up
calibration of a small file (imports and numba compiles excluded); with ``--baseline-src`` the
same child runs on another checkout, one after the other for each size, and the ratio is printed.
The thresholds of both must be equal.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def make_wide(k: int, n: int, folder: Path) -> Path:
    """A wide CSV: ``n`` patients x ``k`` codes (prob_C<j>, label_C<j>), seed 0."""
    import numpy as np
    import pandas as pd

    path = folder / f"wide_{k}x{n}.csv"
    if not path.exists():
        rng = np.random.RandomState(0)
        probs = rng.rand(n, k).round(4)
        labels = (rng.rand(n, k) < probs).astype(np.int8)
        columns = {"patient_id": [f"P{i}" for i in range(n)]}
        for j in range(k):
            columns[f"prob_C{j}"], columns[f"label_C{j}"] = probs[:, j], labels[:, j]
        pd.DataFrame(columns).to_csv(path, index=False)
    return path


CHILD = """
import json, sys, time
sys.path.insert(0, {src!r})
from favmac import AdditiveCost, AdditiveValue
from favmac.distributed import calibrate
calibrate({warm!r}, AdditiveValue(), AdditiveCost(), [1.0], scheduler="synchronous")
start = time.perf_counter()
thresholds = calibrate({path!r}, AdditiveValue(), AdditiveCost(), [{target!r}], scheduler="synchronous")
print(json.dumps({{"seconds": time.perf_counter() - start, "thresholds": thresholds.tolist()}}))
"""


def measure(src: Path, path: Path, warm: Path, target: float, timeout: float) -> dict:
    code = CHILD.format(src=str(src), path=str(path), warm=str(warm), target=target)
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, cwd=src)
    except subprocess.TimeoutExpired:
        return {"seconds": float("inf"), "thresholds": None}
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--codes", default="2000,5000,10000", help="comma-separated code counts")
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--baseline-src", type=Path, help="another checkout to compare with, measured in the same run")
    parser.add_argument("--folder", type=Path, default=Path("/tmp/favmac_bench_wide"))
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per measurement")
    args = parser.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    warm = make_wide(20, 50, args.folder)
    print(f"{'codes':>7} {'rows':>5} {'this (s)':>9} {'per code (ms)':>14}" + (f" {'baseline (s)':>13} {'ratio':>6}" if args.baseline_src else ""))
    for k in (int(x) for x in args.codes.split(",")):
        path = make_wide(k, args.rows, args.folder)
        target = 0.05 * k  # about 5 % of C_max (the weights are all 1)
        mine = measure(HERE, path, warm, target, args.timeout)
        line = f"{k:>7,} {args.rows:>5} {mine['seconds']:>9.2f} {1000 * mine['seconds'] / k:>14.2f}"
        if args.baseline_src:
            base = measure(args.baseline_src.resolve(), path, warm, target, args.timeout)
            if base["thresholds"] is not None and base["thresholds"] != mine["thresholds"]:
                raise SystemExit(f"thresholds differ at {k} codes: {base['thresholds']} vs {mine['thresholds']}")
            line += f" {base['seconds']:>13.2f} {base['seconds'] / mine['seconds']:>5.2f}x"
        print(line, flush=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
