"""Plotly figures for FavMac Studio.

Every figure uses the Okabe-Ito palette (distinguishable with the common colour-vision
deficiencies), titles its axes with units, and shows a legend whenever there is more than
one series. Where colour separates categories a second cue (marker symbol, bar pattern or
dash style) separates them too. Figures take plain frames from the ``favmac.ui`` modules.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from favmac.ui import patients
from favmac.ui.text import plain_html
from favmac.ui.units import CHARTS, bracketed, per_charts, target_per_100

OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "bluish_green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish_purple": "#CC79A7",
    "grey": "#999999",
}
PALETTE = [OKABE_ITO[k] for k in ("blue", "orange", "bluish_green", "vermillion", "reddish_purple", "sky_blue", "black", "yellow")]
SYMBOLS = ["circle", "square", "diamond", "triangle-up", "x", "star", "triangle-down", "cross"]
DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot", "solid", "dash"]

# Per-code charts draw at most this many codes (more bars than this are an unreadable block);
# pages say what was left out.
MAX_CODES_SHOWN = 40

STATUS_STYLE = {
    patients.STATUS_TP: (OKABE_ITO["blue"], ""),
    patients.STATUS_FP: (OKABE_ITO["vermillion"], "x"),
    patients.STATUS_FN: (OKABE_ITO["sky_blue"], "/"),
    patients.STATUS_TN: ("#C8C8C8", "."),
    patients.STATUS_SELECTED: (OKABE_ITO["blue"], ""),
    patients.STATUS_NOT_SELECTED: ("#C8C8C8", "."),
}


def _layout(fig: go.Figure, title: str, x_title: str, y_title: str, height: int = 360, legend: str = "top") -> go.Figure:
    """Shared layout. ``legend="top"``: one row between title and plot (for a few series);
    ``"right"``: a column beside the plot (for many series, so entries never hit the title);
    ``"bottom"``: rows under the plot (many series in a half-width chart)."""
    if legend == "right":
        legend_layout = {"orientation": "v", "yanchor": "top", "y": 1, "xanchor": "left", "x": 1.02}
    elif legend == "bottom":  # many series in a narrow chart: rows under the x-axis title (plotly grows the margin)
        legend_layout = {"orientation": "h", "yanchor": "top", "y": -0.2, "xanchor": "left", "x": 0}
    else:
        legend_layout = {"orientation": "h", "yanchor": "bottom", "y": 1.01, "xanchor": "left", "x": 0}
    fig.update_layout(
        title={"text": title, "x": 0, "xanchor": "left", "y": 0.98, "yanchor": "top", "yref": "container"},
        height=height,
        margin={"l": 60, "r": 20, "t": 80 if legend == "top" else 50, "b": 60},
        legend=legend_layout,
        hovermode="closest",
        colorway=PALETTE,
    )
    fig.update_xaxes(title_text=x_title, automargin=True)
    fig.update_yaxes(title_text=y_title, automargin=True)
    for axis in (fig.layout.xaxis, fig.layout.yaxis):  # numbers as the tables write them: 4,000 and $1,028, not 4000
        if axis.tickformat is None and axis.tickvals is None and axis.type != "category":
            axis.tickformat = ","
    return fig


# --------------------------------------------------------------------------- data page


#: The shared layout, public for the figure functions of other UI modules.
layout = _layout


def prevalence_figure(prevalence: pd.DataFrame, max_codes: int = 40) -> go.Figure:
    """Horizontal grouped bars per code (most prevalent on top): observed prevalence and mean
    predicted probability. Horizontal, so every code's label is readable even for 35 codes."""
    frame = prevalence.head(max_codes).assign(code=lambda f: f["code"].map(plain_html),
                                              description=lambda f: f["description"].map(plain_html))
    fig = go.Figure()
    hover = "<b>%{y}</b> %{customdata}<br>%{fullData.name}: %{x:.1%}<extra></extra>"
    fig.add_bar(y=frame["code"], x=frame["prevalence"], orientation="h", name="Observed prevalence", marker_color=OKABE_ITO["blue"],
                customdata=frame["description"], hovertemplate=hover)
    fig.add_bar(
        y=frame["code"],
        x=frame["mean_prob"],
        orientation="h",
        name="Mean predicted probability",
        marker={"color": OKABE_ITO["orange"], "pattern": {"shape": "/", "fillmode": "overlay", "fgcolor": "#333333", "fgopacity": 0.5}},
        customdata=frame["description"],
        hovertemplate=hover,
    )
    fig.update_layout(barmode="group", bargap=0.2)
    fig.update_xaxes(tickformat=".0%", rangemode="tozero")
    fig.update_yaxes(type="category", autorange="reversed", tickmode="array", tickvals=list(frame["code"]), tickfont={"size": 10})
    height = max(380, 16 * len(frame) + 140)
    return _layout(fig, "Per-code prevalence", "Share of patients (%)", "Code (most prevalent first)", height=height)


