"""App pieces for the guarantees an auditor acts on: segments, the adaptive target, provenance.

Small ``show_*`` functions the pages call; the numbers come from the library
(:mod:`favmac.segments`, :mod:`favmac.adaptive`, :mod:`favmac.provenance`).
"""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from favmac.adaptive import adaptive_series, delay_advice, result_lag
from favmac.provenance import provenance, provenance_json
from favmac.runspec import MAX_ADAPTIVE_RATE
from favmac.scores import result_score
from favmac.segments import running_by_segment, segment_table
from favmac.ui.figures import OKABE_ITO, PALETTE, layout
from favmac.ui.formats import INPUT_FORMAT, fixed
from favmac.ui.text import md, md_frame, plain_html
from favmac.ui.units import (CHARTS, cost_unit, counts_styled, over_target, per_100_charts, per_charts, target_per_100, threshold_column, threshold_label,
                             threshold_rule)

__all__ = ["DEFAULT_RATE", "adaptive_figure", "new_patient_threshold", "provenance_bytes", "segment_caption", "segment_cost_figure",
           "segment_display", "segment_units", "segment_thresholds", "settings_fields", "settings_with_provenance", "show_adaptive_tiles", "show_segment_table",
           "stream_patient_where"]

DEFAULT_RATE = 0.05


def settings_fields(current: dict, dataset) -> dict:
    """The per-segment and adaptive-target widgets (inside the settings form); returns their values.

    Keys: ``segment`` (None, a column name, or a list of columns: several groupings at once)
    and ``adaptive_rate`` (gamma or None).
    """
    st.subheader("Segments and drift")
    columns = dataset.segment_columns()
    on = st.checkbox("Control cost per segment (plan, region, provider)", value=current.get("segment") is not None,
                     key="use_segments", disabled=not columns,
                     help="Each patient is calibrated only on earlier patients of its own segment, so every segment "
                          "keeps its own guarantee (a cms_cell column gives one guarantee per CMS-HCC cell, and stays each "
                          "member's cell for the payment value)." if columns else
                          "The calibration file has no segment column: add a column named 'segment' (or, in a wide "
                          "file, any text column) to use this.")
    saved = [current["segment"]] if isinstance(current.get("segment"), str) else list(current.get("segment") or ())
    chosen = saved[0] if saved and saved[0] in columns else (columns[0] if columns else None)
    column = st.selectbox("Segment column", columns or ["(none in this file)"],
                          index=columns.index(chosen) if chosen in columns else 0, key="segment_column",
                          disabled=not (columns and on))
    others = [c for c in columns if c != column]
    more = st.multiselect("Also keep the guarantee per (several groupings at once)", others, key="more_segment_columns",
                          default=[c for c in saved[1:] if c in others],
                          disabled=not (others and on), placeholder="No other column" if not others else "Choose columns",
                          help="Each patient gets the smallest of its groups' thresholds (one group per column), so every "
                               "group of every column keeps its guarantee at once, though the groups overlap.")
    adaptive = st.checkbox("Adaptive target under drift (expected cost only)", value=current.get("adaptive_rate") is not None,
                           key="use_adaptive",
                           help="The target moves with the cost of each chosen set: c(n+1) = c(n) + γ (c − C(n)). "
                                "The mean cost stays within c + (c + γ C_max)/(γ S) for ANY stream, drifting or not.")
    rate = st.number_input("Adaptive rate γ", min_value=0.0, max_value=float(MAX_ADAPTIVE_RATE),  # RunSpec's range
                           value=float(current.get("adaptive_rate") or DEFAULT_RATE), step=0.01, format=INPUT_FORMAT,
                           key="adaptive_rate", disabled=not adaptive)
    segment = None if not (on and columns) else [column, *more] if more else column
    return {"segment": segment, "adaptive_rate": float(rate) if adaptive else None}


