"""Amount formats in tables, tiles and charts: whole dollars, RAF digits, one printf format per column.

Amounts in tables as an auditor reads them: whole dollars with thousands separators (never cents on
$2,284,064), RAF with three significant digits (never 0.00), one printf format per column."""
from __future__ import annotations

import pandas as pd

from favmac.ui import tradeoffs as tradeoffs_view
from favmac.ui.units import amount_format

DOLLARS = {"value_kind": "cms_payment", "base_rate": 11000.0, "cost_kind": "fp"}
RAF = {**DOLLARS, "base_rate": None}
SUMMARY = pd.DataFrame({"method": ["FavMac (price)", "CRC"], "mean_value": [228406.4, 150000.0], "mean_cost": [1.04, 0.7],
                        "excess_cost": [-0.01, -0.35], "violation_freq": [0.3, 0.2]})


def sprintf(fmt: str, x: float) -> str:
    """What the grid's sprintf draws for the formats used here ("$%,.0f", "%,.5f": the "," flag groups thousands)."""
    prefix, spec = fmt.split("%")
    return prefix + format(x, spec.replace("f", "") + "f")


def test_the_payment_summary_prints_whole_dollars_with_separators():
    shown = tradeoffs_view.comparison_display(SUMMARY, 300000.0, 0.1, DOLLARS)
    formats = tradeoffs_view.comparison_formats(shown)
    per_1000, per_patient = "Payment captured per 1,000 members ($)", "Payment captured per patient ($)"
    assert formats[per_1000] == formats[per_patient] == "$%,.0f"
    assert sprintf(formats[per_1000], shown[per_1000][0]) == "$2,284,064"
    assert sprintf(formats[per_patient], shown[per_patient][0]) == "$2,284"
    assert "Method" not in formats and all(not f.startswith("$") for c, f in formats.items() if not c.endswith("($)"))


def test_raf_keeps_three_significant_digits_instead_of_rounding_to_zero():
    table = SUMMARY.assign(mean_value=[0.381, 0.2])  # RAF per 100 charts: 0.00381 per patient
    shown = tradeoffs_view.comparison_display(table, 1.0, 0.1, RAF)
    formats = tradeoffs_view.comparison_formats(shown)
    assert sprintf(formats["Payment captured per patient (RAF)"], shown["Payment captured per patient (RAF)"][0]) == "0.00381"
    assert sprintf(formats["Payment captured per 1,000 members (RAF)"], 3.81) == "3.81"


def test_every_column_of_every_summary_has_a_format():
    for units in (DOLLARS, RAF, {"cost_kind": "fp", "value_kind": "tp"}, {"cost_kind": "cms_unsupported", "value_kind": "cms_payment",
                                                                           "base_rate": 11000.0}):
        shown = tradeoffs_view.comparison_display(SUMMARY, 300000.0, 0.1, units)
        assert set(tradeoffs_view.comparison_formats(shown)) == set(shown.columns) - {"Method"}
    unsupported = tradeoffs_view.comparison_display(SUMMARY, 300000.0, 0.1, {"cost_kind": "cms_unsupported", "value_kind": "cms_payment",
                                                                       "base_rate": 11000.0})
    cost = next(c for c in unsupported.columns if c.startswith("Unsupported $"))
    assert tradeoffs_view.comparison_formats(unsupported)[cost].startswith("$")


def test_amount_format_cents_only_under_ten_dollars_and_ignores_gaps():
    assert amount_format([4.5, float("nan"), None], dollars=True) == "$%,.2f"
    assert amount_format([4.5, 12.0], dollars=True) == "$%,.0f"
    assert amount_format([]) == "%,.2f" and amount_format([0.0, float("inf")]) == "%,.2f"


def test_tiles_in_raf_say_raf_and_units_in_brackets_are_never_nested():
    from favmac.ui.units import bracketed, threshold_tile, value_shown

    assert threshold_tile(1 / 0.0934, RAF, "price")[1] == "0.0934 RAF"  # the Online session's and Patients' tile
    assert threshold_tile(float("inf"), RAF, "price")[1] == "none" and threshold_tile(-0.5, RAF, "price")[1] == "no risk"
    assert threshold_tile(1 / 0.05, {"value_kind": "tp", "cost_kind": "fp"}, "price")[1] == "0.05"  # the label says the unit
    assert value_shown(0.7251, RAF) == "0.725 RAF" and value_shown(725.1, DOLLARS) == "$725" and value_shown(float("nan"), RAF) == "—"
    assert bracketed("RAF (risk score)") == "(RAF, risk score)"


def test_chart_axes_never_nest_brackets():
    import numpy as np

    from favmac.ui import figures, playback
    from ui_fixtures import toy_result

    series = playback.running_series(toy_result())
    titles = [figures.value_figure(series, "RAF (risk score)").layout.yaxis.title.text,
              figures.threshold_figure(series, "false flags", "price", "RAF (risk score)").layout.yaxis.title.text]
    for title in titles:
        assert "(RAF, risk score)" in title and "))" not in title
    assert np.isfinite(series["position"]).all()


def test_chart_ticks_group_thousands_unless_the_axis_has_its_own_labels():
    from favmac.ui import figures, playback
    from ui_fixtures import toy_result

    fig = figures.value_figure(playback.running_series(toy_result()), "dollars of payment")
    assert fig.layout.xaxis.tickformat == "," and fig.layout.yaxis.tickformat == ","  # stream position 1,000; $4,000
    violation = figures.cost_figure(playback.running_series(toy_result()), "violation", 0.5, 0.1, "false flags")
    assert violation.layout.yaxis.tickformat == ".0%"  # its own format is kept


def test_table_columns_read_the_same_on_every_row():
    from favmac.ui.widgets import number_format, number_formats

    frame = pd.DataFrame({"Patients": [4000, 12], "Calibration error (points)": [7.17, 4.7], "realized_value": [0.0, 0.186],
                          "patient_id": [7, 8], "rank": [1, 2], "code": ["HCC17", "HCC18"], 3: [1.5, 2.5]})
    assert number_formats(frame) == {"Patients": "%,d", "Calibration error (points)": "%,.2f", "realized_value": "%,.3f"}
    # a price score in dollars (about 1e-4) keeps its digits instead of printing 0.000
    assert sprintf(number_format([0.0000601, 0.0013, 0.05]), 0.0000601) == "0.000060"
    assert number_format([float("nan"), float("inf")]) == "%,.0f" and number_format([]) == "%,.0f"
