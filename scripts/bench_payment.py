"""Benchmark: replay with the CMS-HCC payment value, per patient, against one hccinfhir RAF evaluation.

    python scripts/bench_payment.py [--patients 5000] [--targets 10]

Two cases, each in a fresh child process: K = 35 (random V28 payment HCCs) and K = 115 (every
V28 payment HCC), random probabilities (uniform), labels drawn from them, cell CNA, the ratio
universe with the risk-weighted FP cost, the price score, expected-cost control, 10 targets.
In the same process the baseline is hccinfhir's own pipeline on one set of HCCs
(``apply_hierarchies`` + ``apply_interactions`` + ``apply_coefficients`` + the sum; the
part of ``calculate_raf`` after the diagnosis mapping), timed on random sets of about 5 codes.
Printed: the first replay (numba cache load or compile) on its own line, then the warm
replay's time per patient and its ratio to one hccinfhir evaluation.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def hccinfhir_seconds(hccs, n_sets: int = 2000) -> float:
    """Seconds for one RAF evaluation of a set of HCCs by hccinfhir's pipeline (median of 5 runs)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from hccinfhir.defaults import coefficients_default, hierarchies_default
        from hccinfhir.model_coefficients import apply_coefficients
        from hccinfhir.model_demographics import categorize_demographics
        from hccinfhir.model_hierarchies import apply_hierarchies
        from hccinfhir.model_interactions import apply_interactions
    name = "CMS-HCC Model V28"
    demo = categorize_demographics(70, "F", "NA", "0", None, "V2")
    rng = np.random.RandomState(1)
    sets = [set(rng.choice(hccs, rng.randint(1, 10), replace=False)) for _ in range(n_sets)]
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        for hset in sets:
            h = apply_hierarchies(set(hset), name, hierarchies_default)
            sum(apply_coefficients(demo, h, apply_interactions(demo, h, name), name, coefficients_default).values())
        runs.append((time.perf_counter() - start) / n_sets)
    return float(np.median(runs))


def case(n_codes: int, n_patients: int, n_targets: int) -> None:
    from favmac import AdditiveCost, CmsHccValue, replay
    from favmac.payment_tables import model_tables

    hccs = list(model_tables("V28", 2026).hccs)
    rng = np.random.RandomState(0)
    codes = hccs if n_codes == len(hccs) else sorted(rng.choice(hccs, n_codes, replace=False), key=int)
    value = CmsHccValue([f"HCC{c}" for c in codes], model="V28", segment="CNA")
    cost = AdditiveCost(value.weights_for(len(codes)).round(3))
    probs = rng.rand(n_patients, len(codes))
    labels = rng.rand(n_patients, len(codes)) < probs
    targets = list(np.linspace(0.5, 5.0, n_targets).round(3))
    start = time.perf_counter()
    replay(probs[:50], labels[:50], value, cost, targets[:1], burn_in=10, score="price")
    first = time.perf_counter() - start
    runs = []
    for _ in range(3):
        start = time.perf_counter()
        replay(probs, labels, value, cost, targets, burn_in=n_patients // 5, score="price")
        runs.append((time.perf_counter() - start) / n_patients)
    replay_s = min(runs)
    base = hccinfhir_seconds(codes)
    print(f"K = {len(codes)}: first replay (numba cache / compile) {first:.2f} s")
    print(f"K = {len(codes)}: hccinfhir, one RAF evaluation of one set: {base * 1e6:.1f} us")
    print(f"K = {len(codes)}: replay ({n_patients:,} patients, {n_targets} targets, price score): "
          f"{replay_s * 1e6:.1f} us/patient = {replay_s / base:.2f}x one hccinfhir evaluation")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patients", type=int, default=5000)
    parser.add_argument("--targets", type=int, default=10)
    parser.add_argument("--case", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case is not None:
        case(args.case, args.patients, args.targets)
        return
    for n_codes in (35, 115):
        subprocess.run([sys.executable, __file__, "--case", str(n_codes), "--patients", str(args.patients),
                        "--targets", str(args.targets)], check=True)


if __name__ == "__main__":
    main()