def reliability_figure(bins: pd.DataFrame, by_segment: dict[str, pd.DataFrame] | None = None,
                       legend_title: str = "Segment", title: str | None = None) -> go.Figure:
    """Reliability diagram: observed frequency against mean predicted probability per bin.

    With ``by_segment`` ({segment: bins}) one line per segment (colour and marker, legend titled
    ``legend_title``, "Segment" by default) instead of the pooled ``bins``; ``title`` replaces the default title.
    """
    fig = go.Figure()
    fig.add_scatter(x=[0, 1], y=[0, 1], mode="lines", name="Perfect calibration", line={"color": OKABE_ITO["grey"], "dash": "dash"}, hoverinfo="skip")
    lines = {"Classifier": bins} if by_segment is None else {plain_html(k): v for k, v in by_segment.items()}
    for i, (name, part) in enumerate(lines.items()):
        fig.add_scatter(
            x=part["mean_prob"],
            y=part["observed"],
            mode="lines+markers",
            name=name,
            line={"color": PALETTE[i % len(PALETTE)], "dash": DASHES[i % len(DASHES)]},
            marker={"symbol": SYMBOLS[i % len(SYMBOLS)], "size": 9},
            customdata=np.stack([part["bin_low"], part["bin_high"], part["count"]], axis=1) if len(part) else None,
            cliponaxis=False,  # a point at 0 or 1 is drawn whole, not cut by the axis
            hovertemplate="%{fullData.name}<br>bin %{customdata[0]:.1f}–%{customdata[1]:.1f}<br>mean predicted %{x:.3f}<br>observed %{y:.3f}"
                          "<br>%{customdata[2]:,} code slots<extra></extra>",
        )
    if by_segment is not None:
        fig.update_layout(legend_title_text=legend_title)
    fig.update_xaxes(range=[-0.02, 1.02], tickformat=".1f")
    fig.update_yaxes(range=[-0.02, 1.04], tickformat=".1f")
    title = title or "Reliability (calibration) of the classifier" + (" per segment" if by_segment is not None else "")
    if by_segment is None:
        return _layout(fig, title, "Mean predicted probability", "Observed frequency of the code", height=380)
    # one line a segment: the legend (titled) in rows under the plot, where it cannot reach the title
    return _layout(fig, title, "Mean predicted probability", "Observed frequency of the code", height=420 + 22 * (len(lines) // 4),
                   legend="bottom")


# --------------------------------------------------------------------------- online session


def _finite(y: pd.Series) -> np.ndarray:
    arr = np.asarray(y, dtype=float)
    return np.where(np.isfinite(arr), arr, np.nan)


def threshold_plot_values(threshold, score: str) -> np.ndarray:
    """What the threshold chart draws, in the user's units: under the price score the value a code
    must bring per expected false flag (1/T; 0 at T = +inf), under the cost score T itself (the
    expected false flags allowed per chart). Infinite or undefined values become gaps (NaN)."""
    t = np.asarray(threshold, dtype=float)
    if score != "price":
        return _finite(t)
    with np.errstate(divide="ignore"):
        y = np.where(t > 0, 1.0 / t, np.nan)
    return np.where(np.isposinf(t), 0.0, y)


def threshold_figure(series: pd.DataFrame, cost_unit: str, score: str = "cost", value_unit: str = "value") -> go.Figure:
    """Threshold over the stream, in the user's units (:func:`threshold_plot_values`; T in the hover).

    With a ``segment`` column (per-segment control) one line per segment, each with its own
    threshold. Steps where nothing can be drawn (T = -inf: nothing flagged; T <= 0 on the price
    score) leave gaps and are counted in the legend.
    """
    thr = np.asarray(series["threshold"], dtype=float)
    y_all = threshold_plot_values(thr, score)
    fig = go.Figure()
    hover = ("patient #%{x}<br>" + ("value needed per false flag %{y:.4g} " + plain_html(value_unit) if score == "price"
                                     else plain_html(cost_unit) + " allowed %{y:.4g}")
             + "<br>T = %{customdata:.4g}<extra>%{fullData.name}</extra>")
    if "segment" in series.columns:
        segments = sorted(series["segment"].astype(str).unique())
        for i, segment in enumerate(segments):
            mine = (series["segment"].astype(str) == segment).to_numpy()
            fig.add_scatter(x=series["position"][mine], y=y_all[mine], customdata=thr[mine], mode="lines", name=plain_html(segment),
                            line={"color": PALETTE[i % len(PALETTE)], "dash": DASHES[i % len(DASHES)], "shape": "hv"},
                            hovertemplate=hover)
        fig.update_layout(legend_title_text="Segment")
    else:
        fig.add_scatter(x=series["position"], y=y_all, customdata=thr, mode="lines", name="Threshold",
                        line={"color": OKABE_ITO["blue"], "shape": "hv"}, hovertemplate=hover)
    n_gap = int(np.sum(np.isnan(y_all)))
    if n_gap:
        fig.add_scatter(x=[None], y=[None], mode="lines", name=f"{n_gap:,} steps not drawn (nothing flagged, or T = ±∞)",
                        line={"color": OKABE_ITO["grey"], "dash": "dot"})
    fig.update_yaxes(rangemode="tozero")
    if score == "price":
        per = ("expected false flag" if cost_unit == "false flags" else plain_html(cost_unit) if cost_unit.startswith("unsupported")
               else f"unit of {plain_html(cost_unit)}")  # the Online session passes units.cost_short
        axis = f"Value needed per {per}<br>{plain_html(bracketed(value_unit))}"  # two lines: fits a third of the page
        title = "Threshold: value a code must bring"
    else:
        axis = f"Expected {plain_html(cost_unit)} allowed per chart"
        title = f"Threshold: {plain_html(cost_unit)} allowed"  # the cost's own unit: unsupported RAF is not false flags
    # a log axis by the charts' one rule (log_axis): an early spike (one segment's, or the stream's under an
    # adaptive target or late labels) would flatten every other step to zero
    if log_axis(fig, "y", y_all):
        axis = log_scale_title(axis)
    gap = list(fig.data[-1:]) if n_gap else []  # the "steps not drawn" entry (added last): the x-axis title says it,
    for trace in gap:                           # the legend keeps to the lines (over the axis title, it hid it)
        trace.showlegend = False
    x_title = "Stream position (patients)" + (f"<br>{gap[0].name}" if gap else "")
    if "segment" not in series.columns:  # a third of the page: the note on two lines, not cut at the chart's edge
        return _layout(fig, title, x_title.replace(" (nothing", "<br>(nothing"), axis, height=340 if gap else 320)
    # one line per segment: the page draws it full width with the legend in a column beside the plot
    # (every segment named, none over the lines)
    return _layout(fig, title, x_title, axis, height=max(360, 60 + 22 * (len(fig.data) - len(gap))), legend="right")


def cost_figure(series: pd.DataFrame, control: str, target: float, delta: float, cost_unit: str) -> go.Figure:
    """Running mean cost vs the target (expected control), both per 100 charts as the tiles show them, or
    running violation rate vs delta."""
    fig = go.Figure()
    x = series["position"]
    if control == "expected":
        per = f"{plain_html(cost_unit)} {per_charts()}"
        fig.add_scatter(x=x, y=CHARTS * series["mean_cost"], mode="lines", name="Running mean cost", line={"color": OKABE_ITO["vermillion"]},
                        hovertemplate=f"patient #%{{x}}<br>mean cost %{{y:.4g}} {per}<extra></extra>")
        fig.add_hline(y=CHARTS * target, line={"color": OKABE_ITO["black"], "dash": "dash"})
        fig.add_scatter(x=[None], y=[None], mode="lines", name=f"Target: {target_per_100(target)}", line={"color": OKABE_ITO["black"], "dash": "dash"})
        # head-room above the target line, so the legend never sits on it
        top = CHARTS * max(float(target), float(np.nanmax(series["mean_cost"])) if len(series) else 0.0)
        fig.update_yaxes(range=[0, 1.25 * top if top > 0 else 1])
        return _layout(fig, "Running mean cost vs target", "Stream position (patients)", f"Mean cost {per_charts()}<br>{plain_html(bracketed(cost_unit))}", height=320)  # two lines: fits a third of the page
    fig.add_scatter(x=x, y=series["violation_rate"], mode="lines", name="Running violation rate", line={"color": OKABE_ITO["vermillion"]}, hovertemplate="patient #%{x}<br>violation rate %{y:.2%}<extra></extra>")
    fig.add_hline(y=delta, line={"color": OKABE_ITO["black"], "dash": "dash"})
    fig.add_scatter(x=[None], y=[None], mode="lines", name=f"δ = {delta:g}", line={"color": OKABE_ITO["black"], "dash": "dash"})
    fig.update_yaxes(tickformat=".0%", rangemode="tozero")
    # the title says what a violation is in the cost's unit, short enough for a third of the page
    return _layout(fig, f"Charts over {float(target):g} {plain_html(cost_unit)}", "Stream position (patients)",
                   "Running share of charts (%)", height=320)


def value_figure(series: pd.DataFrame, value_unit: str, charts: int = CHARTS) -> go.Figure:
    """Running mean value captured, per ``charts`` charts as the value tile shows it (``units.value_charts``:
    per 100 charts, per patient for the CMS payment)."""
    fig = go.Figure()
    per = f"{plain_html(value_unit)} {per_charts(charts)}"
    fig.add_scatter(x=series["position"], y=charts * series["mean_value"], mode="lines", name="Running mean value", line={"color": OKABE_ITO["bluish_green"]},
                    hovertemplate=f"patient #%{{x}}<br>mean value %{{y:.4g}} {per}<extra></extra>")
    fig.update_yaxes(rangemode="tozero")
    return _layout(fig, "Running mean value", "Stream position (patients)", f"Mean value {per_charts(charts)}<br>{plain_html(bracketed(value_unit))}", height=320)


# --------------------------------------------------------------------------- trade-offs


def _method_style(methods) -> dict:
    return {m: (PALETTE[i % len(PALETTE)], SYMBOLS[i % len(SYMBOLS)], DASHES[i % len(DASHES)]) for i, m in enumerate(methods)}


def _hover(cost_unit: str, value_unit: str, value_charts: int = CHARTS) -> str:
    """A trade-off point's hover, in the axes' units (:func:`_custom`: costs per 100 charts, value per ``value_charts``)."""
    cost = f"{cost_unit} {per_charts()}"
    return (
        "<b>%{fullData.name}</b><br>target c = %{customdata[0]:.4g} " + cost + " (%{customdata[1]:.1f} % of C_max)"
        "<br>mean value %{customdata[2]:.4g} " + f"{value_unit} {per_charts(value_charts)}" + "<br>mean cost %{customdata[3]:.4g} " + cost
        + "<br>violation frequency %{customdata[4]:.1%}<extra></extra>"
    )


def _custom(frame: pd.DataFrame, value_charts: int = CHARTS) -> np.ndarray:
    """The hover's numbers: the target and the mean cost per 100 charts, the mean value per ``value_charts``."""
    out = frame[["target", "target_pct", "mean_value", "mean_cost", "violation_freq"]].to_numpy(dtype=float)
    return out * np.array([CHARTS, 1.0, value_charts, CHARTS, 1.0])


#: The one rule of every chart's log axis: values spanning more than this factor (one decade).
LOG_SPAN = 10.0


def spans_decades(values) -> bool:
    """True when the values a chart draws (NaN: a gap, drawn on neither axis) are all finite and positive
    and the largest is over :data:`LOG_SPAN` times the smallest: then a log axis shows the small ones (the
    tight budgets of the log-spaced Trade-offs grid, a segment's threshold beside another's early spike)
    instead of crowding them against zero. A zero (a method that flags nothing at a tight target, a
    threshold of "any value") keeps the axis linear, as a log axis would silently drop that point.

    >>> spans_decades([0.07, 3.9]), spans_decades([1.0, 5.0]), spans_decades([0.0, 3.9]), spans_decades([0.07, float("nan"), 3.9])
    (True, False, False, True)
    """
    v = np.asarray(values, dtype=float).ravel()
    v = v[~np.isnan(v)]
    return bool(v.size) and bool(np.isfinite(v).all()) and bool((v > 0).all()) and float(v.max()) > LOG_SPAN * float(v.min())


def log_ticks(values) -> tuple[list[float], list[str]]:
    """Tick positions 1-2-5 per decade across ``values`` (positive; NaN ignored; one a decade past three
    decades, where 1-2-5 crowds a half-width chart), each labelled in full ("0.05", not plotly's bare
    "5" between decades, which reads as five).

    >>> log_ticks([0.07, 3.9])
    ([0.1, 0.2, 0.5, 1.0, 2.0], ['0.1', '0.2', '0.5', '1', '2'])
    """
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v) & (v > 0)]
    lo, hi = float(v.min()) / 1.15, float(v.max()) * 1.15
    steps = (1, 2, 5) if hi / lo <= 1e3 else (1,)
    ticks = [m * 10.0 ** e for e in range(int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi))) + 1) for m in steps]
    ticks = [float(f"{t:.12g}") for t in ticks if lo <= t <= hi]
    return ticks, [_tick_text(t) for t in ticks]


