"""Benchmark: QuantileTree against sortedcontainers.SortedList, measured in the same run.

Times are CPU time of the process. Every tree operation alternates with its SortedList
baseline in batches of 250 operations, so the load of a shared machine falls on both alike;
the ratio is the figure to read.

    python scripts/bench_quantile_tree.py [--n 10000 100000 1000000] [--queries 20000]
                                          [--weights float decimal] [--baseline-src /work/main]

For each n and each kind of weights (``float``: random floats, stored as exact binary
integers, the hard case; ``decimal``: 3-decimal weights), with n random keys:

* bulk build: ``QuantileTree.from_arrays(keys, weights)`` from unsorted numpy arrays (one
  numpy sort) against ``SortedList(keys)`` from the same keys as a list (which sorts them);
  a checkout without ``from_arrays`` builds by inserting the points one by one;
* insert: one new point into the n-key tree, against ``SortedList.add``;
* ``search_greater`` (the T_c strict search), ``quantile`` and ``cdf`` at n keys, against a
  SortedList positional lookup ``sl[i]`` (what a rank query costs there); both get their
  arguments precomputed (the bound m for the tree, the position for SortedList);
* the online step: insert one point, then one threshold search (``search_greater``),
  against ``SortedList.add`` + ``sl[i]``.

Queries run on the tree as the online steps left it, with no warm-up pass. ``--baseline-src
DIR`` runs the same measurements in a child process on another checkout (e.g. main) and
prints its table too: a before/after from one run.
"""
from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from sortedcontainers import SortedList

HERE = Path(__file__).resolve().parents[1]


def clock() -> float:
    """CPU time of this process: on a shared machine, time spent waiting for a core is not
    the operation's cost (wall-clock figures swing by 2x there)."""
    return time.process_time()


def paired(fn, items, baseline_fn, baseline_items, batch: int = 250) -> tuple[float, float]:
    """Per-op times (us) of ``fn`` and ``baseline_fn``, run in alternating batches so that the
    load of a shared machine falls on both alike."""
    spent = spent_baseline = 0.0
    for start in range(0, len(items), batch):
        begin = clock()
        for item in items[start : start + batch]:
            fn(item)
        middle = clock()
        for item in baseline_items[start : start + batch]:
            baseline_fn(item)
        spent += middle - begin
        spent_baseline += clock() - middle
    return spent / len(items) * 1e6, spent_baseline / len(baseline_items) * 1e6


def row(name: str, us: float, baseline_name: str, baseline_us: float) -> str:
    return f"  {name:<34} {us:>10.2f} us   {baseline_name:<26} {baseline_us:>10.2f} us   {us / baseline_us:>6.2f}x"


def bench(QuantileTree, n: int, kind: str, n_queries: int) -> list[str]:
    rng = random.Random(n)
    keys = [rng.random() for _ in range(n)]
    if kind == "float":
        draw = rng.random
    else:
        def draw():
            return round(rng.random(), 3) or 0.001
    weights = [draw() for _ in range(n)]
    lines = [f"n = {n:,} keys, {'random float' if kind == 'float' else '3-decimal'} weights"]

    key_array, weight_array = np.array(keys), np.array(weights)
    started = clock()
    if hasattr(QuantileTree, "from_arrays"):
        tree = QuantileTree.from_arrays(key_array, weight_array)
        how = "from_arrays (bulk build)"
    else:
        tree = QuantileTree(zip(keys, weights))
        how = "bulk build (one by one)"
    built = clock() - started
    started = clock()
    reference = SortedList(keys)
    reference_built = clock() - started
    lines.append(row(how, built * 1e6 / n, "SortedList(keys)", reference_built * 1e6 / n))

    new_keys = [rng.random() for _ in range(n_queries)]
    new_weights = [draw() for _ in range(n_queries)]
    positions = [rng.randrange(n) for _ in range(n_queries)]
    levels = [rng.random() for _ in range(n_queries)]
    half = n_queries // 2
    insert, add = paired(lambda i: tree.insert(new_keys[i], new_weights[i]), range(half),
                         lambda i: reference.add(new_keys[i]), range(half))
    lines.append(row("insert", insert, "SortedList.add", add))

    total = tree.total

    def tree_step(i):
        tree.insert(new_keys[i], new_weights[i])
        tree.search_greater(bounds[i])

    def sorted_step(i):
        reference.add(new_keys[i])
        reference[positions[i]]

    bounds = [q * total for q in levels]
    step, step_sorted = paired(tree_step, range(half, n_queries), sorted_step, range(half, n_queries))

    search, lookup = paired(tree.search_greater, bounds, reference.__getitem__, positions)
    lines.append(row("search_greater", search, "sl[i]", lookup))
    quantile, lookup = paired(tree.quantile, levels, reference.__getitem__, positions)
    lines.append(row("quantile", quantile, "sl[i]", lookup))
    cdf, lookup = paired(tree.cdf, levels, reference.__getitem__, positions)
    lines.append(row("cdf", cdf, "sl[i]", lookup))
    lines.append(row("online step: insert + search", step, "SortedList.add + sl[i]", step_sorted))
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--weights", nargs="+", choices=["float", "decimal"], default=["float", "decimal"])
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--src", type=Path, default=HERE, help="the checkout whose favmac to measure (default: this one)")
    parser.add_argument("--baseline-src", type=Path, help="also measure this checkout (e.g. /work/main), in a child process")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(args.src))
    from favmac.quantile_tree import QuantileTree

    print(f"QuantileTree benchmark, {args.src}: CPU time per operation; ratios against SortedList from the same run", flush=True)
    for n in args.n:
        for kind in args.weights:
            print("\n".join(bench(QuantileTree, n, kind, args.queries)), flush=True)
    if args.baseline_src:
        command = [sys.executable, __file__, "--src", str(args.baseline_src), "--queries", str(args.queries),
                   "--n", *map(str, args.n), "--weights", *args.weights]
        subprocess.run(command, check=True, env={**os.environ, "PYTHONPATH": str(args.baseline_src)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
