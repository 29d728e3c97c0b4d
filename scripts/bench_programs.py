"""Programs in a store: a predict batch and a label batch against one replay of the same patients, and opening
a program against one replay of its patients (docs/programs.md). Ratios measured in the same run, not timed tests.

For each store size n (labelled patients in the program's history), on SQLite and PostgreSQL:

* predict: ``program.predict`` of b = 10,000 new patients / ``replay`` of 10,000 patients (burn-in 0); three
  rounds, each a new batch (its replay, predict, then label), the fastest of each (a shared machine: the
  minimum is the least disturbed);
* label: ``program.label`` of those 10,000 patients / the same replay;
* open: ``store.program(name)`` (the state rebuilt from the log) in a fresh process, its imports not
  counted / ``replay`` of the program's n + 3 b patients;
* bytes per patient: the database's size over the patients it holds.

Both cases run without the recalibration fold (``recalibrate=None``, as the replays they are compared
with; RunSpec's default would take one on histories of >= 3,000 patients). Cases: "hard" (35 codes, random float weights: weighted TP value, weighted FP cost, expected-cost control,
price score) and "payment" (35 V28 HCCs, the CMS-HCC payment value with member cells and known codes, FP cost).

    python scripts/bench_programs.py --sizes 10000,100000 --backends sqlite,postgres
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import uuid

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import favmac  # noqa: E402
from favmac.runspec import RunSpec  # noqa: E402

BATCH = 10_000
ROUNDS = 3  # predict + label batches per size (the fastest of each is reported, as the fastest replay)
K = 35


def make_case(case: str, n: int, seed: int = 0):
    rng = np.random.RandomState(seed)
    if case == "payment":
        from favmac.payment_tables import model_tables

        codes = [f"HCC{h}" for h in model_tables("V28", 2026).hccs[:K]]
    else:
        codes = [f"C{k:02d}" for k in range(K)]
    base = rng.beta(0.5, 4.0, size=(n, K))
    labels = rng.rand(n, K) < base
    probs = np.clip(base + 0.05 * rng.randn(n, K), 0, 1)
    members = None
    if case == "payment":
        spec = RunSpec(value_kind="cms_payment", cost_kind="fp", targets=(1.5,), recalibrate=None)
        members = {"cms_cell": rng.choice(["CNA", "CFA", "CPD", "INS"], size=n).astype(object),
                   "known": rng.rand(n, K) < 0.05}
    else:
        weights = tuple(float(w) for w in rng.rand(K) * 2 + 0.05)  # random floats: the exact sums are large integers
        spec = RunSpec(value_kind="weighted_tp", cost_kind="weighted_fp", weights=weights,
                       targets=(float(np.sum(weights) * 0.04),), recalibrate=None)
    ids = np.array([f"m{i:08d}" for i in range(n)], dtype=object)
    return codes, spec, ids, probs, labels, members


def take(members, rows):
    return None if members is None else {k: v[rows] for k, v in members.items()}


def replay_seconds(spec, codes, probs, labels, members, repeat: int = 1) -> float:
    """The fastest of ``repeat`` replays of these patients (a shared machine: the minimum is the least disturbed)."""
    value, cost = spec.build(codes, None if members is None else {"cells": members["cms_cell"], "known": members["known"]})
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        favmac.replay(probs, labels, value, cost, [spec.targets[0]], score=spec.score, universe=spec.universe)
        best = min(best, time.perf_counter() - start)
    return best


_OPEN = """
import sys, time
sys.path.insert(0, {root!r})
import favmac
store = favmac.open_store({url!r})
start = time.perf_counter()
store.program("bench")
print(time.perf_counter() - start)
"""


def open_seconds(url: str) -> float:
    """The time of ``store.program`` (the state rebuilt from the log) in a fresh process (its imports not counted)."""
    import subprocess

    done = subprocess.run([sys.executable, "-c", _OPEN.format(root=ROOT, url=url)], capture_output=True, text=True,
                          check=True)
    return float(done.stdout.strip().splitlines()[-1])


def postgres_url():
    import psycopg

    name = f"favmac_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')

    def size():
        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as admin:
            return admin.execute("SELECT pg_database_size(%s)", (name,)).fetchone()[0]

    def drop():
        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> "
                          "pg_backend_pid()", (name,))
            admin.execute(f'DROP DATABASE IF EXISTS "{name}"')

    return f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}", size, drop


def run(case: str, n: int, backend: str, rounds: int = ROUNDS) -> dict:
    total = n + rounds * BATCH
    codes, spec, ids, probs, labels, members = make_case(case, total)
    history = np.arange(n)
    folder = tempfile.mkdtemp()
    if backend == "sqlite":
        path = os.path.join(folder, "bench.sqlite")
        url, size, drop = f"sqlite:///{path}", (lambda: os.path.getsize(path)), (lambda: shutil.rmtree(folder, True))
    else:
        url, size, drop = postgres_url()
    try:
        store = favmac.open_store(url)
        start = time.perf_counter()
        program = store.create_program("bench", spec, ids[history], probs[history], labels[history], codes=codes,
                                       members=take(members, history))
        create = time.perf_counter() - start
        baseline = predict = label = float("inf")
        for r in range(rounds):  # each round a new batch: replay of it, then predict and label it; the fastest of each
            new = np.arange(n + r * BATCH, n + (r + 1) * BATCH)
            baseline = min(baseline, replay_seconds(spec, codes, probs[new], labels[new], take(members, new)))
            start = time.perf_counter()
            program.predict(ids[new], probs[new], members=take(members, new))
            predict = min(predict, time.perf_counter() - start)
            start = time.perf_counter()
            program.label(ids[new], labels[new])
            label = min(label, time.perf_counter() - start)
        store.close()
        opened = open_seconds(url)
        replay_all = replay_seconds(spec, codes, probs, labels, members)
        bytes_per = size() / total
    finally:
        drop()
    return {"case": case, "n": n, "backend": backend, "replay_10k_s": baseline, "predict_ratio": predict / baseline,
            "label_ratio": label / baseline, "open_s": opened, "replay_all_s": replay_all, "open_ratio": opened / replay_all,
            "create_s": create, "bytes_per_patient": bytes_per}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--cases", default="hard,payment")
    args = parser.parse_args()
    import pandas as pd  # loaded before anything is timed (the app and the CLI have it loaded)

    rows = []
    for case in args.cases.split(","):  # compile the numba kernels this case uses before anything is timed
        codes, spec, ids, probs, labels, members = make_case(case, 2_000, seed=1)
        replay_seconds(spec, codes, probs, labels, members)
    for case in args.cases.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            for backend in args.backends.split(","):
                row = run(case, n, backend)
                rows.append(row)
                print(f"{case:8s} n={n:>9,} {backend:8s} replay(10k) {row['replay_10k_s']:.2f} s | predict "
                      f"{row['predict_ratio']:.2f}x | label {row['label_ratio']:.2f}x | open {row['open_s']:.1f} s = "
                      f"{row['open_ratio']:.2f}x replay of {n + ROUNDS * BATCH:,} | create {row['create_s']:.1f} s | "
                      f"{row['bytes_per_patient']:.0f} bytes/patient", flush=True)
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.3g}"))


if __name__ == "__main__":
    main()