def _tick_text(t: float) -> str:
    """A tick label in full, never in exponent form (``0.0001``, ``20,000``)."""
    return f"{t:,.0f}" if t >= 1 else f"{t:.12f}".rstrip("0")


def log_axis(fig: go.Figure, axis: str, values) -> bool:
    """Make ``fig``'s ``axis`` ("x" or "y") logarithmic with :func:`log_ticks` when :func:`spans_decades`
    says so (the one rule of every chart); True when it did (the caller then says "log scale" in the
    axis title: :func:`log_scale_title`)."""
    if not spans_decades(values):
        return False
    tickvals, ticktext = log_ticks(values)
    (fig.update_xaxes if axis == "x" else fig.update_yaxes)(type="log", rangemode="normal", tickvals=tickvals, ticktext=ticktext)
    return True


def log_scale_title(title: str) -> str:
    """An axis title saying its axis is logarithmic: inside the title's closing unit bracket if it has one.

    >>> log_scale_title("Target c (false flags)"), log_scale_title("Cost")
    ('Target c (false flags, log scale)', 'Cost (log scale)')
    """
    return title[:-1] + ", log scale)" if title.endswith(")") else title + " (log scale)"


def tradeoff_figure(points: pd.DataFrame, cost_unit: str, value_unit: str, value_charts: int = CHARTS) -> go.Figure:
    """Mean value against mean realized cost, one curve per method across the targets (log cost axis when
    the costs span more than a decade: :func:`spans_decades`). As the summary table shows them: the cost per
    100 charts, the value per ``value_charts`` charts (``units.value_charts``)."""
    fig = go.Figure()
    style = _method_style(points["method"].unique())
    for method, frame in points.groupby("method", sort=False):
        color, symbol, dash = style[method]
        frame = frame.sort_values("target")
        fig.add_scatter(
            x=CHARTS * frame["mean_cost"], y=value_charts * frame["mean_value"], mode="lines+markers", name=method,
            line={"color": color, "dash": dash}, marker={"symbol": symbol, "size": 9, "color": color},
            customdata=_custom(frame, value_charts), hovertemplate=_hover(cost_unit, value_unit, value_charts),
        )
    # a long unit on its own line: centred under a plot narrowed by the legend, one line ran off the chart's left edge
    x_title = f"Mean realized cost {per_charts()}" + ("<br>" if len(cost_unit) > 12 else " ") + bracketed(cost_unit)
    if log_axis(fig, "x", CHARTS * points["mean_cost"]):
        x_title = log_scale_title(x_title)
    return _layout(fig, "Value vs realized cost", x_title, f"Mean value {per_charts(value_charts)} {bracketed(value_unit)}", height=430, legend="right")


