"""Benchmark: start-up time of ``import favmac`` and ``favmac --help`` in fresh processes.

    python scripts/bench_startup.py [--runs 7] [--baseline-src /work/main]

Each figure is the median wall-clock time of ``--runs`` fresh interpreters; with
``--baseline-src`` the same commands run against another checkout, interleaved with this
one, so both see the same machine load.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "python -c 'import favmac'": [sys.executable, "-c", "import favmac"],
    "python -m favmac --help": [sys.executable, "-m", "favmac", "--help"],
    "python -c 'pass' (interpreter alone)": [sys.executable, "-c", "pass"],
}


def wall(command, source: Path) -> float:
    env = dict(os.environ, PYTHONPATH=str(source))
    started = time.perf_counter()
    subprocess.run(command, check=True, env=env, cwd=source, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--baseline-src", type=Path)
    args = parser.parse_args(argv)
    sources = {"this checkout": ROOT}
    if args.baseline_src:
        sources["baseline"] = args.baseline_src
    print(f"start-up, median of {args.runs} fresh processes (wall clock)")
    for name, command in COMMANDS.items():
        times = {label: [] for label in sources}
        for _ in range(args.runs):
            for label, source in sources.items():
                times[label].append(wall(command, source))
        shown = "   ".join(f"{label}: {statistics.median(t):.2f} s" for label, t in times.items())
        print(f"{name:<40} {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
