"""The server's boundary (favmac.ui.boundary, .streamlit/config.toml): local mode answers this
computer only; the middleware hides /_stcore/metrics, sets the security headers, gives each
browser its client cookie and refuses downloads and uploads to a request that does not come from
the session's browser. (The whole path in Chromium, with sign-in: tests/browser/test_signin.py.)"""
from __future__ import annotations

import asyncio
import concurrent.futures
import os
import re
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest

from favmac.ui import boundary

REPO = Path(__file__).resolve().parents[1]


def run_async(coroutine):
    """``asyncio.run`` in a thread of its own (the browser tests' Playwright keeps a loop in the main thread)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def call(path: str, *, cookie: str = "", method: str = "GET", content_type: bytes = b"text/html; charset=utf-8",
         prefix: str = "", query: bytes = b"", inner_headers=(), request_headers=(), pages=()):
    """The middleware in front of an app answering 200 with ``content_type``: (status, headers, body, inner called)."""
    called = []

    async def inner(scope, receive, send):
        called.append(scope["path"])
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", content_type), (b"x-frame-options", b"ALLOWALL"), *inner_headers]})
        await send({"type": "http.response.body", "body": b"inner"})

    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b""}

    headers = ([(b"cookie", cookie.encode())] if cookie else []) + list(request_headers)
    scope = {"type": "http", "method": method, "path": path, "headers": headers, "scheme": "http", "query_string": query}
    run_async(boundary.BoundaryMiddleware(inner, prefix=prefix, pages=pages)(scope, receive, send))
    start = sent[0]
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return start["status"], [(k.decode(), v.decode()) for k, v in start["headers"]], body, bool(called)


def header_values(headers, name):
    return [v for k, v in headers if k.lower() == name]


def test_every_response_carries_the_security_headers_once():
    status, headers, body, called = call("/")
    assert status == 200 and body == b"inner" and called
    assert header_values(headers, "x-frame-options") == ["SAMEORIGIN"]  # the inner app's own is replaced
    assert header_values(headers, "x-content-type-options") == ["nosniff"]
    (csp,) = header_values(headers, "content-security-policy")
    assert "frame-ancestors 'self'" in csp


@pytest.mark.parametrize("path", ["/_stcore/metrics", "/studio/_stcore/metrics"])
def test_metrics_are_not_served(path):
    status, headers, body, called = call(path, prefix="/studio" if path.startswith("/studio") else "")
    assert status == 404 and not called and b"session" not in body
    assert header_values(headers, "x-content-type-options") == ["nosniff"]


def test_an_html_page_gives_a_browser_without_one_its_client_cookie():
    _, headers, _, _ = call("/Data")
    (cookie,) = header_values(headers, "set-cookie")
    assert re.fullmatch(r"favmac_client=[\w-]{40,}; Path=/; HttpOnly; SameSite=Lax", cookie), cookie
    _, headers, _, _ = call("/Data", cookie="favmac_client=abc")
    assert header_values(headers, "set-cookie") == []  # kept: the browser's sessions stay its own
    _, headers, _, _ = call("/static/js/x.js", content_type=b"application/javascript")
    assert header_values(headers, "set-cookie") == []
    _, headers, _, _ = call("/s/Data", prefix="/s")
    assert "Path=/s;" in header_values(headers, "set-cookie")[0]


def test_sign_out_drops_the_client_cookie():
    _, headers, _, called = call("/auth/logout", cookie="favmac_client=abc", content_type=b"text/plain")
    assert called
    (cookie,) = header_values(headers, "set-cookie")
    assert cookie.startswith("favmac_client=;") and "Max-Age=0" in cookie


DELETED = (b"set-cookie", b'_streamlit_user=""; expires=Sun, 29 Nov 2026 03:28:56 GMT; Max-Age=0; Path=/; SameSite=lax')
SIGNED_IN = (b"set-cookie", b"_streamlit_user=abc; HttpOnly; Max-Age=2592000; Path=/; SameSite=lax")


@pytest.mark.parametrize("query, inner, failed", [
    (b"error=access_denied&state=x", (), True),  # the provider refused
    (b"code=1&state=x", (DELETED,), True),  # Streamlit could not complete the token exchange
    (b"code=1&state=x", (DELETED, SIGNED_IN), False),  # stale cookies cleared, then signed in
    (b"code=1&state=x", (SIGNED_IN,), False),
])
def test_a_sign_in_that_comes_back_without_a_user_is_flagged(query, inner, failed):
    _, headers, _, _ = call("/oauth2callback", query=query, content_type=b"text/plain", inner_headers=inner)
    flags = [v for v in header_values(headers, "set-cookie") if v.startswith(boundary.SIGN_IN_FAILED_COOKIE)]
    assert len(flags) == 1
    assert ("Max-Age=0" not in flags[0]) == failed, flags


PAGES = ("", "Data", "Export")


@pytest.mark.parametrize("referer, remembered", [("http://h/s/Export", "Export"), ("http://h/s/", ""),
                                                  ("http://h/s/Nowhere", ""), ("", "")])
def test_a_sign_in_remembers_the_page_it_started_on(referer, remembered):
    request = [(b"referer", referer.encode())] if referer else []
    _, headers, _, _ = call("/s/auth/login", prefix="/s", pages=PAGES, request_headers=request, content_type=b"text/plain")
    cookies = [v for v in header_values(headers, "set-cookie") if v.startswith(boundary.NEXT_PAGE_COOKIE)]
    assert cookies == ([f"{boundary.NEXT_PAGE_COOKIE}={remembered}; Path=/s; HttpOnly; SameSite=Lax; Max-Age=600"]
                       if remembered else [])


@pytest.mark.parametrize("inner, page, location", [
    ((SIGNED_IN,), "Export", "/s/Export"),  # signed in: back to the page
    ((DELETED,), "Export", "/s/"),  # the sign-in failed: home, where the sign-in page says so
    ((SIGNED_IN,), "Nowhere", "/s/"),  # not one of the app's pages: home
])
def test_the_callback_returns_to_that_page(inner, page, location):
    _, headers, _, _ = call("/s/oauth2callback", prefix="/s", pages=PAGES, query=b"code=1&state=x", content_type=b"text/plain",
                            cookie=f"{boundary.NEXT_PAGE_COOKIE}={page}", inner_headers=((b"location", b"/s/"), *inner))
    assert header_values(headers, "location") == [location]
    assert any(v.startswith(f"{boundary.NEXT_PAGE_COOKIE}=;") for v in header_values(headers, "set-cookie"))


def test_a_download_nobody_registered_is_not_served():
    status, _, body, called = call("/media/0123abcd.csv", cookie="favmac_client=abc")
    assert (status, body, called) == (404, b"Not found", False)
    status, _, _, called = call("/media/0123abcd.csv")  # curl with no cookie at all
    assert (status, called) == (404, False)


def test_an_upload_to_a_session_not_of_this_browser_is_refused():
    status, _, _, called = call("/_stcore/upload_file/some-session/file-1", method="PUT", cookie="favmac_client=abc")
    assert (status, called) == (403, False)
    status, _, _, called = call("/_stcore/upload_file/some-session/file-1", method="OPTIONS")
    assert called  # the CORS preflight is Streamlit's to answer


def test_registered_sessions_match_cookie_and_sign_in_fingerprint(monkeypatch):
    live = {"s1", "s2"}
    monkeypatch.setattr(boundary, "_active", lambda sid: sid in live)
    alice = boundary.cookie_fingerprint({"_streamlit_user": "signed-alice"})
    boundary.register_session("s1", "tok-a", alice)
    boundary.register_session("s2", "", "")
    assert boundary.is_registered_for("s1", "tok-a", alice)
    assert not boundary.is_registered_for("s1", "tok-b", alice)  # another browser
    assert not boundary.is_registered_for("s1", "tok-a", "")  # the same browser, signed out
    assert not boundary.is_registered_for("s1", "tok-a", boundary.cookie_fingerprint({"_streamlit_user": "bob"}))
    assert not boundary.is_registered_for("s2", "", "")  # a session without the cookie: nobody's
    live.discard("s1")  # the session ended
    assert not boundary.is_registered_for("s1", "tok-a", alice)
    boundary.forget_session("s1")
    boundary.forget_session("s2")
    assert "s1" not in boundary.registered_sessions() and "s2" not in boundary.registered_sessions()


def test_streamlits_media_table_is_where_the_boundary_reads_it():
    """sessions_holding reads MediaFileManager's private table: this fails first on an upgrade that moves it."""
    from streamlit.runtime.media_file_manager import MediaFileManager
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    manager = MediaFileManager(MemoryMediaFileStorage("/media"))
    assert isinstance(manager._files_by_session_and_coord, dict)
    assert hasattr(manager._lock, "acquire")