def guarantee_figure(points: pd.DataFrame, control: str, delta: float, cost_unit: str, value_unit: str,
                     value_charts: int = CHARTS) -> go.Figure:
    """Expected control: realized mean cost vs target with the y = x guarantee line, both per 100 charts.

    Violation control: violation frequency vs target (per 100 charts) with the y = delta line.
    ``value_charts``: the hover's value, per that many charts (``units.value_charts``).
    """
    fig = go.Figure()
    style = _method_style(points["method"].unique())
    targets, costs = CHARTS * points["target"].astype(float), CHARTS * points["mean_cost"].astype(float)
    lo = float(targets.min()) if len(points) else 0.0
    hi = float(targets.max()) if len(points) else 1.0
    guarantee = {"mode": "lines", "line": {"color": OKABE_ITO["black"], "dash": "dash", "width": 1.5}, "hoverinfo": "skip"}
    log_x = spans_decades(targets) if len(points) else False
    # expected control on a log target axis: log realized cost too, so y = x stays a straight diagonal
    log_y = log_x and control == "expected" and spans_decades(costs)
    if control == "expected":
        # on a log target axis y = x is drawn through log-spaced points (a curve when cost stays linear)
        line = np.geomspace(lo * 0.95, hi * 1.05, 60).tolist() if log_x else [0, hi * 1.05]
        fig.add_scatter(x=line, y=line, name="Guarantee: y = x", **guarantee)
        y_col, y_title, title = "mean_cost", f"Mean realized cost {per_charts()} {bracketed(cost_unit)}", "Realized cost vs target"
    else:
        fig.add_scatter(x=[lo * 0.95, hi * 1.05], y=[delta, delta], name=f"Guarantee: rate = δ = {delta:g}", **guarantee)
        y_col, y_title, title = "violation_freq", "Share of patients with cost > target (%)", "Violation frequency vs target"
    y_scale = CHARTS if control == "expected" else 1.0
    for method, frame in points.groupby("method", sort=False):
        color, symbol, dash = style[method]
        frame = frame.sort_values("target")
        fig.add_scatter(
            x=CHARTS * frame["target"], y=y_scale * frame[y_col], mode="lines+markers", name=method,
            line={"color": color, "dash": dash}, marker={"symbol": symbol, "size": 9, "color": color},
            customdata=_custom(frame, value_charts), hovertemplate=_hover(cost_unit, value_unit, value_charts),
        )
    # draw the guarantee line over the method curves (it is often right under them), legend unchanged
    fig.data = fig.data[1:] + fig.data[:1]
    fig.update_layout(legend={"traceorder": "normal"})
    fig.data[-1].legendrank = 1
    if control != "expected":
        fig.update_yaxes(tickformat=".0%", rangemode="tozero")
    elif log_y and log_axis(fig, "y", np.concatenate([costs, [lo, hi]])):
        y_title = log_scale_title(y_title)
    else:
        fig.update_yaxes(rangemode="tozero")
    x_title = f"Target {per_charts()} {bracketed(cost_unit)}"
    if log_x and log_axis(fig, "x", targets):
        x_title = log_scale_title(x_title)
    return _layout(fig, title, x_title, y_title, height=430, legend="right")


