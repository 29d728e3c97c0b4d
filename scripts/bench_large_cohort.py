"""Benchmark: large cohorts — Trade-offs against one FavMac replay, a session's peak memory, and
the memory a session leaves behind. Every figure is a ratio measured in the same run.

    python scripts/bench_large_cohort.py [--patients 100000] [--codes 35] [--sessions 4] [--session-patients N]
                                         [--baseline-src DIR]

The cohort is ``scripts/make_synthetic_parquet.py``'s (calibrated logistic probabilities as full
float64 values, random 3-decimal weights), value = risk-weighted TP, cost = risk-weighted FP,
expected-cost control, burn-in 1,000, a fixed grid (:data:`GRID`: the Trade-offs page's default
of the third round, 10 targets from 5 to 50 % of C_max, so figures stay comparable when the page's
default changes) and methods (7 apply: FavMac price/ratio/value/prob, ClassWise, InnerSet, CRC).

Each measurement runs in a fresh child process:

* ``speed``: one FavMac (price) replay of the grid's 10 targets (``favmac.methods.run_method``),
  the same replay on ``TRADEOFF_WORKERS`` inner threads (``favmac.parallel.using``; checkouts
  before ``TRADEOFF_MODES`` skip it), then the Trade-offs computation
  (``favmac.tradeoffs.run_comparison``) on an idle machine in each schedule: its methods side
  by side on ``TRADEOFF_WORKERS`` threads (``HEAVY_AT_ONCE`` FavMac replays at a time), the same
  with one FavMac replay at a time (the third round's schedule; checkouts before
  ``HEAVY_AT_ONCE`` skip it), the methods one after another each on ``TRADEOFF_WORKERS`` inner
  threads (mode "inner", the seventh round), then with one thread (the methods one after
  another); the app's schedule (``TRADEOFF_MODE``) is marked. Wall and CPU seconds (CPU: every
  thread of the process), and the machine's load (``os.getloadavg``, 1 minute) before and after
  each step. Trade-offs' wall time is printed against both replays (one thread, and inner
  threads). The app's start-up warm-up (below) runs first, so no step pays the first
  Trade-offs run's imports (scipy.stats, pandas parts: about 0.5 s, in the side-by-side step
  before the seventh round). The user waits wall time; on a shared machine wall times follow
  the load, CPU times much less.
* ``memory``: the same steps under ``tracemalloc`` (numpy's arrays are traced); the peak
  of traced memory, data included, against the data's in-memory size (:func:`data_bytes`:
  probabilities float64, labels int8 and cost weights as loaded; the ids are printed apart).
  The app loads the replay's compiled kernels when it starts (``favmac.ui.bootstrap.warm_up``):
  they are the process's, not a session's, so this child runs that warm-up *before* tracing
  starts (checkouts without it: nothing). ``memory-cold`` traces the replay step in a fresh
  process without it (the kernels loaded during the replay, about 15 MB traced at
  300,000 x 35, count in its peak): the figure as measured before the fifth round.
* ``sessions`` (``--sessions S``, on ``--session-patients`` patients, default ``--patients``):
  S app sessions one after the other in one process
  (``streamlit.testing.v1.AppTest``: upload the cohort as Parquet, Online session, Trade-offs),
  then every session dropped: traced memory and RSS before, with the sessions, after they end,
  after the caches are cleared, and after glibc's ``malloc_trim`` (what the allocator kept).

``--baseline-src DIR`` runs the ``replay`` and ``memory`` children on another checkout too (e.g.
the main branch before a change), for before/after figures from the same run.
"""
from __future__ import annotations

import argparse
import gc
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = os.environ.get("FAVMAC_BENCH_SOURCE") or str(ROOT)  # the checkout to measure
sys.path.insert(0, SOURCE)
sys.path.insert(0, str(ROOT / "scripts"))

import numpy as np  # noqa: E402

BURN_IN = 1000
#: The grid every figure uses: 10 targets from 5 to 50 % of C_max, the methods of the page.
GRID = {"low_pct": 5.0, "high_pct": 50.0, "n_targets": 10,
        "methods": ["FavMac (price)", "FavMac (ratio)", "FavMac (value)", "FavMac (prob)", "ClassWise", "InnerSet", "CRC", "RCPS"]}


