"""In chromium: metric tiles in dollars keep their full labels (no cut with an ellipsis).

Metric tiles in dollars (issue 21): with a base rate and the unsupported-payment cost, the
Online session's and Patients' tile labels ("Unsupported $ per 100 charts", "Payment captured per
patient", "Value per unsupported $", "Confirmed value / unsupported $") were cut with "…" in
equal columns; ``widgets.tiles`` sizes each tile to its label. Full-page screenshots go to
``<screenshot_dir>/dollars-<page>.png`` (a pytest tmp dir) to look at."""
from __future__ import annotations

import pytest

from test_end_to_end import (assert_healthy, click_button, clipped_metric_labels, clipped_metric_values, full_page_screenshot,
                             goto_via_sidebar, keyed, open_page, patients_seen, wait_idle)

pytestmark = pytest.mark.timeout(300)


def test_tiles_in_dollars_keep_their_labels(page, app_url, screenshot_dir):
    open_page(page, app_url, "value_and_cost")  # the HCC sample: the payment value, in RAF
    rate = keyed(page, "pay_base_rate").locator("input")
    rate.fill("11000")
    rate.press("Enter")
    wait_idle(page)
    keyed(page, "cost_kind").get_by_text("Unsupported payment", exact=False).first.click()
    wait_idle(page)
    assert "dollars of unsupported payment per chart" in page.locator('[data-testid="stMain"]').inner_text()  # as typed
    click_button(page, "apply_settings")
    assert_healthy(page, "value & cost in dollars")

    goto_via_sidebar(page, "online_session")
    click_button(page, "to_end")
    seen, total = patients_seen(page)
    assert seen == total
    check_tiles(page, "online_session", screenshot_dir)
    goto_via_sidebar(page, "patients")
    check_tiles(page, "patients", screenshot_dir)


def check_tiles(page, name: str, screenshot_dir) -> None:
    assert_healthy(page, f"{name} in dollars")
    labels = page.locator('[data-testid="stMain"] [data-testid="stMetricLabel"]').all_inner_texts()
    assert any("unsupported $" in label.lower() for label in labels), labels
    full_page_screenshot(page, screenshot_dir / f"dollars-{name}.png")
    assert clipped_metric_labels(page) == [], f"{name}: labels cut off with '…'"
    assert clipped_metric_values(page) == [], f"{name}: values cut off with '…'"