# --------------------------------------------------------------------------- patients


def patient_figure(codes_frame: pd.DataFrame, title: str, cut: int | None = None) -> go.Figure:
    """Bars of one patient's code probabilities, coloured and patterned by chosen / present.

    ``cut``: number of codes kept from the greedy order; a dashed line marks where the
    threshold cut it (bars must then be in greedy order).
    """
    codes_frame = codes_frame.assign(code=codes_frame["code"].map(plain_html), description=codes_frame["description"].map(plain_html))
    title = plain_html(title)
    fig = go.Figure()
    x_order = list(codes_frame["code"])
    for status in patients.STATUS_ORDER:
        frame = codes_frame[codes_frame["status"] == status]
        if frame.empty:
            continue
        color, pattern = STATUS_STYLE[status]
        fig.add_bar(
            x=frame["code"], y=frame["prob"], name=status,
            marker={"color": color, "line": {"color": "#333333", "width": 0.6}, "pattern": {"shape": pattern, "fillmode": "overlay", "fgcolor": "#222222", "fgopacity": 0.6}},
            customdata=np.stack([frame["description"].astype(str), frame["weight"].astype(float)], axis=1),
            hovertemplate="<b>%{x}</b> %{customdata[0]}<br>probability %{y:.3f}<br>risk weight %{customdata[1]:.3f}<br>" + status + "<extra></extra>",
        )
    fig.update_xaxes(categoryorder="array", categoryarray=x_order, tickangle=-60, type="category")
    fig.update_yaxes(range=[0, 1.08], tickformat=".1f")
    if cut is not None:
        fig.add_vline(x=cut - 0.5, line={"color": OKABE_ITO["black"], "dash": "dash", "width": 1.5})
        # the label sits on the side with room, so it is never cut off at the plot's edge
        left_side = cut > len(x_order) / 2
        text = f"threshold cut: first {cut} chosen ◀" if left_side else f"◀ threshold cut: first {cut} chosen"
        fig.add_annotation(x=cut - 0.5, y=1.06, text=text, showarrow=False, xanchor="right" if left_side else "left", font={"size": 12})
    # a legend even for one status (a new patient's bars are all "chosen" or all "not chosen")
    fig.update_layout(barmode="overlay", bargap=0.15, showlegend=True)
    return _layout(fig, title, "Code (in the greedy order FavMac adds them)", "Predicted probability", height=400)
