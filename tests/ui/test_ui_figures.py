"""favmac.ui.figures: titles, units, palette, hover text."""
from __future__ import annotations

import numpy as np
import pandas as pd
from ui_fixtures import CODES, toy_result, weights_frame

from favmac import tradeoffs
from favmac.ui import data_views, figures, patients, playback


def test_figures_have_titles_units_and_palette():
    series = playback.running_series(toy_result())
    figs = [
        figures.threshold_figure(series, "false positives"),
        figures.cost_figure(series, "expected", 0.5, 0.1, "false positives"),
        figures.cost_figure(series, "violation", 0.5, 0.1, "false positives"),
        figures.value_figure(series, "true positives"),
        figures.reliability_figure(data_views.reliability_bins(np.array([[0.2, 0.8]]), np.array([[0, 1]]))),
        figures.prevalence_figure(data_views.prevalence_table(np.array([[0.2, 0.8]]), np.array([[0, 1]]), ["A", "B"])),
    ]
    for fig in figs:
        assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
        assert fig.layout.title.text
        for trace in fig.data:
            color = getattr(getattr(trace, "line", None), "color", None) or getattr(getattr(trace, "marker", None), "color", None)
            if isinstance(color, str):
                assert color in figures.OKABE_ITO.values() or color == "#C8C8C8"
    # infinite thresholds are not drawn but are counted in the legend
    thr = figs[0]
    assert np.isnan(thr.data[0].y[0]) and "±∞" in thr.data[1].name
    assert "allowed per chart" in thr.layout.yaxis.title.text
    assert "per expected false flag" in figures.threshold_figure(series, "false flags", "price").layout.yaxis.title.text


def test_tradeoff_figures_hover_and_guarantee_line():
    points = tradeoffs.tradeoff_points(
        {"FavMac (ratio)": pd.DataFrame({"method": "x", "target": [1.0, 2.0], "mean_value": [1.0, 2.0], "mean_cost": [0.9, 1.8],
                                         "excess_cost": [-0.1, -0.2], "violation_freq": [0.2, 0.3]}),
         "InnerSet": pd.DataFrame({"method": "y", "target": [1.0, 2.0], "mean_value": [0.5, 0.6], "mean_cost": [0.1, 0.2],
                                   "excess_cost": [-0.9, -1.8], "violation_freq": [0.0, 0.0]})},
        cmax=10.0, vscale=10.0)
    assert set(points["method"]) == {"FavMac (ratio)", "InnerSet"}
    assert points["target_pct"].tolist() == [10.0, 20.0, 10.0, 20.0]
    fig = figures.tradeoff_figure(points, "FP", "TP")
    assert [t.name for t in fig.data] == ["FavMac (ratio)", "InnerSet"]
    assert "target c" in fig.data[0].hovertemplate and fig.data[0].marker.symbol != fig.data[1].marker.symbol
    guarantee = figures.guarantee_figure(points, "expected", 0.1, "FP", "TP")
    line = guarantee.data[-1]  # drawn last, on top of the curves
    assert line.name.startswith("Guarantee") and list(line.x) == list(line.y) and line.legendrank == 1
    violation = figures.guarantee_figure(points, "violation", 0.1, "FP", "TP")
    assert list(violation.data[-1].y) == [0.1, 0.1]


def test_patient_figure_uses_pattern_and_colour():
    frame = patients.patient_codes([0.9, 0.2, 0.6], [1, 1, 0], [True, False, True], CODES, weights_frame())
    fig = figures.patient_figure(frame, "Patient x")
    names = [t.name for t in fig.data]
    assert names == [patients.STATUS_TP, patients.STATUS_FP, patients.STATUS_FN]
    patterns = [t.marker.pattern.shape for t in fig.data]
    assert len(set(patterns)) == 3  # not colour alone
    assert "risk weight" in fig.data[0].hovertemplate


