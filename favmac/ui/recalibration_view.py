"""Recalibration on a split, in the app: the Value & cost widgets, the Data page's calibration check.

The math is :mod:`favmac.recalibration` (the maps, ``calibration_error``, ``recalibration_report``, the
default fold ``default_recalibrate`` and the held-out evidence ``recalibration_evidence``); this module
only turns its tables into the auditor's units ("predicted 30 %, confirmed 12 %", "0.262 RAF per chart")
and draws them. ``calibration_display``, ``suggested_split``, ``default_note``, ``evidence_advice`` and
``fold_note`` are plain functions (tests/ui).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from favmac.recalibration import (DEFAULT_FOLD, DEFAULT_FOLD_MIN_PATIENTS, DEFAULT_RECALIBRATION, MIN_FOLD, MIN_SEGMENT_CLASS,
                                  RECALIBRATIONS, calibration_error, default_recalibrate, recalibration_report)
from favmac.recalibration_evidence import HALVES, better_method, candidate_methods, evidence_summary, recalibration_evidence
from favmac.ui import data_views, figures, widgets
from favmac.ui.parsing import CACHE_TTL_SECONDS
from favmac.ui.settings_form import run_key
from favmac.ui.text import md
from favmac.ui.units import cost_unit, value_phrase

__all__ = ["METHOD_LABELS", "METHOD_HELP", "MISCALIBRATED_POINTS", "settings_fields", "suggested_split", "default_note",
           "calibration_display", "looks_miscalibrated", "before_after_bins", "show_calibration_check", "evidence_fold",
           "evidence_advice", "switch_advice", "evidence_display", "show_heldout_check", "stream_intro", "tradeoff_option", "tradeoff_caption", "fold_note"]

METHOD_LABELS = {"platt_tested": "Smooth curve only where the fold shows a code is off (tested Platt, the default)",
                 "platt_family": "The same, each code read beside its hierarchy family (CMS-HCC codes; tested Platt with family)",
                 "platt": "Smooth curve for every code (Platt scaling)", "isotonic": "Step curve (isotonic)"}
METHOD_HELP = ("How each code's probabilities are corrected, learned from the fold's patients only. "
               "Smooth curve only where the fold shows a code is off (the default): a code keeps its own probabilities "
               "unless the fold's patients reject them (a statistical test per code), so a classifier that was already "
               "calibrated loses almost nothing. Smooth curve for every code: one S-shaped correction per code (two numbers); "
               "it keeps the order of the patients and is steady even with few positives. Step curve: any rising staircase; "
               "it can fix odder shapes but needs more positives per code and costs a little on a classifier that was "
               "already calibrated. With hierarchy families (CMS-HCC codes), the family option also reads each code beside "
               "the highest probability of its family's other codes, which repairs a classifier whose evidence for one "
               "level of a ladder (diabetes, cancer, kidney disease) raises the scores of its other levels too. Probabilities exported with few decimals (0.00, 0.01, ...) are read at their "
               "resolution: 0.00 counts as below 0.005, not as impossible.")
#: The maps' names in a sentence or a table cell ("A better correction for this data: ...").
SHORT_LABELS = {"platt_tested": "tested Platt", "platt_family": "tested Platt with hierarchy families",
                "platt": "Platt scaling", "isotonic": "isotonic (step curve)"}
# a code whose predicted and confirmed rates differ by this many percentage points (ECE) or more
MISCALIBRATED_POINTS = 2.0
assert set(METHOD_LABELS) == set(RECALIBRATIONS) == set(SHORT_LABELS)


def suggested_split(n_patients: int, burn_in: int) -> int | None:
    """A fold size to suggest: a fifth of the stream, between MIN_FOLD and 1,000 patients,
    leaving the burn-in and at least one patient to predict; None when the stream is too short."""
    room = n_patients - 1 - burn_in
    size = int(min(1000, max(MIN_FOLD, n_patients // 5), room))
    return size if size >= MIN_FOLD else None


def default_note(n_patients: int, burn_in: int) -> str:
    """What the default is for this data and why (the Value & cost form's line above the checkbox).

    >>> default_note(4000, 1000)[:40]
    '**On by default** for this data (4,000 l'
    >>> default_note(2000, 600)[:41]
    '**Off by default** for this data: 2,000 l'
    """
    fold = default_recalibrate(n_patients, burn_in=burn_in)
    if fold is not None:
        return (f"**On by default** for this data ({n_patients:,} labelled patients, at least {DEFAULT_FOLD_MIN_PATIENTS:,}): "
                f"patients 1–{fold:,} only fit a correction of each code's probabilities (a code keeps its own unless those "
                "patients show it is off); they get no set and never calibrate, and the burn-in counts the patients after them. "
                "Why: an over- or under-confident classifier loses 2–11 % of the value it could capture, which the correction "
                "recovers, while a calibrated one loses about 0.1–0.3 %. Untick the box to turn it off; the Data page "
                "shows whether it gains on patients it was not fitted on.")
    return (f"**Off by default** for this data: {n_patients:,} labelled patients, fewer than the {DEFAULT_FOLD_MIN_PATIENTS:,} "
            f"from which a {DEFAULT_FOLD:,}-patient fold is worth the calibration patients it takes (or no room beside the "
            "burn-in). Tick the box to recalibrate anyway.")


def settings_fields(current: dict, n_patients: int) -> dict:
    """The recalibration widgets (inside the settings form); keys ``recalibrate`` (R or None), ``recalibration``
    and ``recalibrate_by`` ("code", or "segment": maps per group of the one segment column)."""
    st.subheader("Recalibration")
    st.caption(default_note(n_patients, int(current.get("burn_in") or 0)))
    on = st.checkbox("Recalibrate the classifier on the first R patients", value=current.get("recalibrate") is not None,
                     key="use_recalibrate",
                     help="The first R patients of the stream only teach a correction of each code's probabilities; they get no "
                          "prediction and never join the calibration. On by default from "
                          f"{DEFAULT_FOLD_MIN_PATIENTS:,} labelled patients (R = {DEFAULT_FOLD:,}). R is at least {MIN_FOLD}; "
                          "the burn-in counts patients after the fold.")
    default = current.get("recalibrate") or default_recalibrate(n_patients, burn_in=int(current.get("burn_in") or 0)) \
        or suggested_split(n_patients, int(current.get("burn_in") or 0)) or MIN_FOLD
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


def evidence_fold(settings: dict, n_patients: int) -> int | None:
    """The fold the Data page's held-out check splits: the settings' R, else the data's default fold
    (:func:`favmac.recalibration.default_recalibrate`), else :func:`suggested_split`; None when it cannot
    hold two halves of MIN_FOLD patients.

    >>> evidence_fold({"recalibrate": 600, "burn_in": 0}, 4000), evidence_fold({"burn_in": 1000}, 4000), evidence_fold({"burn_in": 0}, 150)
    (600, 1000, None)
    """
    burn_in = int(settings.get("burn_in") or 0)
    size = settings.get("recalibrate") or default_recalibrate(n_patients, burn_in=burn_in) or suggested_split(n_patients, burn_in)
    return int(size) if size and 2 * MIN_FOLD <= size <= n_patients else None


def _signed_percent(x: float) -> str:
    return "–" if not np.isfinite(x) else f"{x:+.1f} %"


def evidence_advice(summary: pd.Series, settings: dict, fold: int, method: str) -> tuple[str, str]:
    """(level, text) of the Data page's recommendation, from one row of
    :func:`favmac.recalibration_evidence.evidence_summary`: "success" (on, and it gains on every held-out half),
    "warning" (off though it gains everywhere; or on though it loses on average), "info" (no evidence
    either way). Amounts are value per chart in the settings' units at the settings' target."""
    half = fold // 2
    on = settings.get("recalibrate") is not None
    where = (f"fitted on one half of the fold (patients 1–{half:,}, then {half + 1:,}–{fold:,}) and measured on the other, "
             f"at c = {settings['target']:g} {cost_unit(settings)} per chart, the held-out charts captured "
             f"{value_phrase(summary['value_mapped'], settings)} per chart with the {SHORT_LABELS.get(method, md(method))} correction against "
             f"{value_phrase(summary['value_plain'], settings)} without it ({_signed_percent(summary['gain_percent'])})")
    if summary["recommended"]:
        if on:
            return "success", f"**Recalibration gains on patients it was not fitted on**: {where}, on both halves. It is on."
        return "warning", (f"**Consider recalibrating** (Value & cost → Recalibration): {where}, on both halves.")
    if on and summary["gain"] < 0:
        return "warning", (f"**Recalibration lost value on patients it was not fitted on**: {where}. Consider turning it off "
                           "(Value & cost → Recalibration, one click): its fold's patients then calibrate instead.")
    if summary["gain"] == 0:
        text = (f"**No held-out evidence of a gain**: {where}; the fold does not show any code to be off, so every code "
                "keeps its own probabilities.")
    else:
        text = (f"**No held-out evidence either way**: {where}; it gained on {int(summary['halves_gaining'])} of 2 halves.")
    if on:
        text += (" It is on by default; turning it off (Value & cost → Recalibration) gives its fold's patients to "
                 "calibration instead.")
    return "info", text


def switch_advice(table: pd.DataFrame, settings: dict, current: str, better: str) -> str:
    """The Data page's suggestion of another map (:func:`favmac.recalibration_evidence.better_method`: it beat the
    run's map ``current`` on both held-out halves), in the value's units, per chart, at the settings' target."""
    summary = evidence_summary(table)
    now, then = summary.loc[current], summary.loc[better]
    gain = 100 * (then["value_mapped"] - now["value_mapped"]) / now["value_mapped"] if now["value_mapped"] else np.nan
    state = "the correction in use" if settings.get("recalibrate") is not None else "the default correction"
    return (f"**A better correction for this data: {SHORT_LABELS[better]}.** On the same held-out charts, at c = "
            f"{settings['target']:g} {cost_unit(settings)} per chart, it captured {value_phrase(then['value_mapped'], settings)} "
            f"per chart against {value_phrase(now['value_mapped'], settings)} with {state} ({SHORT_LABELS[current]}; "
            f"{_signed_percent(gain)}), better on both halves of the fold.")


def evidence_display(table: pd.DataFrame, settings: dict) -> pd.DataFrame:
    """:func:`favmac.recalibration_evidence.recalibration_evidence`'s rows in words, one per held-out half."""
    fitted = {HALVES[0]: HALVES[1], HALVES[1]: HALVES[0]}
    return pd.DataFrame({
        "Correction": [SHORT_LABELS.get(m, m) for m in table["method"]],
        "Measured on": [f"{h} of the fold" for h in table["measured_on"]],
        "Fitted on": [f"{fitted[h]}" for h in table["measured_on"]],
        "Charts": table["patients"].astype(int).to_numpy(),
        "Without recalibration (per chart)": [value_phrase(x, settings) for x in table["value_plain"]],
        "With recalibration (per chart)": [value_phrase(x, settings) for x in table["value_mapped"]],
        "Gain": [_signed_percent(100 * g / p if p else np.nan) for g, p in zip(table["gain"], table["value_plain"])],
        f"Cost per chart without / with ({cost_unit(settings)})": [f"{a:.3g} / {b:.3g}" for a, b in
                                                                   zip(table["cost_plain"], table["cost_mapped"])],
    })


@st.cache_data(max_entries=8, max_size="16MB", show_spinner=False, ttl=CACHE_TTL_SECONDS)  # small tables
def _evidence(key: str, fold: int, methods: tuple, _dataset, _spec) -> pd.DataFrame:
    value, cost = _spec.build(_dataset.codes, getattr(_dataset, "members", None))
    return recalibration_evidence(_dataset.prob_array(), _dataset.label_array(), value, cost, _spec.target, fold=fold,
                                  methods=methods, delta=_spec.control_delta, universe=_spec.universe, score=_spec.score,
                                  codes=_dataset.codes)


def show_heldout_check(dataset, spec, settings: dict, data_key: str, on_switch=None) -> None:
    """The Data page's recommendation, on held-out evidence (:func:`favmac.recalibration_evidence.recalibration_evidence`
    for the settings' value, cost, target, control and score; cached per data and settings). Every map of
    :func:`favmac.recalibration_evidence.candidate_methods` is measured on the same halves; when another beat the
    settings' map on both (:func:`favmac.recalibration_evidence.better_method`), a button calls
    ``on_switch(method, fold)`` (the page stores the settings)."""
    st.subheader("Does recalibration gain on this data?")
    fold = evidence_fold(settings, dataset.n_patients)
    if fold is None:
        st.info(f"Too few patients to check: the held-out check needs a fold of at least {2 * MIN_FOLD} patients.",
                icon=":material/info:")
        return
    method = settings.get("recalibration") if settings.get("recalibrate") else DEFAULT_RECALIBRATION
    method = method or DEFAULT_RECALIBRATION
    methods = candidate_methods(dataset.codes, method)
    with st.spinner("Measuring the correction on held-out patients…"):
        table = _evidence(run_key(data_key, spec, ["recalibration evidence", fold, *methods]), fold, methods, dataset, spec)
    summary = evidence_summary(table).loc[method]
    level, text = evidence_advice(summary, settings, fold, method)
    getattr(st, level)(text, icon={"success": ":material/check_circle:", "warning": ":material/tune:",
                                   "info": ":material/info:"}[level])
    better = better_method(table, method)
    if better is not None:
        st.warning(switch_advice(table, settings, method, better), icon=":material/tune:")
        if on_switch is not None:  # a callback: the page's next run draws with the new settings
            st.button(f"Use {SHORT_LABELS[better]}", key="use_better_recalibration", on_click=on_switch, args=(better, fold),
                      help=f"Stores it in the settings (Value & cost → Recalibration shows it): the run fits it on the "
                           f"first {fold:,} patients.")
    with st.expander("The held-out check, half by half"):
        widgets.table(evidence_display(table, settings), hide_index=True)
        st.caption("Each half of the fold is measured with the correction fitted on the other half only. On the measured "
                   "half, the run's rule (value, cost, target, control and score of Value & cost) picks each chart's codes "
                   "with the threshold calibrated on that half's own confirmed codes, once on the classifier's probabilities "
                   "and once on the corrected ones: both spend the same budget on the same charts, so the difference is what "
                   "the correction changes in the value captured.")


def show_calibration_check(probs, labels, codes, settings: dict, groups=None, segment: str | None = None) -> None:
    """The Data page's calibration check: per-code error table; with recalibration set, the before/after
    errors and reliability curves on the patients after the fold. (Whether to recalibrate rests on
    held-out value: :func:`show_heldout_check`.)"""
    st.subheader("Does the classifier look miscalibrated?")
    table = calibration_error(probs, labels, codes=codes)
    bad = looks_miscalibrated(table)
    size = settings.get("recalibrate")
    if bad:
        worst = table.set_index("code").loc[bad[0]]
        st.warning(f"**Yes, for {len(bad)} of {len(table)} codes**: their predicted and confirmed rates differ by "
                   f"{MISCALIBRATED_POINTS:g} percentage points or more (worst: {md(bad[0])}, predicted {_percent(worst['mean_prob'])}, "
                   f"confirmed {_percent(worst['rate'])} of {int(worst['n']):,} patients). Whether recalibrating gains value is "
                   "measured below on held-out patients.", icon=":material/tune:")
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


def stream_intro(settings: dict, n_patients: int, burn_in_total: int, n_steps: int, per_segment: bool) -> str:
    """The Online session's first line: which patients are in the recalibration fold, which only calibrate
    (burn-in) and which are predicted (``burn_in_total``: the replay's, fold included).

    >>> stream_intro({"recalibrate": 1000, "burn_in": 1000}, 4000, 2000, 2000, False)[:104]
    '4,000 patients: patients 1–1,000 are the recalibration fold (no set and never calibration data: they onl'
    """
    size = int(settings.get("recalibrate") or 0)
    rule = ("chosen with its own segment's threshold, learned from the earlier patients of that segment; then its true codes "
            "join that segment's calibration data." if per_segment else
            "chosen with the threshold learned from everyone before it, then its true codes join the calibration data.")
    if not size:
        return (f"{n_patients:,} patients: the first {burn_in_total:,} only calibrate (burn-in); each of the next {n_steps:,} "
                f"gets a set {rule}")
    rule = rule.replace("everyone before it", "everyone before it after the fold")
    first, last = size + 1, burn_in_total
    burn = (f"patients {first:,}–{last:,} only calibrate (burn-in)" if last >= first else "no patient only calibrates (burn-in 0)")
    return (f"{n_patients:,} patients: patients 1–{size:,} are the recalibration fold (no set and never calibration data: they "
            f"only fit each code's correction); {burn}; each of the last {n_steps:,} (patients {burn_in_total + 1:,}–"
            f"{n_patients:,}) gets a set {rule}")


def fold_note(settings: dict, page: str) -> str | None:
    """What the recalibration fold means on the Online session (``page="online"``) or Export (``"export"``) page;
    None without recalibration."""
    size = settings.get("recalibrate")
    if not size:
        return None
    method = settings.get("recalibration") or DEFAULT_RECALIBRATION
    if page == "online":
        return (f"Recalibration ({METHOD_LABELS[method].split(' (')[0].lower()}, {method}): patients 1–{size:,} are the "
                f"recalibration fold; every probability after it is the corrected one. It is on by default from "
                f"{DEFAULT_FOLD_MIN_PATIENTS:,} labelled patients, because a classifier that is over- or under-confident loses "
                "value the correction recovers; one click on Value & cost → Recalibration turns it off.")
    return (f"Recalibrated run: every set here, the new patients' included, is chosen on probabilities corrected with the per-code "
            f"maps ({method}) fitted on the first {size:,} patients, who get no set. The maps are stored in the settings "
            "JSON and the provenance record, so the same correction is applied to new patients later.")
