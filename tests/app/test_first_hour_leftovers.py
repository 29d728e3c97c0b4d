"""Leftovers of an auditor's first hour (issue 21) in the app (AppTest): the Validity verdict of a
pooled run with segments says what held (the pooled promise) and what did not (segments, in false
flags per 100 charts) as a warning, not an error; the Export's per-segment rule column has one
number of decimals."""
from __future__ import annotations

import re

import numpy as np
from app_helpers import assert_clean, go, settle_jobs
from test_first_hour import drift_session

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


def test_the_export_rule_column_has_one_number_of_decimals():
    at = go(drift_session(), "export")
    assert_clean(at)
    table = next(d.value for d in at.dataframe if "rule" in d.value.columns)
    places = {len(re.search(r"\.(\d+)", rule).group(1)) for rule in table["rule"]}
    assert len(places) == 1
    assert places == {units.amount_decimals(1 / np.asarray(table["threshold"]))}
