"""Tables behind the Data page's classifier check (no Streamlit)."""
from __future__ import annotations

import numpy as np
import pandas as pd

def prevalence_table(probs: np.ndarray, labels: np.ndarray, codes, descs=None) -> pd.DataFrame:
    """Per-code observed prevalence and mean predicted probability, most prevalent first."""
    frame = pd.DataFrame(
        {
            "code": list(codes),
            "description": list(descs) if descs is not None else ["" for _ in codes],
            "prevalence": np.asarray(labels, dtype=float).mean(axis=0),
            "mean_prob": np.asarray(probs, dtype=float).mean(axis=0),
        }
    )
    return frame.sort_values(["prevalence", "code"], ascending=[False, True], kind="stable").reset_index(drop=True)


def reliability_bins(probs: np.ndarray, labels: np.ndarray, n_bins: int = 10) -> pd.DataFrame:
    """Reliability diagram data: pooled over codes, equal-width probability bins.

    Columns: bin_low, bin_high, mean_prob (mean predicted probability in the bin),
    observed (fraction of those code slots truly present), count. Empty bins are dropped.
    """
    p = np.asarray(probs, dtype=float).ravel()
    y = np.asarray(labels, dtype=float).ravel()
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    idx = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, n_bins - 1)
    count = np.bincount(idx, minlength=n_bins)
    sum_p = np.bincount(idx, weights=p, minlength=n_bins)
    sum_y = np.bincount(idx, weights=y, minlength=n_bins)
    keep = count > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        frame = pd.DataFrame(
            {
                "bin_low": edges[:-1],
                "bin_high": edges[1:],
                "mean_prob": sum_p / count,
                "observed": sum_y / count,
                "count": count,
            }
        )
    return frame[keep].reset_index(drop=True)


def reliability_by_segment(probs: np.ndarray, labels: np.ndarray, groups, n_bins: int = 10) -> dict[str, pd.DataFrame]:
    """:func:`reliability_bins` of each segment's patients, segments in sorted order
    (a pooled diagram can hide one plan's over-confidence behind another's under-confidence)."""
    from favmac.segments import group_rows

    probs, labels = np.asarray(probs), np.asarray(labels)
    return {label: reliability_bins(probs[rows], labels[rows], n_bins) for label, rows in group_rows(groups)}
