"""favmac.ui.server: the pages' HTML carries the server's address before Streamlit's bundle runs,
the server's connections send small responses without Nagle's wait, and app.py is an st.App that
``streamlit run`` recognises. (The browser side, that a deep link
then connects without looking under the page's path, is tests/browser/test_deep_link.py.)"""
from __future__ import annotations

import asyncio
import socket
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
    # the start-up hook that sets TCP_NODELAY (app.py is not imported here: an st.App pins
    # Streamlit's process-wide config to its script)
    assert "from favmac.ui.server import lifespan, middleware, page_routes" in source
    assert "lifespan=lifespan, middleware=middleware())" in source
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

    return asyncio.run(main())


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

        assert asyncio.run(start()) is None
        assert listener.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        assert unconnected.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0  # not listening
        assert udp.fileno() >= 0 and listener.fileno() >= 0  # the duplicates were closed, not these


def _front_end(base=""):
    async def inner(scope, receive, send):
        inner.paths.append(scope["path"])

    inner.paths = []
    return server.FrontEndFromMemory(inner, base_url_path=base), inner.paths


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
    asyncio.run(app(scope, receive, send))
    if not sent:
        return None
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], {k.decode().lower(): v.decode() for k, v in start["headers"]}, body


def _some_assets():
    root = server.index_html_path().parent / "static"
    js = min((root / "js").glob("*.js"), key=lambda p: p.stat().st_size)
    return [p.relative_to(root).as_posix() for p in (js, next((root / "css").glob("*.css")), next((root / "media").glob("*.woff2")))]


@pytest.mark.parametrize("name", _some_assets())
def test_front_end_files_come_from_memory_as_streamlit_serves_them(name):
    from streamlit.web.server.starlette.starlette_static_routes import create_streamlit_static_handler

    app, handed = _front_end()
    status, headers, body = _asgi(app, f"/static/{name}")
    assert handed == [] and status == 200
    assert body == (server.index_html_path().parent / "static" / name).read_bytes()
    assert headers["content-length"] == str(len(body))
    # the same answer as Streamlit's own handler for the same file
    stock = create_streamlit_static_handler(str(server.index_html_path().parent), None)
    s_status, s_headers, s_body = _asgi(stock, f"/static/{name}")
    assert (s_status, s_body) == (status, body)
    assert headers["content-type"] == s_headers["content-type"] and headers["cache-control"] == s_headers["cache-control"]
    # HEAD: the headers, no body; a second GET: the same bytes (kept in memory)
    head = _asgi(app, f"/static/{name}", method="HEAD")
    assert head[0] == 200 and head[2] == b"" and head[1]["content-length"] == str(len(body))
    assert _asgi(app, f"/static/{name}")[2] == body


@pytest.mark.parametrize("path, method, headers", [
    ("/static/js/no-such-file.js", "GET", ()),  # not one of Streamlit's files: Streamlit answers
    ("/static/../index.html", "GET", ()),
    ("/static/js/../../index.html", "GET", ()),
    ("/static/%2e%2e/index.html", "GET", ()),
    ("/static/js", "GET", ()),  # a folder
    ("/Data", "GET", ()),
    ("/_stcore/health", "GET", ()),
    ("/static/{js}", "POST", ()),
    ("/static/{js}", "GET", (("Range", "bytes=0-10"),)),
    ("/static/{js}", "GET", (("If-None-Match", '"x"'),)),
    ("/static/{js}", "GET", (("If-Modified-Since", "Thu, 01 Jan 2026 00:00:00 GMT"),)),
])
def test_everything_else_goes_to_streamlit(path, method, headers):
    app, handed = _front_end()
    path = path.replace("{js}", _some_assets()[0])
    assert _asgi(app, path, method=method, headers=headers) is None
    assert handed == [path]


def test_front_end_files_under_a_base_url_path():
    name = _some_assets()[0]
    app, handed = _front_end("/studio/")
    assert _asgi(app, f"/studio/static/{name}")[0] == 200 and handed == []
    assert _asgi(app, f"/static/{name}") is None and handed == [f"/static/{name}"]


def test_websocket_scopes_pass_through():
    app, handed = _front_end()

    async def run():
        await app({"type": "websocket", "path": "/_stcore/stream", "headers": []}, None, None)

    asyncio.run(run())
    assert handed == ["/_stcore/stream"]
