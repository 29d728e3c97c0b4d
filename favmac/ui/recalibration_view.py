"""Recalibration on a split, in the app: the Value & cost widgets, the Data page's calibration check.

The math is :mod:`favmac.recalibration` (the maps, ``calibration_error``, ``recalibration_report``);
this module only turns its tables into the auditor's units ("predicted 30 %, confirmed 12 %") and
draws them. ``calibration_display`` and ``suggested_split`` are plain functions (tests/ui).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from favmac.recalibration import (DEFAULT_RECALIBRATION, MIN_FOLD, MIN_SEGMENT_CLASS, RECALIBRATIONS, calibration_error, fit_recalibration,
                                  recalibration_report)
from favmac.ui import data_views, figures, widgets
from favmac.ui.text import md

__all__ = ["METHOD_LABELS", "METHOD_HELP", "MISCALIBRATED_POINTS", "settings_fields", "suggested_split",
           "calibration_display", "looks_miscalibrated", "before_after_bins", "show_calibration_check", "tradeoff_option",
           "tradeoff_caption", "fold_note", "fold_maps"]

METHOD_LABELS = {"platt": "Smooth curve (Platt scaling, the default)", "isotonic": "Step curve (isotonic)",
                 "platt_tested": "Smooth curve only where the fold shows a code is off (tested Platt)"}
METHOD_HELP = ("How each code's probabilities are corrected, learned from the fold's patients only. "
               "Smooth curve: one S-shaped correction per code (two numbers); it keeps the order of the patients and is "
               "steady even with few positives. Step curve: any rising staircase; it can fix odder shapes but needs "
               "more positives per code and costs a little on a classifier that was already calibrated. Smooth curve only where "
               "the fold shows a code is off: a code keeps its own probabilities unless the fold's patients reject them "
               "(a statistical test per code); it costs less on a classifier that was already calibrated.")
# a code whose predicted and confirmed rates differ by this many percentage points (ECE) or more
MISCALIBRATED_POINTS = 2.0
assert set(METHOD_LABELS) == set(RECALIBRATIONS)


def suggested_split(n_patients: int, burn_in: int) -> int | None:
    """A fold size to suggest: a fifth of the stream, between MIN_FOLD and 1,000 patients,
    leaving the burn-in and at least one patient to predict; None when the stream is too short."""
    room = n_patients - 1 - burn_in
    size = int(min(1000, max(MIN_FOLD, n_patients // 5), room))
    return size if size >= MIN_FOLD else None


def settings_fields(current: dict, n_patients: int) -> dict:
    """The recalibration widgets (inside the settings form); keys ``recalibrate`` (R or None), ``recalibration``
    and ``recalibrate_by`` ("code", or "segment": maps per group of the one segment column)."""
    st.subheader("Recalibration")
    on = st.checkbox("Recalibrate the classifier on the first R patients", value=current.get("recalibrate") is not None,
                     key="use_recalibrate",
                     help="The first R patients of the stream only teach a correction of each code's probabilities; they get no "
                          "prediction and never join the calibration. Use it when the Data page says the classifier looks "
                          f"miscalibrated. R is at least {MIN_FOLD}; the burn-in counts patients after the fold.")
    default = current.get("recalibrate") or suggested_split(n_patients, int(current.get("burn_in") or 0)) or MIN_FOLD
    size = st.number_input("Patients in the recalibration fold (R)", min_value=1, value=int(default), step=100,
                           key="recalibrate", disabled=not on)
    method = current.get("recalibration") or DEFAULT_RECALIBRATION
    choice = st.radio("Correction", list(METHOD_LABELS), format_func=METHOD_LABELS.get, index=list(METHOD_LABELS).index(method),
                      key="recalibration", disabled=not on, help=METHOD_HELP)
    by_segment = st.checkbox("Fit the maps per segment", value=current.get("recalibrate_by") == "segment", key="recalibrate_by_segment",
                             disabled=not on,
                             help="One correction per code and per group of the segment column (one column only), for a plan or "
                                  "band whose classifier is off in its own way. A group whose fold holds fewer than "
                                  f"{MIN_SEGMENT_CLASS} patients with and {MIN_SEGMENT_CLASS} without a code uses that code's pooled map.")
    return {"recalibrate": int(size) if on else None, "recalibration": choice if on else method,
            "recalibrate_by": "segment" if on and by_segment else "code"}


def _percent(x: float) -> str:
    return "–" if not np.isfinite(x) else f"{100 * x:.1f} %"


def calibration_display(table: pd.DataFrame) -> pd.DataFrame:
    """``calibration_error``'s table in words: one row per code, worst first.

    Columns: Code, Patients, Confirmed (positives), Predicted (mean probability as %), Confirmed rate
    (as %), Calibration error (ECE in percentage points), In words.
    """
    rows = table.sort_values("ece", ascending=False, kind="stable")
    return pd.DataFrame({
        "Code": rows["code"].astype(str).to_numpy(),
        "Patients": rows["n"].astype(int).to_numpy(),
        "Confirmed": rows["positives"].astype(int).to_numpy(),
        "Predicted": [_percent(x) for x in rows["mean_prob"]],
        "Confirmed rate": [_percent(x) for x in rows["rate"]],
        "Calibration error (points)": np.round(100 * rows["ece"].to_numpy(dtype=float), 2),
        "In words": [f"predicted {_percent(p)}, confirmed {_percent(r)} of {n:,} patients"
                     for p, r, n in zip(rows["mean_prob"], rows["rate"], rows["n"])],
    })


def looks_miscalibrated(table: pd.DataFrame) -> list[str]:
    """Codes whose calibration error is at least MISCALIBRATED_POINTS percentage points, worst first."""
    bad = table[100 * table["ece"] >= MISCALIBRATED_POINTS].sort_values("ece", ascending=False, kind="stable")
    return bad["code"].astype(str).tolist()


def before_after_bins(probs, labels, maps, size: int, code_index: int | None = None, groups=None) -> dict[str, pd.DataFrame]:
    """Reliability bins of the patients after the fold, before and after the maps ({line name: bins}).

    Pooled over codes, or of one code (``code_index``); per segment with ``groups`` (one label per patient).
    """
    probs, labels = np.asarray(probs, dtype=float), np.asarray(labels)
    raw, mapped, truth = probs[size:], maps.apply(probs[size:]), labels[size:]
    if code_index is not None:
        raw, mapped, truth = raw[:, [code_index]], mapped[:, [code_index]], truth[:, [code_index]]
    if groups is None:
        return {"Before recalibration": data_views.reliability_bins(raw, truth),
                "After recalibration": data_views.reliability_bins(mapped, truth)}
    later = np.asarray(groups, dtype=object)[size:]
    before = data_views.reliability_by_segment(raw, truth, later)
    after = data_views.reliability_by_segment(mapped, truth, later)
    out = {}
    for segment in before:
        out[f"{segment} · before"] = before[segment]
        out[f"{segment} · after"] = after[segment]
    return out


def show_calibration_check(probs, labels, codes, settings: dict, groups=None, segment: str | None = None) -> None:
    """The Data page's calibration check: per-code error table and advice; with recalibration set,
    the before/after errors and reliability curves on the patients after the fold."""
    st.subheader("Does the classifier look miscalibrated?")
    table = calibration_error(probs, labels, codes=codes)
    bad = looks_miscalibrated(table)
    size = settings.get("recalibrate")
    if bad:
        worst = table.set_index("code").loc[bad[0]]
        advice = (f"**Yes, for {len(bad)} of {len(table)} codes**: their predicted and confirmed rates differ by "
                  f"{MISCALIBRATED_POINTS:g} percentage points or more (worst: {md(bad[0])}, predicted {_percent(worst['mean_prob'])}, "
                  f"confirmed {_percent(worst['rate'])} of {int(worst['n']):,} patients).")
        split = suggested_split(len(probs), int(settings.get("burn_in") or 0))
        if size is None and split is not None:
            advice += (f" Consider recalibrating on the first {split:,} patients "
                       "(Value & cost → Recalibration): the price score needs calibrated probabilities to capture the most value.")
        st.warning(advice, icon=":material/tune:")
    else:
        st.success(f"No: every code's predicted and confirmed rates agree within {MISCALIBRATED_POINTS:g} percentage points "
                   "(10 probability bins).", icon=":material/check_circle:")
    with st.expander("Calibration error per code (all patients)", expanded=bool(bad)):
        widgets.table(calibration_display(table), height=260, hide_index=True)
        st.caption("Calibration error: over 10 equal-width probability bins, the patient-weighted average gap between the "
                   "predicted probability and the share of patients who truly have the code (expected calibration error), "
                   "in percentage points.")
    if size is None:
        return
    method = settings.get("recalibration") or DEFAULT_RECALIBRATION
    maps, report = recalibration_report(probs, labels, int(size), method, codes=codes)
    st.markdown(f"**Recalibration set: {METHOD_LABELS[method].split(' (')[0].lower()} ({md(method)}) fitted on the first {int(size):,} "
                f"patients**, measured on the {len(probs) - int(size):,} patients after them.")
    if maps.fallback_codes:
        st.info(md(f"{len(maps.fallback_codes)} code(s) never occur (or never vary) in the fold, so their probability is replaced by "
                   f"the fold's prevalence: {', '.join(maps.fallback_codes)}."), icon=":material/info:")
    shown = report.assign(before=np.round(100 * report["ece_before"], 2), after=np.round(100 * report["ece_after"], 2))
    shown = shown.rename(columns={"code": "Code", "n": "Patients after the fold", "positives": "Confirmed after the fold",
                                  "fold_positives": "Confirmed in the fold", "fallback": "Fold prevalence used",
                                  "before": "Error before (points)", "after": "Error after (points)"})
    widgets.table(shown[["Code", "Patients after the fold", "Confirmed after the fold", "Confirmed in the fold",
                         "Fold prevalence used", "Error before (points)", "Error after (points)"]], height=260, hide_index=True)
    names = ["All codes (pooled)"] + [str(c) for c in codes]
    pick = st.selectbox("Reliability curve of", names, key="recalibration_curve_code")
    index = None if pick == names[0] else names.index(pick) - 1
    lines = before_after_bins(probs, labels, maps, int(size), index, groups)
    widgets.chart(figures.reliability_figure(lines[next(iter(lines))], lines, legend_title="Segment · recalibration" if groups is not None
                                             else "Recalibration",
                                             title="Reliability before and after recalibration"), key="recalibration_chart")
    st.caption(("Per segment (column " + md(segment) + "), " if groups is not None else "")
               + f"{md(pick)}, patients after the fold, 10 equal-width bins: before and after the fold's correction.")


def tradeoff_option(settings: dict, n_patients: int, where=st) -> int | None:
    """The Trade-offs form's option: add "FavMac (price) + recalibration"; returns its fold size R or None.

    R is the settings' R when recalibration is set, else :func:`suggested_split`; on by default when it is set.
    """
    size = settings.get("recalibrate") or suggested_split(n_patients, int(settings.get("burn_in") or 0))
    if size is None:
        return None
    on = where.checkbox(f"Also show FavMac (price) + recalibration on the first {size:,} patients", value=bool(settings.get("recalibrate")),
                        key="grid_recalibrate",
                        help="The same method with and without recalibration. Every other method then calibrates on those "
                             f"{size:,} patients too, so every row is measured on the same patients.")
    return int(size) if on else None


def tradeoff_caption(size: int | None, settings: dict) -> str | None:
    """What the recalibration row means, for the Trade-offs caption (None without it)."""
    if size is None:
        return None
    method = settings.get("recalibration") or DEFAULT_RECALIBRATION
    return (f"FavMac (price) + recalibration: {METHOD_LABELS[method].split(' (')[0].lower()} ({method}) fitted on the first {size:,} "
            f"patients, who get no prediction; the other methods use them as calibration patients instead, so all are measured "
            f"on the same patients after the first {size + int(settings['burn_in']):,}.")


def fold_note(settings: dict, page: str) -> str | None:
    """What the recalibration fold means on the Online session (``page="online"``) or Export (``"export"``) page;
    None without recalibration."""
    size = settings.get("recalibrate")
    if not size:
        return None
    method = settings.get("recalibration") or DEFAULT_RECALIBRATION
    if page == "online":
        return (f"Recalibration: patients 1–{size:,} are the recalibration fold. They get no prediction and never join the "
                f"calibration data; they only fit each code's correction ({method}). The burn-in is the next "
                f"{int(settings['burn_in']):,} patients, and every probability after the fold is the corrected one.")
    return (f"Recalibrated run: every set here, the new patients' included, is chosen on probabilities corrected with the per-code "
            f"maps ({method}) fitted on the first {size:,} patients, who get no set. The maps are stored in the settings "
            "JSON and the provenance record, so the same correction is applied to new patients later.")


def fold_maps(dataset, settings: dict):
    """The per-code maps of the settings' fold (``fit_recalibration`` on the first R patients, as the replay
    fits them), or None without recalibration: stored in the settings JSON and the provenance record."""
    size = settings.get("recalibrate")
    if not size:
        return None
    return fit_recalibration(dataset.prob_array()[:size], dataset.label_array()[:size],
                             settings.get("recalibration") or DEFAULT_RECALIBRATION, codes=dataset.codes)
