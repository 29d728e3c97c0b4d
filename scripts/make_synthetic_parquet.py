"""Write a synthetic wide calibration data set as Parquet parts, plus its weights file.

    python scripts/make_synthetic_parquet.py --patients 10000000 --codes 35 --out /tmp/claims

Writes ``OUT/part-00000.parquet`` ... (``--rows-per-file`` patients each, one row group
per file) in the wide layout (``patient_id``, ``prob_<code>``, ``label_<code>``) and
``OUT/weights.csv`` (``code``, ``weight``; random weights with 3 decimals, like CMS-HCC risk
factors). Probabilities are full float64 values (a calibrated logistic model), so almost
every calibration key is distinct: the hard case for exact calibration. Deterministic for
a given ``--seed`` (each part is generated from ``seed`` and its index).
"""
from __future__ import annotations

import argparse
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def code_names(n_codes: int) -> list[str]:
    return [f"HCC{k + 1:03d}" for k in range(n_codes)]


def write_weights(out: str, n_codes: int, seed: int) -> str:
    rng = np.random.default_rng([seed, 2**31])
    weights = np.round(rng.uniform(0.1, 2.5, size=n_codes), 3)
    path = os.path.join(out, "weights.csv")
    with open(path, "w") as handle:
        handle.write("code,weight\n")
        for code, weight in zip(code_names(n_codes), weights):
            handle.write(f"{code},{float(weight)!r}\n")
    return path


def part(index: int, first_id: int, n_rows: int, n_codes: int, seed: int) -> pa.Table:
    """One file's patients: labels ~ prevalence, probabilities from a noisy logistic model."""
    rng = np.random.default_rng([seed, index])
    prevalence = np.random.default_rng([seed, 2**32]).uniform(0.01, 0.25, size=n_codes)
    labels = rng.random((n_rows, n_codes)) < prevalence
    logits = np.log(prevalence / (1 - prevalence)) + 2.5 * labels + rng.standard_normal((n_rows, n_codes))
    probs = 1.0 / (1.0 + np.exp(-logits))
    columns = {"patient_id": pa.array([f"P{first_id + i:010d}" for i in range(n_rows)])}
    for k, code in enumerate(code_names(n_codes)):
        columns[f"prob_{code}"] = pa.array(probs[:, k])
        columns[f"label_{code}"] = pa.array(labels[:, k].astype(np.int8))
    return pa.table(columns)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patients", type=int, required=True)
    parser.add_argument("--codes", type=int, default=35)
    parser.add_argument("--rows-per-file", type=int, default=250_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="output folder (created)")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    write_weights(args.out, args.codes, args.seed)
    first = 0
    index = 0
    while first < args.patients:
        n_rows = min(args.rows_per_file, args.patients - first)
        table = part(index, first, n_rows, args.codes, args.seed)
        pq.write_table(table, os.path.join(args.out, f"part-{index:05d}.parquet"), row_group_size=n_rows)
        first += n_rows
        index += 1
    print(f"wrote {args.patients} patients x {args.codes} codes in {index} files to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
