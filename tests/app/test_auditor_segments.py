"""An auditor's per-cell guarantees (issue 21): the HCC sample's ``cms_cell`` column is offered as
a segment column, and choosing it keeps it each member's cell for the CMS-HCC payment value."""
from __future__ import annotations

import json

import numpy as np
import pytest
from app_helpers import assert_clean, go, open_page, settle_jobs, shown

from favmac.payment_tables import CELL_NAMES
from favmac.ui import jobs
from favmac.ui.session import Session


def cell_session(base_rate: str | None = None):
    at = open_page("value_cost")
    assert_clean(at)
    assert "cms_cell" in at.selectbox(key="segment_column").options
    at.checkbox(key="use_segments").check().run()
    at.selectbox(key="segment_column").set_value("cms_cell").run()
    if base_rate is not None:
        at.text_input(key="pay_base_rate").input(base_rate)
    at.button(key="apply_settings").click().run()
    assert_clean(at)
    return at


def two_groupings():
    """The plan x age band sample with both groupings on (plan first)."""
    at = open_page("data")
    at.radio(key="sample_choice").set_value("groupings")
    at.button(key="load_sample").click().run()
    go(at, "value_cost")
    at.checkbox(key="use_segments").check().run()
    at.selectbox(key="segment_column").set_value("plan").run()
    at.multiselect(key="more_segment_columns").set_value(["age_band"])
    at.button(key="apply_settings").click().run()
    return at


def test_cms_cell_is_a_segment_column_and_stays_each_members_cell():
    at = cell_session()
    settings, dataset = at.session_state["settings"], at.session_state["dataset"]
    assert settings["segment"] == "cms_cell" and settings["value_kind"] == "cms_payment"
    cells = dataset.segments("cms_cell")
    assert set(cells) <= set(CELL_NAMES) and len(set(cells)) > 1
    assert np.array_equal(cells.astype(str), dataset.members["cells"].astype(str))  # the payment value's cells too
    at = settle_jobs(go(at, "online"))
    assert_clean(at)
    result = jobs.online(Session(at.session_state))
    assert set(result.groups) == set(cells)  # one guarantee per cell
    for page in ("value_cost", "patients", "export", "validity"):
        at = settle_jobs(go(at, page))
        assert_clean(at)
    new = at.session_state["new_patients"]
    assert new.attrs["groupings"]["cms_cell"] == list(new.attrs["members"]["cells"])


def test_per_cell_thresholds_in_dollars_read_as_dollars_on_every_page():
    """The walkthrough's finding: with a base rate, "Value per false flag" read 1.03e+03 (Online
    session, Patients, Export) and the per-segment table a bare T = 0.0007588 with no unit."""
    at = cell_session("11000")
    assert at.session_state["settings"]["base_rate"] == 11000.0
    table = next(t.value for t in at.table if "Value per false flag" in t.value.columns)
    assert all(shown(v).startswith("$") for v in table["Value per false flag"]) and "T (math)" in table.columns
    captions = " ".join(shown(c.value) for c in at.caption)
    assert "Mean cost and target: false flags per 100 charts" in captions
    at = settle_jobs(go(at, "online"))
    at.button(key="to_end").click().run()
    assert_clean(at)
    tile = next(m for m in at.metric if m.label.startswith("Value per false flag"))
    assert tile.value.startswith("$") and "e+" not in tile.value
    recent = next(d for d in at.dataframe if "threshold" in d.value.columns)
    config = json.loads(recent.proto.columns)
    # whole dollars with thousands separators (units.amount_format), not the grid's "dollar" with cents
    assert config["value"]["type_config"]["format"] == "$%,.0f" and config["threshold"]["type_config"]["format"] == "$%,.0f"
    at = settle_jobs(go(at, "patients"))
    assert_clean(at)
    tiles = {m.label: m.value for m in at.metric}
    assert tiles["Value per false flag"].startswith("$") and tiles["Expected value of the set"].startswith("$")
    assert not any("e+" in v for v in tiles.values())
    at = settle_jobs(go(at, "export"))
    assert_clean(at)
    rules = next(d.value for d in at.dataframe if "calibration patients" in d.value.columns)
    assert not any("e+" in str(v) for v in rules.to_numpy().ravel())


