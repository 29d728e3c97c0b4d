"""The Validity page's evidence: the histogram of the per-ordering statistic against the promise,
and the per-group tables, one per grouping (no Streamlit).

The check itself is :func:`favmac.validity.validity_check`; the page runs it for the session's
data and settings with ``favmac.ui.jobs.validity`` (a background job, remembered per run key).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from favmac.ui.figures import OKABE_ITO, layout
from favmac.ui.text import plain_html
from favmac.ui.formats import fixed
from favmac.ui.units import CHARTS, cost_unit, over_target, per_100_charts, per_charts
from favmac.validity import MIN_ORDERINGS

__all__ = ["MIN_ORDERINGS", "grouping_frames", "histogram_figure", "segment_frame", "table_caption", "verdict_kind"]


def verdict_kind(report, pooled: bool) -> str:
    """How the verdict is shown: "success" when every promise held; "warning" when a pooled run's one
    promise (everyone's average) held and only segments it does not promise ran over; else "error".

    >>> class R: passed, overall_passed = False, True
    >>> verdict_kind(R, pooled=True), verdict_kind(R, pooled=False)
    ('warning', 'error')
    """
    if report.passed:
        return "success"
    return "warning" if pooled and report.overall_passed else "error"


def histogram_figure(report, unit: str) -> go.Figure:
    """Per-ordering statistic as a histogram (a mean cost per 100 charts, as the tiles, or a violation rate
    in %), the promise as a line, and the spread exchangeability predicts."""
    expected = report.control == "expected"
    scale = float(CHARTS) if expected else 100.0
    values = report.statistic * scale
    fig = go.Figure()
    fig.add_histogram(x=values, nbinsx=30, name="Random orderings", marker={"color": OKABE_ITO["sky_blue"]},
                      hovertemplate=(f"mean cost %{{x:.4g}} {unit} {per_charts()}" if expected else "violation rate %{x:.4g} %")
                      + ": %{y} orderings<extra></extra>")
    promised = report.promised * scale
    spread = report.predicted_spread * scale
    if spread > 0 and math.isfinite(spread):
        xs = np.linspace(min(values.min(), promised - 3 * spread), max(values.max(), promised + 3 * spread), 200)
        width = (values.max() - values.min()) / 30 if values.max() > values.min() else spread
        density = len(values) * width * np.exp(-0.5 * ((xs - promised) / spread) ** 2) / (spread * math.sqrt(2 * math.pi))
        fig.add_scatter(x=xs, y=density, mode="lines", name="Chance spread around the promise",
                        line={"color": OKABE_ITO["black"], "dash": "dot"})
    fig.add_vline(x=promised, line={"color": OKABE_ITO["black"], "dash": "dash"})
    fig.add_scatter(x=[None], y=[None], mode="lines", name=f"Promise: {per_100_charts(report.promised)} {per_charts()} (c = {report.promised:g})"
                    if expected else f"Promise: δ = {promised:g} %", line={"color": OKABE_ITO["black"], "dash": "dash"})
    if report.observed is not None:
        fig.add_vline(x=report.observed * scale, line={"color": OKABE_ITO["vermillion"]})
        fig.add_scatter(x=[None], y=[None], mode="lines", name="Arrival order", line={"color": OKABE_ITO["vermillion"]})
    x_title = f"Mean cost {per_charts()} ({unit})" if expected else "Violation rate (% of patients)"
    title = (f"Mean {plain_html(unit)} {per_charts()}" if expected
             else f"Share of charts with {plain_html(over_target(report.target, unit))}") + ", over random orderings of your patients"
    return layout(fig, title, x_title, "Orderings", height=360)


def segment_frame(report, grouping: str | None = None) -> pd.DataFrame | None:
    """One grouping's table as shown (the first grouping by default; None without segments):
    the mean over the orderings of the group's mean cost or violation rate, its spread (standard
    deviation over the orderings), the promise, the one-sided p-value and PASS / FAIL. Mean costs, their spread and
    the promise per 100 charts, as the page's tiles and histogram."""
    if report.segments is None:
        return None
    table = report.segments if grouping is None else report.groupings[grouping]
    expected = report.control == "expected"
    if expected:
        mean, spread = fixed(CHARTS * table["mean"], 1), fixed(CHARTS * table["spread"], 1)
        promised = [per_100_charts(p) for p in table["promised"]]
    else:
        mean, spread = fixed(100 * table["mean"], 1, " %"), fixed(100 * table["spread"], 1, " %")
        promised = fixed(100 * table["promised"], 1, " %")
    return pd.DataFrame({
        "segment": table["segment"].astype(str),
        "patients": table["patients"],
        "predicted": table["predicted"],
        "mean cost" if expected else "violation rate": mean,
        "spread over orderings": [s if s == "—" else "± " + s for s in spread],
        "promised": promised,
        "p-value": table["p_value"].map(lambda p: "—" if p != p else ("< 0.001" if p < 0.001 else f"{p:.3f}")),
        "verdict": table["passed"].map(lambda ok: "—" if ok is None else ("PASS" if ok else "FAIL")),
    })


def grouping_frames(report) -> dict[str, pd.DataFrame]:
    """Grouping name -> its table as shown (:func:`segment_frame`); empty without segments."""
    return {name: segment_frame(report, name) for name in (report.groupings or {})}


def table_caption(report, settings: dict) -> str:
    """What the per-group tables' numbers are, in the user's units.

    >>> class R: control, n_orderings = "expected", 200
    >>> print(table_caption(R, {"cost_kind": "fp"})[:60])
    Mean cost and promised: false flags per 100 charts among the
    """
    if report.control == "expected":
        what = (f"Mean cost and promised: {cost_unit(settings)} {per_charts()} among the group's predicted patients (the mean "
                f"per chart × {CHARTS}), averaged over the {report.n_orderings} orderings")
    else:
        what = (f"Violation rate: share of the group's predicted charts over the target, averaged over the "
                f"{report.n_orderings} orderings")
    return (f"{what}; spread: how much it varies from one ordering to the next (standard deviation); patients: the "
            "group's patients in the data; predicted: those after the burn-in, per ordering on average.")
