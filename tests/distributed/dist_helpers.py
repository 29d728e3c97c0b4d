"""Data and reference thresholds shared by the favmac.distributed tests."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd

from favmac import FavMac
from favmac.scores import default_score


def tied_data(seed, n_patients, n_codes, decimals):
    """Probabilities rounded to ``decimals`` (many ties; 0.0 and 1.0 occur) and 0/1 labels."""
    rng = np.random.default_rng(seed)
    probs = np.round(rng.random((n_patients, n_codes)), decimals)
    probs[rng.random((n_patients, n_codes)) < 0.08] = 1.0  # zero cost step: ratio +inf, Chat ties
    probs[rng.random((n_patients, n_codes)) < 0.05] = 0.0
    labels = (rng.random((n_patients, n_codes)) < np.clip(probs, 0.1, 0.9)).astype(np.int8)
    return probs, labels

def wide_frame(probs, labels, codes=None, first_id=0):
    codes = codes or [f"C{k}" for k in range(probs.shape[1])]
    columns = {"patient_id": [f"P{first_id + i}" for i in range(len(probs))]}
    for k, code in enumerate(codes):
        columns[f"prob_{code}"] = probs[:, k]
        columns[f"label_{code}"] = labels[:, k]
    return pd.DataFrame(columns)

def write_parts(folder, probs, labels, sizes, fmt="parquet"):
    """Split the rows into files of the given sizes (0 = an empty file, 1 = a one-row file)."""
    assert sum(sizes) == len(probs)
    os.makedirs(folder, exist_ok=True)
    paths, start = [], 0
    for i, size in enumerate(sizes):
        frame = wide_frame(probs[start : start + size], labels[start : start + size], first_id=start)
        path = os.path.join(folder, f"part-{i:03d}.{fmt}")
        if fmt == "parquet":
            frame.to_parquet(path, index=False)
        else:
            frame.to_csv(path, index=False)
        paths.append(path)
        start += size
    return paths

def split_sizes(rng, n):
    """Random sizes with empty and one-row parts among them."""
    sizes = [0, 1]
    rest = n - 1
    while rest > 0:
        size = int(min(rest, rng.integers(1, max(2, n // 3))))
        sizes.append(size)
        rest -= size
        if rng.random() < 0.3:
            sizes.append(0)
    return sizes

def tree_thresholds(probs, labels, value, cost, targets, delta=None, universe="ratio", c_max=None, seed=0, score=None):
    """FavMac (the online QuantileTree) fed every row, in a shuffled order; the score by default
    the one favmac.scores.default_score gives (what calibrate uses when no score is given)."""
    score = default_score(universe, delta) if score is None else score
    order = np.random.default_rng(seed).permutation(len(probs))
    out = []
    for target in targets:
        fm = FavMac(value, cost, target, delta=delta, universe=universe, c_max=c_max, score=score)
        fm.update(probs[order], labels[order])
        out.append(fm.threshold)
    return np.array(out, dtype=float)

def targets_for(c_max):
    """Targets from below 0 to above C_max, on the cost's own decimals (exact ties happen)."""
    return [-0.5, 0.0, 0.1, 0.5, 1.0, 1.1, round(c_max / 3, 1), round(c_max / 2, 1), float(c_max), c_max + 1.0]
