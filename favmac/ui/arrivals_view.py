"""App pieces for when things happen along the stream: label arrivals and the recalibration fold.

The numbers come from the library: :attr:`favmac.io.Dataset.label_available_at` (the reader's
positions, from whole positions or dates: :mod:`favmac.io.arrival_columns`), the replay's
``labels_pending`` / ``calibration_sizes`` (:mod:`favmac.arrivals`), the recalibration fold's size
(the settings' ``recalibrate``). This module only says what was read, offers the choice, and marks
the charts:

* the Data page's summary of a ``label_available_at`` column (:func:`arrival_summary`,
  :func:`show_arrival_summary`);
* the Value & cost choice "Labels arrive: all at once / after a fixed delay / from the file's
  column" (:func:`settings_fields`; ``label_delay`` or ``label_available_column``);
* the Online session's recalibration fold, a shaded region on each chart (:func:`mark_fold`)
  and a caption (:func:`fold_caption`).
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from favmac.ui.figures import OKABE_ITO
from favmac.ui.parsing import ARRIVAL_COLUMN
from favmac.ui.text import md

__all__ = ["ARRIVAL_CHOICES", "ARRIVAL_COLUMN", "arrival_choice", "arrival_summary", "fold_caption", "mark_fold",
           "settings_fields", "show_arrival_summary", "stream_caption"]

#: The Value & cost choice of when labels arrive (the radio's options, in order).
ARRIVAL_CHOICES = {
    "all_at_once": "All at once: each patient's confirmed codes are known right after its prediction",
    "fixed_delay": "After a fixed delay of d patients",
    "column": f"From the file's {ARRIVAL_COLUMN} column",
}


def arrival_summary(dataset) -> dict | None:
    """What the calibration file's label-arrival column says, or None without one.

    Keys: ``column``; ``patients`` (with an arrival); ``delay_min``, ``delay_median``,
    ``delay_max`` (patients: arrival position minus the patient's own position, over the labels
    that arrive within the stream); ``never`` (labels that arrive only after the stream's end,
    pending to the last patient); ``immediate`` (labels known right after their own prediction).

    >>> from types import SimpleNamespace
    >>> s = arrival_summary(SimpleNamespace(label_available_at=np.array([0, 3, 2, 9]), label_available_column="at"))
    >>> s["patients"], s["delay_min"], s["delay_median"], s["delay_max"], s["never"], s["immediate"]
    (4, 0, 0.0, 2, 1, 2)
    """
    arrivals = getattr(dataset, "label_available_at", None)
    if arrivals is None:
        return None
    arrivals = np.asarray(arrivals, dtype=np.int64)
    n = len(arrivals)
    delays = arrivals - np.arange(n)
    within = delays[arrivals < n]
    return {"column": getattr(dataset, "label_available_column", None) or ARRIVAL_COLUMN, "patients": int(n),
            "delay_min": int(within.min()) if within.size else None,
            "delay_median": float(np.median(within)) if within.size else None,
            "delay_max": int(within.max()) if within.size else None,
            "never": int(np.sum(arrivals >= n)), "immediate": int(np.sum(delays == 0))}


def arrival_text(summary: dict) -> str:
    """The Data page's sentence about the label arrivals it read (every number with its unit).

    >>> arrival_text({"column": "at", "patients": 4, "delay_min": 0, "delay_median": 0.0, "delay_max": 2, "never": 1,
    ...               "immediate": 2})[:60]
    'Label arrivals read from column **at** for 4 patients. Delay'
    """
    parts = [f"Label arrivals read from column **{md(summary['column'])}** for {summary['patients']:,} patients."]
    if summary["delay_min"] is not None:
        parts.append(f"Delay between a patient's prediction and its labels: min {summary['delay_min']:,} patients, "
                     f"median {summary['delay_median']:,.1f} patients, max {summary['delay_max']:,} patients.")
    parts.append(f"{summary['immediate']:,} patients' labels arrive right after their own prediction; "
                 f"{summary['never']:,} patients' labels arrive only after the stream ends (pending to the last patient).")
    return " ".join(parts)


def show_arrival_summary(dataset) -> None:
    """The Data page's note on the file's label arrivals (or how to give them)."""
    summary = arrival_summary(dataset)
    if summary is None:
        st.caption(f"No {ARRIVAL_COLUMN} column: the labels can arrive all at once or after a fixed delay (Value & cost). "
                   f"To give each patient's arrival, add a {ARRIVAL_COLUMN} column: the stream position (0 = the first "
                   "patient) after whose prediction its labels arrived, or the date, with a predicted_at date column.")
        return
    st.info(arrival_text(summary) + " Choose **From the file's column** on Value & cost to calibrate with them.",
            icon=":material/schedule:")


def arrival_choice(settings: dict) -> str:
    """The settings' arrival choice: a key of :data:`ARRIVAL_CHOICES`.

    >>> arrival_choice({}), arrival_choice({"label_delay": 0}), arrival_choice({"label_available_column": "at"})
    ('all_at_once', 'fixed_delay', 'column')
    """
    if settings.get("label_available_column"):
        return "column"
    return "fixed_delay" if settings.get("label_delay") is not None else "all_at_once"


def settings_fields(current: dict, dataset) -> dict:
    """Value & cost's "Labels arrive" choice; returns ``label_delay`` (patients, or None) and
    ``label_available_column`` (the file's column, or None). The column is offered only when the
    data has one (:func:`arrival_summary`)."""
    summary = arrival_summary(dataset)
    options = [k for k in ARRIVAL_CHOICES if k != "column" or summary is not None]
    saved = arrival_choice(current)
    choice = st.radio("Labels arrive", options, index=options.index(saved) if saved in options else 0,
                      format_func=ARRIVAL_CHOICES.get, key="label_arrival",
                      help="In practice confirmed codes come weeks after the prediction (chart review). Each patient is then "
                           "calibrated only on the earlier patients whose labels have arrived; the guarantee holds with "
                           "the smaller calibration set.")
    delay = st.number_input("Label delay d (patients: the labels arrive this many patients after the prediction)", min_value=0,
                            max_value=max(dataset.n_patients - 1, 0), value=int(current.get("label_delay") or 0), step=50,
                            key="label_delay", disabled=choice != "fixed_delay")
    if summary is not None and choice == "column":
        st.caption(md(f"{summary['patients']:,} patients' arrivals from column {summary['column']}; median delay "
                      f"{summary['delay_median'] or 0:,.1f} patients."))
    return {"label_delay": int(delay) if choice == "fixed_delay" else None,
            "label_available_column": summary["column"] if choice == "column" else None}


def fold_size(settings: dict) -> int:
    """Patients in the recalibration fold (0 without recalibration)."""
    return int(settings.get("recalibrate") or 0)


def mark_fold(fig: go.Figure, settings: dict) -> go.Figure:
    """``fig`` (x: stream position in patients) with the recalibration fold shaded and labelled:
    positions 0 to R, patients who get no prediction. Unchanged without recalibration.

    >>> len(mark_fold(go.Figure(), {"recalibrate": 200}).layout.shapes), len(mark_fold(go.Figure(), {}).layout.shapes)
    (1, 0)
    """
    size = fold_size(settings)
    if not size:
        return fig
    fig.add_vrect(x0=0, x1=size, fillcolor=OKABE_ITO["sky_blue"], opacity=0.18,
                  line_width=0, layer="below", annotation_text=f"Recalibration fold<br>{size:,} patients,<br>no prediction",
                  annotation_position="top left", annotation_font_size=10, annotation_align="left")
    fig.update_xaxes(rangemode="tozero")  # the curves start after the fold: show it
    return fig


def fold_caption(settings: dict) -> str | None:
    """The Online session's line about the fold on its charts, or None without recalibration."""
    size = fold_size(settings)
    if not size:
        return None
    return (f"Shaded on each chart: the recalibration fold, stream positions 0–{size - 1:,} ({size:,} patients); the curves "
            "start after the fold and the burn-in.")


def stream_caption(settings: dict) -> str | None:
    """The Online session's line on what the intro leaves out: several groupings (the smallest of a
    patient's groups' thresholds) and labels that arrive later (None when neither is on).

    >>> stream_caption({"segment": ("plan", "band"), "label_delay": 30})[:84]
    "Several groupings: each patient uses the smallest of its groups' thresholds (one per"
    >>> stream_caption({"label_delay": 30})[:44], stream_caption({}) is None
    ('Labels arrive 30 patients after the predicti', True)
    """
    segment = settings.get("segment")
    parts = []
    if segment and not isinstance(segment, str) and len(segment) > 1:
        parts.append(f"Several groupings: each patient uses the smallest of its groups' thresholds (one per {md(', '.join(segment))}).")
    when = ({"fixed_delay": f"{settings.get('label_delay') or 0:,} patients after the prediction",
             "column": f"as the file's {md(settings.get('label_available_column') or '')} column says"}
            .get(arrival_choice(settings)))
    if when:
        parts.append(f"Labels arrive {when}: a patient's codes join the calibration data then, not right after its own "
                     "prediction.")
    return " ".join(parts) or None