def cohort(n_patients: int, n_codes: int, seed: int = 0, weights_kind: str = "3-decimal"):
    """(probs, labels, weights, codes, ids) of make_synthetic_parquet's cohort (one part); with
    ``weights_kind="float"`` the same weights before their rounding to 3 decimals (full float64 values,
    whose exact sums overflow int64: the replay engine brackets them, ``ExactCosts.brackets``)."""
    from make_synthetic_parquet import code_names, part, write_weights

    table = part(0, 0, n_patients, n_codes, seed)
    codes = code_names(n_codes)
    probs = np.column_stack([table.column(f"prob_{c}").to_numpy() for c in codes])
    labels = np.column_stack([table.column(f"label_{c}").to_numpy() for c in codes]).astype(np.int8)
    ids = np.array(table.column("patient_id").to_pylist(), dtype=object)
    with tempfile.TemporaryDirectory() as folder:
        path = write_weights(folder, n_codes, seed)
        weights = np.loadtxt(path, delimiter=",", skiprows=1, usecols=1)
    if weights_kind == "float":  # write_weights' draw, unrounded
        weights = np.random.default_rng([seed, 2**31]).uniform(0.1, 2.5, size=n_codes)
    return probs, labels, weights, codes, ids


def data_bytes(probs, labels, weights) -> int:
    """In-memory size of the data: the probabilities (float64), labels (int8) and cost weights
    (float64) as loaded; the patient ids are counted apart (:func:`id_bytes`)."""
    return int(probs.nbytes + labels.nbytes + np.asarray(weights).nbytes)


def id_bytes(ids) -> int:
    """The patient ids' object array and strings."""
    return int(ids.nbytes + sum(sys.getsizeof(i) for i in ids))


def run_spec(n_patients, n_codes, weights):
    from favmac.ui import settings_form as form

    settings = {**form.default_settings(n_patients, n_codes, weights), "value_kind": "weighted_tp", "cost_kind": "weighted_fp",
                "burn_in": BURN_IN}
    return form.to_spec(settings, weights)


def grid(spec, n_codes):
    from favmac.target_grid import tradeoff_targets

    g = GRID
    targets = tradeoff_targets(spec.c_max(n_codes), g["low_pct"], g["high_pct"], g["n_targets"], False)
    return targets, list(g["methods"])


def child_steps(args, trace: bool, cold: bool = False) -> dict:
    """One FavMac replay of the grid, then the Trade-offs computation: seconds (or traced peaks)."""
    import tracemalloc

    from favmac import tradeoffs
    from favmac.methods import run_method

    if not cold:  # the app's start-up warm-up (process-wide kernels and modules), before tracing or timing
        try:
            from favmac.ui.bootstrap import warm_up
        except ImportError:
            warm_up = None
        if warm_up is not None:
            warm_up(0)
    if trace:
        tracemalloc.start()
    probs, labels, weights, codes, ids = cohort(args.patients, args.codes, weights_kind=args.weights)  # traced: data and ids
    spec = run_spec(*probs.shape, weights)
    targets, methods = grid(spec, args.codes)
    grid_spec = spec.replace(targets=tuple(float(t) for t in targets))
    if not trace:  # compile the kernels first (numba's cache on disk): not part of either step
        small = grid_spec.replace(burn_in=10)
        for method in methods:
            if tradeoffs.method_applicability(spec.control, [method], args.codes)[method] is None:
                run_method(small, method, probs[:200], labels[:200])
    out = {"data_bytes": data_bytes(probs, labels, weights), "id_bytes": id_bytes(ids), "workers": getattr(tradeoffs, "TRADEOFF_WORKERS", 1)}

    def one_thread():
        workers, tradeoffs.TRADEOFF_WORKERS = getattr(tradeoffs, "TRADEOFF_WORKERS", 1), 1  # (a checkout before it: sequential)
        try:
            return tradeoffs.run_comparison(probs, labels, codes, ids, spec, targets, methods)
        finally:
            tradeoffs.TRADEOFF_WORKERS = workers

    modes = getattr(tradeoffs, "TRADEOFF_MODES", ())  # checkouts before the seventh round: side by side only

    def two_threads(mode="side_by_side"):  # the app's threads on an idle machine (it drops to one when no core is free)
        free = getattr(tradeoffs, "machine_has_a_free_core", None)
        if free is not None:
            tradeoffs.machine_has_a_free_core = lambda: True
        try:
            return tradeoffs.run_comparison(probs, labels, codes, ids, spec, targets, methods, **({"mode": mode} if modes else {}))
        finally:
            if free is not None:
                tradeoffs.machine_has_a_free_core = free

    def replay_on_threads():  # the replay with TRADEOFF_WORKERS inner threads (favmac.parallel), as "inner" runs it
        from favmac import parallel

        with parallel.using(out["workers"]):
            return run_method(grid_spec, "FavMac (price)", probs, labels, codes=codes, patient_ids=ids)

    def one_replay_at_a_time():  # two threads, FavMac replays one at a time (the third round)
        heavy = tradeoffs.HEAVY_AT_ONCE
        tradeoffs.HEAVY_AT_ONCE = 1
        try:
            return two_threads()
        finally:
            tradeoffs.HEAVY_AT_ONCE = heavy

    steps = [("replay", lambda: run_method(grid_spec, "FavMac (price)", probs, labels, codes=codes, patient_ids=ids))]
    if modes:
        steps.append(("replay_threads", replay_on_threads))
    steps.append(("tradeoffs", two_threads))
    if hasattr(tradeoffs, "HEAVY_AT_ONCE"):
        steps.append(("one_replay", one_replay_at_a_time))
    if "inner" in modes:
        steps.append(("inner", lambda: two_threads("inner")))
    steps.append(("sequential", one_thread))
    out["mode"] = getattr(tradeoffs, "TRADEOFF_MODE", "side_by_side")
    if cold:  # a fresh process's replay, nothing loaded before it
        steps = [("cold_replay", steps[0][1])]
    for name, step in steps:
        gc.collect()
        if trace:
            tracemalloc.reset_peak()
            kept = step()
            out[f"{name}_peak"] = tracemalloc.get_traced_memory()[1]
        else:
            load = os.getloadavg()[0]
            wall, cpu = time.perf_counter(), time.process_time()
            kept = step()
            out[f"{name}_wall"], out[f"{name}_cpu"] = time.perf_counter() - wall, time.process_time() - cpu
            out[f"{name}_load"] = (load, os.getloadavg()[0])
        del kept
    return out


def rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child_sessions(args) -> dict:
    """S app sessions in one process, one after the other; memory before, during, after."""
    import logging
    import tracemalloc

    import pyarrow as pa
    import pyarrow.parquet as pq
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    logging.getLogger("streamlit").setLevel(logging.ERROR)
    probs, labels, weights, codes, ids = cohort(args.patients, args.codes, weights_kind=args.weights)
    columns = {"patient_id": pa.array(list(ids))}
    for k, code in enumerate(codes):
        columns[f"prob_{code}"] = pa.array(probs[:, k])
        columns[f"label_{code}"] = pa.array(labels[:, k])
    buffer = io.BytesIO()
    pq.write_table(pa.table(columns), buffer)
    upload = buffer.getvalue()
    size = data_bytes(probs, labels, weights)
    del probs, labels, ids, columns, buffer

    def wait_for(at, done, seconds=300):
        """Rerun the page (as its progress fragment would) until ``done()``; fail on an error."""
        start = time.monotonic()
        while not done():
            if at.exception or at.error or time.monotonic() - start > seconds:
                raise SystemExit(f"session stuck or failed: {[e.value for e in at.exception]} {[e.value for e in at.error]}")
            time.sleep(0.5)
            at.run()

    def session():
        at = AppTest.from_file(str(Path(SOURCE) / "studio.py"), default_timeout=600)
        at.switch_page("pages/1_Data.py").run()
        at.run()  # a session's first run leaves the rest of the page to a timer (favmac.ui.bootstrap)
        at.file_uploader(key="upload_wide").set_value(("cohort.parquet", upload, "application/octet-stream"))
        at.run()
        assert at.session_state["dataset"].n_patients == args.patients, [e.value for e in at.exception]
        at.switch_page("pages/3_Online_session.py").run()
        wait_for(at, lambda: at.session_state["jobs"].get("online") is None)
        at.switch_page("pages/4_Trade-offs.py").run()
        at.button(key="run_tradeoffs").click().run()
        wait_for(at, lambda: at.session_state["tradeoffs"] is not None)
        return at

    def measure():
        gc.collect()
        return {"traced": tracemalloc.get_traced_memory()[0], "rss": rss_bytes()}

    for page in ("pages/1_Data.py", "pages/3_Online_session.py", "pages/4_Trade-offs.py"):  # imports and numba kernels
        warm = AppTest.from_file(str(Path(SOURCE) / "studio.py"), default_timeout=600)
        warm.switch_page(page).run()
        warm.run()
    del warm
    tracemalloc.start()
    out = {"data_bytes": size, "sessions": args.sessions, "before": measure()}
    kept = []
    for _ in range(args.sessions):
        kept.append(session())
    out["with_sessions"] = measure()
    out["peak_traced"] = tracemalloc.get_traced_memory()[1]
    kept.clear()
    out["after_sessions"] = measure()
    st.cache_data.clear()
    out["after_cache_clear"] = measure()
    try:  # what the C allocator still holds of the freed memory (glibc)
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
        out["after_malloc_trim"] = measure()
    except (OSError, AttributeError):
        pass
    return out


def run_child(what: str, args, source: str | None = None) -> dict:
    env = {**os.environ, "FAVMAC_BENCH_SOURCE": source or SOURCE}
    patients = args.session_patients if what == "sessions" and args.session_patients else args.patients
    command = [sys.executable, __file__, "--child", what, "--patients", str(patients), "--codes", str(args.codes),
               "--sessions", str(args.sessions), "--weights", args.weights]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"child {what} failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["max_rss"] = out.get("max_rss")
    return out


