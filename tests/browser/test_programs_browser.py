"""The Programs page driven in Chromium (issue 31, "Done means"): upload a cohort on Data, create a program,
predict a new-patients file and download its sets, record labels, reload the page (nothing lost: the
program and the uploaded data, from the store), export the audit trail. Also: a deep link in a fresh
browser context restores the workspace. The server's store is the test process's own temporary one
(``FAVMAC_STORE``, tests/conftest.py); the ``page`` fixture empties the workspace after each test."""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from test_end_to_end import (APP, alerts, assert_healthy, click_button, full_page_screenshot, keyed, main_text, metric_value,
                             open_page, read_download, sidebar_text, upload, wait_idle, write_wide_csv)

pytestmark = pytest.mark.timeout(300)
CODES = ("C1", "C2", "C3", "C4", "C5")


def new_patients(path, n=30, seed=3):
    rng = np.random.RandomState(seed)
    frame = pd.DataFrame({"patient_id": [f"m{i:03d}" for i in range(n)]})
    for code in CODES:
        frame[code] = rng.rand(n).round(3)
    frame.to_csv(path, index=False)
    return frame


def reviews(path, ids, seed=4):
    rng = np.random.RandomState(seed)
    frame = pd.DataFrame({"patient_id": ids})
    for code in CODES:
        frame[code] = (rng.rand(len(ids)) < 0.3).astype(int)
    frame.to_csv(path, index=False)
    return frame


def test_create_predict_label_reload_and_export(page, app_url, tmp_path, screenshot_dir):
    cohort = tmp_path / "cohort_browser.csv"
    write_wide_csv(cohort)
    open_page(page, app_url, "data")
    upload(page, "upload_wide", cohort)
    assert any("cohort_browser.csv" in text for text in alerts(page, "Success")), alerts(page, "Success")

    other = page.context.browser.new_context(viewport=page.viewport_size)  # another tab's deep link: a fresh session
    other.set_default_timeout(60_000)
    try:
        fresh = other.new_page()
        fresh.js_errors = []
        open_page(fresh, app_url, "online_session")
        assert "cohort_browser.csv" in main_text(fresh) and "300 patients" in main_text(fresh)
        assert "cohort_browser.csv" in sidebar_text(fresh)
        assert_healthy(fresh, "online session restored from the workspace")
    finally:
        other.close()

    open_page(page, app_url, "programs")  # a deep link: a fresh session, restored from the workspace
    assert "cohort_browser.csv" in main_text(page), "the page must say which dataset it runs on"
    keyed(page, "program_new_name").locator("input").fill("browser-east")
    page.get_by_role("button", name="Create program").click()
    wait_idle(page)
    assert any("Created program browser-east" in text for text in alerts(page, "Success")), alerts(page, "Success")

    batch = tmp_path / "june.csv"
    new_patients(batch)
    upload(page, "program_new_file", batch)
    click_button(page, "program_predict")
    assert any("Predicted 30 patients from june.csv" in text for text in alerts(page, "Success")), alerts(page, "Success")
    with page.expect_download() as info:
        keyed(page, "program_sets_download").locator("button").first.click()
    sets = pd.read_csv(io.BytesIO(read_download(info.value)))
    assert sets["patient_id"].tolist() == [f"m{i:03d}" for i in range(30)] and "threshold" in sets

    labels = tmp_path / "june_reviews.csv"
    reviews(labels, [f"m{i:03d}" for i in range(18)])
    upload(page, "program_labels_file", labels)
    click_button(page, "program_label")
    assert any("Recorded the labels of 18 patients" in text for text in alerts(page, "Success")), alerts(page, "Success")
    assert metric_value(page, "Labels pending") == "12 patients"
    assert_healthy(page, "programs after label")
    full_page_screenshot(page, screenshot_dir / "programs.png")

    page.reload()  # nothing lost: the program is in the store, the data in the workspace
    page.wait_for_selector(APP)
    wait_idle(page, timeout=120_000, settle_ms=800)
    assert metric_value(page, "Patients predicted") == "30 patients"
    assert metric_value(page, "Labels pending") == "12 patients"
    assert "cohort_browser.csv" in main_text(page) and "cohort_browser.csv" in sidebar_text(page)
    assert page.locator('[data-testid="stPlotlyChart"]').count() == 1  # the timeline
    with page.expect_download() as info:
        keyed(page, "trail_csv").locator("button").first.click()
    trail = pd.read_csv(io.BytesIO(read_download(info.value)))
    assert len(trail) == 30 and trail["confirmed_codes"].notna().sum() + trail["labelled_at"].isna().sum() >= 12
    assert trail["labelled_at"].notna().sum() == 18
    with page.expect_download() as info:
        keyed(page, "trail_parquet").locator("button").first.click()
    assert len(pd.read_parquet(io.BytesIO(read_download(info.value)))) == 30
    assert_healthy(page, "programs after reload")


def test_leaving_the_data_page_while_a_file_uploads_never_runs_on_other_data(page, app_url, tmp_path, screenshot_dir):
    """Issue 31's race, made certain: the file's bytes are held back until well after the user has left the
    Data page. The next page waits, says the file is still uploading, shows nothing computed on the sample
    meanwhile, goes on by itself once the bytes arrive, says the chosen file was not read and offers to read
    it; read as the calibration data, it is what the page runs on."""
    cohort = tmp_path / "late_cohort.csv"
    write_wide_csv(cohort, n=400, seed=5)
    open_page(page, app_url, "data")
    held = []
    page.route("**/_stcore/upload_file/**", lambda route: held.append(route) if route.request.method == "PUT"
               else route.continue_())
    keyed(page, "upload_wide").locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(cohort))
    for _ in range(50):
        if held:
            break
        page.wait_for_timeout(100)
    assert held, "the upload never started"
    page.locator('[data-testid="stSidebar"] [data-testid="stPageLink-NavLink"]').filter(has_text="Patients").first.click()
    page.wait_for_url("**/Patients")
    page.get_by_text("Waiting for late_cohort.csv").or_(page.get_by_text("late_cohort.csv is still uploading")).first.wait_for()
    page.get_by_text("late_cohort.csv is still uploading").wait_for(timeout=60_000)
    assert page.locator('[data-testid="stPlotlyChart"]').count() == 0  # no results on the sample meanwhile
    held[0].continue_()
    page.get_by_text("the page changed before it was read").wait_for(timeout=30_000)  # by itself: no click
    text = main_text(page)
    assert "late_cohort.csv" in text and "HCC cohort" in text  # names the file chosen and the data loaded
    assert page.locator('[data-testid="stPlotlyChart"]').count() == 0
    full_page_screenshot(page, screenshot_dir / "unread_upload.png")
    click_button(page, "unread_calibration")
    page.get_by_text("Data: late_cohort.csv", exact=False).first.wait_for(timeout=60_000)
    wait_idle(page)
    assert "400 patients" in main_text(page) and "late_cohort.csv" in sidebar_text(page)
    assert "the page changed before it was read" not in main_text(page)
    assert_healthy(page, "patients after reading the late file")
