"""App pieces for several groupings at once and labels that arrive later (issue 20).

The numbers come from the library (:func:`favmac.segments.grouping_tables`,
``ReplayResult.labels_pending`` / ``calibration_sizes``, :func:`favmac.export.grouping_thresholds`);
this module only shows them: one table per grouping saying which grouping binds for each group,
the Online session's per-group curves split by a grouping the user picks (and which grouping
binds for each recent patient), the labels pending and the calibration size, and the thresholds
new patients get. New-patient files carry the same grouping columns as the calibration file
(:func:`new_patients_for`: the groups the settings use, a clear refusal when a column is missing;
a group the calibration data lacks gets the empty set, as :func:`favmac.segments.smallest_group_thresholds`
rules, and :func:`unseen_groups` says so).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from favmac.export import grouping_thresholds as new_grouping_thresholds
from favmac.io import DataError
from favmac.segments import grouping_tables
from favmac.ui.figures import OKABE_ITO, layout
from favmac.ui.formats import fixed
from favmac.ui import widgets
from favmac.ui.arrivals_view import mark_fold
from favmac.ui.guarantees import new_patient_threshold as one_grouping_threshold
from favmac.ui.guarantees import stream_patient_where as one_grouping_where
from favmac.ui.guarantees import segment_caption, segment_cost_figure, segment_display, segment_thresholds, show_segment_table
from favmac.ui.text import md, md_frame, plain_html
from favmac.ui.units import counts_styled, threshold_column, threshold_label, threshold_rule

__all__ = ["binding_groupings", "choose_grouping", "delay_figure", "grouping_cost_figure", "grouping_display",
           "grouping_thresholds", "new_patient_threshold", "new_patient_thresholds", "new_patients_for", "new_patients_rule", "segment_columns", "show_delay_chart",
           "show_delay_tiles", "show_grouping_tables", "show_new_patient_groups", "stream_patient_where", "show_grouping_thresholds", "show_unseen_groups", "unseen_groups",
           "threshold_series", "threshold_title", "with_binding"]


def segment_columns(settings: dict) -> list[str]:
    """The segment columns of ``settings`` as a list (none, one, or several groupings).

    >>> segment_columns({"segment": None}), segment_columns({"segment": "plan"}), segment_columns({"segment": ("plan", "age")})
    ([], ['plan'], ['plan', 'age'])
    """
    segment = settings.get("segment")
    if not segment:
        return []
    return [segment] if isinstance(segment, str) else list(segment)




def grouping_display(result, settings: dict) -> dict[str, pd.DataFrame]:
    """Grouping name -> its table as shown: the per-segment table's columns and formats
    (:func:`favmac.ui.guarantees.segment_display`), the threshold as a rule in the user's units,
    and ``binds``: the share of the group's predicted patients whose threshold came from this
    grouping (the library's ``binds``, :func:`favmac.segments.grouping_tables`)."""
    shown = {}
    for i, (name, table) in enumerate(grouping_tables(result).items()):
        frame = segment_display(result, settings, grouping=i)  # the threshold as a rule in the user's units, and T
        frame["binds"] = fixed(100 * table["binds"], 0, " % of its patients")
        shown[name] = frame
    return shown


def show_grouping_tables(result, settings: dict) -> None:
    """One table per grouping with several segment columns (the one per-segment table with one),
    each group's warning when it is too small for the target."""
    if result.groups is None:
        return
    if len(getattr(result, "groupings", None) or ()) < 2:
        show_segment_table(result, settings)
        return
    st.subheader("Per segment, for each grouping")
    st.caption("Each patient uses the smallest of its groups' thresholds. **binds**: how often that group's threshold was "
               "the one used; near 100 % the grouping is the one holding those patients back. " + md(segment_caption(result, settings)))
    for name, table in grouping_display(result, settings).items():
        st.markdown(f"**{md(name)}**")
        st.table(counts_styled(md_frame(table.drop(columns=["warning"]).set_index("segment"))))  # group labels are user text
        for segment, warning in zip(table["segment"], table["warning"]):
            if warning:
                st.warning(f"{md(name)} {md(segment)}: {md(warning)}.")


def grouping_thresholds(result, settings: dict, score: str) -> dict[str, pd.DataFrame] | None:
    """Grouping name -> each group's final threshold (calibrated on all its patients): segment,
    threshold, rule (in the user's units) and calibration patients; None with fewer than two groupings."""
    groupings = getattr(result, "groupings", None) or ()
    if len(groupings) < 2:
        return None
    tables = {g.name: pd.DataFrame([{"segment": str(label), "threshold": float(final[0]), "calibration patients": int(g.sizes[label])}
                                    for label, final in g.final_thresholds.items()])
              for g in groupings}
    for table in tables.values():  # one number of decimals per column
        table.insert(2, "rule", threshold_column(table["threshold"], settings, score))
    return tables


def show_grouping_thresholds(result, settings: dict, score: str) -> None:
    """The Export page's per-grouping thresholds: which threshold applies to which group."""
    tables = grouping_thresholds(result, settings, score)
    if tables is None:
        return
    st.subheader("Thresholds per grouping")
    label = threshold_label(settings, score)
    st.caption("Each group's threshold calibrated on all its labelled patients; a patient gets the smallest threshold "
               f"of its groups (one per grouping). {md(label)}: {md(threshold_rule(settings, score))} "
               "T (math): the same threshold as the export's threshold column.")
    for name, table in tables.items():
        st.markdown(f"**{md(name)}**")
        shown = pd.DataFrame({"segment": table["segment"], label: table["rule"],
                              "calibration patients": table["calibration patients"],
                              "T (math)": [f"{t:.4g}" for t in table["threshold"]]})  # the rule in the user's units first
        st.table(counts_styled(md_frame(shown.set_index("segment"))))


def delay_series(result) -> pd.DataFrame | None:
    """Per predicted patient: position, labels pending, calibration size (None without a delay)."""
    if result.labels_pending is None or not (result.settings.get("label_delay") is not None
                                             or result.settings.get("label_arrivals") is not None):
        return None
    n = len(result.labels_pending)
    return pd.DataFrame({"position": range(result.burn_in, result.burn_in + n), "labels_pending": result.labels_pending,
                         "calibration_size": result.calibration_sizes})


def show_delay_tiles(result, position: int) -> None:
    """Labels pending and the calibration size at the session's position, as tiles (nothing without a delay)."""
    series = delay_series(result)
    if series is None or position <= 0:
        return
    row = series.iloc[position - 1]
    columns = st.columns(5)
    columns[0].metric("Labels pending (patients)", f"{int(row['labels_pending']):,}",
                      help="Earlier patients already predicted whose confirmed codes have not arrived yet: they do not "
                           "calibrate this patient's threshold.")
    columns[1].metric("Calibration size (patients)", f"{int(row['calibration_size']):,}",
                      help="Labelled patients this patient's threshold was calibrated on.")


def show_delay_chart(result, position: int) -> None:
    """:func:`delay_figure` beside nothing, half the page wide (nothing without a delay)."""
    figure = delay_figure(result, position)
    if figure is not None:
        widgets.chart(mark_fold(figure, result.settings), key="delay_chart", where=st.columns(2)[0])


def delay_figure(result, position: int) -> go.Figure | None:
    """Labels pending and the calibration size over the stream, up to ``position`` (None without a delay)."""
    series = delay_series(result)
    if series is None:
        return None
    shown = series.iloc[:max(position, 1)]
    fig = go.Figure()
    fig.add_scatter(x=shown["position"], y=shown["calibration_size"], mode="lines", name="Calibration size",
                    line={"color": OKABE_ITO["blue"]})
    fig.add_scatter(x=shown["position"], y=shown["labels_pending"], mode="lines", name="Labels pending",
                    line={"color": OKABE_ITO["vermillion"]})
    fig.update_yaxes(rangemode="tozero")
    return layout(fig, "Labels that arrive later", "Stream position (patients)", "Patients", height=320)


# --------------------------------------------------------------------------- new patients


def new_patients_for(new_patients, segment):
    """The new patients as the settings' groupings see them: a shallow copy whose ``attrs["groups"]``
    holds the first segment column's labels and ``attrs["groupings"]`` every column's (the names the
    export and the threshold helpers read), or the frame itself for a pooled run.

    The labels are the ones the upload read (``favmac.ui.parsing.parse_new_patients``: the
    calibration data's segment columns, same names). A column the settings use that the file lacks
    is a :class:`favmac.io.DataError` naming the file and the column.
    """
    columns = segment_columns({"segment": segment})
    if new_patients is None or not columns:
        return new_patients
    have = new_patients.attrs.get("groupings") or {}
    file = next(iter(new_patients.attrs.get("sources") or {}), "the new-patients file")
    for column in columns:
        if column not in have:
            raise DataError(f"there is no column named {column!r}, so the new patients have no group in the grouping "
                            f"{column}.", file=file, row=1, column=column,
                            fix=f"Add a {column} column (one group per new patient, named as in the calibration data), "
                                "or take this grouping off on the Value & cost page.")
    view = new_patients.copy(deep=False)
    view.attrs = {**new_patients.attrs, "groups": list(have[columns[0]]),
                  "groupings": {column: list(have[column]) for column in columns}}
    return view


def unseen_groups(result, new_patients) -> list[str]:
    """One line per group of the new patients that the calibration data lacks (the library gives
    those patients T = -inf, the empty set: :func:`favmac.segments.smallest_group_thresholds`)."""
    groupings = new_patients.attrs.get("groupings") if new_patients is not None else None
    if not groupings or result.groups is None:
        return []
    finals = {g.name: g.final_thresholds for g in result.groupings} if getattr(result, "groupings", None) else \
        {next(iter(groupings)): result.group_thresholds}
    lines = []
    for name, labels in groupings.items():
        counts = pd.Series([str(v).strip() for v in labels]).value_counts(sort=False)
        for label, n in counts.items():
            if name in finals and label not in finals[name]:
                lines.append(f"{name} {label!r} is not in the calibration data: its {int(n):,} new patients get no codes "
                             "(0 calibration patients, so no threshold can be trusted).")
    return lines


def show_unseen_groups(result, new_patients) -> None:
    """A warning per new-patient group the calibration data lacks (nothing when there is none)."""
    for line in unseen_groups(result, new_patients):
        st.warning(md(line), icon=":material/group_off:")


def new_patient_thresholds(result, new_patients, settings: dict, score: str) -> pd.DataFrame | None:
    """The Export page's table of the thresholds new patients get, per group (None for a pooled run):
    :func:`favmac.ui.guarantees.segment_thresholds` of the settings' column, or with several groupings
    one row per group of each grouping (``segment`` reads ``plan=P1``). Warns about groups the
    calibration data lacks (:func:`show_unseen_groups`)."""
    view = new_patients_for(new_patients, settings.get("segment"))
    show_unseen_groups(result, view)
    tables = grouping_thresholds(result, settings, score)
    if tables is None:
        return segment_thresholds(result, view, settings, score)
    rows = []
    for name, table in tables.items():
        counts = pd.Series([str(v).strip() for v in view.attrs["groupings"][name]]).value_counts()
        rows += [{**row, "segment": f"{name}={row['segment']}", "new patients": int(counts.get(row["segment"], 0))}
                 for row in table.to_dict("records")]
        rows += [{"segment": f"{name}={label}", "threshold": float("-inf"), "rule": "nothing flagged (no calibration patients)",
                  "calibration patients": 0, "new patients": int(n)}
                 for label, n in counts.items() if label not in set(table["segment"])]
    return pd.DataFrame(rows)


def new_patients_rule(settings: dict) -> str:
    """How a new patient's threshold is chosen under the settings' groupings (the Export page's caption)."""
    columns = segment_columns(settings)
    if len(columns) > 1:
        return (f"Several groupings ({md(', '.join(columns))}): each new patient gets the smallest of its groups' thresholds, "
                "each calibrated on that group's labelled patients; the file gives each patient's group in each column:")
    return ("Per-segment control: each new patient gets its own segment's threshold, calibrated on that segment's "
            "labelled patients:")


def new_patient_threshold(result, new_patients, patient_id, n_calibration: int, segment=None) -> tuple[float, str]:
    """(threshold, where it comes from) of one new patient, under the settings' ``segment`` columns
    (:func:`new_patients_for`; a missing column stops the page with its error): with several
    groupings the smallest of its groups' final thresholds and the binding grouping
    (:func:`favmac.export.grouping_thresholds`, as the export computes it); else
    :func:`favmac.ui.guarantees.new_patient_threshold`."""
    try:
        new_patients = new_patients_for(new_patients, segment)
    except DataError as err:
        st.error(md(err), icon=":material/block:")
        st.stop()
    groupings = new_patients.attrs.get("groupings")
    if len(getattr(result, "groupings", None) or ()) < 2 or not groupings:
        return one_grouping_threshold(result, new_patients, patient_id, n_calibration)
    row = new_patients.index.get_loc(patient_id)
    threshold, segments, notes = new_grouping_thresholds(result, {k: [v[row]] for k, v in groupings.items()}, 1)
    return float(threshold[0]), f"the smallest of its groups' thresholds ({segments[0]}): {notes[0]}"


# --------------------------------------------------------------------------- the Online session


def choose_grouping(result, where=st) -> int:
    """The grouping the per-group curves split by (a select box with several groupings): its position."""
    groupings = getattr(result, "groupings", None) or ()
    if len(groupings) < 2:
        return 0
    names = [g.name for g in groupings]
    return names.index(where.selectbox("Split the curves by", names, key="split_grouping",
                                       help="Each grouping keeps its own guarantee; the legend says how often each "
                                            "group's threshold was the one its patients used (binds)."))


def grouping_cost_figure(result, position: int, settings: dict, grouping: int = 0) -> go.Figure:
    """:func:`favmac.ui.guarantees.segment_cost_figure` split by grouping ``grouping``; with several
    groupings each legend entry says how often that group's threshold bound its patients so far."""
    groupings = getattr(result, "groupings", None) or ()
    if len(groupings) < 2:
        return mark_fold(segment_cost_figure(result, position, settings), settings)
    chosen = groupings[grouping]
    view = dataclasses.replace(result, groups=chosen.groups)
    fig = segment_cost_figure(view, position, settings)
    shown = max(position, 1)
    own = np.asarray(chosen.thresholds[0], dtype=float)[:shown]
    used = np.asarray(result.thresholds[0], dtype=float)[:shown]
    labels = np.array([plain_html(g) for g in np.asarray(chosen.groups, dtype=object).astype(str)[:shown]], dtype=object)
    for trace in fig.data:
        mine = labels == trace.name  # the legend holds the labels as plain_html made them
        if mine.any():
            trace.name = f"{trace.name} (binds {100 * float(np.mean(own[mine] == used[mine])):.0f} % of its patients)"
    fig.update_layout(title_text=f"{fig.layout.title.text} — by {chosen.name}")
    return fig


def threshold_series(shown: pd.DataFrame, result, grouping: int = 0) -> pd.DataFrame:
    """The threshold chart's rows (:func:`favmac.ui.playback.running_series`, maybe downsampled).

    With several groupings, grouping ``grouping``'s own group thresholds, one steady line per
    group: each patient's used threshold (the smallest of its groups') jumps between groupings
    and drew an unreadable zigzag. One grouping or none: ``shown`` unchanged."""
    groupings = getattr(result, "groupings", None) or ()
    if len(groupings) < 2:
        return shown
    chosen = groupings[grouping]
    steps = shown["step"].to_numpy(dtype=np.int64)
    out = shown.copy()
    out["threshold"] = np.asarray(chosen.thresholds[0], dtype=float)[steps]
    out["segment"] = np.asarray(chosen.groups, dtype=object).astype(str)[steps]
    return out


def threshold_title(fig: go.Figure, result, grouping: int = 0) -> go.Figure:
    """With several groupings, say which grouping the threshold chart shows (the page's caption
    gives the rule: a patient uses the smallest of its groups' thresholds)."""
    groupings = getattr(result, "groupings", None) or ()
    if len(groupings) >= 2:
        fig.update_layout(title_text=f"Threshold per {plain_html(groupings[grouping].name)} (its groups' own)",
                          legend_title_text=plain_html(groupings[grouping].name))
    return fig


def binding_groupings(result, steps) -> list[str]:
    """For predicted patients ``steps``: their groups and which grouping's threshold each used
    (all of them on a tie), e.g. ``plan=P1; age_band=75+ (binds: age_band)``."""
    groupings = getattr(result, "groupings", None) or ()
    used = np.asarray(result.thresholds[0], dtype=float)
    out = []
    for s in np.asarray(steps, dtype=np.int64):
        binds = [g.name for g in groupings if float(g.thresholds[0][s]) == used[s]]
        out.append("; ".join(f"{g.name}={g.groups[s]}" for g in groupings) + f" (binds: {', '.join(binds)})")
    return out


def with_binding(recent: pd.DataFrame, result, position: int) -> pd.DataFrame:
    """The Online session's recent-patients table with a ``groups (binding)`` column under several
    groupings, a ``segment`` column with one (whose threshold each row used), the rows being the
    steps ``position - 1`` down, as ``playback.recent_patients`` lists them."""
    if result.groups is None or recent.empty:
        return recent
    steps = np.arange(position - 1, position - 1 - len(recent), -1)
    out = recent.copy()
    if len(getattr(result, "groupings", None) or ()) < 2:
        out.insert(1, "segment", np.asarray(result.groups, dtype=object)[steps].astype(str))  # its threshold is the segment's
        return out
    out.insert(1, "groups (binding)", binding_groupings(result, steps))  # beside the id: wide tables scroll
    return out


def show_new_patient_groups(new_patients) -> None:
    """The Data page's line on the grouping columns read from the new-patients file (nothing without any)."""
    groupings = None if new_patients is None else new_patients.attrs.get("groupings")
    if not groupings:
        return
    st.caption("Groups read for the new patients from column(s) " + ", ".join(
        f"{md(name)} ({len(set(labels)):,} groups)" for name, labels in groupings.items())
        + ": the same columns as the calibration data, used when Value & cost keeps the guarantee per them.")


def stream_patient_where(result, step: int, position: int) -> str:
    """Where a calibration-stream patient's threshold came from: with several groupings its groups and
    the binding one; with labels arriving later the labelled patients it was calibrated on; else
    :func:`favmac.ui.guarantees.stream_patient_where`."""
    where = one_grouping_where(result, step, position) if len(getattr(result, "groupings", None) or ()) < 2 else \
        f"stream position {position:,}; its groups {binding_groupings(result, [step])[0]}, each threshold learned from the earlier patients of that group"
    delayed = result.settings.get("label_delay") is not None or result.settings.get("label_arrivals") is not None
    if delayed and result.calibration_sizes is not None and result.labels_pending is not None:
        where += (f"; labels had arrived for {int(result.calibration_sizes[step]):,} patients, "
                  f"{int(result.labels_pending[step]):,} predicted patients' labels were still pending")
    return where