def _points(targets, costs):
    frame = pd.DataFrame({"method": "x", "target": targets, "mean_value": np.linspace(1.0, 2.0, len(targets)),
                          "mean_cost": costs, "excess_cost": np.asarray(costs) - np.asarray(targets),
                          "violation_freq": 0.1})
    return tradeoffs.tradeoff_points({"FavMac (price)": frame}, cmax=100.0, vscale=10.0)


def test_tradeoff_axes_go_log_when_the_grid_spans_decades():
    wide = _points([0.07, 0.3, 1.0, 3.9], [0.06, 0.28, 0.95, 3.7])
    fig = figures.tradeoff_figure(wide, "FP", "TP")
    assert fig.layout.xaxis.type == "log" and "log scale" in fig.layout.xaxis.title.text
    guarantee = figures.guarantee_figure(wide, "expected", 0.1, "FP", "TP")
    assert guarantee.layout.xaxis.type == "log" and guarantee.layout.yaxis.type == "log"
    line = guarantee.data[-1]
    assert list(line.x) == list(line.y) and min(line.x) > 0  # y = x starts inside the log range
    violation = figures.guarantee_figure(wide, "violation", 0.1, "FP", "TP")
    assert violation.layout.xaxis.type == "log" and violation.layout.yaxis.type != "log"


def test_tradeoff_axes_stay_linear_for_a_narrow_grid_or_a_zero_cost():
    narrow = _points([1.0, 2.0, 5.0], [0.9, 1.9, 4.8])
    assert figures.tradeoff_figure(narrow, "FP", "TP").layout.xaxis.type != "log"
    zero = _points([0.07, 0.3, 3.9], [0.0, 0.28, 3.7])  # a method that flags nothing at the tightest target
    assert figures.tradeoff_figure(zero, "FP", "TP").layout.xaxis.type != "log"
    guarantee = figures.guarantee_figure(zero, "expected", 0.1, "FP", "TP")
    assert guarantee.layout.xaxis.type == "log" and guarantee.layout.yaxis.type != "log"
    assert list(guarantee.data[-1].x) == list(guarantee.data[-1].y) and min(guarantee.data[-1].x) > 0
    assert not figures.spans_decades([]) and not figures.spans_decades([1.0, float("inf")])


def test_log_ticks_are_labelled_in_full():
    vals, text = figures.log_ticks([0.07, 3.9])
    assert vals == [0.1, 0.2, 0.5, 1.0, 2.0] and text == ["0.1", "0.2", "0.5", "1", "2"]
    vals, text = figures.log_ticks([0.0012, 0.04])
    assert text[0] == "0.002" and text[-1] == "0.02"
    vals, text = figures.log_ticks([0.0017, 3.9])
    assert text == ["0.01", "0.1", "1"]


def _segment_series(ratio: float, n: int = 300, zero_in: str | None = None) -> pd.DataFrame:
    """Thresholds (price score) of three segments; the value needed in S2 is ``ratio`` times S0's."""
    segments = np.array(["S0", "S1", "S2"], dtype=object)[np.arange(n) % 3]
    needed = np.where(segments == "S2", 0.01 * ratio, np.where(segments == "S1", 0.02, 0.01))
    threshold = 1.0 / needed
    if zero_in is not None:
        threshold[np.flatnonzero(segments == zero_in)[:2]] = np.inf  # "flag every code that brings any value": drawn at 0
    return pd.DataFrame({"position": np.arange(n) + 50, "threshold": threshold, "segment": segments})


