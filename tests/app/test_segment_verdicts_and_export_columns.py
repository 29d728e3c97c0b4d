"""The pages with segments: Validity's pooled-run verdict, Export's rule column decimals and previews, Patients' table.

Leftovers of an auditor's first hour (issue 21) in the app (AppTest): the Validity verdict of a
pooled run with segments says what held (the pooled promise) and what did not (segments, in false
flags per 100 charts) as a warning, not an error; the Export's per-segment rule column has one
number of decimals."""
from __future__ import annotations

import json
import re

import numpy as np
from app_helpers import assert_clean, go, settle_jobs
from test_segment_views import drift_session
from test_amounts_on_pages import formats

from favmac.ui import units


def test_a_pooled_run_with_a_segment_over_its_target_is_a_warning_naming_what_held():
    at = go(drift_session(segments=False), "validity")  # the drift sample's plans, reported under pooled control
    at = settle_jobs(at.button(key="run_validity").click().run())
    assert_clean(at)
    report = at.session_state["validity"][1]
    over = [str(s) for s, ok in zip(report.segments["segment"], report.segments["passed"]) if ok is False]
    assert report.overall_passed and over, "the drift sample's pooled run keeps its pooled promise and not every plan's"
    assert not at.error and not at.success
    verdict = next(w.value for w in at.warning if "Held overall" in w.value)
    assert verdict.startswith("Held overall, not in every segment. PASS:") and "However" not in verdict
    assert "which pooled control does not promise" in verdict and "false flags per 100 charts" in verdict
    for segment in over:
        assert f"segment {segment} at " in verdict
    tiles = {m.label: m.value for m in at.metric}  # the tiles beside each other share their decimals: 35.31 and 36.00
    assert tiles["Promised at most (false flags per 100 charts)"] == "36.00"  # c = 0.36 per chart, per 100 charts as every tile
    assert len(tiles["Mean over orderings (false flags per 100 charts)"].split(".")[1]) == 2


def test_the_export_rule_column_has_one_number_of_decimals():
    at = go(drift_session(), "export")
    assert_clean(at)
    table = next(d.value for d in at.dataframe if "rule" in d.value.columns)
    places = {len(re.search(r"\.(\d+)", rule).group(1)) for rule in table["rule"]}
    assert len(places) == 1
    assert places == {units.amount_decimals(1 / np.asarray(table["threshold"]))}


# --------------------------------------------------------------------------- the auditor's walk (screenshots)


def test_the_per_segment_table_has_no_empty_warning_column():
    at = go(drift_session(), "value_cost")
    assert_clean(at)
    table = next(t.value for t in at.table if "status" in t.value.columns)
    assert "warning" not in table.columns and "T (math)" in table.columns


def test_export_previews_keep_the_codes_readable_and_say_their_units_and_late_labels():
    at = go(drift_session(), "value_cost")
    at.radio(key="label_arrival").set_value("fixed_delay").run()
    at.number_input(key="label_delay").set_value(100)
    at.button(key="apply_settings").click().run()
    at = go(at, "export")
    assert_clean(at)
    captions = " ".join(c.value for c in at.caption)
    assert "Labels arrive 100 patients after the prediction" in captions  # not only "every patient before it"
    preview = next(d for d in at.dataframe if "realized_cost" in d.value.columns)
    drawn = formats(preview)
    assert drawn["realized_cost"][0] == "realized cost (false flags)"
    assert drawn["realized_value"][0] == "realized value (risk-weighted)"
    assert drawn["threshold"][0] == "threshold T"
    widths = {key.removeprefix("col:"): column.get("width") for key, column in json.loads(preview.proto.columns).items()}
    assert widths["codes"] == 160, widths


def test_patients_greedy_table_puts_chosen_beside_the_code_and_tradeoffs_the_promise_columns_first():
    at = go(drift_session(), "patients")
    assert_clean(at)
    greedy = next(d for d in at.dataframe if "selected" in d.value.columns)
    assert list(greedy.proto.column_order)[:3] == ["rank", "code", "selected"]
    at = go(at, "tradeoffs")
    at = settle_jobs(at.button(key="run_tradeoffs").click().run())
    assert_clean(at)
    summary = next(d for d in at.dataframe if "Method" in d.value.columns)
    order = list(summary.proto.column_order)
    assert order[:5] == ["Method", "Risk-weighted value captured per 100 charts", "False flags per 100 charts",
                         "Over the target (per 100 charts)", "Charts over the target (%)"]
    assert set(order) == set(summary.value.columns)