def segment_display(result, settings: dict, grouping=None) -> pd.DataFrame:
    """The per-segment table as shown: numbers as text with fixed decimals, status words for the
    within-target flag; ``patients`` counts the segment's calibration patients (burn-in included),
    ``predicted`` those after the burn-in, over whom the mean cost and violation rate are taken.
    ``grouping``: which grouping (``favmac.segments.segment_table``), default the first."""
    table = segment_table(result, grouping=grouping)
    units, score = segment_units(result, settings)
    shown = pd.DataFrame({
        "segment": table["segment"].astype(str),
        "patients": table["patients"],
        "predicted": table["predicted"],
        threshold_label(units, score): threshold_column(table["threshold"], units, score),
        # per 100 charts, as the tiles and charts; under violation control c is a cost per chart (cost > c)
        "mean cost": fixed(CHARTS * table["mean_cost"], 1),
        **({"target c": [f"{t:g}" for t in table["target"]]} if settings["control"] == "violation"
           else {"target": [per_100_charts(t) for t in table["target"]]}),
        "violation rate": fixed(100 * table["violation_rate"], 1, " %"),
    })
    if settings["control"] == "violation":
        shown["δ"] = [f"{d:g}" for d in table["delta"]]
    adaptive = table["bound"].notna().any()
    if adaptive:
        shown["bound (adaptive)"] = fixed(CHARTS * table["bound"], 1)
    line = "bound" if adaptive else "target"
    shown["status"] = ["too small" if w else (f"within {line}" if ok else (f"over {line}" if ok is not None else "—"))
                       for w, ok in zip(table["warning"], table["within_target"])]
    shown["T (math)"] = [f"{t:.4g}" for t in table["threshold"]]
    shown["warning"] = table["warning"]
    return shown


def segment_units(result, settings: dict) -> tuple[dict, str]:
    """(settings with the unit keys filled, score) for the per-segment tables' wording."""
    score = result.settings.get("score") or settings.get("score") or result_score(result)  # the one default, last
    return {"cost_kind": "fp", "value_kind": "tp", **settings}, score


def segment_caption(result, settings: dict) -> str:
    """What the per-segment table's columns are, in the user's units (no column is left unitless).

    >>> class R: settings = {"score": "price"}
    >>> print(segment_caption(R, {"control": "expected", "cost_kind": "fp", "value_kind": "tp"})[:92])
    Value per false flag: each segment's own threshold as a rule. A code is flagged when it brin
    """
    units, score = segment_units(result, settings)
    rule = threshold_rule(units, score)
    rate = ("violation rate: share of its predicted charts over the target c" if settings.get("control") != "violation"
            else "violation rate: share of its predicted charts over c, promised at most δ")
    return (f"{threshold_label(units, score)}: each segment's own threshold as a rule. {rule} "
            f"T (math): the same threshold on the {score} score. Mean cost"
            + (f": {cost_unit(units)} per 100 charts, over the segment's predicted patients; target c: the cost per chart "
               "that counts as a violation" if settings.get("control") == "violation" else
               f" and target: {cost_unit(units)} per 100 charts, over the segment's predicted patients")
            + f"; {rate}. "
            + ("Bound (adaptive): the most the segment's mean cost can reach with the adaptive target, for any "
               "stream, in the same unit; status compares the mean cost with it. " if settings.get("adaptive_rate") is not None else "")
            + "Patients: the segment's patients in the data (burn-in "
            "included); predicted: those after the burn-in. Status is this one ordering of the patients: a segment "
            "slightly over its target here can be noise; the Validity page tests the promise over many orderings.")


def show_segment_table(result, settings: dict) -> None:
    """The per-segment table with a warning line for every segment too small for the target."""
    if result.groups is None:
        return
    st.subheader("Per segment")
    table = segment_display(result, settings)
    st.caption(md(segment_caption(result, settings)))
    # a few rows: a plain table, readable and printable; the warnings are said below it, not as a mostly empty column
    st.table(counts_styled(md_frame(table.drop(columns=["warning"]).set_index("segment"))))
    for segment, warning in zip(table["segment"], table["warning"]):
        if warning:
            st.warning(f"Segment {md(segment)}: {md(warning)}.")


