"""Benchmark: exact distributed calibration (favmac.distributed) on Dask.

    python scripts/make_synthetic_parquet.py --patients 10000000 --out /tmp/claims10m
    python scripts/make_synthetic_parquet.py --patients 1000000 --out /tmp/claims1m
    python scripts/bench_distributed.py --data /tmp/claims10m --small /tmp/claims1m

Every measurement runs in a child process; the parent samples the resident memory of the
child's whole process tree (scheduler, nannies and workers included) every 50 ms and
reports its peak. Figures printed:

1. ``--data`` (e.g. 10M x 35): wall time, peak memory and patients per second per core,
   on dask's local default scheduler (threads) and on a LocalCluster of 2 worker processes.
2. ``--small`` (e.g. 1M x 35): the same calibration beside an in-memory numpy computation
   of the same thresholds in the same child (read everything, compute every point, sort the
   keys, cumsum the weights, search) — the two must agree exactly.
3. 1 vs 2 worker processes (LocalCluster, 1 thread each) on ``--scaling`` (default
   ``--data``), and from it a projection of 10^9 patients on a 32-worker cluster.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGETS = [1.1, 2.5, 5.0]  # cost units (C_FPC on the synthetic weights; C_max is about 47.7)
SCORE = "cost"  # the paper's score, as the in-memory check below computes it (and as docs/distributed.md measured)


# ----------------------------------------------------------------------------- child side


def _model(folder):
    import pandas as pd

    from favmac import AdditiveCost, AdditiveValue

    weights = pd.read_csv(os.path.join(folder, "weights.csv"))["weight"].to_numpy(dtype=float)
    return AdditiveValue(weights), AdditiveCost(weights)


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process so far (run on every worker too)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _warm_up():
    import favmac.distributed  # noqa: F401


def _calibrate(folder, scheduler_kind, delta=None):
    from favmac.distributed import calibrate

    value, cost = _model(folder)
    pattern = os.path.join(folder, "*.parquet")
    if scheduler_kind.startswith("cluster"):
        import dask
        from distributed import Client, LocalCluster

        # distributed's nannies set MALLOC_TRIM_THRESHOLD_=65536 in the workers, which makes glibc
        # map and zero fresh pages for every large numpy array (5x the page faults, twice the CPU
        # here); unset it, as docs/distributed.md recommends for real clusters.
        dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None})

        workers = int(scheduler_kind.split(":")[1])
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
            with Client(cluster) as client:
                client.run(_warm_up)  # workers are up and have imported favmac before the clock starts
                before = sum(client.run(_cpu_seconds).values()) + _cpu_seconds()
                start = time.perf_counter()
                thresholds, details = calibrate(pattern, value, cost, TARGETS, delta=delta, score=SCORE,
                                                scheduler=client, return_details=True)
                wall = time.perf_counter() - start
                cpu = sum(client.run(_cpu_seconds).values()) + _cpu_seconds() - before
        cores = workers
    else:
        before = _cpu_seconds()
        start = time.perf_counter()
        thresholds, details = calibrate(pattern, value, cost, TARGETS, delta=delta, score=SCORE, scheduler=None,
                                        return_details=True)
        wall = time.perf_counter() - start
        cpu = _cpu_seconds() - before
        cores = os.cpu_count()
    return {"thresholds": [float(t) for t in thresholds], "wall": wall, "cores": cores, "calibrate_cpu": cpu,
            "n_patients": details["n_patients"], "passes": details["passes"]}


def _in_memory(folder):
    """All points of all patients in memory; thresholds by one numpy sort and cumsum."""
    import numpy as np
    import pyarrow.parquet as pq

    from favmac.thresholds import ExactCosts, calibration_points, exact
    from favmac.universe import candidate_sets

    value, cost = _model(folder)
    cpu_start = _cpu_seconds()
    start = time.perf_counter()
    import glob

    import pyarrow as pa

    table = pa.concat_tables([pq.read_table(path) for path in sorted(glob.glob(os.path.join(folder, "*.parquet")))])
    names = [n for n in table.column_names if n.startswith("prob_")]
    probs = np.column_stack([table.column(n).to_numpy() for n in names])
    labels = np.column_stack([table.column("label_" + n[5:]).to_numpy() for n in names]).astype(bool)
    del table
    read = time.perf_counter() - start
    start = time.perf_counter()
    costs = ExactCosts.of(cost, probs.shape[1])
    keys_parts, weight_parts = [], []
    for lo in range(0, len(probs), 65536):
        cands = candidate_sets(probs[lo : lo + 65536], value, cost, "ratio")
        keys, increments = calibration_points(cands, costs.realized(cands, labels[lo : lo + 65536]), SCORE)
        keep = increments > 0
        keys_parts.append(keys[keep])
        weight_parts.append(increments[keep].astype(np.int64))
    keys = np.concatenate(keys_parts)
    weights = np.concatenate(weight_parts)
    del keys_parts, weight_parts
    points = time.perf_counter() - start
    start = time.perf_counter()
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    cumulative = np.cumsum(weights[order])
    out = []
    n = len(probs)
    for target in TARGETS:
        margin = (exact(target) * (n + 1) - costs.c_max) * costs.scale
        need = margin.numerator // margin.denominator
        if need < 0:
            out.append(float("-inf"))
            continue
        j = int(np.searchsorted(cumulative, need, side="right"))
        out.append(float(sorted_keys[j]) if j < len(sorted_keys) else float("inf"))
    sort_cumsum = time.perf_counter() - start
    return {"thresholds": out, "read": read, "points": points, "sort_cumsum": sort_cumsum, "n_points": int(len(keys)),
            "cpu": _cpu_seconds() - cpu_start}


def child(config):
    task = config["task"]
    if task == "calibrate":
        return _calibrate(config["folder"], config["scheduler"])
    if task == "compare":
        result = {"engine": _calibrate(config["folder"], config["scheduler"])}
        result["memory"] = _in_memory(config["folder"])
        return result
    raise ValueError(task)


# ----------------------------------------------------------------------------- parent side


def measure(config):
    """Run ``config`` in a child; return its JSON result and the peak RSS of its process tree."""
    import resource

    import psutil

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen([sys.executable, __file__, "--child", json.dumps(config)], stdout=subprocess.PIPE,
                            text=True)
    peak = 0
    done = threading.Event()

    def sample():
        nonlocal peak
        root = psutil.Process(proc.pid)
        while not done.is_set():
            try:
                total = root.memory_info().rss + sum(c.memory_info().rss for c in root.children(recursive=True))
                peak = max(peak, total)
            except psutil.Error:
                pass
            time.sleep(0.05)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    out, _ = proc.communicate()
    done.set()
    thread.join()
    if proc.returncode:
        raise SystemExit(f"child failed: {config}")
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_gb"] = peak / 1e9
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU seconds of the whole tree (workers are reaped by the child, so they count too):
    # a throughput per core that other jobs on the machine do not distort.
    result["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="folder of the large Parquet set (e.g. 10M x 35)")
    parser.add_argument("--small", help="folder of the 1M set for the in-memory comparison")
    parser.add_argument("--scaling", help="folder for the 1 vs 2 worker measurement (default --data)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0
    cores = os.cpu_count()
    print(f"machine: {cores} cores, load average {os.getloadavg()[0]:.1f} at the start (other jobs share the cores); "
          f"targets {TARGETS} (expected-cost control, ratio universe, C_FPC)")
    rows = []
    if args.data:
        for scheduler in ("threads", "cluster:2"):
            r = measure({"task": "calibrate", "folder": args.data, "scheduler": scheduler})
            rate = r["n_patients"] / r["wall"] / r["cores"]
            print(f"{r['n_patients']:,} patients, {scheduler:9s}: {r['wall']:7.1f} s wall, peak {r['peak_gb']:.2f} GB "
                  f"(process tree), {rate:,.0f} patients/s/core by wall time; calibrate used {r['calibrate_cpu']:.0f} CPU-s = "
                  f"{r['n_patients'] / r['calibrate_cpu']:,.0f} patients per CPU-second ({r['cpu']:.0f} CPU-s with "
                  f"start-up), {r['passes']} passes; "
                  f"thresholds {r['thresholds']}")
    if args.small:
        r = measure({"task": "compare", "folder": args.small, "scheduler": "threads"})
        e, m = r["engine"], r["memory"]
        same = e["thresholds"] == m["thresholds"]
        in_memory = m["points"] + m["sort_cumsum"]
        print(f"{e['n_patients']:,} patients: engine {e['wall']:.1f} s (threads, {e['passes']} passes) vs in-memory numpy "
              f"{m['read'] + in_memory:.1f} s = read {m['read']:.1f} + points {m['points']:.1f} + sort/cumsum "
              f"{m['sort_cumsum']:.1f} ({m['n_points']:,} points); engine / in-memory (excluding the read) = "
              f"{e['wall'] / in_memory:.2f}x, including it = {e['wall'] / (m['read'] + in_memory):.2f}x; "
              f"CPU-s: engine {e['calibrate_cpu']:.1f} vs in-memory {m['cpu']:.1f} (read included) = "
              f"{e['calibrate_cpu'] / m['cpu']:.2f}x; peak of the run {r['peak_gb']:.2f} GB; thresholds equal: {same}")
        if not same:
            print(f"  engine {e['thresholds']} vs in-memory {m['thresholds']}")
    folder = args.scaling or args.data
    if folder:
        one = measure({"task": "calibrate", "folder": folder, "scheduler": "cluster:1"})
        two = measure({"task": "calibrate", "folder": folder, "scheduler": "cluster:2"})
        speedup = one["wall"] / two["wall"]
        efficiency = speedup / 2
        per_core = one["n_patients"] / one["wall"]
        per_cpu = one["n_patients"] / one["calibrate_cpu"]
        cpu_efficiency = one["calibrate_cpu"] / two["calibrate_cpu"]
        print(f"scaling on {one['n_patients']:,} patients: 1 worker {one['wall']:.1f} s "
              f"(peak {one['peak_gb']:.2f} GB, {one['calibrate_cpu']:.0f} CPU-s), 2 workers {two['wall']:.1f} s "
              f"(peak {two['peak_gb']:.2f} GB, {two['calibrate_cpu']:.0f} CPU-s): wall speed-up {speedup:.2f} "
              f"(efficiency {efficiency:.0%}, distorted by the other jobs on the 2 cores); CPU efficiency "
              f"{cpu_efficiency:.0%} (CPU-s of 1 worker / CPU-s of 2); {per_core:,.0f} patients/s by wall time and "
              f"{per_cpu:,.0f} patients per CPU-second on one worker")
        for label, rate, eff in (("wall-time", per_core, min(efficiency, 1.0)), ("CPU-time", per_cpu, min(cpu_efficiency, 1.0))):
            projected = 1e9 / (rate * 32 * eff)
            print(f"projection ({label} figures): 10^9 patients x 35 codes on 32 workers = 10^9 / ({rate:,.0f} x 32 x "
                  f"{eff:.2f}) = {projected:,.0f} s ({projected / 60:.1f} min), if the 2-worker efficiency holds at 32 "
                  f"and storage delivers {1e9 * 35 * 9 * 2 / projected / 1e9:.1f} GB/s of uncompressed columns (2 passes)")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
