"""The server side of a first visit: two workarounds around Streamlit's own server, used by
``app.py`` (an ``st.App``, Streamlit's ASGI server, running the router ``studio.py``).

**Workaround 1 — deep links** (:func:`page_routes`). Upstream behaviour: Streamlit's front end
opened at a deep link such as ``/Data`` does not know whether ``/Data`` is a page or the path
the server is mounted under. It first looks for the server at ``/Data/_stcore/health``, gets a
404, waits 100 ms and tries one level up, so every deep link started 0.1-0.2 s later than the
home page (docs/first_visit.md). The routes answer ``GET /``, ``/Data``, ... (the app's pages,
under ``server.baseUrlPath`` if one is set) with Streamlit's ``index.html`` plus one script in
its head, which sets ``window.__streamlit.BACKEND_BASE_URL`` to the server's address, worked out
in the browser from the page's own address (the page's URL minus the page's path, so it stays
right behind a proxy that mounts the app under a prefix). Told the address, the front end
connects at once. Everything else (the websocket, assets, unknown paths) is Streamlit's own
handling; a Streamlit whose ``index.html`` has no ``<script`` gets its file unchanged. Drop
these routes when Streamlit's front end finds the server of a deep link without the detour.

**Workaround 2 — Nagle's algorithm** (:func:`lifespan`, the st.App's start-up hook). Upstream
behaviour: ``streamlit run`` binds its listening socket itself (``socket.socket(family)``,
protocol number 0), and asyncio turns Nagle's algorithm off only for sockets created with
``IPPROTO_TCP``; so on Streamlit's server a keep-alive connection holds each small response's
body back until the browser acknowledges its headers, which a browser delays by up to 40 ms. A
first visit fetches about 60 small script files over 6 such connections, and the page's messages
come over the websocket (measurements in docs/first_visit.md). The hook sets ``TCP_NODELAY`` on
the listening socket, so every connection it accepts inherits it. Drop it when Streamlit's
server sets ``TCP_NODELAY`` itself (``scripts/bench_first_visit.py`` prints the small-response
time of each server: about 40 ms with Nagle's algorithm on, about 1 ms off).

**Workaround 3 — memory of ended sessions** (:func:`reap_ended_sessions`, run every
:data:`REAP_INTERVAL` seconds by :func:`lifespan`). Upstream behaviour: a session whose browser
left is kept for ``server.disconnectedSessionTTL`` seconds so it can reconnect, in a TTL cache
that drops expired entries only when another session disconnects, and without shutting them
down: the session's state (its datasets), its uploads and its media files stay in memory until
then, or for good (after 8 users left, 1.0-2.3 GB against 90 MB fresh, issue 32). The reaper
drops the expired sessions and shuts each down (uploads, media files, dataframes), releases the
files of sessions dropped elsewhere without a shutdown, then collects garbage and hands the freed
heap back to the system (glibc's ``malloc_trim``). ``.streamlit/config.toml`` sets the reconnect
window to 30 s. Drop this when Streamlit shuts down the sessions its storage expires.
"""
from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import json
import logging
import os
import socket
from contextlib import asynccontextmanager
from functools import lru_cache
from pathlib import Path

import streamlit as st
from starlette.responses import Response
from starlette.routing import Route

from favmac.ui import boundary

__all__ = ["REAP_INTERVAL", "base_url_script", "lifespan", "nodelay_on_listening_sockets", "page_html", "page_routes",
           "reap_ended_sessions", "release_freed_memory", "url_prefix", "with_base_url"]

log = logging.getLogger(__name__)

#: Seconds between two passes of the session reaper (workaround 3).
REAP_INTERVAL = 10.0


def index_html_path() -> Path:
    """Streamlit's own ``index.html`` (the front end's page)."""
    return Path(st.__file__).parent / "static" / "index.html"


def base_url_script(page_path: str) -> str:
    """The script for the page at URL path ``page_path`` ("" for home, else e.g. "Data")."""
    if not all((ch.isascii() and ch.isalnum()) or ch in "_-" for ch in page_path):
        raise ValueError(f"page URL path {page_path!r}: ASCII letters, digits, '_' and '-' only")
    suffix = json.dumps("/" + page_path if page_path else "")
    return (
        "<script>(function(){var p=location.pathname.replace(/\\/+$/,''),s=" + suffix + ";"
        "if(s&&p.slice(-s.length)===s)p=p.slice(0,-s.length);"
        "window.__streamlit=Object.assign({},window.__streamlit,"
        "{BACKEND_BASE_URL:location.origin+p+'/'});})();</script>"
    )


def with_base_url(html: str, page_path: str) -> str:
    """``html`` with :func:`base_url_script` inserted before its first ``<script`` (unchanged if none)."""
    at = html.find("<script")
    if at < 0:
        return html
    return html[:at] + base_url_script(page_path) + html[at:]


@lru_cache(maxsize=None)
def _index_html() -> str:
    return index_html_path().read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def page_html(page_path: str) -> bytes:
    """Streamlit's index.html (read once) for the page at ``page_path``, with :func:`base_url_script`."""
    return with_base_url(_index_html(), page_path).encode("utf-8")


def url_prefix(base_url_path: str | None = None) -> str:
    """The server's path prefix: ``""``, or ``"/<base>"`` for ``server.baseUrlPath`` ``base``
    (``base_url_path``; read from Streamlit's config when None)."""
    if base_url_path is None:
        base_url_path = st.get_option("server.baseUrlPath") or ""
    base = base_url_path.strip("/")
    return f"/{base}" if base else ""