def segment_thresholds(result, new_patients, settings: dict, score: str) -> pd.DataFrame | None:
    """Each segment's final threshold as the new patients get it (None when the run is pooled or
    the new-patients file has no segment column): segment, threshold, rule (the threshold in the
    user's units, as ``units.threshold_column`` shows it), its calibration patients and its new patients."""
    groups = None if new_patients is None else new_patients.attrs.get("groups")
    if result.group_thresholds is None or groups is None:
        return None
    labels = pd.Series([str(g).strip() for g in groups])
    counts = labels.value_counts()
    rows = [{"segment": str(label), "threshold": float(final[0]),
             "calibration patients": int(result.group_sizes[label]), "new patients": int(counts.get(label, 0))}
            for label, final in result.group_thresholds.items()]
    rows += [{"segment": str(label), "threshold": float("-inf"), "calibration patients": 0, "new patients": int(n)}
             for label, n in counts.items() if label not in result.group_thresholds]
    table = pd.DataFrame(rows)
    rule = threshold_column(table["threshold"], settings, score)  # one number of decimals for the whole column
    table.insert(2, "rule", [r if n else "nothing flagged (no calibration patients)" for r, n in zip(rule, table["calibration patients"])])
    return table


def delay_warning(rate, lag) -> None:
    """A warning when the adaptive rate is too fast for labels that arrive ``lag`` patients late
    (:func:`favmac.adaptive.delay_advice`)."""
    advice = delay_advice(rate, lag)
    if advice:
        st.warning(advice, icon=":material/hourglass_bottom:")


def show_adaptive_tiles(result, position: int, columns) -> None:
    """c_n beside the threshold, and the running mean cost against the deterministic bound."""
    series = adaptive_series(result)
    label = "Adaptive target (per 100 charts)"  # per 100 charts as the bound and the mean cost beside it
    if position <= 0:
        columns[0].metric(label, per_100_charts(float(result.targets[0])), help="c_n × 100 before the first patient: the target c.")
        return
    row = series.iloc[position - 1]
    columns[0].metric(label, per_100_charts(row["adaptive_target"]),
                      help=f"c_n × 100 (c_n = {row['adaptive_target']:.4g} per chart): the target used for this patient; "
                           "it moves by γ (c − cost of the last set).")
    columns[1].metric("Bound (per 100 charts)", per_100_charts(row["bound"]),
                      help="c + (c + γ C_max)/(γ S), per 100 charts: the running mean cost (tile above) never exceeds it, for any stream.")


def adaptive_figure(result, position: int, cost_unit: str) -> go.Figure:
    """c_n, the running mean cost and its deterministic bound over the stream, per 100 charts (as the tiles)."""
    series = adaptive_series(result).iloc[:max(position, 1)]
    target = float(result.targets[0])
    fig = go.Figure()
    hover = f"patient #%{{x}}<br>%{{fullData.name}}: %{{y:.4g}} {plain_html(cost_unit)} {per_charts()}<extra></extra>"
    fig.add_scatter(x=series["position"], y=CHARTS * series["adaptive_target"], mode="lines", name="Adaptive target c_n",
                    line={"color": OKABE_ITO["blue"]}, hovertemplate=hover)
    fig.add_scatter(x=series["position"], y=CHARTS * series["mean_cost"], mode="lines", name="Running mean cost",
                    line={"color": OKABE_ITO["vermillion"]}, hovertemplate=hover)
    fig.add_scatter(x=series["position"], y=CHARTS * series["bound"], mode="lines", name="Deterministic bound",
                    line={"color": OKABE_ITO["black"], "dash": "dot"}, hovertemplate=hover)
    fig.add_hline(y=CHARTS * target, line={"color": OKABE_ITO["black"], "dash": "dash"})
    fig.add_scatter(x=[None], y=[None], mode="lines", name=f"Target: {target_per_100(target)}",
                    line={"color": OKABE_ITO["black"], "dash": "dash"})  # the dashed line's legend entry
    fig.update_yaxes(range=[CHARTS * min(0.0, float(series["adaptive_target"].min())), CHARTS * 2.5 * target])
    return layout(fig, "Adaptive target and the bound it guarantees", "Stream position (patients)",
                   f"Cost {per_charts()} ({plain_html(cost_unit)})", height=360, legend="bottom")  # four entries: under the plot


#: Height (px) a legend entry takes under a chart (plotly draws a narrow chart's entries one per row).
LEGEND_ROW = 22


