"""Deep links connect at once (``favmac.ui.server``): opening ``/Data`` must not send Streamlit's
front end looking for the server under ``/Data/_stcore/`` (a 404 and a 100 ms wait before it
tried the root), also when the app is served under ``server.baseUrlPath``; and a page reached
that way still works: its menu moves to another page within the same session."""
from __future__ import annotations

import re

import pytest


pytestmark = pytest.mark.timeout(300)


def _open(browser, url: str, title: str, viewport: dict):
    """A fresh context at ``url``; returns (page, context, [requested URLs]) once ``title`` shows."""
    context = browser.new_context(viewport=viewport)
    context.set_default_timeout(60_000)
    page = context.new_page()
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.on("websocket", lambda ws: requested.append(ws.url))
    page.goto(url)
    page.get_by_role("heading", name=title, exact=True).first.wait_for()
    return page, context, requested


def _check_connected_at_root(requested: list[str], origin_path: str, page_path: str) -> None:
    probes = [url for url in requested if f"{origin_path}/{page_path}/_stcore/" in url]
    assert probes == [], f"the front end looked for the server under the page's path: {probes}"
    assert any(url.endswith(f"{origin_path}/_stcore/stream") for url in requested), requested


@pytest.mark.parametrize("path, title", [("Data", "Data"), ("Online_session", "Online session"), ("Validity", "Validity")])
def test_deep_link_connects_at_the_root(browser, app_url, serving, path, title):
    page, context, requested = _open(browser, f"{app_url}/{path}", title, serving.viewport)
    try:
        _check_connected_at_root(requested, re.sub(r"^https?://[^/]+", "", app_url), path)
    finally:
        context.close()


def test_deep_link_under_a_base_url_path(browser, tmp_path, serving):
    with serving.serve_app(tmp_path, "--server.baseUrlPath", "studio") as base:
        assert base.endswith("/studio")
        page, context, requested = _open(browser, f"{base}/Data", "Data", serving.viewport)
        try:
            assert not any("/studio/Data/_stcore/" in url for url in requested)
            assert any(url.endswith("/studio/_stcore/stream") for url in requested), requested
            # the menu still navigates inside the session (no new page load: same websocket)
            page.locator("[data-testid='stSidebar'] [data-testid='stPageLink'] a", has_text="Patients").first.click()
            page.get_by_role("heading", name="Patients", exact=True).first.wait_for()
            assert page.url.endswith("/studio/Patients")
            assert sum(url.endswith("/_stcore/stream") for url in requested) == 1
        finally:
            context.close()
