"""Segment values that are markup, through the real uploader (issue 21): a Markdown image and an
HTML link as segment values must reach no page as markup.

A tiny HTTP server on a free 127.0.0.1 port counts every request it gets. The calibration file's
segment values point at it: ``![x](http://127.0.0.1:PORT/pixel.png)`` (a browser that renders it
as Markdown fetches the image at once, with the app's URL as referer) and
``<a href="http://127.0.0.1:PORT/x">y</a>`` (rendered as HTML it becomes a live link). With
per-segment control on, every page is visited (the Online session played to the end, the
Trade-offs comparison and the Validity check run); then the server must have had no request
and no page may hold a link to it. Each page's full screenshot goes to
<screenshot_dir>/hostile-segments-<page>.png (conftest.py: a pytest tmp dir).
"""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import pytest

from test_end_to_end import (PAGES, assert_healthy, choose_option, click_button, full_page_screenshot, goto_via_sidebar, keyed,
                             open_page, upload, wait_idle)

pytestmark = pytest.mark.timeout(600)

DRIFT = Path(__file__).resolve().parents[2] / "sample_data" / "drift_calibration.csv"


class _Counter(BaseHTTPRequestHandler):
    """Answers every GET with an empty 200 and records its path."""

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.server.paths.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture
def counting_server():
    """(port, the list of paths requested so far) of a local HTTP server running for the test."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Counter)
    server.paths = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], server.paths
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def hostile_cohort(path: Path, port: int) -> dict[str, str]:
    """The drift demo's first 1,500 patients with two of its three segments renamed to markup
    pointing at ``port``; returns the renaming."""
    renamed = {"East": f"![x](http://127.0.0.1:{port}/pixel.png)", "North": f'<a href="http://127.0.0.1:{port}/x">y</a>'}
    cohort = pd.read_csv(DRIFT, dtype={"patient_id": str}).head(1500)
    cohort["segment"] = cohort["segment"].replace(renamed)
    cohort.to_csv(path, index=False)
    return renamed


def links_to(page, port: int) -> list[str]:
    """<a> elements (anywhere in the page, plotly's SVG included) whose href points at the counting
    server: each as its nearest data-testid ancestor and its HTML (to find the surface)."""
    return page.evaluate(
        """(port) => Array.from(document.querySelectorAll('a')).filter(a => {
               const href = a.getAttribute('href') || a.getAttribute('xlink:href') || '';
               return href.includes('127.0.0.1:' + port);
           }).map(a => {
               const owner = a.closest('[data-testid]');
               return (owner ? owner.getAttribute('data-testid') : '?') + ': ' + a.outerHTML;
           })""", port)


def images_from(page, port: int) -> int:
    return page.evaluate(
        "(port) => Array.from(document.querySelectorAll('img, image')).filter(i => "
        "((i.getAttribute('src') || i.getAttribute('href') || '')).includes('127.0.0.1:' + port)).length", port)


def test_markup_in_segment_values_fetches_nothing_and_links_nowhere(page, app_url, tmp_path, screenshot_dir, counting_server):
    port, requests = counting_server
    path = tmp_path / "plans.csv"
    renamed = hostile_cohort(path, port)

    open_page(page, app_url, "data")
    upload(page, "upload_wide", path)
    goto_via_sidebar(page, "value_and_cost")
    keyed(page, "use_segments").locator("label").first.click()
    wait_idle(page)
    if keyed(page, "segment_column").count():
        choose_option(page, "segment_column", "segment")
    click_button(page, "apply_settings")
    assert_healthy(page, "value & cost with hostile segment values")

    seen = {}
    for name in PAGES:
        if name == "home":  # its URL is /Home after a page switch, which goto_via_sidebar does not expect
            page.locator('[data-testid="stSidebar"] [data-testid="stPageLink-NavLink"]').filter(has_text="Home").first.click()
            wait_idle(page)
        else:
            goto_via_sidebar(page, name)
        if name == "online_session":
            click_button(page, "to_end")
        if name == "trade_offs":
            click_button(page, "run_tradeoffs")
        if name == "validity":
            click_button(page, "run_validity")
        assert_healthy(page, name)
        page.wait_for_timeout(500)  # an image request the render started has time to arrive
        seen[name] = page.locator('[data-testid="stMain"]').inner_text()
        links = links_to(page, port)
        assert not links, f"{name}: live links to the segment value's URL: {links}"
        assert images_from(page, port) == 0, f"{name}: an image from the segment value's URL"
        assert requests == [], f"{name}: the browser fetched {requests}"
        full_page_screenshot(page, screenshot_dir / f"hostile-segments-{name}.png")  # to look at
    # the values were on screen, as text: the pages did show the segments
    shown = [name for name, text in seen.items() if renamed["North"] in text or renamed["East"] in text]
    assert shown, "no page showed the segment values as text"
    assert requests == []
