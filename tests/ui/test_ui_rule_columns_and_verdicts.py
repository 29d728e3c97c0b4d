"""Threshold rule columns with one number of decimals, pooled-run verdicts, and cost units in titles (no Streamlit).

Leftovers of an auditor's first hour (issue 21), without Streamlit: a column of thresholds as rules
reads with one number of decimals ("0.100 RAF" above "0.103 RAF", not "0.1 RAF"), and the Validity
verdict of a pooled run whose pooled promise held is a warning that says what held and what did not."""
from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from test_validity import cohort as over_confident_cohort  # segment B over-confident (tests/ is on sys.path)

from favmac import AdditiveCost, AdditiveValue, replay
from favmac.ui import groupings, guarantees, units, validity
from favmac.validity import validity_check

RAF = {"value_kind": "cms_payment", "base_rate": None, "cost_kind": "fp", "control": "expected", "target": 1.0}
DOLLARS = {**RAF, "base_rate": 11000.0}
COUNTS = {"value_kind": "tp", "cost_kind": "fp", "control": "expected", "target": 1.0}


def decimals(cell: str) -> int:
    number = re.search(r"[\d,]+(?:\.(\d+))?", cell)
    return len(number.group(1) or "")


def test_a_column_of_rules_has_one_number_of_decimals():
    # 1/T = 0.1 and 0.103 RAF: the tile's three significant digits wrote "0.1 RAF" above "0.103 RAF"
    assert units.threshold_column([10.0, 1 / 0.103], RAF, "price") == ["0.100 RAF", "0.103 RAF"]
    assert units.threshold_column([1 / 0.05, 1 / 0.0512, 1 / 1.2], COUNTS, "price") == ["0.0500", "0.0512", "1.2000"]
    assert units.threshold_column([1 / 4.5, 1 / 41.97], DOLLARS, "price") == ["$4", "$42"]  # whole dollars from $10
    assert units.threshold_column([1.5, 1.27], COUNTS, "cost") == ["< 1.50", "< 1.27"]
    # words stay words, and never change the numbers' decimals
    assert units.threshold_column([float("-inf"), np.inf, 0.0, float("nan"), 10.0], RAF, "price") == [
        "nothing flagged", "none", "no risk", "—", "0.100 RAF"]


def test_the_tile_and_the_rule_agree_and_a_cost_threshold_is_never_in_exponent_form():
    assert units.threshold_tile(1 / 0.103, RAF, "price")[1] == units.threshold_column([1 / 0.103], RAF, "price")[0]
    unsupported = {**DOLLARS, "cost_kind": "cms_unsupported"}
    assert units.threshold_tile(1523.4, unsupported, "cost")[1] == "< $1,523"
    assert "e+" not in units.threshold_text(1523.4, COUNTS, "cost")


def grouped_result():
    rng = np.random.RandomState(4)
    probs = rng.beta(1.0, 3.0, size=(900, 5)).round(4)
    labels = rng.rand(900, 5) < probs
    groups = np.array(["East", "North", "South"])[rng.randint(0, 3, 900)]
    return replay(probs, labels, AdditiveValue(), AdditiveCost(), [1.0], burn_in=100, groups=groups), groups


@pytest.mark.parametrize("settings", [RAF, COUNTS, {**COUNTS, "cost_kind": "weighted_fp"}])
def test_every_per_segment_rule_column_has_one_number_of_decimals(settings):
    result, groups = grouped_result()
    label = units.threshold_label({**settings}, "price")
    shown = guarantees.segment_display(result, settings)[label]  # Value & cost, Online session
    new = pd.DataFrame(index=range(6))
    new.attrs["groups"] = np.array(["East", "North", "South", "East", "West", "North"], dtype=object)
    export = guarantees.segment_thresholds(result, new, settings, "price")  # Export, new patients
    for column in (list(shown), list(export["rule"][export["calibration patients"] > 0])):
        assert len({decimals(cell) for cell in column}) == 1, column
    assert export.set_index("segment").loc["West", "rule"] == "nothing flagged (no calibration patients)"
    assert list(export.columns) == ["segment", "threshold", "rule", "calibration patients", "new patients"]


