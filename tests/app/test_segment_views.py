"""The pages with per-segment control on (Drift & segments demo): segment-aware views, units, stale messages.

An auditor's first hour (issue 21): segment-aware views, plain units, and the stumbles a newcomer hit.

Each test failed before its fix. The session loads the "Drift & segments demo" (three plans) and
turns per-segment control on, as an auditor comparing plans would.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from app_helpers import SAMPLES, assert_clean, go, open_page, shown, n_predicted, n_streamed

from favmac.segments import segment_table
from favmac.ui import figures, units


def drift_session(segments: bool = True):
    at = open_page("data")
    at.radio(key="sample_choice").set_value("drift")
    at.button(key="load_sample").click().run()
    if segments:
        at = go(at, "value_cost")
        at.checkbox(key="use_segments").check().run()
        at.button(key="apply_settings").click().run()
        assert at.session_state["settings"]["segment"] == "segment"
    return at


def result_of(at):
    return next(iter(at.session_state["results"].values()))


def chart(at, name_part: str) -> dict:
    """The plotly chart whose title contains ``name_part``, as its JSON."""
    for element in at.get("plotly_chart"):
        spec = json.loads(element.proto.spec)
        if name_part in spec["layout"].get("title", {}).get("text", ""):
            return spec
    raise AssertionError(f"no chart titled with {name_part!r}")


# --------------------------------------------------------------------------- per-segment control


def test_export_names_each_segments_threshold_not_the_pooled_one():
    at = go(drift_session(), "export")
    assert_clean(at)
    captions = " ".join(c.value for c in at.caption)
    assert "calibrated on all" not in captions  # the pooled threshold is not what the rows use
    assert "its own segment's threshold" in captions
    result = result_of(at)
    table = next(d.value for d in at.dataframe if "rule" in d.value.columns)
    assert sorted(table["segment"]) == ["East", "North", "South"]
    for _, row in table.iterrows():
        assert row["threshold"] == result.group_thresholds[row["segment"]][0]
        assert row["rule"] == f"{1 / row['threshold']:.{units.amount_decimals(1 / table['threshold'])}f}"  # value per expected false flag, one decimals per column
        assert row["calibration patients"] == result.group_sizes[row["segment"]]
    new = at.session_state["new_patients"]
    assert table["new patients"].sum() == len(new)
    # and the rows of the new-patient export carry those thresholds
    preview = next(d.value for d in at.dataframe if "note" in d.value.columns)
    for _, row in preview.iterrows():
        assert float(row["threshold"]) == pytest.approx(result.group_thresholds[row["segment"]][0])


def test_online_threshold_chart_has_one_line_per_segment_and_the_tile_names_the_segment():
    at = go(drift_session(), "online")
    at.button(key="to_end").click().run()
    assert_clean(at)
    spec = chart(at, "Threshold")
    names = [trace.get("name") for trace in spec["data"]]
    assert names[:3] == ["East", "North", "South"]
    assert spec["layout"]["legend"]["title"]["text"] == "Segment"
    result = result_of(at)
    last_segment = str(result.groups[-1])
    tile = next(m for m in at.metric if m.label.startswith("Value per false flag"))
    assert shown(tile.label) == f"Value per false flag ({last_segment})"
    assert f"The latest patient's segment, {last_segment}" in shown(tile.help)
    assert tile.value == f"{1 / result.group_thresholds[last_segment][0]:.3g}"  # the price score: value per false flag
    captions = " ".join(c.value for c in at.caption)
    assert "learned from everyone before it" not in captions and "its own segment's threshold" in captions


def test_segment_table_counts_predicted_patients_and_prints_three_decimals():
    at = drift_session()
    assert_clean(at)
    table = next(t.value.reset_index() for t in at.table if "status" in t.value.columns)
    expected = segment_table(result_of(at))
    assert table["patients"].astype(int).sum() == n_streamed(at, 3000)  # the recalibration fold is not in the table
    assert table["predicted"].astype(int).sum() == n_predicted(at, 3000)
    assert table["mean cost"].tolist() == [f"{100 * v:.1f}" for v in expected["mean_cost"]]  # 43.2 per 100 charts, not "0.4320"


# --------------------------------------------------------------------------- the Data and Value & cost pages


def test_adapted_target_warning_goes_when_the_weights_change():
    at = drift_session(segments=False)
    warnings = " ".join(w.value for w in at.warning)
    assert "Target set to" in shown(warnings)  # the HCC sample's target, adapted to the demo's C_max
    codes = at.session_state["dataset"].codes
    weights = ("code,weight\n" + "".join(f"{c},{1 + i / 10}\n" for i, c in enumerate(codes))).encode()
    at.file_uploader(key="upload_weights").set_value(("w.csv", weights, "text/csv")).run()
    assert_clean(at)
    assert not any("Target set to" in shown(w.value) for w in at.warning)


def test_old_upload_errors_go_when_other_data_is_loaded():
    at = open_page("data")
    at.file_uploader(key="upload_new").set_value(("new.csv", b"patient_id,prob_X\nA,2\n", "text/csv")).run()
    at.file_uploader(key="upload_weights").set_value(("w.csv", b"code,weight\nHCC18,-1\n", "text/csv")).run()
    assert len(at.error) == 2
    # new calibration data with the same codes: the sample's new patients and weights stay in use,
    # and the errors about the two refused files (made for the data before) go
    at.file_uploader(key="upload_wide").set_value(("mine.csv", (SAMPLES / "hcc_calibration.csv").read_bytes(), "text/csv")).run()
    assert at.session_state["dataset"].name == "mine.csv" and at.session_state["new_patients"] is not None
    assert_clean(at)


def test_formula_box_is_empty_and_disabled_unless_custom_formula_is_chosen():
    at = open_page("value_cost")
    assert at.session_state["settings"]["value_kind"] == "cms_payment"  # the HCC sample's codes are CMS-HCC codes (issue 18)
    box = at.text_area(key="formula")
    assert box.disabled and box.value == ""
    at.radio(key="value_kind").set_value("formula").run()
    assert not at.text_area(key="formula").disabled


def test_options_are_disabled_while_they_are_off():
    at = drift_session(segments=False)
    at = go(at, "value_cost")
    for kind, key in (("number_input", "delta"), ("number_input", "window"), ("number_input", "adaptive_rate"),
                      ("selectbox", "segment_column")):
        assert getattr(at, kind)(key=key).disabled, key
    at.radio(key="control").set_value("violation").run()
    at.checkbox(key="use_window").check().run()
    at.checkbox(key="use_segments").check().run()
    assert not at.number_input(key="delta").disabled and not at.number_input(key="window").disabled
    assert not at.selectbox(key="segment_column").disabled
    at.radio(key="control").set_value("expected").run()
    at.checkbox(key="use_adaptive").check().run()
    assert not at.number_input(key="adaptive_rate").disabled


def test_export_preview_shows_an_empty_cell_where_the_csv_has_one():
    at = open_page("export")
    assert_clean(at)
    assert at.session_state["settings"]["control"] == "expected"  # δ does not apply: its CSV cells are empty
    preview = next(d.value for d in at.dataframe if "delta" in d.value.columns)
    assert preview["delta"].tolist() == [""] * len(preview)


def test_new_patient_chart_has_a_legend():
    at = open_page("patients")
    at.radio(key="patient_source").set_value("New patients").run()
    assert_clean(at)
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert spec["layout"]["showlegend"] is True


def test_reliability_plot_per_segment_when_segments_are_on():
    at = go(drift_session(), "data")
    assert_clean(at)
    spec = chart(at, "Reliability")
    names = [trace["name"] for trace in spec["data"]]
    assert names == ["Perfect calibration", "East", "North", "South"]
    assert any("One line per segment" in c.value for c in at.caption)


# --------------------------------------------------------------------------- Trade-offs and plain units


def test_tradeoffs_include_the_target_and_say_one_ordering_is_noise():
    at = open_page("tradeoffs")
    at.button(key="run_tradeoffs").click().run()
    assert_clean(at)
    assert at.session_state["settings"]["target"] in at.session_state["tradeoffs"]["targets"]
    captions = " ".join(c.value for c in at.caption)
    assert "≤ 0 keeps" not in captions and "is noise, not a broken promise" in captions and "Validity" in captions
    table = at.dataframe[0].value
    assert list(table.columns[1:5]) == ["Payment captured per patient (RAF)", "False flags per 100 charts",  # the payment value (issue 18),
                                        "Payment captured per 1,000 members (RAF)",  # its cost in view beside it (issue 21)
                                        "Value captured (% of the true codes' value)"]


def test_every_page_speaks_in_the_auditors_units():
    at = go(drift_session(), "online")
    at.button(key="to_end").click().run()
    labels = [m.label for m in at.metric]
    assert "False flags per 100 charts" in labels and "Value captured per 100 charts" in labels
    spec = chart(at, "Threshold")
    assert "per expected false flag" in spec["layout"]["yaxis"]["title"]["text"]
    recent = next(d.value for d in at.dataframe if "selected_codes" in d.value.columns)
    newest = result_of(at).thresholds[0, -len(recent):][::-1]
    np.testing.assert_allclose(recent["threshold"], 1 / newest)  # the table shows the threshold as the tile does
    at = go(at, "value_cost")
    universes = at.radio(key="universe").options
    assert not any("p·v" in o or "FPCP" in o for o in universes)  # the math is in the help
    assert "p·v / ((1−p)·w)" in at.radio(key="universe").help
    assert any("false flags per chart on average" in i.value or "charts with more than" in i.value for i in at.info)


def test_units_module():
    fp = {"cost_kind": "fp", "value_kind": "weighted_tp", "control": "expected", "target": 0.36, "delta": 0.1}
    weighted = {**fp, "cost_kind": "weighted_fp", "value_kind": "tp"}
    assert units.cost_unit(fp) == "false flags" and units.value_unit(fp) == "risk-weighted value"
    assert units.cost_per_100_label(weighted) == "Risk weight of false flags per 100 charts"
    assert units.value_per_100_label(weighted) == "Confirmed codes per 100 charts"
    assert units.per_100_charts(0.36) == "36" and units.per_100_charts(35.0) == "3,500" and units.per_100_charts(0.001234) == "0.123"
    assert units.target_text(fp) == "at most 0.36 false flags per chart on average (36 per 100 charts)"
    assert units.target_text({**fp, "control": "violation"}) == "at most 10 % of charts with more than 0.36 false flags"
    adaptive = units.target_text({**fp, "adaptive_rate": 0.05})  # the adaptive target promises a bound, not c on average
    assert adaptive.startswith("a long-run mean steered to 0.36 false flags per chart") and "(γ S)" in adaptive
    # the price threshold T as the value per false flag a code must bring (1/T)
    assert units.threshold_text(0.25, fp, "price") == "flag a code when it brings at least 4 risk-weighted value per expected false flag"
    assert "per unit of expected false-flag risk weight" in units.threshold_text(0.25, weighted, "price")
    assert units.threshold_text(float("inf"), fp, "price") == "flag every code that brings any value"
    assert units.threshold_text(float("-inf"), fp, "price").startswith("flag nothing")
    assert units.threshold_text(float("nan"), fp, "cost") == "no threshold yet"
    label, value, help_text = units.threshold_tile(0.25, fp, "price")
    assert (label, value) == ("Value per false flag", "4") and "T = 0.25" in help_text
    label, value, help_text = units.threshold_tile(1.5, fp, "cost")
    assert (label, value) == ("Expected false flags allowed", "< 1.5") and "cost proxy" in help_text
    assert units.threshold_tile(float("-inf"), fp, "price")[1] == "nothing flagged"
    np.testing.assert_allclose(figures.threshold_plot_values([0.25, np.inf, -np.inf, 0.0], "price"), [4.0, 0.0, np.nan, np.nan])
    np.testing.assert_allclose(figures.threshold_plot_values([0.25, np.inf], "cost"), [0.25, np.nan])
