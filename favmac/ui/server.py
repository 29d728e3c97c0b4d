"""The server side of a first visit: the pages' HTML, served so that a deep link connects without
Streamlit's detour; small responses sent without the 40 ms wait of Nagle's algorithm; and
Streamlit's front-end files answered from memory.

``app.py`` is an ``st.App`` (Streamlit's ASGI server) running the router ``studio.py``, with
:func:`page_routes` in front of Streamlit's own routes. They answer ``GET /``, ``/Data``, ...
(the app's pages, under ``server.baseUrlPath`` if one is set) with Streamlit's ``index.html``
plus one script in its head, which sets ``window.__streamlit.BACKEND_BASE_URL`` to the
server's address, worked out in the browser from the page's own address.

Why: Streamlit's front end opened at a deep link such as ``/Data`` does not know whether
``/Data`` is a page or the path the server is mounted under. It first looks for the server at
``/Data/_stcore/health``, gets a 404, waits 100 ms and tries one level up, so every deep link
started 0.1-0.2 s later than the home page (docs/first_visit.md). Told the address, it connects
at once. The address is the page's own URL minus the page's path, so it stays right behind a
proxy that mounts the app under a prefix.

Everything else (the websocket, assets, unknown paths) is Streamlit's own handling; a Streamlit
whose ``index.html`` has no ``<script`` gets its file unchanged.

:func:`lifespan` (the st.App's start-up hook) sets ``TCP_NODELAY`` on the server's listening
socket, so every connection it accepts inherits it. ``streamlit run`` binds that socket itself
(``socket.socket(family)``, protocol number 0), and asyncio turns Nagle's algorithm off only for
sockets created with ``IPPROTO_TCP``: on Streamlit's server a keep-alive connection held back
each small response's body until the browser acknowledged its headers, which a browser delays by
up to 40 ms. A first visit fetches about 60 small script files over 6 such connections, and the
page's messages come over the websocket (measurements in docs/first_visit.md).

:class:`FrontEndFromMemory` (the st.App's middleware, :func:`middleware`) answers requests for
Streamlit's own front-end files (``static/js``, ``static/css``, ``static/media``: about 60 of
them on a first visit) from memory, with the headers Streamlit's handler gives them. Streamlit's
handler reads each file through worker threads; on this 2-core machine that took 0.1-0.15 s of
the server's CPU per first visit, while the browser needed both cores to compile those files.
"""
from __future__ import annotations

import json
import mimetypes
import os
import socket
from contextlib import asynccontextmanager
from functools import lru_cache
from pathlib import Path


def index_html_path() -> Path:
    import streamlit

    return Path(streamlit.__file__).parent / "static" / "index.html"


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
        from streamlit import config

        base_url_path = config.get_option("server.baseUrlPath") or ""
    base = base_url_path.strip("/")
    return f"/{base}" if base else ""


def page_routes(page_paths, base_url_path: str | None = None) -> list:
    """Starlette routes answering each page's URL (``""`` = home) with :func:`page_html`.

    ``base_url_path``: Streamlit's ``server.baseUrlPath`` (read from its config when None).
    """
    from starlette.responses import Response
    from starlette.routing import Route

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
            sock = socket.socket(fileno=os.dup(int(name)))
        except (OSError, ValueError):  # not a socket, or closed meanwhile
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
    """The st.App's start-up hook: :func:`nodelay_on_listening_sockets` once the server's socket
    listens (``streamlit run`` binds it before the app starts). A server that binds its own
    socket (``uvicorn app:app``) already has the option from asyncio; setting it again is harmless."""
    nodelay_on_listening_sockets()
    yield None


# Streamlit's Cache-Control for its hashed front-end files (starlette_static_routes: a year, immutable)
ASSET_CACHE_CONTROL = b"public, immutable, max-age=31536000"


class FrontEndFromMemory:
    """ASGI middleware: ``GET``/``HEAD`` of one of Streamlit's front-end files, answered from memory.

    Serves exactly the files under Streamlit's ``static/static`` folder (its content-hashed
    scripts, style sheets and fonts, listed once when the server starts), at
    ``/static/<path>`` or ``/<baseUrlPath>/static/<path>``. A file is read on its first request
    and kept. The answer has the status, body, ``Content-Type`` and ``Cache-Control`` that
    Streamlit's own handler gives. Everything else goes to Streamlit unchanged: other paths,
    names that are not one of those files (so no path is ever built from the request), other
    methods, and requests with ``Range``, ``If-None-Match`` or ``If-Modified-Since`` headers.
    """

    def __init__(self, app, base_url_path: str | None = None):
        self.app = app
        self.prefix = f"{url_prefix(base_url_path)}/static/"
        self.root = index_html_path().parent / "static"
        self.names = frozenset(p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_file())
        self._answers: dict[str, tuple[bytes, list]] = {}

    def answer(self, name: str) -> tuple[bytes, list]:
        """(body, headers) for the file ``name`` (one of :attr:`names`), read once."""
        found = self._answers.get(name)
        if found is None:
            body = (self.root / name).read_bytes()
            kind = mimetypes.guess_type(name)[0] or "text/plain"  # as Starlette's FileResponse does
            if kind.startswith("text/"):
                kind += "; charset=utf-8"
            found = self._answers[name] = (body, [(b"content-type", kind.encode("latin-1")),
                                                  (b"content-length", str(len(body)).encode("latin-1")),
                                                  (b"cache-control", ASSET_CACHE_CONTROL)])
        return found

    async def __call__(self, scope, receive, send):
        name = self._served_name(scope)
        if name is None:
            await self.app(scope, receive, send)
            return
        body, headers = self.answer(name)
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body if scope["method"] == "GET" else b""})

    def _served_name(self, scope) -> str | None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            return None
        path = scope["path"]
        name = path[len(self.prefix):] if path.startswith(self.prefix) else None
        if name not in self.names:
            return None
        if any(key in (b"range", b"if-none-match", b"if-modified-since") for key, _ in scope["headers"]):
            return None
        return name


def middleware() -> list:
    """The st.App's middleware: :class:`FrontEndFromMemory`."""
    from starlette.middleware import Middleware

    return [Middleware(FrontEndFromMemory)]
