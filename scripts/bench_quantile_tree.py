"""Benchmark: QuantileTree against sortedcontainers.SortedList, measured in the same run.

Times are CPU time of the process. Queries and online steps alternate with their baseline
in batches of 250 operations, so the load of a shared machine falls on both alike; the
ratio is the figure to read.

    python scripts/bench_quantile_tree.py [--n 1000000] [--queries 20000]

Cases, each next to its SortedList baseline from this process:

* building n keys with random float weights (weighted conformal prediction: weights that
  are not short decimals, stored as exact binary integers) and with 3-decimal weights,
  against ``SortedList.add``;
* queries at n keys (``search_greater``, ``quantile``, ``cdf``) against a SortedList
  positional lookup ``sl[i]`` (what a rank query costs there), after a warm-up pass;
* the online step at n keys: insert one point, then query a threshold, against
  ``SortedList.add`` + a positional lookup;
* a naive numpy re-sort + cumsum per query, for scale.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np
from sortedcontainers import SortedList

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from favmac import QuantileTree  # noqa: E402


def clock() -> float:
    """CPU time of this process: on a shared machine, time spent waiting for a core is not
    the operation's cost (wall-clock figures swing by 2x there)."""
    return time.process_time()


def per_op(seconds: float, count: int) -> float:
    return seconds / count * 1e6


def timed(fn, items, repeats: int = 1) -> float:
    """Best of ``repeats`` passes (the machine is shared: the minimum is the least disturbed)."""
    best = float("inf")
    for _ in range(repeats):
        started = clock()
        for item in items:
            fn(item)
        best = min(best, clock() - started)
    return per_op(best, len(items))


def paired(fn, items, baseline_fn, baseline_items, batch: int = 250) -> tuple[float, float]:
    """Per-op times of ``fn`` and ``baseline_fn``, run in alternating batches so that the load
    of a shared machine falls on both alike."""
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
    return per_op(spent, len(items)), per_op(spent_baseline, len(baseline_items))


def row(name: str, us: float, baseline_name: str, baseline_us: float) -> str:
    return f"{name:<46} {us:>9.2f} us   {baseline_name:<34} {baseline_us:>8.2f} us   {us / baseline_us:>6.2f}x"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=20_000)
    args = parser.parse_args(argv)
    n, n_queries = args.n, args.queries
    rng = random.Random(0)
    keys = [rng.random() for _ in range(n)]
    float_weights = [rng.random() for _ in range(n)]
    decimal_weights = [rng.choice([0.331, 0.166, 1.0, 0.421]) for _ in range(n)]
    lines = [f"QuantileTree benchmark, n = {n:,} keys, one process (ratios against SortedList from the same run)"]

    reference = SortedList()
    started = clock()
    for key in keys:
        reference.add(key)
    sorted_add = per_op(clock() - started, n)

    tree = QuantileTree()
    started = clock()
    for key, weight in zip(keys, float_weights):
        tree.insert(key, weight)
    float_insert = per_op(clock() - started, n)

    decimal_tree = QuantileTree()
    started = clock()
    for key, weight in zip(keys, decimal_weights):
        decimal_tree.insert(key, weight)
    decimal_insert = per_op(clock() - started, n)
    del decimal_tree
    lines.append(row("insert n keys, random float weights", float_insert, "SortedList.add, n keys", sorted_add))
    lines.append(row("insert n keys, 3-decimal weights", decimal_insert, "SortedList.add, n keys", sorted_add))

    # queries at n keys: every query lands in a random sublist
    total = tree.total
    levels = [rng.random() for _ in range(n_queries)]
    positions = [rng.randrange(n) for _ in range(n_queries)]
    # warm-up pass: both structures build their lazy indexes (SortedList's positional index;
    # the tree's group running sums, per-sublist blocks and full running sums) as a session's first queries do
    for q, i in zip(levels, positions):
        tree.quantile(q)
        reference[i]
    # both sides get their arguments precomputed: the cdf bound m for the tree, the position for SortedList
    bounds = [q * total for q in levels]
    search, lookup = paired(tree.search_greater, bounds, reference.__getitem__, positions)
    lines.append(row("search_greater at n keys", search, "SortedList sl[i] at n keys", lookup))
    quantile, lookup = paired(tree.quantile, levels, reference.__getitem__, positions)
    lines.append(row("quantile at n keys", quantile, "SortedList sl[i] at n keys", lookup))
    cdf, lookup = paired(tree.cdf, levels, reference.__getitem__, positions)
    lines.append(row("cdf at n keys", cdf, "SortedList sl[i] at n keys", lookup))

    # the online step: one new point, then a threshold query
    new_keys = [rng.random() for _ in range(n_queries)]
    new_weights = [rng.random() for _ in range(n_queries)]

    def tree_step(i):
        tree.insert(new_keys[i], new_weights[i])
        tree.search_greater(levels[i] * total)

    def sorted_step(i):
        reference.add(new_keys[i])
        reference[positions[i]]

    step_tree, step_sorted = paired(tree_step, range(n_queries), sorted_step, range(n_queries))
    lines.append(row("online step: insert + search_greater", step_tree, "SortedList.add + sl[i]", step_sorted))

    key_arr, weight_arr = np.array(keys), np.array(float_weights)
    started = clock()
    for q in levels[:10]:
        order = np.argsort(key_arr)
        cumulative = np.cumsum(weight_arr[order])
        key_arr[order[np.searchsorted(cumulative, q * cumulative[-1], side="right")]]
    naive = per_op(clock() - started, 10)
    lines.append(row("naive numpy re-sort + cumsum per query", naive, "QuantileTree.search_greater", search))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
