"""The Patients page's tables: one patient's codes, the greedy order's cut, the set's numbers."""
from __future__ import annotations

import numpy as np
import pandas as pd

from favmac.export import proxies
from favmac.ui.weights_view import descriptions

STATUS_TP = "Chosen · present"
STATUS_FP = "Chosen · absent (false flag)"
STATUS_FN = "Not chosen · present (missed)"
STATUS_TN = "Not chosen · absent"
STATUS_SELECTED = "Chosen"
STATUS_NOT_SELECTED = "Not chosen"
STATUS_ORDER = (STATUS_TP, STATUS_FP, STATUS_FN, STATUS_TN, STATUS_SELECTED, STATUS_NOT_SELECTED)

def patient_codes(probs_row, labels_row, selected_row, codes, weights_df: pd.DataFrame, order=None) -> pd.DataFrame:
    """One row per code of one patient, for the patient bar chart.

    Columns: code, description, prob, weight, selected, present (None when unlabelled),
    status (one of STATUS_ORDER). Rows follow ``order`` (code indices) if given.
    """
    probs_row = np.asarray(probs_row, dtype=float)
    selected_row = np.asarray(selected_row, dtype=bool)
    present = None if labels_row is None else np.asarray(labels_row, dtype=bool)
    status = []
    for k in range(len(codes)):
        if present is None:
            status.append(STATUS_SELECTED if selected_row[k] else STATUS_NOT_SELECTED)
        elif selected_row[k]:
            status.append(STATUS_TP if present[k] else STATUS_FP)
        else:
            status.append(STATUS_FN if present[k] else STATUS_TN)
    frame = pd.DataFrame(
        {
            "code": [str(c) for c in codes],
            "description": descriptions(weights_df, codes),
            "prob": probs_row,
            "weight": weights_df.loc[list(codes), "weight"].to_numpy(dtype=float),
            "selected": selected_row,
            "present": [None] * len(codes) if present is None else present,
            "status": status,
        }
    )
    if order is not None:
        frame = frame.iloc[list(order)].reset_index(drop=True)
    return frame


def greedy_cut(explain: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """Mark where ``threshold`` cuts a greedy order (``FavMac.explain`` output).

    The chosen set is the longest prefix whose score (the cumulative cost proxy, or the
    price score) stays below the threshold, so ``selected`` is recomputed as
    ``score < threshold`` (``chat`` when the table has no ``score`` column).
    """
    frame = explain.copy()
    key = "score" if "score" in frame else "chat"
    frame["selected"] = frame[key].to_numpy(dtype=float) < threshold
    return frame


def patient_summary(selected_row, probs_row, labels_row, value, cost) -> dict:
    """Vhat, Chat and (when labelled) realized V and C of one patient's chosen set."""
    sel = np.asarray(selected_row, dtype=bool)[None, :]
    vhat, chat = proxies(value, cost, sel, np.asarray(probs_row, dtype=float)[None, :])
    out = {"n_selected": int(sel.sum()), "vhat": float(vhat[0]), "chat": float(chat[0]), "value": None, "cost": None}
    if labels_row is not None:
        out["value"] = float(np.asarray(value(sel[0], labels_row)))
        out["cost"] = float(np.asarray(cost(sel[0], labels_row)))
    return out


def first_informative_step(result, labels: np.ndarray, probs: np.ndarray | None = None) -> int:
    """The first predicted patient whose chosen set confidently (p >= 0.5) catches a true code,
    else the first that catches one at all, else 0: a better first look on the Patients page
    than a patient whose probabilities are all near zero."""
    caught = result.selected[0] & labels[result.burn_in :].astype(bool)
    if probs is not None:
        confident = (caught & (probs[result.burn_in :] >= 0.5)).any(axis=1)
        if confident.any():
            return int(np.argmax(confident))
    hits = caught.any(axis=1)
    return int(np.argmax(hits)) if hits.any() else 0


# A select box lists every id; above this many patients the page offers a search box instead
# (a 500,000-option select box takes seconds to send and draw).
MAX_SELECT_OPTIONS = 5_000


def find_patient(ids, text: str, limit: int = 10) -> tuple[int | None, list[str]]:
    """Position of the patient whose id is ``text`` (surrounding spaces ignored) in ``ids``, or
    None and up to ``limit`` ids that start with ``text`` (the suggestions shown instead).

    >>> find_patient(["P1", "P10", "P2"], " P2 ")
    (2, [])
    >>> find_patient(["P1", "P10", "P2"], "P1x")
    (None, [])
    >>> find_patient(["P1", "P10", "P2"], "P")
    (None, ['P1', 'P10', 'P2'])
    """
    ids = np.asarray(ids).astype(str)
    text = str(text).strip()
    hit = np.flatnonzero(ids == text)
    if hit.size:
        return int(hit[0]), []
    if not text:
        return None, []
    starts = np.flatnonzero(np.char.startswith(ids, text))[:limit]
    return None, [str(ids[i]) for i in starts]
