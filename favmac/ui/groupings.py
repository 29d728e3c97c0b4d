"""App pieces for several groupings at once and labels that arrive later (issue 20).

The numbers come from the library (:func:`favmac.segments.grouping_tables`,
``ReplayResult.labels_pending`` / ``calibration_sizes``); this module only picks the settings
and shows them: one table per grouping saying which grouping binds for each group, the labels
pending and the calibration size over the Online session, and the thresholds new patients get.
"""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from favmac.segments import grouping_tables
from favmac.ui.figures import OKABE_ITO, layout
from favmac.ui.formats import fixed
from favmac.ui import widgets
from favmac.ui.guarantees import segment_display, show_segment_table
from favmac.ui.text import md, md_frame
from favmac.ui.units import threshold_tile

__all__ = ["delay_figure", "grouping_display", "grouping_thresholds",
           "segment_columns", "settings_fields", "show_delay_chart", "show_delay_tiles", "show_grouping_tables", "show_grouping_thresholds"]


def segment_columns(settings: dict) -> list[str]:
    """The segment columns of ``settings`` as a list (none, one, or several groupings).

    >>> segment_columns({"segment": None}), segment_columns({"segment": "plan"}), segment_columns({"segment": ("plan", "age")})
    ([], ['plan'], ['plan', 'age'])
    """
    segment = settings.get("segment")
    if not segment:
        return []
    return [segment] if isinstance(segment, str) else list(segment)


def settings_fields(current: dict, dataset) -> dict:
    """The label delay, inside the Value & cost settings (after the segment columns and the
    adaptive target, :func:`favmac.ui.guarantees.settings_fields`); returns ``label_delay``
    (patients, or None when every earlier patient's labels are known)."""
    delayed = st.checkbox("Labels arrive later (confirmed codes come after chart review)", value=current.get("label_delay") is not None,
                          key="use_label_delay",
                          help="Each patient is calibrated only on the earlier patients whose confirmed codes have already "
                               "arrived, not on every earlier patient.")
    delay = st.number_input("Label delay (patients: the labels arrive this many patients after the prediction)", min_value=0,
                            max_value=max(dataset.n_patients - 1, 0), value=int(current.get("label_delay") or 0), step=50,
                            key="label_delay", disabled=not delayed)
    return {"label_delay": int(delay) if delayed else None}


def grouping_display(result, settings: dict) -> dict[str, pd.DataFrame]:
    """Grouping name -> its table as shown: the per-segment table's columns and formats
    (:func:`favmac.ui.guarantees.segment_display`), the threshold as a rule in the user's units,
    and ``binds``: the share of the group's predicted patients whose threshold came from this
    grouping (the library's ``binds``, :func:`favmac.segments.grouping_tables`)."""
    score = result.settings.get("score") or settings.get("score")
    shown = {}
    for i, (name, table) in enumerate(grouping_tables(result).items()):
        frame = segment_display(result, settings, grouping=i)
        frame.insert(4, "threshold (rule)", [threshold_tile(t, settings, score)[1] for t in table["threshold"]])
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
               "the one used; near 100 % the grouping is the one holding those patients back.")
    for name, table in grouping_display(result, settings).items():
        st.markdown(f"**{md(name)}**")
        st.table(md_frame(table.drop(columns=["warning"]).set_index("segment")))  # group labels are user text
        for segment, warning in zip(table["segment"], table["warning"]):
            if warning:
                st.warning(f"{md(name)} {md(segment)}: {md(warning)}.")


def grouping_thresholds(result, settings: dict, score: str) -> dict[str, pd.DataFrame] | None:
    """Grouping name -> each group's final threshold (calibrated on all its patients): segment,
    threshold, rule (in the user's units) and calibration patients; None with fewer than two groupings."""
    groupings = getattr(result, "groupings", None) or ()
    if len(groupings) < 2:
        return None
    return {g.name: pd.DataFrame([{"segment": str(label), "threshold": float(final[0]),
                                   "rule": threshold_tile(float(final[0]), settings, score)[1],
                                   "calibration patients": int(g.sizes[label])}
                                  for label, final in g.final_thresholds.items()])
            for g in groupings}


def show_grouping_thresholds(result, settings: dict, score: str) -> None:
    """The Export page's per-grouping thresholds: which threshold applies to which group."""
    tables = grouping_thresholds(result, settings, score)
    if tables is None:
        return
    st.subheader("Thresholds per grouping")
    st.caption("Each group's threshold calibrated on all its labelled patients; a patient gets the smallest threshold "
               "of its groups (one per grouping).")
    for name, table in tables.items():
        st.markdown(f"**{md(name)}**")
        st.table(md_frame(table.assign(threshold=[f"{t:.4g}" for t in table["threshold"]]).set_index("segment")))


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
        widgets.chart(figure, key="delay_chart", where=st.columns(2)[0])


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
