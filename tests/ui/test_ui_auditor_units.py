"""Numbers an auditor reads say their unit, in plain notation (issue 21's walkthrough with the CMS-HCC
payment value in dollars): a threshold of $1,030 per false flag was shown as "1.03e+03"."""
from __future__ import annotations

import numpy as np

from favmac import AdditiveCost, AdditiveValue, replay
from favmac.ui.guarantees import segment_caption, segment_display
from favmac.ui.units import threshold_text, threshold_tile, value_amount

DOLLARS = {"value_kind": "cms_payment", "base_rate": 11000.0, "cost_kind": "fp", "control": "expected", "target": 1.05}
RAF = {**DOLLARS, "base_rate": None}


def test_a_price_threshold_in_dollars_reads_as_dollars_not_exponent_form():
    t = 1 / 1030.249
    assert threshold_tile(t, DOLLARS, "price")[1] == "$1,030"
    assert "at least $1,030 of payment per expected false flag" in threshold_text(t, DOLLARS, "price")
    # in RAF the tile says its unit, as the payment tile beside it ("0.253 RAF")
    assert threshold_tile(t, RAF, "price")[1] == "1,030 RAF" and "e+" not in threshold_text(t, RAF, "price")
    assert threshold_tile(1 / 0.0512, RAF, "price")[1] == "0.0512 RAF"
    assert value_amount(7977.441, DOLLARS) == "$7,977" and value_amount(float("nan"), DOLLARS) == "—"


def test_the_unsupported_payment_cost_is_named_in_the_rule():
    unsupported = {**DOLLARS, "cost_kind": "cms_unsupported"}
    text = threshold_text(1 / 2.5, unsupported, "price")
    assert text.endswith("per expected dollar of unsupported payment") and "risk weight" not in text


def two_segment_run(seed: int, n: int, k: int, segments: bool = True):
    """(probs, labels, groups, replay result) of a small price-score run with two segments (pooled: no groups)."""
    rng = np.random.RandomState(seed)
    probs = rng.beta(1.2, 2.0, size=(n, k)).round(3)
    labels = rng.rand(n, k) < probs
    groups = np.array(["North", "South"], dtype=object)[rng.randint(0, 2, n)]
    result = replay(probs, labels, AdditiveValue(None), AdditiveCost(None), [0.6], burn_in=100,
                    groups=groups if segments else None, score="price")
    return probs, labels, groups, result


def test_the_per_segment_table_shows_each_threshold_as_a_rule_with_its_unit():
    _, _, _, result = two_segment_run(3, 600, 4)
    settings = {"control": "expected", "cost_kind": "fp", "value_kind": "tp", "score": "price"}
    shown = segment_display(result, settings)
    assert "threshold" not in shown.columns  # a bare T with no unit led the table
    finals = {label: float(v[0]) for label, v in result.group_thresholds.items()}
    for _, row in shown.iterrows():
        t = finals[row["segment"]]
        assert row["Value per false flag"] == threshold_tile(t, settings, "price")[1]
        assert row["T (math)"] == f"{t:.4g}"
    caption = segment_caption(result, settings)
    assert "false flags per 100 charts" in caption and "confirmed codes per expected false flag" in caption and "))" not in caption


def test_the_threshold_chart_per_segment_names_every_segment_beside_the_plot_with_its_unit():
    import pandas as pd

    from favmac.ui import figures

    n = 400
    segments = np.array([f"S{i}" for i in range(8)], dtype=object)[np.arange(n) % 8]
    threshold = np.full(n, 1 / 1000.0)
    threshold[segments == "S7"] = 1 / 40000.0  # one segment's threshold 40x the others' (the HCC sample's INSD)
    series = pd.DataFrame({"position": np.arange(n) + 100, "threshold": threshold, "segment": segments})
    fig = figures.threshold_figure(series, "false flags", "price", "dollars of payment")
    assert [t.name for t in fig.data] == [f"S{i}" for i in range(8)]
    assert fig.layout.legend.x > 1 and fig.layout.legend.orientation == "v"  # beside the plot, not over the lines
    assert fig.layout.yaxis.type == "log" and "(dollars of payment, log scale)" in fig.layout.yaxis.title.text
    pooled = figures.threshold_figure(series.drop(columns="segment"), "false flags", "price", "dollars of payment")
    # one rule for every threshold chart (figures.spans_decades): the pooled line over 40x is on a log axis too
    assert pooled.layout.yaxis.type == "log" and "(dollars of payment, log scale)" in pooled.layout.yaxis.title.text
    narrow = figures.threshold_figure(series.drop(columns="segment").assign(threshold=1 / 1000.0), "false flags", "price", "dollars of payment")
    assert narrow.layout.yaxis.type != "log" and "(dollars of payment)" in narrow.layout.yaxis.title.text


