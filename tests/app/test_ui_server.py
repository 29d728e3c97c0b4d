"""favmac.ui.server: the pages' HTML carries the server's address before Streamlit's bundle runs,
and app.py is an st.App that ``streamlit run`` recognises. (The browser side, that a deep link
then connects without looking under the page's path, is tests/browser/test_deep_link.py.)"""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from favmac.ui import server
from favmac.ui.navigation import PAGES

REPO = Path(__file__).resolve().parents[2]


def test_script_goes_before_the_first_script_once():
    html = "<html><head><title>x</title><script>a()</script><script type=module src=b.js></script></head></html>"
    out = server.with_base_url(html, "Data")
    assert out.count("BACKEND_BASE_URL") == 1
    assert out.index("BACKEND_BASE_URL") < out.index("<script>a()")
    assert out.replace(server.base_url_script("Data"), "") == html


def test_html_without_a_script_is_left_alone():
    html = "<html><head><title>x</title></head><body></body></html>"
    assert server.with_base_url(html, "Data") == html


def test_script_strips_only_the_pages_own_path():
    data, home = server.base_url_script("Data"), server.base_url_script("")
    assert 's="/Data"' in data and 's=""' in home
    assert "location.origin+p+'/'" in data


@pytest.mark.parametrize("bad", ["../x", "a b", "</script>", "Data/x", "x'y", 'x"y', "Dåta"])
def test_page_paths_other_than_plain_names_are_refused(bad):
    with pytest.raises(ValueError, match="ASCII letters, digits"):
        server.base_url_script(bad)


def test_streamlit_index_gets_the_address_before_its_bundle():
    html = server.page_html("Data").decode()
    assert html.index("BACKEND_BASE_URL") < html.index('<script type="module"')
    assert html.count("BACKEND_BASE_URL") == 1


def _get(route) -> tuple[int, dict, bytes]:
    """Call a Starlette route's endpoint as ASGI with a GET; (status, headers, body)."""
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": route.path, "raw_path": route.path.encode(), "query_string": b"",
             "headers": [], "root_path": "", "scheme": "http", "server": ("127.0.0.1", 80), "path_params": {}}
    asyncio.run(route.app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, body


@pytest.mark.parametrize("base, paths", [("", ["/", "/Data", "/Validity"]), ("/studio/", ["/studio/", "/studio/Data", "/studio/Validity"])])
def test_routes_answer_each_page_with_its_html(base, paths):
    routes = server.page_routes(["", "Data", "Validity", "Data"], base_url_path=base)
    assert [r.path for r in routes] == paths  # one route per page, duplicates dropped
    status, headers, body = _get(routes[1])
    assert status == 200
    assert headers["content-type"].startswith("text/html") and headers["cache-control"] == "no-cache"
    assert body == server.page_html("Data")


def test_app_py_is_an_st_app_over_the_router():
    from streamlit.web.server.app_discovery import discover_asgi_app

    found = discover_asgi_app(REPO / "app.py")
    assert found.is_asgi_app and found.app_name == "app"
    source = (REPO / "app.py").read_text()
    assert 'st.App("studio.py"' in source and (REPO / "studio.py").is_file()
    # every page's URL path is one the script accepts (a bad one fails at start-up)
    for entry in PAGES:
        server.base_url_script(entry.url_path)
