"""favmac.ui.server's two workarounds: the pages' HTML carries the server's address before
Streamlit's bundle runs, the server's connections send small responses without Nagle's wait;
and app.py is an st.App that ``streamlit run`` recognises. (The browser side, that a deep link
then connects without looking under the page's path, is tests/browser/test_deep_link.py.)"""
from __future__ import annotations

import asyncio
import concurrent.futures
import os
import socket
import time
from pathlib import Path

import pytest

from favmac.ui import server
from favmac.ui.navigation import PAGES

REPO = Path(__file__).resolve().parents[2]



def run_async(coroutine):
    """``asyncio.run`` in a thread of its own: the session-wide Playwright fixture of tests/browser
    (collected before tests/ui) keeps an event loop running in the main thread."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()

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


def _asgi(app, path, method="GET", headers=()):
    """ASGI-call ``app`` with an HTTP request; (status, headers, body), or None if it sent nothing."""
    sent, requests = [], [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive():  # the request, then nothing (a file response waits for a disconnect meanwhile)
        if requests:
            return requests.pop()
        await asyncio.Event().wait()

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": [(k.lower().encode(), v.encode()) for k, v in headers], "root_path": "", "scheme": "http",
             "server": ("127.0.0.1", 80)}
    run_async(app(scope, receive, send))
    if not sent:
        return None
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], {k.decode().lower(): v.decode() for k, v in start["headers"]}, body


@pytest.mark.parametrize("base, paths", [("", ["/", "/Data", "/Validity"]), ("/studio/", ["/studio/", "/studio/Data", "/studio/Validity"])])
def test_routes_answer_each_page_with_its_html(base, paths):
    routes = server.page_routes(["", "Data", "Validity", "Data"], base_url_path=base)
    assert [r.path for r in routes] == paths  # one route per page, duplicates dropped
    status, headers, body = _asgi(routes[1].app, routes[1].path)
    assert status == 200
    assert headers["content-type"].startswith("text/html") and headers["cache-control"] == "no-cache"
    assert body == server.page_html("Data")


def test_app_py_is_an_st_app_over_the_router():
    from streamlit.web.server.app_discovery import discover_asgi_app

    found = discover_asgi_app(REPO / "app.py")
    assert found.is_asgi_app and found.app_name == "app"
    source = (REPO / "app.py").read_text()
    assert 'st.App("studio.py"' in source and (REPO / "studio.py").is_file()
    # the start-up hook that sets TCP_NODELAY and prepares the first page (app.py is not imported here: an
    # st.App pins Streamlit's process-wide config to its script)
    assert "from favmac.ui.server import page_routes, url_prefix" in source
    assert "from favmac.ui.bootstrap import studio_lifespan" in source
    assert "lifespan=studio_lifespan" in source
    # one middleware, the boundary (favmac.ui.boundary: access and headers); Streamlit serves its own files
    assert "middleware=[Middleware(BoundaryMiddleware, prefix=url_prefix(), pages=[p.url_path for p in PAGES])]" in source
    assert source.count("Middleware(") == 1
    # every page's URL path is one the script accepts (a bad one fails at start-up)
    for entry in PAGES:
        server.base_url_script(entry.url_path)


def _listener() -> socket.socket:
    """A listening socket bound the way ``streamlit run`` binds its own: ``socket.socket(family)``,
    protocol number 0, which asyncio does not recognise as TCP when it accepts connections."""
    sock = socket.socket(socket.AF_INET)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    return sock


def _accepted_nodelay(listener: socket.socket) -> int:
    """TCP_NODELAY of a connection that an asyncio server on ``listener`` accepts (as uvicorn's does)."""
    async def main():
        seen = asyncio.get_running_loop().create_future()

        def on_connect(reader, writer):
            if not seen.done():
                seen.set_result(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        srv = await asyncio.start_server(on_connect, sock=listener)
        async with srv:
            _, writer = await asyncio.open_connection(*listener.getsockname())
            value = await asyncio.wait_for(seen, 10)
            writer.close()
        return value

    return run_async(main())


def test_connections_of_a_streamlit_style_socket_get_nodelay():
    with _listener() as untouched:
        assert _accepted_nodelay(untouched) == 0  # the defect: Nagle's algorithm stays on
    with _listener() as listener:
        assert server.nodelay_on_listening_sockets() >= 1
        assert _accepted_nodelay(listener) != 0


def test_lifespan_sets_nodelay_and_leaves_other_sockets_alone():
    with _listener() as listener, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp, \
            socket.socket(socket.AF_INET) as unconnected:
        async def start():
            async with server.lifespan(None) as state:
                return state

        assert run_async(start()) is None
        assert listener.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        assert unconnected.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0  # not listening
        assert udp.fileno() >= 0 and listener.fileno() >= 0  # the duplicates were closed, not these


def test_studio_lifespan_prepares_the_first_page_and_sets_nodelay(monkeypatch):
    from favmac.ui import bootstrap

    prepared = []
    monkeypatch.setattr(bootstrap, "prepare_first_page", lambda: prepared.append(1))
    monkeypatch.delenv(bootstrap.WARM_UP_ENV, raising=False)
    with _listener() as listener:
        async def start():
            async with bootstrap.studio_lifespan(None) as state:
                return state

        assert run_async(start()) is None
        assert listener.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    deadline = time.monotonic() + 10
    while not prepared and time.monotonic() < deadline:
        time.sleep(0.01)
    assert prepared == [1]
    monkeypatch.setenv(bootstrap.WARM_UP_ENV, "off")
    assert bootstrap.start_preparing_first_page() is None


def test_base_url_path_is_read_from_streamlits_options(monkeypatch):
    import streamlit as st

    monkeypatch.setattr(st, "get_option", lambda name: {"server.baseUrlPath": "/studio/"}[name])
    assert server.url_prefix() == "/studio"
    assert [r.path for r in server.page_routes(["", "Data"])] == ["/studio/", "/studio/Data"]


def test_nodelay_leaves_no_descriptor_behind():
    """Non-socket descriptors are reached through duplicates that are closed again: a leaked copy
    of a pipe's write end would keep its reader from seeing end-of-file (the Playwright driver
    never exited at the end of a test session)."""
    read_end, write_end = os.pipe()
    try:
        before = len(os.listdir("/proc/self/fd"))
        server.nodelay_on_listening_sockets()
        assert len(os.listdir("/proc/self/fd")) == before
        os.close(write_end)
        write_end = None
        assert os.read(read_end, 1) == b""  # end-of-file: no copy of the write end is left open
    finally:
        os.close(read_end)
        if write_end is not None:
            os.close(write_end)