def segment_cost_figure(result, position: int, settings: dict) -> go.Figure:
    """Running mean cost per 100 charts (as the tiles) per segment against the target, or the violation rate
    against delta."""
    runs = running_by_segment(result)
    runs = runs[runs["step"] < max(position, 1)]
    expected = settings["control"] == "expected"
    column, scale = ("mean_cost", CHARTS) if expected else ("violation_rate", 1.0)
    hover = ("patient #%{x}<br>%{fullData.name}: " + (f"%{{y:.4g}} {plain_html(cost_unit(settings))} {per_charts()}" if expected
                                                      else "%{y:.1%} of charts over the target") + "<extra></extra>")
    fig = go.Figure()
    for i, (segment, part) in enumerate(runs.groupby("segment", sort=True)):
        fig.add_scatter(x=part["position"], y=scale * part[column], mode="lines", name=plain_html(segment),
                        line={"color": PALETTE[i % len(PALETTE)]}, hovertemplate=hover)
    line = settings["target"] if expected else settings["delta"]
    fig.add_hline(y=scale * line, line={"color": OKABE_ITO["black"], "dash": "dash"})
    fig.add_scatter(x=[None], y=[None], mode="lines", name=f"Target: {target_per_100(line)}" if expected else f"δ = {line:g}",
                    line={"color": OKABE_ITO["black"], "dash": "dash"})  # the dashed line's legend entry
    fig.update_yaxes(rangemode="tozero", **({} if expected else {"tickformat": ".0%"}))  # as the pooled violation chart: 10%, not 0.1
    title = ("Running mean cost per segment" if expected
             else f"Running share of charts with {plain_html(over_target(settings['target'], cost_unit(settings)))}, per segment")
    # the legend (a line per segment and the target's) in rows under the plot: above it, it crowded the title;
    # the chart grows a row per entry, so eight segments do not squash the plot into a sliver
    return layout(fig, title, "Stream position (patients)", f"Mean {cost_unit(settings)} {per_charts()}" if expected else "Share of charts over the target (%)",
                  height=300 + LEGEND_ROW * len(fig.data), legend="bottom")


def settings_with_provenance(settings_json: bytes, dataset, spec, weights_source: str, recalibration=None) -> bytes:
    """The settings file with the provenance record under its top-level ``provenance`` key
    (the settings reader ignores that key, so the file still restores the settings)."""
    import json

    doc = json.loads(settings_json)
    doc["provenance"] = json.loads(provenance_bytes(dataset, spec, weights_source, {}, recalibration=recalibration))
    return json.dumps(doc, indent=2).encode()


def new_patient_threshold(result, new_patients, patient_id, n_calibration: int) -> tuple[float, str]:
    """(threshold, where it comes from) for one new patient: its segment's final threshold when the
    run is per segment and the new-patients file has segments, else the pooled final threshold."""
    groups = new_patients.attrs.get("groups")
    if result.group_thresholds is None or groups is None:
        return float(result.final_thresholds[0]), f"threshold learned from all {n_calibration:,} calibration patients"
    label = str(groups[new_patients.index.get_loc(patient_id)])
    if label not in result.group_thresholds:
        return float("-inf"), f"segment {label} has no calibration patients, so its set is empty"
    return (float(result.group_thresholds[label][0]),
            f"threshold of segment {label}, learned from its {result.group_sizes[label]:,} calibration patients")


def stream_patient_where(result, step: int, position: int) -> str:
    """Where a stream patient's threshold came from (its segment's earlier patients with segments)."""
    if result.groups is None:
        return f"stream position {position:,}; threshold learned from the {position:,} patients before it"
    return f"stream position {position:,}; threshold learned from the earlier patients of segment {result.groups[step]}"


def provenance_bytes(dataset, spec, weights_source: str, outputs: dict, new_patients=None, recalibration=None) -> bytes:
    """The provenance JSON of the app's exports (:mod:`favmac.provenance`; ``recalibration``: the run's fitted maps)."""
    inputs = dict(dataset.sources or {})
    if new_patients is not None:
        inputs.update(new_patients.attrs.get("sources", {}))
    cms = None
    if weights_source.startswith("CMS-HCC "):
        parts = weights_source.split()
        cms = {"model": parts[1], "segment": parts[2] if len(parts) > 2 else None}
    notes = f"weights: {weights_source}"
    return provenance_json(provenance(spec, inputs=inputs, codes=dataset.codes, cms=cms, outputs=outputs, notes=notes,
                                      recalibration=recalibration))
