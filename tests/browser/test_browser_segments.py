"""In chromium with segments on: options toggle as clicked, legends name segments, every page in per-100-chart units.

An auditor's first hour in a real browser (issue 21): what AppTest cannot see.

With the "Drift & segments demo" and per-segment control on: the options of the settings form
turn on and off as the user clicks (no Apply needed), the charts' legends name the segments
(plotly draws them in the browser), every page shows numbers in per-100-chart units, and each
page's full screenshot goes to <screenshot_dir>/segments-<page>.png (conftest.py: a pytest tmp dir).
"""
from __future__ import annotations

import pytest

from test_end_to_end import (PAGES, assert_healthy, click_button, full_page_screenshot, goto_via_sidebar, keyed,
                             main_text, metric_value, open_page, plotly_trace_counts, wait_idle)

pytestmark = pytest.mark.timeout(600)


def legend_texts(page, chart_index: int) -> list[str]:
    """The legend entries plotly drew in the ``chart_index``-th chart of the main area."""
    chart = page.locator('[data-testid="stMain"] [data-testid="stPlotlyChart"]').nth(chart_index)
    chart.locator(".legendtext").first.wait_for(timeout=30_000)
    return [t.strip() for t in chart.locator(".legendtext").all_text_contents()]


def is_disabled(page, key: str) -> bool:
    return keyed(page, key).locator("input, textarea").first.is_disabled()


def load_drift_with_segments(page, app_url) -> None:
    open_page(page, app_url, "data")
    keyed(page, "sample_choice").get_by_text("Drift & segments demo").first.click()
    click_button(page, "load_sample")
    # the sample's rerun may start after wait_idle's settle time on a loaded machine: wait for its text (90 s)
    page.locator('[data-testid="stMain"]').get_by_text("3,000 patients × 12 codes").first.wait_for(timeout=90_000)
    wait_idle(page)
    assert "3,000 patients × 12 codes" in main_text(page)
    goto_via_sidebar(page, "value_and_cost")
    keyed(page, "use_segments").locator("label").first.click()
    click_button(page, "apply_settings")
    assert_healthy(page, "value & cost with segments")


def test_options_turn_on_as_they_are_clicked(page, app_url):
    open_page(page, app_url, "value_and_cost")
    assert is_disabled(page, "delta") and is_disabled(page, "window") and is_disabled(page, "adaptive_rate")
    assert is_disabled(page, "formula")
    keyed(page, "control").get_by_text("Violation", exact=False).first.click()
    page.wait_for_function("() => !document.querySelector('.st-key-delta input').disabled", timeout=30_000)
    keyed(page, "use_window").locator("label").first.click()
    page.wait_for_function("() => !document.querySelector('.st-key-window input').disabled", timeout=30_000)
    keyed(page, "value_kind").get_by_text("Custom formula", exact=False).first.click()
    page.wait_for_function("() => !document.querySelector('.st-key-formula textarea').disabled", timeout=30_000)
    assert keyed(page, "formula").locator("textarea").input_value() == ""  # empty, with an example as placeholder
    assert_healthy(page, "value & cost after clicking the options")


def test_every_page_with_segments_on(page, app_url, screenshot_dir):
    load_drift_with_segments(page, app_url)
    shots = {}
    for name in PAGES:
        if name == "home":  # its URL is /Home after a page switch, which goto_via_sidebar does not expect
            page.locator('[data-testid="stSidebar"] [data-testid="stPageLink-NavLink"]').filter(has_text="Home").first.click()
            wait_idle(page)
            page.locator('[data-testid="stMain"] h1').filter(has_text="FavMac Studio").first.wait_for()
        else:
            goto_via_sidebar(page, name)
        assert_healthy(page, name)
        if name == "data":
            counts = plotly_trace_counts(page, 3)  # prevalence, reliability, and the default recalibration's curves
            assert len(counts) == 3
            assert legend_texts(page, 1) == ["Perfect calibration", "East", "North", "South"]
        if name == "online_session":
            click_button(page, "to_end")
            assert_healthy(page, "online session after End")
            assert legend_texts(page, 0)[:3] == ["East", "North", "South"]  # one threshold line per segment
            assert float(metric_value(page, "False flags per 100 charts").replace(",", "")) >= 0
            labels = page.locator('[data-testid="stMetricLabel"]').all_inner_texts()
            assert any(label.startswith("Value per false flag (") for label in labels), labels  # names the segment
            assert "learned from everyone before it" not in main_text(page)
        if name == "trade_offs":
            click_button(page, "run_tradeoffs")
            assert_healthy(page, "trade-offs after Run comparison")
            assert "is noise, not a broken promise" in main_text(page)
        if name == "patients":
            keyed(page, "patient_source").get_by_text("New patients").first.click()
            wait_idle(page)
            keyed(page, "patient_select_new").wait_for()
            assert legend_texts(page, 0)  # a legend even when every bar has one status
        if name == "export":
            text = main_text(page)
            assert "calibrated on all" not in text and "its own segment's threshold" in text
        shot = screenshot_dir / f"segments-{name}.png"
        full_page_screenshot(page, shot)
        shots[name] = shot
    assert all(s.stat().st_size > 10_000 for s in shots.values())