def test_config_turns_on_xsrf_and_cors_protection_and_binds_localhost():
    server = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())["server"]
    assert server["address"] == "127.0.0.1"
    assert server["enableXsrfProtection"] is True and server["enableCORS"] is True
    assert "cookieSecret" not in server  # from secrets.toml ([auth] cookie_secret), never committed


def non_loopback_ipv4() -> str | None:
    """This machine's address on its default route (no packet is sent), or None without one."""
    for probe in ("192.0.2.1", "10.255.255.255"):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            try:
                sock.connect((probe, 9))
            except OSError:
                continue
            address = sock.getsockname()[0]
            if not address.startswith("127.") and address != "0.0.0.0":
                return address
    return None


def test_local_mode_refuses_connections_from_other_hosts(tmp_path):
    """``streamlit run app.py`` with the repository's config (no --server.address): the health
    check answers on 127.0.0.1, and a connection to the machine's network address is refused."""
    address = non_loopback_ipv4()
    if address is None:
        pytest.skip("this machine has no network address other than loopback")
    log_path = tmp_path / "streamlit.log"
    secrets = tmp_path / "no-secrets.toml"  # local mode even on a machine whose ~/.streamlit has a secrets file
    secrets.write_text("")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", "0",
                                 "--secrets.files", str(secrets)],
                                cwd=REPO, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)
    try:
        port = None
        deadline = time.monotonic() + 60
        while port is None and time.monotonic() < deadline and proc.poll() is None:
            found = re.search(r"URL: http://([\d.]+):(\d+)", log_path.read_text(errors="replace"))
            if found:
                assert found.group(1) == "127.0.0.1", log_path.read_text()
                port = int(found.group(2))
            time.sleep(0.2)
        assert port is not None, log_path.read_text(errors="replace")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=10) as response:
            assert response.read() == b"ok"
        with pytest.raises(OSError):
            socket.create_connection((address, port), timeout=3).close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def test_the_upload_limit_is_stated_in_the_file_browsers_unit():
    limit = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())["server"]["maxUploadSize"]
    text = boundary.upload_limit_text(limit)
    assert f"Files up to {limit} MB as your file browser shows sizes" in text
    assert f"{limit * 1_000_000:,} bytes" in text and "1,048,576" in text
    assert "upload_limit_text(st.get_option(\"server.maxUploadSize\"))" in (REPO / "pages" / "1_Data.py").read_text()


