"""The Validity page's pieces: run the check for the current data and settings, draw the evidence.

The check itself is :func:`favmac.validity.validity_check`; this module runs it with the
session's data and settings as a background job (``favmac.ui.jobs``; remembered per run key,
so revisiting the page does not redo it), draws the histogram of the per-ordering statistic against the promise and lays out the
per-segment table.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from favmac.ui import settings_form, state
from favmac.ui.figures import OKABE_ITO, layout
from favmac.ui.formats import fixed
from favmac.validity import MIN_ORDERINGS, validity_check

__all__ = ["histogram_figure", "report_key", "run", "segment_frame"]


def report_key(n_orderings: int, seed: int) -> str:
    """Fingerprint of a check: data, settings, orderings and seed."""
    return settings_form.run_key(st.session_state["dataset_key"], state.spec(), ["validity", int(n_orderings), int(seed)])


def run(n_orderings: int = MIN_ORDERINGS, seed: int = 0, *, start: bool = True):
    """The report of this check for the current data and settings, run as a background job.

    Returns the stored report of the same check, else (``start``, or a job for it already
    running) the job's result: a quick check returns at once, a longer one shows its progress
    bar, which keeps following the job across page switches, and stops the page. None when
    nothing was run and ``start`` is False.
    """
    key = report_key(n_orderings, seed)
    stored = st.session_state.get("validity")
    if not start and stored is not None and stored[0] == key:
        return stored[1]
    ds, spec = state.dataset(), state.spec()
    groups = ds.segments(spec.segment) if spec.segment else ds.groups
    probs, labels = ds.prob_array(), ds.label_array()
    n_orderings, seed = int(n_orderings), int(seed)

    def check(progress):
        value, cost = spec.build()
        return validity_check(probs, labels, value, cost, spec.target,
                              delta=spec.control_delta, universe=spec.universe, burn_in=spec.burn_in,
                              window=spec.window, groups=groups, segment_control=spec.segment is not None,
                              adaptive_rate=spec.adaptive_rate, n_orderings=n_orderings, seed=seed, score=spec.score,
                              progress=progress)

    label = f"Replaying {n_orderings} random orderings of {ds.n_patients:,} patients…"
    job = state.background("validity", key, label, check, start=start)
    if job is None:
        return None
    report = state.finish("validity", job)
    st.session_state["validity"] = (key, report)
    return report


def histogram_figure(report, unit: str) -> go.Figure:
    """Per-ordering statistic as a histogram, the promise as a line, and the spread exchangeability predicts."""
    expected = report.control == "expected"
    scale = 1.0 if expected else 100.0
    values = report.statistic * scale
    fig = go.Figure()
    fig.add_histogram(x=values, nbinsx=30, name="Random orderings", marker={"color": OKABE_ITO["sky_blue"]},
                      hovertemplate="%{x:.4g}: %{y} orderings<extra></extra>")
    promised = report.promised * scale
    spread = report.predicted_spread * scale
    if spread > 0 and math.isfinite(spread):
        xs = np.linspace(min(values.min(), promised - 3 * spread), max(values.max(), promised + 3 * spread), 200)
        width = (values.max() - values.min()) / 30 if values.max() > values.min() else spread
        density = len(values) * width * np.exp(-0.5 * ((xs - promised) / spread) ** 2) / (spread * math.sqrt(2 * math.pi))
        fig.add_scatter(x=xs, y=density, mode="lines", name="Chance spread around the promise",
                        line={"color": OKABE_ITO["black"], "dash": "dot"})
    fig.add_vline(x=promised, line={"color": OKABE_ITO["black"], "dash": "dash"})
    fig.add_scatter(x=[None], y=[None], mode="lines", name=f"Promise: {'c' if expected else 'δ'} = {promised:g}"
                    + ("" if expected else " %"), line={"color": OKABE_ITO["black"], "dash": "dash"})
    if report.observed is not None:
        fig.add_vline(x=report.observed * scale, line={"color": OKABE_ITO["vermillion"]})
        fig.add_scatter(x=[None], y=[None], mode="lines", name="Arrival order", line={"color": OKABE_ITO["vermillion"]})
    x_title = f"Mean cost per patient ({unit})" if expected else "Violation rate (% of patients)"
    return layout(fig, "Outcome over random orderings of your patients", x_title, "Orderings", height=360)


def segment_frame(report) -> pd.DataFrame | None:
    """The per-segment table as shown (None without segments)."""
    if report.segments is None:
        return None
    table = report.segments
    expected = report.control == "expected"
    return pd.DataFrame({
        "segment": table["segment"].astype(str),
        "patients": table["patients"],
        "predicted": table["predicted"],
        "mean cost" if expected else "violation rate": fixed(table["mean"], 3) if expected
        else fixed(100 * table["mean"], 1, " %"),
        "promised": [f"{p:g}" for p in table["promised"]] if expected else fixed(100 * table["promised"], 1, " %"),
        "p-value": table["p_value"].map(lambda p: "—" if p != p else ("< 0.001" if p < 0.001 else f"{p:.3f}")),
        "verdict": table["passed"].map(lambda ok: "—" if ok is None else ("PASS" if ok else "FAIL")),
    })
