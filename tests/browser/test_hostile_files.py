"""Hostile settings files through the real uploader: refused, no traceback, the data stays (issue 11)."""
from __future__ import annotations

import json

import pytest
from test_end_to_end import alerts, goto_via_sidebar, open_page, sidebar_text, upload, write_wide_csv

from favmac.ui.navigation import PAGES

pytestmark = pytest.mark.timeout(300)

HEAD = b'{"format": "favmac-studio-settings", "version": 1, "settings": '
HOSTILE = {
    "digits.json": (HEAD + b'{"burn_in": ' + b"9" * 5001 + b"}}", "5,001 digits"),
    "nested.json": (HEAD + b'{"grid": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}", "nested too deeply"),
    "grid.json": (HEAD + b'{"grid": "abc"}}', "grid must be an object"),
    "value_kind.json": (HEAD + b'{"value_kind": ["tp"]}}', "value_kind must be text"),
    "latin1.json": (HEAD + '{"formula": "caf\u00e9"}}'.encode("latin-1"), "not UTF-8"),
    "huge.json": (b"{" + b" " * (10 * 2**20) + b"}", "at most 2,000,000 bytes"),
    "nan.json": (HEAD + b'{"target": NaN}}', "NaN is not a finite number"),
    "target.json": (HEAD + b'{"target": 1e300}}', "got 1e+300"),
}


def test_hostile_settings_files_are_refused_and_the_data_stays(page, app_url, tmp_path):
    cohort = tmp_path / "my_cohort.csv"
    write_wide_csv(cohort)
    open_page(page, app_url, "data")
    upload(page, "upload_wide", cohort)
    page.get_by_text("300 patients × 5 codes").first.wait_for()
    goto_via_sidebar(page, "export")
    for name, (payload, words) in HOSTILE.items():
        path = tmp_path / name
        path.write_bytes(payload)
        upload(page, "upload_settings", path)
        page.locator('[data-testid="stAlertContentError"]').filter(has_text=name).first.wait_for()
        assert page.locator('[data-testid="stException"]').count() == 0, f"{name}: traceback shown"
        error = " ".join(alerts(page, "Error"))
        assert words in error and name in error, f"{name}: {error!r}"
        assert "my_cohort.csv" in sidebar_text(page) and "300 patients × 5 codes" in sidebar_text(page), f"{name}: the data changed"
        assert page.locator('[data-testid="stSidebar"] [data-testid="stPageLink-NavLink"]').count() == len(PAGES), f"{name}: the menu is gone"
        assert not page.js_errors, page.js_errors
    # and the session still works: a valid file restores, the uploaded data is still there
    good = tmp_path / "good.json"
    good.write_bytes(json.dumps({"format": "favmac-studio-settings", "version": 1, "settings": {"target": 1.1}}).encode())
    upload(page, "upload_settings", good)
    page.get_by_text("Restored the settings from good.json").first.wait_for()
    assert "my_cohort.csv" in sidebar_text(page) and "Target c: 1.1 " in sidebar_text(page)


def test_markdown_in_ids_and_file_names_is_shown_literally(page, app_url, tmp_path):
    cohort = tmp_path / "__import__.csv"
    write_wide_csv(cohort, ids=["[click me](https://x)"] + [f"P{i:03d}" for i in range(1, 300)])
    open_page(page, app_url, "data")
    upload(page, "upload_wide", cohort)
    page.get_by_text("300 patients × 5 codes").first.wait_for()
    assert page.locator('a[href^="https://x"]').count() == 0
    assert "__import__.csv" in sidebar_text(page)
    assert page.locator('[data-testid="stSidebar"] strong', has_text="import").count() == 0