def test_streamlits_uploader_counts_megabytes_as_the_operating_system_does():
    """upload_limit_text describes Streamlit's front end: 1024-based on Windows, 1000-based elsewhere
    (its bundle's size unit); this fails first when an upgrade changes that."""
    import streamlit

    bundle = Path(streamlit.__file__).parent / "static" / "static" / "js"
    assert any("?1024:1e3" in path.read_text(errors="replace") for path in bundle.glob("utils.*.js"))


class _Session:
    def __init__(self, session_id):
        self.id = session_id
        self.shut_down = False

    def shutdown(self):
        self.shut_down = True


class _Files:
    def __init__(self):
        self.cleared, self.removed, self.orphans_removed = [], [], 0

    def clear_session_refs(self, session_id):
        self.cleared.append(session_id)

    def remove_session_files(self, session_id):
        self.removed.append(session_id)

    def remove_orphaned_files(self):
        self.orphans_removed += 1


def test_the_reaper_shuts_down_expired_sessions_and_releases_ended_ones():
    """favmac.ui.server.reap_ended_sessions on Streamlit's own session storage (its TTL cache) with a
    fake clock: an expired disconnected session is shut down; a registered session that is neither
    active nor stored (dropped without a shutdown) has its files released and is forgotten."""
    from streamlit.runtime.memory_session_storage import MemorySessionStorage
    from streamlit.runtime.session_manager import SessionInfo
    from types import SimpleNamespace

    from favmac.ui import server

    storage = MemorySessionStorage(ttl_seconds=30)
    clock = [1000.0]
    storage._cache._timer = lambda: clock[0]
    expired, waiting = _Session("expired"), _Session("waiting")
    storage.save(SessionInfo(client=None, session=expired))
    clock[0] += 20
    storage.save(SessionInfo(client=None, session=waiting))
    clock[0] += 15  # "expired" is 35 s old, "waiting" 15 s
    files = _Files()
    runtime = SimpleNamespace(_session_mgr=SimpleNamespace(_session_storage=storage), media_file_mgr=files,
                              uploaded_file_mgr=files, is_active_session=lambda sid: sid == "active")
    for sid in boundary.known_sessions():  # sessions other tests of this process registered: not this test's
        boundary.forget_session(sid)
    for sid in ("active", "waiting", "dropped"):
        boundary.register_session(sid, "tok", "")
    try:
        assert server.reap_ended_sessions(runtime) == 2
        assert expired.shut_down and not waiting.shut_down
        assert files.cleared == files.removed == ["dropped"] and files.orphans_removed == 1
        assert {"active", "waiting"} <= set(boundary.registered_sessions())
        assert "dropped" not in boundary.registered_sessions()
        assert server.reap_ended_sessions(runtime) == 0  # nothing more has ended
    finally:
        for sid in ("active", "waiting", "dropped"):
            boundary.forget_session(sid)


