"""Benchmark: the Validity check with the CMS-HCC payment value on the bundled sample, before and after.

    python scripts/bench_validity.py [--orderings 200] [--before-orderings 200]

Case: sample_data/hcc_calibration.csv (4,000 patients x 35 V28 HCCs, each member's CMS cell
and known codes), the payment value (V28, default cell CNA), FP-count cost, ratio universe,
price score, expected-cost control, target 1.0, burn-in 1,000, seed 0.

* before: what the check did until now, one full ``replay`` per ordering (candidate sets
  rebuilt for every ordering);
* after: ``validity_check`` (the per-patient work built once and permuted,
  :class:`favmac.replay.PatientWork`).

Both run in this process, after one warm-up replay (numba compilation or cache load); the
per-ordering statistics of the two must be equal exactly (checked). Printed: the wall-clock
and CPU seconds of each (CPU time moves less on a shared machine) and their ratio; with
``--before-orderings`` below ``--orderings`` the "before" time is measured on that many
orderings and scaled (said in the output).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    from favmac import replay
    from favmac.functions import bind_rows
    from favmac.io import load_calibration
    from favmac.runspec import RunSpec
    from favmac.validity import validity_check

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orderings", type=int, default=200)
    parser.add_argument("--before-orderings", type=int, default=200)
    args = parser.parse_args()
    data = load_calibration(ROOT / "sample_data" / "hcc_calibration.csv")
    spec = RunSpec(value_kind="cms_payment", targets=(1.0,), burn_in=1000).validate(data.n_codes, data.n_patients)
    value, cost = spec.build(data.codes, data.members)
    probs, labels = data.prob_array(), data.label_array()
    settings = dict(burn_in=spec.burn_in, score=spec.score, universe=spec.universe)
    replay(probs, labels, value, cost, [spec.target], **settings)  # warm-up: numba
    print(f"case: {data.n_patients:,} patients x {data.n_codes} codes, CMS-HCC payment value ({spec.cms_model}), "
          f"{spec.score} score, target {spec.target:g}, burn-in {spec.burn_in:,}")

    rng = np.random.RandomState(0)
    before = []
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(args.before_orderings):
        order = rng.permutation(data.n_patients)
        res = replay(probs[order], labels[order], bind_rows(value, order), bind_rows(cost, order), [spec.target],
                     **settings)
        before.append(res.cost[0].mean())
    scale = args.orderings / args.before_orderings
    before_seconds, before_cpu = (time.perf_counter() - start) * scale, (time.process_time() - cpu) * scale

    start, cpu = time.perf_counter(), time.process_time()
    report = validity_check(probs, labels, value, cost, spec.target, n_orderings=args.orderings, seed=0, **settings)
    after_seconds, after_cpu = time.perf_counter() - start, time.process_time() - cpu
    assert np.array_equal(report.statistic[: len(before)], np.array(before)), "the orderings' statistics differ"
    scaled = "" if args.before_orderings == args.orderings else f" (measured on {args.before_orderings}, scaled)"
    print(f"before (a full replay per ordering), {args.orderings} orderings: {before_seconds:.1f} s "
          f"(CPU {before_cpu:.1f} s){scaled}")
    print(f"after  (validity_check, work built once), {args.orderings} orderings: {after_seconds:.1f} s "
          f"(CPU {after_cpu:.1f} s)")
    print(f"speed-up: {before_seconds / after_seconds:.1f}x wall, {before_cpu / after_cpu:.1f}x CPU; "
          "statistics equal ordering by ordering")


if __name__ == "__main__":
    main()
