"""The chosen-sets export: one table format for the calibration stream and for new patients.

The command line's ``predict`` and the app's Export page both write this table. Columns, in
order: ``patient_id, codes`` (``;``-joined), ``n_codes, expected_value`` (V-hat),
``cost_proxy`` (C-hat), ``threshold, method, target, delta`` (empty under expected-cost
control), ``universe``, ``score`` (what the threshold is on: cost or price; empty for a
baseline); then ``descriptions`` when code descriptions are given: one JSON list per row,
the chosen codes' descriptions in the order of ``codes`` (``[]`` for an empty set; see
:func:`description_lists`), and ``realized_value, realized_cost`` when labels are given; ``segment`` (and
``note``, why a segment got the empty set) with segments, ``adaptive_target`` (c_n) with an
adaptive rate; ``cost_units`` (RAF or dollars) with the unsupported-payment cost. Numbers keep 12 significant digits, which removes float noise such as
0.5306092000000001.

New patients of a segment the calibration data does not have get the empty set: a segment
with no calibration patient has T = -inf, exactly as a too-small segment does
(docs/method.md, "Segments"); the ``note`` column says so for each such patient.

A recalibrated run (``replay(..., recalibrate=R)``) carries its per-code maps; both tables use
them: the sets, ``expected_value`` and ``cost_proxy`` come from the mapped probabilities.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np

from .functions import false_flag_weights
from .protocols import bind_rows, is_additive, units_of
from .recalibration import run_probabilities
from .result import join_codes
from .replay import predict_with_threshold
from .scores import result_score

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EXPORT_COLUMNS", "chosen_sets", "description_lists", "grouping_thresholds", "new_patient_sets", "proxies", "round_noise", "stream_sets"]

EXPORT_COLUMNS = ("patient_id", "codes", "n_codes", "expected_value", "cost_proxy", "threshold", "method", "target",
                  "delta", "universe", "score")
SIGNIFICANT_DIGITS = 12


def round_noise(values) -> np.ndarray:
    """``values`` as floats rounded to 12 significant digits (inf and NaN unchanged).

    >>> round_noise([0.5306092000000001, 1 / 3, float("inf")]).tolist()
    [0.5306092, 0.333333333333, inf]
    """
    out = np.array(values, dtype=float, copy=True).reshape(-1)
    finite = np.isfinite(out)
    out[finite] = [float(f"{x:.{SIGNIFICANT_DIGITS}g}") for x in out[finite]]
    return out.reshape(np.shape(values))


def description_lists(selected, descriptions) -> np.ndarray:
    """Each row's chosen-code descriptions as one JSON list (text), in code order.

    Descriptions are free text: CMS's contain "; " and commas, a user's may hold quotes or
    newlines, so no separator could be split back safely. A JSON list reads back exactly with
    ``json.loads`` (pandas: ``frame["descriptions"].map(json.loads)``). The cell starts with
    ``[``, so a spreadsheet never runs it as a formula; JSON writes a newline as backslash-n.

    >>> description_lists(np.array([[True, False, True], [False, False, False]]), ["a; b", "c", 'say "hi"']).tolist()
    ['["a; b", "say \\\\"hi\\\\""]', '[]']
    """
    items = [json.dumps(str(d), ensure_ascii=False) for d in descriptions]
    return np.array(["[" + cell + "]" for cell in join_codes(selected, items, sep=", ")], dtype=object)


def proxies(value, cost, selected, probs) -> tuple[np.ndarray, np.ndarray]:
    """V-hat and C-hat of each patient's chosen set; ``selected`` and ``probs`` are (N, K).

    Additive proxies are one matrix product; a formula value's Monte Carlo proxy is per patient.
    """
    selected = np.asarray(selected, dtype=bool)
    probs = np.asarray(probs, dtype=float)
    chat = np.asarray(cost.proxy(selected, probs), dtype=float)
    if is_additive(value):
        vhat = np.asarray(value.proxy(selected, probs), dtype=float)
    else:  # values with per-patient context (CmsHccValue) are bound to each row
        vhat = np.array([float(bind_rows(value, i).proxy(s, p)) for i, (s, p) in enumerate(zip(selected, probs))], dtype=float)
    return vhat, chat


def chosen_sets(patient_ids, probs, selected, thresholds, *, codes, value, cost, method: str, target: float,
                delta: float | None, universe: str, score: str = "cost", descriptions=None,
                labels=None, segments=None, notes=None, adaptive_targets=None) -> pd.DataFrame:
    """The export table: one row per patient with the chosen codes, their proxies and the run.

    Parameters
    ----------
    patient_ids : sequence, length N
    probs : ndarray (N, K)
        The probabilities the sets were chosen from.
    selected : ndarray of bool (N, K)
        The chosen sets.
    thresholds : float or ndarray (N,)
        Threshold used for each patient.
    codes : sequence of str, length K
    value, cost : value and cost functions
    method, target, delta, universe, score
        The run, written in every row (``delta`` None = expected-cost control, written empty;
        ``score`` "cost" or "price", empty for a baseline).
    descriptions : sequence of str, length K, optional
        Per-code descriptions: adds a ``descriptions`` column, one JSON list per row
        (:func:`description_lists`).
    labels : ndarray (N, K), optional
        True codes: adds ``realized_value`` and ``realized_cost``.
    segments, notes : sequence of str, length N, optional
        Each patient's segment and a note on its threshold: add ``segment`` and ``note``.
    adaptive_targets : ndarray (N,), optional
        The adaptive target c_n behind each threshold: adds ``adaptive_target``.

    Returns
    -------
    DataFrame with the columns listed in the module docstring.
    """
    selected = np.asarray(selected, dtype=bool)
    n_patients = selected.shape[0]
    vhat, chat = proxies(value, cost, selected, probs)
    import pandas as pd  # imported on use: pandas is slow to import
    frame = pd.DataFrame(
        {
            "patient_id": [str(i) for i in patient_ids],
            "codes": join_codes(selected, [str(c) for c in codes]),
            "n_codes": selected.sum(axis=1),
            "expected_value": round_noise(vhat),
            "cost_proxy": round_noise(chat),
            "threshold": round_noise(np.broadcast_to(np.asarray(thresholds, dtype=float), (n_patients,))),
            "method": method,
            "target": round_noise([target])[0],
            "delta": np.nan if delta is None else float(delta),
            "universe": universe,
            "score": score,
        }
    )
    if descriptions is not None:
        frame["descriptions"] = description_lists(selected, descriptions)
    if labels is not None:
        labels = np.asarray(labels, dtype=bool)
        frame["realized_value"] = round_noise(np.asarray(value(selected, labels), dtype=float))
        frame["realized_cost"] = round_noise(np.asarray(cost(selected, labels), dtype=float))
    if segments is not None:
        frame["segment"] = [str(g) for g in segments]
    if notes is not None:
        frame["note"] = [str(n) for n in notes]
    if adaptive_targets is not None:
        frame["adaptive_target"] = round_noise(np.asarray(adaptive_targets, dtype=float))
    if units_of(cost):  # the unsupported payment: RAF or dollars
        frame["cost_units"] = units_of(cost)
    return frame


def _universe(result, universe):
    return universe if universe is not None else result.settings.get("universe", "")


def _score(result, score):
    return score if score is not None else result.settings.get("score", "")


def stream_sets(result, probs, labels, value, cost, *, universe: str | None = None, target_index: int = 0,
                descriptions=None, score: str | None = None) -> pd.DataFrame:
    """Chosen sets of a replayed labelled stream (the patients after the burn-in), with realized value and cost.

    ``probs`` / ``labels`` are the whole (N, K) stream the result was replayed on (the raw
    probabilities: a recalibrated result's maps are applied here).
    """
    start = result.burn_in
    probs = run_probabilities(result, np.asarray(probs)[start:], groups=result.groups)
    ids = result.patient_ids if result.patient_ids is not None else np.arange(start, start + result.n_steps)
    codes = result.codes if result.codes is not None else [str(k) for k in range(result.selected.shape[2])]
    value, cost = bind_rows(value, slice(start, None)), bind_rows(cost, slice(start, None))
    return chosen_sets(
        ids, probs, result.selected[target_index], result.thresholds[target_index],
        codes=codes, value=value, cost=cost, method=result.method, target=float(result.targets[target_index]),
        delta=result.delta, universe=_universe(result, universe), score=_score(result, score),
        descriptions=descriptions, labels=np.asarray(labels)[start:], segments=result.groups,
        adaptive_targets=None if result.adaptive_targets is None else result.adaptive_targets[target_index],
    )


def new_patient_sets(new_probs: pd.DataFrame, result, value, cost, *, universe: str | None = None,
                     target_index: int = 0, descriptions=None, score: str | None = None,
                     groups=None) -> pd.DataFrame:
    """Chosen sets for unlabelled patients (index = patient ids, columns = codes) under the
    threshold calibrated on the whole stream (``result.final_thresholds``), on the score it
    was calibrated on (``result.settings["score"]`` unless ``score`` is given).

    With ``groups`` (one segment per new patient; default: the ``segment`` column
    :func:`favmac.io.load_new_patients` read) and a segmented ``result``, each patient
    gets its segment's final threshold (``result.group_thresholds``); a segment the
    calibration data lacks, or one too small for the target, gets the empty set and a
    ``note`` saying why.

    Several groupings (a result of ``replay(..., groups=[plan, band])``; ``groups`` a dict
    grouping name -> labels, default the ``groupings`` :func:`favmac.io.load_new_patients_segmented`
    read): each patient's threshold is the smallest of its groups' final thresholds, one per
    grouping (docs/method.md "Several groupings at once"). A group a grouping's calibration data lacks
    counts as T = -inf for that grouping, as with one grouping, so the patient gets the empty
    set. ``segment`` then reads ``plan=A; band=65+`` and ``note`` holds every grouping's reason
    (``; ``-joined) plus, when the threshold is finite, which grouping binds.
    """
    from .segments import too_small_reason

    universe = _universe(result, universe)
    score = score if score is not None else result_score(result, false_flag_weights(cost, new_probs.shape[1]))
    # the maps the threshold was calibrated with (docs/method.md "Recalibration on a split"); maps per segment:
    # each new patient's own segment's maps
    probs = run_probabilities(result, new_probs.to_numpy(dtype=float),
                              groups=new_probs.attrs.get("groups") if groups is None else groups)
    several = len(getattr(result, "groupings", None) or []) > 1
    if groups is None:  # the segment column(s) load_new_patients_segmented read, if any
        groups = new_probs.attrs.get("groupings") if several else new_probs.attrs.get("groups")
    segments = notes = None
    if several:
        if groups is None:
            raise ValueError("groups: the result was calibrated with several groupings "
                             f"({', '.join(g.name for g in result.groupings)}); give each new patient's group in "
                             "each (a dict grouping name -> labels)")
        threshold, segments, notes = grouping_thresholds(result, groups, len(probs), target_index)
    elif groups is not None and result.group_thresholds is not None:
        segments = [str(g).strip() for g in groups]
        if len(segments) != len(probs):
            raise ValueError(f"groups: expected one segment per new patient ({len(probs)}), got {len(segments)}")
        c_max = result.settings.get("c_max")
        target = result.targets[target_index]
        threshold, notes = np.empty(len(probs)), []
        reasons = {}
        for label in set(segments):
            if label not in result.group_thresholds:
                reasons[label] = (-np.inf, f"segment {label!r} is not in the calibration data (0 calibration "
                                  "patients), so its set is empty")
            else:
                found = float(result.group_thresholds[label][target_index])
                why = too_small_reason(result.group_sizes[label], target, c_max, result.delta) or ""
                reasons[label] = (found, f"segment {label!r}: {why}" if why else "")
        for i, label in enumerate(segments):
            threshold[i], note = reasons[label]
            notes.append(note)
    else:
        threshold = float(result.final_thresholds[target_index])
    selected = predict_with_threshold(probs, value, cost, threshold, universe=universe, score=score)
    return chosen_sets(
        new_probs.index, probs, selected, threshold, codes=[str(c) for c in new_probs.columns], value=value,
        cost=cost, method=result.method, target=float(result.targets[target_index]), delta=result.delta,
        universe=universe, score=score, descriptions=descriptions, segments=segments, notes=notes,
    )



def grouping_thresholds(result, groups, n_patients: int, target_index: int = 0):
    """Each new patient's threshold under a result's several groupings: the smallest of its groups'
    final thresholds (:func:`favmac.segments.smallest_group_thresholds`).

    ``groups`` maps each grouping name of ``result.groupings`` to one label per patient (a
    dict, or a DataFrame with those columns). Returns ``(thresholds (N,), segments, notes)``.
    """
    from .segments import smallest_group_thresholds

    names = [g.name for g in result.groupings]
    if hasattr(groups, "columns"):
        groups = {str(c): groups[c].to_numpy(dtype=object) for c in groups.columns}
    if not isinstance(groups, dict):
        raise ValueError(f"groups: with several groupings give a dict grouping name -> labels (names: {', '.join(names)})")
    missing = [name for name in names if name not in groups]
    if missing:
        raise ValueError(f"groups: no labels for the grouping {missing[0]!r}; the result was calibrated with "
                         f"{', '.join(names)}")
    finals = [(g.name, {label: float(t[target_index]) for label, t in g.final_thresholds.items()}, g.sizes)
              for g in result.groupings]
    return smallest_group_thresholds(finals, [groups[name] for name in names], n_patients,
                                     result.targets[target_index], result.settings.get("c_max"), result.delta)