def page_routes(page_paths, base_url_path: str | None = None) -> list:
    """Starlette routes answering each page's URL (``""`` = home) with :func:`page_html`
    (workaround 1 in the module docstring).

    ``base_url_path``: Streamlit's ``server.baseUrlPath`` (read from its config when None).
    """
    prefix = url_prefix(base_url_path)
    routes = []
    for page_path in dict.fromkeys(page_paths):
        page_html(page_path)  # a bad path fails at start-up, not at the first visit

        def endpoint(request, page_path=page_path):
            return Response(page_html(page_path), media_type="text/html", headers={"Cache-Control": "no-cache"})

        # the page's own URL: "/Data" or "/<base>/Data"; home "/" or "/<base>/" (the page's assets are
        # relative, "./static/...", so "/<base>" without the slash is left to Streamlit)
        routes.append(Route(f"{prefix}/{page_path}", endpoint, methods=["GET"]))
    return routes


def nodelay_on_listening_sockets() -> int:
    """Set ``TCP_NODELAY`` on every TCP socket of this process that listens; returns how many.

    Connections a listening socket accepts inherit the option (Linux, macOS), so the server's
    responses and websocket messages go out as soon as they are written. Looks through the
    process's open descriptors (``/proc/self/fd`` or ``/dev/fd``); where neither exists (Windows)
    it does nothing and returns 0. Only the option changes: each socket is reached through a
    duplicate descriptor, closed at once.
    """
    fd_dir = next((d for d in ("/proc/self/fd", "/dev/fd") if os.path.isdir(d)), None)
    if fd_dir is None:
        return 0
    done = 0
    for name in os.listdir(fd_dir):
        try:
            duplicate = os.dup(int(name))
        except (OSError, ValueError):  # closed meanwhile
            continue
        try:
            sock = socket.socket(fileno=duplicate)
        except OSError:  # not a socket: close the duplicate (a leaked copy of a pipe's write end
            os.close(duplicate)  # keeps its reader from ever seeing end-of-file)
            continue
        with sock:
            try:
                if (sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM
                        and sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    done += 1
            except OSError:
                pass
    return done


def _runtime():
    from streamlit.runtime import Runtime

    return Runtime.instance() if Runtime.exists() else None


def reap_ended_sessions(runtime=None) -> int:
    """Shut down the sessions whose reconnect window has passed, release the uploads and media files
    of sessions that ended without a shutdown, and return their memory (workaround 3 in the module
    docstring). Returns how many sessions it ended. Run on the server's event loop (as Streamlit's
    own disconnects are)."""
    runtime = runtime if runtime is not None else _runtime()
    if runtime is None:
        return 0
    manager = getattr(runtime, "_session_mgr", None)  # Streamlit's session manager and its storage (private)
    storage = getattr(manager, "_session_storage", None)
    cache = getattr(storage, "_cache", None)
    ended = 0
    if hasattr(cache, "expire"):
        for _session_id, info in cache.expire():
            try:
                info.session.shutdown()
            except Exception:  # noqa: BLE001 — a session that fails to shut down must not stop the others
                log.exception("shutting down an expired session failed")
            ended += 1
    stored = {info.session.id for info in storage.list()} if storage is not None else set()
    for session_id in boundary.known_sessions():
        if runtime.is_active_session(session_id) or session_id in stored:
            continue
        runtime.media_file_mgr.clear_session_refs(session_id)
        runtime.uploaded_file_mgr.remove_session_files(session_id)
        boundary.forget_session(session_id)
        ended += 1
    if ended:
        runtime.media_file_mgr.remove_orphaned_files()
    return ended


def release_freed_memory() -> None:
    """A full garbage collection, then glibc's ``malloc_trim(0)`` (where the C library has it): the
    heap pages the collection freed go back to the system instead of staying in the process."""
    gc.collect()
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return
    try:
        trim = ctypes.CDLL(libc_name).malloc_trim
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to trim
        return
    trim(0)


#: Seconds between two looks at which session shows which download (favmac.ui.boundary.observe_media_holders).
OBSERVE_INTERVAL = 0.25


async def _reap_forever(interval: float) -> None:
    loop = asyncio.get_running_loop()
    next_reap = loop.time() + interval
    while True:
        await asyncio.sleep(OBSERVE_INTERVAL)
        try:
            boundary.observe_media_holders()
            if loop.time() >= next_reap:
                next_reap = loop.time() + interval
                if reap_ended_sessions():
                    await asyncio.to_thread(release_freed_memory)
        except Exception:  # noqa: BLE001 — the reaper must outlive one bad pass
            log.exception("the session reaper failed")


@asynccontextmanager
async def lifespan(app):
    """The st.App's start-up hook: :func:`nodelay_on_listening_sockets` once the server's socket
    listens (workaround 2; ``streamlit run`` binds it before the app starts; a server that binds its
    own socket, ``uvicorn app:app``, already has the option from asyncio, and setting it again is
    harmless), and the session reaper every :data:`REAP_INTERVAL` seconds (workaround 3)."""
    nodelay_on_listening_sockets()
    reaper = asyncio.ensure_future(_reap_forever(REAP_INTERVAL))
    try:
        yield None
    finally:
        reaper.cancel()