def test_the_validity_verdict_says_the_cost_unit_of_every_figure(few_orderings):
    """The verdict read "the chosen code sets cost 0.925 per patient ... within the promised 1.05":
    0.925 what? Each cost figure now carries the cost's unit, per cell too."""
    at = cell_session()
    at = settle_jobs(go(at, "validity").button(key="run_validity").click().run())
    assert_clean(at)
    verdict = shown(at.success[0].value)
    # per 100 charts, as the tiles and the histogram
    assert "false flags per 100 charts on average" in verdict and "the promised 105 false flags" in verdict
    assert "the mean cost was" in verdict and verdict.count("false flags per 100 charts") >= 2
    assert any("false flags per 100 charts" in shown(c.value) for c in at.caption)  # the tiles and the histogram, per 100 charts
    assert at.number_input(key="validity_orderings").value == few_orderings


def test_the_tradeoffs_summary_keeps_false_flags_beside_the_payment_in_dollars():
    """At 1,400 px the summary showed payment per patient, per 1,000 members and % captured, and the
    false flags only after a sideways scroll; dollars printed as 4160970.67."""
    at = open_page("value_cost")
    at.text_input(key="pay_base_rate").input("11000")
    at.button(key="apply_settings").click().run()
    at = settle_jobs(go(at, "tradeoffs").button(key="run_tradeoffs").click().run())
    assert_clean(at)
    table = next(d for d in at.dataframe if "Method" in d.value.columns)
    assert list(table.value.columns[1:3]) == ["Payment captured per patient ($)", "False flags per 100 charts"]
    config = json.loads(table.proto.columns)
    assert config["Payment captured per 1,000 members ($)"]["type_config"]["format"] == "$%,.0f"  # $2,284,064, not $2,284,064.00
    assert config["False flags per 100 charts"]["type_config"]["format"] == "%,.2f"


def test_the_greedy_caption_leads_with_the_rule_and_keeps_the_math_after_it():
    at = settle_jobs(open_page("patients"))
    assert_clean(at)
    caption = next(shown(c.value) for c in at.caption if "keeps the first" in c.value)
    assert caption.index("flag a code when it brings at least") < caption.index("T =")
    assert "(in the math:" in caption


def test_export_thresholds_per_grouping_name_the_rule_and_its_unit():
    """Export's "Thresholds per grouping" showed a bare "rule" column (2.58: of what?) after T."""
    at = two_groupings()
    at = settle_jobs(go(at, "export"))
    assert_clean(at)
    tables = [t.value for t in at.table if "calibration patients" in t.value.columns]
    assert len(tables) == 2
    for table in tables:
        assert list(table.columns) == ["Value per false flag", "calibration patients", "T (math)"]
    caption = next(shown(c.value) for c in at.caption if "one per grouping" in c.value)
    assert "risk-weighted value per expected false flag" in caption


def test_the_data_page_draws_reliability_per_group_with_several_groupings():
    """With plan and age_band both on, the reliability plot fell back to the pooled line without
    saying why (the settings' segment is a list of columns): one line per group of a chosen column."""
    at = two_groupings()
    at = go(at, "data")
    assert_clean(at)
    assert any("One line per segment (column plan)" in shown(c.value) for c in at.caption)
    at.selectbox(key="reliability_grouping").set_value("age_band").run()
    assert_clean(at)
    assert any("One line per segment (column age_band)" in shown(c.value) for c in at.caption)


def test_export_new_patient_thresholds_lead_with_the_rule():
    at = settle_jobs(go(cell_session("11000"), "export"))
    assert_clean(at)
    table = next(d for d in at.dataframe if "new patients" in d.value.columns)
    assert list(table.proto.column_order) == ["segment", "rule", "calibration patients", "new patients", "threshold"]
    assert all(str(v).startswith("$") for v in table.value["rule"])


