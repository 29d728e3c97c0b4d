"""Benchmark: QuantileTree against sortedcontainers.SortedList and a naive numpy baseline.

    python scripts/bench_quantile_tree.py [--n 1000000]

Prints per-operation times and ratios measured in the same process.
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


def per_op(seconds: float, count: int) -> float:
    return seconds / count * 1e6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    rng = random.Random(0)
    keys = [rng.random() for _ in range(args.n)]
    weights = [rng.choice([0.331, 0.166, 1.0, 0.421]) for _ in range(args.n)]

    started = time.perf_counter()
    reference = SortedList()
    for key in keys:
        reference.add(key)
    sorted_list = per_op(time.perf_counter() - started, args.n)

    started = time.perf_counter()
    tree = QuantileTree()
    for key, weight in zip(keys, weights):
        tree.insert(key, weight)
    tree_insert = per_op(time.perf_counter() - started, args.n)

    extra = [rng.random() for _ in range(100_000)]
    tree.cdf(0.5)  # from here on the Fenwick index over sublists is maintained on every insert
    started = time.perf_counter()
    for key in extra:
        tree.insert(key, 0.331)
    tree_insert_indexed = per_op(time.perf_counter() - started, len(extra))
    started = time.perf_counter()
    for key in extra:
        reference.add(key)
    sorted_list_late = per_op(time.perf_counter() - started, len(extra))

    total = tree.total
    levels = [rng.random() for _ in range(20_000)]
    started = time.perf_counter()
    for q in levels:
        tree.search_greater(q * total)
    tree_search = per_op(time.perf_counter() - started, len(levels))
    started = time.perf_counter()
    for q in levels[:2000]:
        tree.cdf(q)
    tree_cdf = per_op(time.perf_counter() - started, 2000)

    # naive: keep numpy arrays, re-sort and cumsum for every query
    key_arr, weight_arr = np.array(keys), np.array(weights)
    started = time.perf_counter()
    for q in levels[:20]:
        order = np.argsort(key_arr)
        cumulative = np.cumsum(weight_arr[order])
        key_arr[order[np.searchsorted(cumulative, q * cumulative[-1], side="right")]]
    naive_search = per_op(time.perf_counter() - started, 20)

    print(f"QuantileTree benchmark, n = {args.n:,} keys (one process, same machine)")
    print(f"{'operation':<44} {'us/op':>10} {'ratio':>12}")
    print(f"{'SortedList.add (no weights), n keys':<44} {sorted_list:>10.2f} {'1.00x':>12}")
    print(f"{'QuantileTree.insert, n keys':<44} {tree_insert:>10.2f} {tree_insert / sorted_list:>11.2f}x")
    print(f"{'SortedList.add at n keys':<44} {sorted_list_late:>10.2f} {'1.00x':>12}")
    print(f"{'QuantileTree.insert at n keys, index kept':<44} {tree_insert_indexed:>10.2f} {tree_insert_indexed / sorted_list_late:>11.2f}x")
    print(f"{'naive re-sort + cumsum per query':<44} {naive_search:>10.0f} {'1.00x':>12}")
    print(f"{'QuantileTree.search_greater':<44} {tree_search:>10.2f} {naive_search / tree_search:>10.0f}x faster")
    print(f"{'QuantileTree.cdf':<44} {tree_cdf:>10.2f} {naive_search / tree_cdf:>10.0f}x faster")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
