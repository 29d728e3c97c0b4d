"""The pages' HTML, served so that a deep link connects without Streamlit's detour.

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
"""
from __future__ import annotations

import json
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


def page_routes(page_paths, base_url_path: str | None = None) -> list:
    """Starlette routes answering each page's URL (``""`` = home) with :func:`page_html`.

    ``base_url_path``: Streamlit's ``server.baseUrlPath`` (read from its config when None).
    """
    from starlette.responses import Response
    from starlette.routing import Route

    if base_url_path is None:
        from streamlit import config

        base_url_path = config.get_option("server.baseUrlPath") or ""
    base = base_url_path.strip("/")
    routes = []
    for page_path in dict.fromkeys(page_paths):
        page_html(page_path)  # a bad path fails at start-up, not at the first visit

        def endpoint(request, page_path=page_path):
            return Response(page_html(page_path), media_type="text/html", headers={"Cache-Control": "no-cache"})

        # the page's own URL: "/Data" or "/<base>/Data"; home "/" or "/<base>/" (the page's assets are
        # relative, "./static/...", so "/<base>" without the slash is left to Streamlit)
        url = f"/{base}/{page_path}" if base else f"/{page_path}"
        routes.append(Route(url, endpoint, methods=["GET"]))
    return routes
