"""Every chart of an expected cost draws it on the tiles' scale (per 100 charts, units.CHARTS), values
as the value tile (per 100 charts, per patient for the CMS payment), target lines and hover texts included:
an auditor comparing the tile "66" with a chart read 0.66 there (issue 21, "Plain units everywhere")."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from favmac import AdditiveCost, AdditiveValue, replay
from favmac.adaptive import adaptive_series
from favmac import tradeoffs
from favmac.ui import figures, playback, validity
from favmac.ui.guarantees import adaptive_figure, segment_cost_figure
from favmac.ui.units import CHARTS, per_100_charts, value_charts, value_tile

FP = {"control": "expected", "target": 0.36, "delta": 0.1, "cost_kind": "fp", "value_kind": "tp"}


def _run(seed: int = 5, n: int = 400, k: int = 4, **options):
    rng = np.random.RandomState(seed)
    probs = rng.beta(1.2, 2.0, size=(n, k)).round(3)
    labels = rng.rand(n, k) < probs
    return replay(probs, labels, AdditiveValue(None), AdditiveCost(None), [0.36], burn_in=100, score="price", **options)


def _shape_y(fig) -> list[float]:
    return [s.y0 for s in fig.layout.shapes if s.type == "line"]


def test_the_running_cost_and_value_charts_end_at_the_tiles_numbers():
    series = playback.running_series(_run())
    last = playback.session_metrics(series, len(series))
    cost = figures.cost_figure(series, "expected", 0.36, 0.1, "false flags")
    drawn = np.asarray(cost.data[0].y, dtype=float)
    np.testing.assert_allclose(drawn, CHARTS * series["mean_cost"])
    assert per_100_charts(last["mean_cost"]) == per_100_charts(drawn[-1] / CHARTS)  # the tile's number is the line's end
    assert _shape_y(cost) == [36.0] and cost.data[1].name == "Target: 36 per 100 charts (c = 0.36)"
    assert cost.layout.yaxis.range[1] >= 36.0 and "per 100 charts" in cost.data[0].hovertemplate
    assert cost.layout.yaxis.title.text.startswith("Mean cost per 100 charts")
    value = figures.value_figure(series, "confirmed codes", value_charts(FP))
    np.testing.assert_allclose(np.asarray(value.data[0].y, dtype=float), CHARTS * series["mean_value"])
    assert value_tile(last["mean_value"], FP)[1] == per_100_charts(value.data[0].y[-1] / CHARTS)
    assert "confirmed codes per 100 charts" in value.data[0].hovertemplate
    # the CMS payment: the tile shows it per patient, and so does the chart
    payment = {**FP, "value_kind": "cms_payment", "base_rate": 11000.0}
    assert value_charts(payment) == 1
    per_patient = figures.value_figure(series, "dollars of payment", value_charts(payment))
    np.testing.assert_allclose(np.asarray(per_patient.data[0].y, dtype=float), series["mean_value"])
    assert per_patient.layout.yaxis.title.text.startswith("Mean value per patient")
    # violation control keeps its rate in %
    rate = figures.cost_figure(series, "violation", 0.36, 0.1, "false flags")
    np.testing.assert_allclose(np.asarray(rate.data[0].y, dtype=float), series["violation_rate"])
    assert _shape_y(rate) == [0.1]


def test_the_per_segment_and_adaptive_charts_use_the_same_scale():
    groups = np.array(["North", "South"], dtype=object)[np.random.RandomState(1).randint(0, 2, 400)]
    result = _run(groups=groups)
    fig = segment_cost_figure(result, result.n_steps, FP)
    lines = [t for t in fig.data if t.name in ("North", "South")]
    assert len(lines) == 2 and all("per 100 charts" in t.hovertemplate for t in lines)
    predicted = np.asarray(result.groups, dtype=object)
    for trace in lines:
        mine = np.asarray(result.cost[0], dtype=float)[predicted == trace.name]
        assert abs(trace.y[-1] - CHARTS * mine.mean()) < 1e-9  # the segment's mean cost per chart × 100
    assert _shape_y(fig) == [36.0] and fig.layout.yaxis.title.text == "Mean false flags per 100 charts"
    adaptive = _run(adaptive_rate=0.05)
    fig = adaptive_figure(adaptive, adaptive.n_steps, "false flags")
    series = adaptive_series(adaptive)
    for trace, column in zip(fig.data[:3], ("adaptive_target", "mean_cost", "bound")):
        np.testing.assert_allclose(np.asarray(trace.y, dtype=float), CHARTS * series[column])
    assert _shape_y(fig) == [36.0] and "Target: 36 per 100 charts (c = 0.36)" in [t.name for t in fig.data]
    assert fig.layout.yaxis.range[1] == CHARTS * 2.5 * 0.36


def _points():
    frame = pd.DataFrame({"target": [0.07, 0.3, 1.0, 3.9], "mean_value": [0.5, 1.0, 1.5, 2.0], "mean_cost": [0.06, 0.28, 0.95, 3.7],
                          "excess_cost": [-0.01, -0.02, -0.05, -0.2], "violation_freq": [0.1, 0.1, 0.2, 0.2]})
    return tradeoffs.tradeoff_points({"FavMac (price)": frame}, cmax=10.0, vscale=10.0)


def test_the_tradeoff_charts_draw_the_summary_tables_numbers():
    points = _points()
    fig = figures.tradeoff_figure(points, "false flags", "confirmed codes")
    np.testing.assert_allclose(fig.data[0].x, CHARTS * points["mean_cost"])
    np.testing.assert_allclose(fig.data[0].y, CHARTS * points["mean_value"])
    # the log cost axis: ticks in the drawn unit (6 to 370 per 100 charts), labelled in full
    assert fig.layout.xaxis.type == "log" and list(fig.layout.xaxis.ticktext) == ["10", "20", "50", "100", "200"]
    assert fig.layout.xaxis.title.text == "Mean realized cost per 100 charts (false flags, log scale)"
    custom = np.asarray(fig.data[0].customdata, dtype=float)
    np.testing.assert_allclose(custom[:, 0], CHARTS * points["target"])  # the hover says what the axes draw
    np.testing.assert_allclose(custom[:, 1], points["target_pct"])
    np.testing.assert_allclose(custom[:, 3], fig.data[0].x)
    assert "false flags per 100 charts" in fig.data[0].hovertemplate and "confirmed codes per 100 charts" in fig.data[0].hovertemplate
    payment = figures.tradeoff_figure(points, "false flags", "dollars of payment", value_charts({"value_kind": "cms_payment"}))
    np.testing.assert_allclose(payment.data[0].y, points["mean_value"])  # per patient, as the payment's summary column
    assert "dollars of payment per patient" in payment.data[0].hovertemplate
    guarantee = figures.guarantee_figure(points, "expected", 0.1, "false flags", "confirmed codes")
    curve, line = guarantee.data[0], guarantee.data[-1]
    np.testing.assert_allclose(curve.x, CHARTS * points["target"])
    np.testing.assert_allclose(curve.y, CHARTS * points["mean_cost"])
    assert list(line.x) == list(line.y) and min(line.x) == pytest.approx(0.95 * 7.0) and max(line.x) == pytest.approx(1.05 * 390.0)  # y = x per 100 charts
    assert guarantee.layout.xaxis.title.text == "Target per 100 charts (false flags, log scale)"
    violation = figures.guarantee_figure(points, "violation", 0.1, "false flags", "confirmed codes")
    np.testing.assert_allclose(violation.data[0].y, points["violation_freq"])  # a rate stays a rate
    assert list(violation.data[-1].y) == [0.1, 0.1] and violation.data[-1].x[1] == pytest.approx(1.05 * 390.0)


def test_the_validity_histogram_is_per_100_charts_with_its_promise():
    statistic = np.array([0.30, 0.34, 0.35, 0.37, 0.41])
    report = SimpleNamespace(control="expected", statistic=statistic, promised=0.36, predicted_spread=0.02, observed=0.33)
    fig = validity.histogram_figure(report, "false flags")
    np.testing.assert_allclose(fig.data[0].x, CHARTS * statistic)
    assert "false flags per 100 charts" in fig.data[0].hovertemplate
    vertical = [s.x0 for s in fig.layout.shapes if s.type == "line"]
    assert vertical == [36.0, 33.0]  # the promise and the arrival order, on the bars' scale
    assert "Promise: 36 per 100 charts (c = 0.36)" in [t.name for t in fig.data]
    assert fig.layout.xaxis.title.text == "Mean cost per 100 charts (false flags)"
    rates = SimpleNamespace(control="violation", statistic=np.array([0.05, 0.08]), promised=0.1, predicted_spread=0.01, observed=None,
                            target=1.1)
    fig = validity.histogram_figure(rates, "false flags")
    np.testing.assert_allclose(fig.data[0].x, [5.0, 8.0])  # in %, as before
    assert "Promise: δ = 10 %" in [t.name for t in fig.data]


def test_the_per_segment_chart_grows_with_its_legend():
    """Eight segments and the target under a half-width chart squashed the plot into a sliver (screenshot)."""
    from favmac.ui.guarantees import LEGEND_ROW

    two = segment_cost_figure(_run(groups=np.array(["North", "South"] * 200, dtype=object)), 400, FP)
    eight = np.array([f"cell {i}" for i in range(8)] * 50, dtype=object)
    many = segment_cost_figure(_run(groups=eight), 400, FP)
    assert len(many.data) == 9 and many.layout.height - two.layout.height == 6 * LEGEND_ROW
    assert many.layout.height - LEGEND_ROW * len(many.data) >= 300  # the plot keeps its own height
