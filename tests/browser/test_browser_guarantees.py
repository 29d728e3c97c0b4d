"""Segments and validity in a real browser: upload a file with a segment column, turn segments on,
read the per-segment table, then run the Validity page and read its verdict; a validity check
keeps running while the user visits another page."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from test_end_to_end import (alerts, assert_healthy, choose_option, click_button, goto_via_sidebar, keyed, main_text,
                             open_page, sidebar_text, upload, wait_idle)

pytestmark = pytest.mark.timeout(300)

DRIFT = Path(__file__).resolve().parents[2] / "sample_data" / "drift_calibration.csv"


def test_segments_table_and_validity_verdict(page, app_url, tmp_path):
    cohort = pd.read_csv(DRIFT, dtype={"patient_id": str}).head(1500).rename(columns={"segment": "plan"})
    path = tmp_path / "plans.csv"
    cohort.to_csv(path, index=False)

    open_page(page, app_url, "data")
    upload(page, "upload_wide", path)
    assert "plans.csv: 1,500 patients × 12 codes" in main_text(page)

    goto_via_sidebar(page, "value_and_cost")
    keyed(page, "use_segments").locator("label").first.click()
    wait_idle(page)  # the rerun that offers the file's columns; a list opened during it closes when it ends
    choose_option(page, "segment_column", "plan")  # the uploaded file's text columns are offered
    click_button(page, "apply_settings")
    assert_healthy(page, "value & cost with segments")
    table = page.locator('[data-testid="stMain"] [data-testid="stTable"]').first
    table.wait_for()
    text = table.inner_text()
    for segment in ("East", "North", "South"):
        assert segment in text, f"segment {segment} missing from the per-segment table: {text!r}"
    assert "within target" in text or "over target" in text

    goto_via_sidebar(page, "validity")
    assert "Segments: per plan" in main_text(page) and "Segments: per plan" in sidebar_text(page)
    click_button(page, "run_validity")
    assert not page.locator('[data-testid="stException"]').count()
    verdicts = [text.strip().split("\n")[-1] for text in alerts(page, "Success") + alerts(page, "Error")]  # after the icon
    assert verdicts and verdicts[0].startswith(("PASS:", "FAIL:")), verdicts
    assert "random orderings of your patients (1,500 patients)" in verdicts[0]
    per_segment = page.locator('[data-testid="stMain"] [data-testid="stTable"]').first.inner_text()
    assert "East" in per_segment and ("PASS" in per_segment or "FAIL" in per_segment)


def test_validity_check_keeps_running_while_you_visit_another_page(page, app_url):
    # the additive value: this checks the background job, with 1000 orderings long enough to
    # leave the page while it runs (the payment value's candidates are built once and permuted)
    open_page(page, app_url, "value_and_cost")
    keyed(page, "value_kind").get_by_text("Risk-weighted TP", exact=False).first.click()
    # without the default recalibration fold: its maps are refitted in every ordering, which makes 1000 orderings
    # minutes long on a busy 2-core machine; the point here is the background job
    keyed(page, "use_recalibrate").locator("label").first.click()
    click_button(page, "apply_settings")
    assert_healthy(page, "value & cost with the additive value")
    goto_via_sidebar(page, "validity")
    orderings = keyed(page, "validity_orderings").locator("input")
    orderings.fill("1000")
    orderings.press("Enter")
    page.wait_for_timeout(500)
    keyed(page, "run_validity").locator("button").first.click()
    progress = page.locator('[data-testid="stProgress"]', has_text="1000 random orderings")
    progress.first.wait_for(timeout=60_000)  # the check runs in the background, with its progress
    goto_via_sidebar(page, "data")
    assert_healthy(page, "data page while the validity check runs")
    goto_via_sidebar(page, "validity")  # waits until the progress bar is gone
    assert keyed(page, "validity_orderings").locator("input").input_value() == "1000"
    assert not page.locator('[data-testid="stException"]').count()
    verdicts = [text.strip().split("\n")[-1] for text in alerts(page, "Success") + alerts(page, "Error")]
    assert verdicts and verdicts[0].startswith(("PASS:", "FAIL:")), verdicts  # not restarted: no second click
    assert "over 1000 random orderings of your patients (4,000 patients)" in verdicts[0], verdicts[0]