def test_every_grouping_threshold_table_has_one_number_of_decimals():
    finals = {"A": np.array([10.0]), "B": np.array([1 / 0.103]), "C": np.array([1 / 0.2])}
    result = SimpleNamespace(groupings=[SimpleNamespace(name="plan", final_thresholds=finals, sizes={"A": 5, "B": 6, "C": 7}),
                                        SimpleNamespace(name="age", final_thresholds={"x": np.array([1 / 0.3])}, sizes={"x": 18})])
    tables = groupings.grouping_thresholds(result, RAF, "price")
    assert list(tables["plan"]["rule"]) == ["0.100 RAF", "0.103 RAF", "0.200 RAF"]
    assert list(tables["plan"].columns) == ["segment", "threshold", "rule", "calibration patients"]


# --------------------------------------------------------------------------- the pooled verdict


def test_a_pooled_run_whose_promise_held_is_a_warning_that_says_what_held_and_which_segment_ran_over():
    probs, labels, groups = over_confident_cohort()
    report = validity_check(probs, labels, AdditiveValue(), AdditiveCost(), 0.8, burn_in=200, groups=groups,
                            segment_control=False, cost_unit="false flags")
    assert report.overall_passed and not report.passed
    assert validity.verdict_kind(report, pooled=True) == "warning"
    text = report.verdict
    assert text.startswith("Held overall, not in every segment.") and "However" not in text
    b = report.segments.set_index("segment").loc["B"]
    assert f"segment B at {100 * b['mean']:.3g} false flags per 100 charts against the promised 80 per 100 charts" in text
    assert "which pooled control does not promise" in text and "turn on per-segment control" in text
    # the same data under per-segment control: every promise held
    grouped = validity_check(probs, labels, AdditiveValue(), AdditiveCost(), 0.8, burn_in=200, groups=groups)
    assert validity.verdict_kind(grouped, pooled=False) == "success"


def test_a_failed_promise_stays_an_error():
    failed = SimpleNamespace(passed=False, overall_passed=False)
    assert validity.verdict_kind(failed, pooled=True) == "error"
    segment_failed = SimpleNamespace(passed=False, overall_passed=True)  # per-segment control promised each segment
    assert validity.verdict_kind(segment_failed, pooled=False) == "error"


def test_a_cost_threshold_on_the_unsupported_payment_is_named_by_its_own_unit():
    # a restored settings file (unsupported payment, cost score, segments): the column read "Expected false-flag weight allowed"
    unsupported = {**RAF, "cost_kind": "cms_unsupported"}
    assert units.threshold_label(unsupported, "cost") == "Expected unsupported RAF allowed"
    assert units.threshold_label({**unsupported, "base_rate": 11000.0}, "cost") == "Expected unsupported $ allowed"
    assert "false-flag" not in units.threshold_label(unsupported, "cost")
    assert "unsupported" in units.threshold_rule(unsupported, "cost")


def test_the_threshold_chart_under_the_cost_score_is_titled_with_the_costs_unit():
    from favmac.ui import figures

    series = pd.DataFrame({"position": [1, 2, 3], "threshold": [0.04, 0.05, 0.045]})
    fig = figures.threshold_figure(series, units.cost_short({"cost_kind": "cms_unsupported", "base_rate": None}), "cost")
    assert fig.layout.title.text == "Threshold: unsupported RAF allowed"
    assert "unsupported RAF allowed" in fig.data[0].hovertemplate and "false flags" not in fig.data[0].hovertemplate
    assert figures.threshold_figure(series, "false flags", "cost").layout.title.text == "Threshold: false flags allowed"


def test_a_long_cost_unit_breaks_the_tradeoff_charts_x_title_instead_of_running_off_the_chart():
    from favmac.ui import figures

    points = pd.DataFrame({"method": ["FavMac (price)"] * 3, "target": [0.05, 0.5, 2.0], "mean_cost": [0.04, 0.5, 2.1],
                           "mean_value": [0.1, 0.2, 0.3], "target_pct": [1.0, 2.0, 3.0], "violation_freq": [0.1, 0.1, 0.1]})
    long = figures.tradeoff_figure(points, "RAF of unsupported payment", "RAF (risk score)").layout.xaxis.title.text
    assert long == "Mean realized cost per 100 charts<br>(RAF of unsupported payment, log scale)"
    short = figures.tradeoff_figure(points, "false flags", "confirmed codes").layout.xaxis.title.text
    assert short == "Mean realized cost per 100 charts (false flags, log scale)"