def test_the_reconnect_window_is_short():
    server = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())["server"]
    assert server["disconnectedSessionTTL"] <= 30  # + one reaper pass: ended sessions are gone within 60 s


def test_a_download_stays_its_sessions_while_the_page_reruns(monkeypatch):
    """Streamlit's media table is empty for a session between the start of a full rerun and the
    moment the run draws the download again: the holders seen before still count, until the session ends."""
    from types import SimpleNamespace

    table = {"s1": {"coord-1": "f1"}}
    manager = SimpleNamespace(_lock=__import__("threading").Lock(), _files_by_session_and_coord=table)
    runtime = SimpleNamespace(media_file_mgr=manager)
    monkeypatch.setattr(boundary, "_runtime", lambda: runtime)
    monkeypatch.setattr(boundary, "_active", lambda sid: sid == "s1")
    boundary.register_session("s1", "tok", "")
    try:
        boundary.observe_media_holders()
        table["s1"] = {}  # a full rerun started
        assert boundary.sessions_holding("f1") == {"s1"}
        status, _, body, called = call("/media/f1.csv", cookie="favmac_client=tok", content_type=b"text/csv")
        assert (status, body, called) == (200, b"inner", True)
        assert call("/media/f1.csv", cookie="favmac_client=other", content_type=b"text/csv")[0] == 404
        assert "s1" in boundary.known_sessions()
    finally:
        boundary.forget_session("s1")
    assert boundary.sessions_holding("f1") == set()
    assert call("/media/f1.csv", cookie="favmac_client=tok", content_type=b"text/csv")[0] == 404