def test_steps_not_drawn_are_said_under_the_x_axis_so_the_segment_legend_stays_in_rows():
    import pandas as pd

    from favmac.ui import figures

    segments = np.array(["CFA", "CNA", "INS"], dtype=object)[np.arange(90) % 3]
    threshold = np.full(90, 1 / 900.0)
    threshold[:4] = -np.inf  # nothing flagged: not drawn
    series = pd.DataFrame({"position": np.arange(90), "threshold": threshold, "segment": segments})
    fig = figures.threshold_figure(series, "false flags", "price", "dollars of payment")
    assert [t.name for t in fig.data if t.showlegend is not False] == ["CFA", "CNA", "INS"]
    assert "<br>4 steps not drawn" in fig.layout.xaxis.title.text


def test_recent_patients_name_the_segment_whose_threshold_they_used():
    from favmac.ui import groupings, playback

    probs, labels, groups, result = two_segment_run(4, 300, 3)
    recent = groupings.with_binding(playback.recent_patients(result, labels, 50), result, 50)
    assert list(recent.columns[:2]) == ["patient_id", "segment"]
    assert recent["segment"].tolist() == [str(groups[100 + s]) for s in range(49, 39, -1)]
    pooled = two_segment_run(4, 300, 3, segments=False)[3]
    assert "segment" not in groupings.with_binding(playback.recent_patients(pooled, labels, 50), pooled, 50).columns


def test_running_mean_axis_titles_break_before_a_long_unit():
    """'Mean cost per patient (dollars of unsupported payment)' was cut off in a third of the page."""
    import pandas as pd

    from favmac.ui import figures

    series = pd.DataFrame({"position": [1, 2], "mean_cost": [0.5, 0.4], "mean_value": [1.0, 2.0], "violation_rate": [0.0, 0.5]})
    cost = figures.cost_figure(series, "expected", 0.46, 0.1, "dollars of unsupported payment")
    assert cost.layout.yaxis.title.text == "Mean cost per 100 charts<br>(dollars of unsupported payment)"
    assert figures.value_figure(series, "dollars of payment").layout.yaxis.title.text.endswith("<br>(dollars of payment)")


def test_the_unsupported_payment_cost_names_its_own_unit_in_labels():
    """The threshold read "Value per false flag" and the cost tile "Dollars of unsupported …" (cut
    off) with the unsupported payment: neither is a false flag."""
    from favmac.ui.units import cost_per_100_label, threshold_label

    unsupported = {**DOLLARS, "cost_kind": "cms_unsupported"}
    assert threshold_label(unsupported, "price") == "Value per unsupported $"
    assert threshold_label({**unsupported, "base_rate": None}, "price") == "Value per unsupported RAF"
    assert cost_per_100_label(unsupported) == "Unsupported $ per 100 charts"
    assert threshold_label(DOLLARS, "price") == "Value per false flag"


def test_the_per_segment_caption_explains_the_adaptive_bound_when_it_is_a_column():
    _, _, _, result = two_segment_run(3, 600, 4)
    settings = {"control": "expected", "cost_kind": "fp", "value_kind": "tp", "score": "price"}
    assert "Bound (adaptive)" not in segment_caption(result, settings)
    assert "Bound (adaptive): the most the segment's mean cost can reach" in segment_caption(result, {**settings, "adaptive_rate": 0.05})


def test_the_per_segment_cost_chart_names_its_dashed_target_line():
    from favmac.ui.guarantees import segment_cost_figure

    result = two_segment_run(3, 200, 4)[3]
    fig = segment_cost_figure(result, result.n_steps, {"control": "expected", "target": 0.8, "cost_kind": "fp",
                                                       "value_kind": "tp"})
    names = [trace.name for trace in fig.data]
    assert "Target: 80 per 100 charts (c = 0.8)" in names and len(fig.layout.shapes) == 1  # the line and its legend entry
    assert fig.layout.shapes[0].y0 == 80.0  # per 100 charts, as the tiles: the line where the legend says
    fig = segment_cost_figure(result, result.n_steps, {"control": "violation", "target": 0.8, "delta": 0.1,
                                                       "cost_kind": "fp", "value_kind": "tp"})
    assert "δ = 0.1" in [trace.name for trace in fig.data]