def mb(n) -> str:
    return f"{n / 1e6:,.0f} MB"


def report(label: str, speed: dict, memory: dict) -> None:
    data = memory["data_bytes"]
    print(f"{label}: data {mb(data)} (probabilities, labels, weights; the ids another {mb(memory['id_bytes'])})")
    workers, mode = speed.get("workers", 1), speed.get("mode", "side_by_side")
    app = {"side_by_side": "tradeoffs", "inner": "inner"}.get(mode)
    steps = (("replay", "FavMac (price) replay, 10 targets"),
             ("replay_threads", f"the same replay on {workers} inner threads (favmac.parallel.using)"),
             ("tradeoffs", f"Trade-offs, 7 methods x 10 targets, {workers} threads, methods side by side"
                           + (" (the app)" if app == "tradeoffs" else "")),
             ("one_replay", "Trade-offs, the same, one FavMac replay at a time"),
             ("inner", f"Trade-offs, methods one after another, each on {workers} inner threads" + (" (the app)" if app == "inner" else "")),
             ("sequential", "Trade-offs, the same on 1 thread"))
    for name, title in steps:
        if f"{name}_wall" not in speed:  # a baseline checkout measured before the sequential step existed
            continue
        load = speed.get(f"{name}_load")
        print(f"  {title}: {speed[f'{name}_wall']:.2f} s wall, {speed[f'{name}_cpu']:.2f} s CPU"
              + (f" (load {load[0]:.1f} -> {load[1]:.1f})" if load else "")
              + (f"; peak {mb(memory[f'{name}_peak'])} = {memory[f'{name}_peak'] / data:.2f}x the data" if f"{name}_peak" in memory else ""))
    if "cold_replay_peak" in memory:
        print(f"  the replay in a fresh process, its kernels loaded during it (no warm-up before tracing): "
              f"peak {mb(memory['cold_replay_peak'])} = {memory['cold_replay_peak'] / data:.2f}x the data")
    threaded = "replay_threads_wall" in speed
    for name, title in steps[2:]:
        if f"{name}_wall" in speed:
            print(f"  {title} / replay: {speed[f'{name}_wall'] / speed['replay_wall']:.2f}x wall"
                  + (f" ({speed[f'{name}_wall'] / speed['replay_threads_wall']:.2f}x the replay on {workers} threads)" if threaded else "")
                  + f", {speed[f'{name}_cpu'] / speed['replay_cpu']:.2f}x CPU")
    print(f"  child max RSS {mb(speed['max_rss'])}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patients", type=int, default=100_000)
    parser.add_argument("--codes", type=int, default=35)
    parser.add_argument("--sessions", type=int, default=4, help="app sessions for the memory-returned figure (0: skip)")
    parser.add_argument("--session-patients", type=int, help="cohort size of the sessions run (default: --patients)")
    parser.add_argument("--weights", choices=["3-decimal", "float"], default="3-decimal",
                        help="cost/value weights: 3 decimals (CMS-like, the default) or full float64 values (the hard case)")
    parser.add_argument("--baseline-src", help="another checkout to measure the same way (before/after)")
    parser.add_argument("--child", choices=["speed", "memory", "memory-cold", "sessions"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        out = (child_sessions(args) if args.child == "sessions"
               else child_steps(args, trace=args.child.startswith("memory"), cold=args.child == "memory-cold"))
        out["max_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        print(json.dumps(out))
        return 0
    print(f"{args.patients:,} patients x {args.codes} codes, random {args.weights} weights, weighted TP / weighted FP, expected cost, "
          f"burn-in {BURN_IN:,}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    sources = [("this checkout", SOURCE)] + ([("baseline " + args.baseline_src, args.baseline_src)] if args.baseline_src else [])
    for label, source in sources:
        memory = {**run_child("memory-cold", args, source), **run_child("memory", args, source)}
        report(label, run_child("speed", args, source), memory)
        print(f"  load now {os.getloadavg()[0]:.1f}")
    if args.sessions:
        wall = time.perf_counter()
        out = run_child("sessions", args)
        wall = time.perf_counter() - wall
        data = out["data_bytes"]
        print(f"{out['sessions']} app sessions in one process (upload, Online session, Trade-offs each), "
              f"{args.session_patients or args.patients:,} patients, data {mb(data)} per session; {wall:.0f} s wall in all:")
        for key in ("before", "with_sessions", "after_sessions", "after_cache_clear", "after_malloc_trim"):
            if key not in out:
                continue
            extra = out[key]["traced"] - out["before"]["traced"]
            print(f"  {key:18s} traced {mb(out[key]['traced'])} ({extra / data:+.2f}x the data), RSS {mb(out[key]['rss'])}")
        print(f"  peak traced {mb(out['peak_traced'])}, max RSS {mb(out['max_rss'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