def test_the_unsupported_payment_target_follows_the_base_rate_into_dollars():
    """Walkthrough: Cost = unsupported payment (the target became 0.46 RAF, 3 % of C_max), then a base
    rate of $11,000: the target stayed 0.46, now read as dollars, 0.0 % of C_max, and the whole
    session flagged nothing. The target keeps its percentage of C_max whichever is typed first."""
    from favmac.ui import payment_cost
    from favmac.ui.settings_form import target_percent

    def c_max(at):
        ss = Session(at.session_state)
        return payment_cost.c_max_of(ss.spec(), ss.dataset)

    at = open_page("value_cost")
    raf_cmax = c_max(at)
    at.radio(key="cost_kind").set_value("cms_unsupported").run()
    raf_target = at.number_input(key="target").value
    assert target_percent(raf_target, raf_cmax) == pytest.approx(3.0, abs=0.2)
    at.text_input(key="pay_base_rate").input("11000").run()
    at.button(key="apply_settings").click().run()
    assert_clean(at)
    saved = at.session_state["settings"]
    assert (saved["cost_kind"], saved["base_rate"]) == ("cms_unsupported", 11000.0)
    assert target_percent(saved["target"], c_max(at)) == pytest.approx(3.0, abs=0.2)  # about $5,000, not $0.46
    captions = " ".join(shown(c.value) for c in at.run().caption)
    assert "C_max) is 169,169" in captions and "e+" not in captions  # 1.692e+05 before
    at = settle_jobs(go(at, "online"))
    at.button(key="to_end").click().run()
    assert_clean(at)
    tiles = {m.label: m.value for m in at.metric}
    assert tiles["Unsupported $ per 100 charts"].startswith("$")
    assert next(v for k, v in tiles.items() if k.startswith("Value per unsupported $")) != "nothing flagged"
    at = settle_jobs(go(at, "patients"))
    assert_clean(at)
    tiles = {m.label: m.value for m in at.metric}
    assert tiles["Expected unsupported $"].startswith("$") and "Confirmed value / unsupported $" in tiles
    assert not any("e+" in v for v in tiles.values())  # 8799.940 and 1.25e+04 before

    at = open_page("value_cost")  # the other order: the base rate first, then the cost
    at.text_input(key="pay_base_rate").input("11000").run()
    at.radio(key="cost_kind").set_value("cms_unsupported").run()
    at.button(key="apply_settings").click().run()
    assert_clean(at)
    saved = at.session_state["settings"]
    assert saved["base_rate"] == 11000.0 and target_percent(saved["target"], c_max(at)) == pytest.approx(3.0, abs=0.2)


def test_the_unsupported_payment_in_dollars_reads_in_dollars_on_trade_offs():
    """Trade-offs with the unsupported payment and a base rate: the caption read "0.46 to 8.458e+04
    dollars ... C_max = 1.692e+05" and the cost column 4195240.20 with no dollar sign."""
    at = open_page("value_cost")
    at.radio(key="cost_kind").set_value("cms_unsupported").run()
    at.text_input(key="pay_base_rate").input("11000").run()
    at.button(key="apply_settings").click().run()
    at = settle_jobs(go(at, "tradeoffs").button(key="run_tradeoffs").click().run())
    assert_clean(at)
    caption = next(shown(c.value) for c in at.caption if "targets from" in c.value)
    assert "e+" not in caption and "dollars of unsupported payment per 100 charts" in caption  # the grid from the data, not % of C_max
    table = next(d for d in at.dataframe if "Method" in d.value.columns)
    config = json.loads(table.proto.columns)
    assert config["Unsupported $ per 100 charts"]["type_config"]["format"].startswith("$%,.")  # dollars (tradeoffs.comparison_formats)
