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
"""
from __future__ import annotations

import json
import os
import socket
from contextlib import asynccontextmanager
from functools import lru_cache
from pathlib import Path

import streamlit as st
from starlette.responses import Response
from starlette.routing import Route

__all__ = ["base_url_script", "lifespan", "nodelay_on_listening_sockets", "page_html", "page_routes", "url_prefix",
           "with_base_url"]


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


@asynccontextmanager
async def lifespan(app):
    """The st.App's start-up hook (workaround 2 in the module docstring):
    :func:`nodelay_on_listening_sockets` once the server's socket
    listens (``streamlit run`` binds it before the app starts). A server that binds its own
    socket (``uvicorn app:app``) already has the option from asyncio; setting it again is harmless."""
    nodelay_on_listening_sockets()
    yield None
