"""favmac.ui.figures: titles, units, palette, hover text."""
from __future__ import annotations

import numpy as np
import pandas as pd
from ui_fixtures import CODES, toy_result, weights_frame

from favmac.ui import data_views, figures, patients, playback, tradeoffs


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