def test_one_log_rule_for_the_threshold_chart_and_the_tradeoff_charts():
    """The per-segment threshold chart and the Trade-offs charts decide a log axis by one rule (over one
    decade: spans_decades) and label it with one tick helper (log_ticks), in full."""
    for ratio, expect_log in ((15.0, True), (9.0, False)):  # 15x was linear under the old threshold-chart rule (20x)
        fig = figures.threshold_figure(_segment_series(ratio), "false flags", "price", "confirmed codes")
        y = figures.threshold_plot_values(_segment_series(ratio)["threshold"], "price")
        assert figures.spans_decades(y) == expect_log
        assert (fig.layout.yaxis.type == "log") == expect_log
        assert ("log scale" in fig.layout.yaxis.title.text) == expect_log
        if expect_log:
            assert (list(fig.layout.yaxis.tickvals), list(fig.layout.yaxis.ticktext)) == figures.log_ticks(y)
            assert list(fig.layout.yaxis.ticktext) == ["0.01", "0.02", "0.05", "0.1"]
        tradeoff = figures.tradeoff_figure(_points([0.01, 0.1], [0.01, 0.01 * ratio]), "FP", "TP")
        assert (tradeoff.layout.xaxis.type == "log") == expect_log


def test_a_zero_keeps_every_chart_linear_and_gaps_are_ignored():
    # a threshold of "any value" (T = +inf, drawn at 0) would vanish on a log axis: linear, as on Trade-offs
    fig = figures.threshold_figure(_segment_series(40.0, zero_in="S1"), "false flags", "price", "confirmed codes")
    assert fig.layout.yaxis.type != "log"
    # steps not drawn (T = -inf: nothing flagged) are gaps on either axis and do not decide it
    series = _segment_series(40.0)
    series.loc[:5, "threshold"] = -np.inf
    fig = figures.threshold_figure(series, "false flags", "price", "confirmed codes")
    assert fig.layout.yaxis.type == "log" and "steps not drawn" in fig.layout.xaxis.title.text


def test_log_tick_labels_never_use_exponents_or_bare_digits():
    _, text = figures.log_ticks([0.00002, 0.0009])
    assert text == ["0.00002", "0.00005", "0.0001", "0.0002", "0.0005", "0.001"]
    _, text = figures.log_ticks([900.0, 40000.0])
    assert text == ["1,000", "2,000", "5,000", "10,000", "20,000"]
    assert figures.log_scale_title("Value needed per expected false flag<br>(RAF)") == "Value needed per expected false flag<br>(RAF, log scale)"


def test_reliability_per_segment_puts_its_titled_legend_under_the_plot():
    """Nine segments' legend above a half-width chart grew into its title (the HCC sample's cells)."""
    probs, labels = np.array([[0.2, 0.8], [0.6, 0.1]]), np.array([[0, 1], [1, 0]])
    bins = data_views.reliability_bins(probs, labels)
    fig = figures.reliability_figure(bins, {f"cell{i}": bins for i in range(8)})
    assert fig.layout.legend.y < 0 and fig.layout.legend.yanchor == "top" and fig.layout.legend.title.text == "Segment"
    assert fig.layout.margin.t == 50  # no room kept above the plot for a legend that is not there
    pooled = figures.reliability_figure(bins)
    assert pooled.layout.legend.y > 1  # two entries: the one row above the plot, as before


def test_the_single_threshold_line_follows_the_same_rule_and_says_its_gaps_under_the_axis():
    """Late labels and an adaptive target: a stream's threshold from 0.002 to 600 with 1,222 steps not drawn
    was a flat line with spikes, and the gap's legend entry sat on the y-axis title."""
    n = 200
    needed = np.where(np.arange(n) % 50 == 0, 600.0, 0.002 + 0.0001 * np.arange(n))
    threshold = 1.0 / needed
    threshold[10:30] = -np.inf  # nothing flagged: not drawn
    series = pd.DataFrame({"position": np.arange(n) + 1000, "threshold": threshold})
    fig = figures.threshold_figure(series, "false flags", "price", "RAF (risk score)")
    assert fig.layout.yaxis.type == "log" and "log scale" in fig.layout.yaxis.title.text
    assert [t.name for t in fig.data if t.showlegend is not False] == ["Threshold"]
    assert "20 steps not drawn<br>(nothing flagged" in fig.layout.xaxis.title.text  # two lines: a third of the page wide
