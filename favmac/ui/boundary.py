"""The server's boundary: who may fetch what over HTTP, and the security headers (issue 32).

:class:`BoundaryMiddleware` is an ASGI middleware that ``app.py`` installs in front of Streamlit's
own routes. Upstream behaviour it works around: Streamlit serves a download (``/media/<id>``,
an id derived from the file's content) to any client that has the URL, and
``/_stcore/metrics`` to anyone. Here:

* **Downloads and uploads belong to a browser session.** Every HTML page response gives the
  browser a random ``favmac_client`` cookie (HttpOnly, SameSite=Lax, for the browser's
  session only). A page run registers its Streamlit session with that cookie and a fingerprint
  of the sign-in cookie (:func:`register_current_session`, from :func:`favmac.ui.auth.gate`:
  only sessions past the gate are registered). ``/media/<id>`` is answered only when a live
  session that holds the file was registered with the request's own ``favmac_client`` cookie
  and sign-in cookie; ``/_stcore/upload_file/<session>/...`` only when that session was. A
  copied URL fetched by another browser, by ``curl`` or after the session ended gets 404/403.
  Signing out (``/auth/logout``) also drops the ``favmac_client`` cookie.
* A sign-in that comes back without a user (the provider refused, or the token exchange failed)
  sets a short-lived ``favmac_sign_in_failed`` cookie, so the sign-in page says so. A sign-in
  started on a page (a deep link) comes back to that page, not to the home page.
* ``/_stcore/metrics`` answers 404 (it names functions and counts sessions).
* Every response carries ``Content-Security-Policy: frame-ancestors 'self'``,
  ``X-Frame-Options: SAMEORIGIN``, ``X-Content-Type-Options: nosniff`` and
  ``Referrer-Policy: same-origin``.

Drop the download rule when Streamlit serves media to the session that made it only; the
lookup of which sessions hold a file reads the media manager's own table (a private attribute
of Streamlit's ``MediaFileManager``), so it is checked by tests/test_boundary.py on every
Streamlit upgrade. That table forgets a session's files at the start of each full run and
learns them again as the run draws them, so the server also looks at it four times a second
(:func:`observe_media_holders`) and remembers each file's sessions until they end: a download
clicked while its page reruns is still served.
"""
from __future__ import annotations

import hashlib
import http.cookies
import logging
import secrets
import threading

__all__ = ["CLIENT_COOKIE", "SECURITY_HEADERS", "SIGN_IN_FAILED_COOKIE", "BoundaryMiddleware", "cookie_fingerprint", "forget_session", "is_registered_for", "known_sessions", "observe_media_holders",
           "register_current_session", "register_session", "registered_sessions", "sessions_holding",
           "upload_limit_text"]

log = logging.getLogger(__name__)

CLIENT_COOKIE = "favmac_client"
#: Set for a short while when a sign-in came back without a user (:func:`favmac.ui.auth.gate` says so).
SIGN_IN_FAILED_COOKIE = "favmac_sign_in_failed"
SIGN_IN_FAILED_SECONDS = 60
#: The page a sign-in started on (Streamlit sends everyone to the home page after signing in).
NEXT_PAGE_COOKIE = "favmac_next_page"
NEXT_PAGE_SECONDS = 600
#: Streamlit's sign-in cookie (and its chunks ``_streamlit_user__1``, ...); the tokens cookie is not part of it.
USER_COOKIE = "_streamlit_user"
TOKENS_COOKIE = "_streamlit_user_tokens"

SECURITY_HEADERS = (
    (b"content-security-policy", b"frame-ancestors 'self'; object-src 'none'; base-uri 'self'"),
    (b"x-frame-options", b"SAMEORIGIN"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
)

_LOCK = threading.Lock()
# Streamlit session id -> (favmac_client cookie, fingerprint of the sign-in cookie)
_SESSIONS: dict[str, tuple[str, str]] = {}


def upload_limit_text(max_upload_mb: int) -> str:
    """The upload limit (``server.maxUploadSize``), in the unit the user's file browser shows.

    Streamlit's uploader checks a file's size in the browser with the operating system's own
    megabyte: 1,048,576 bytes on Windows (as Explorer counts), 1,000,000 bytes elsewhere (as
    macOS Finder and Linux file managers count); so "200 MB" means what the file browser says.

    >>> print(upload_limit_text(200))
    Files up to 200 MB as your file browser shows sizes (Windows: 200 × 1,048,576 bytes; macOS and Linux: 200,000,000 bytes).
    """
    mb = int(max_upload_mb)
    return (f"Files up to {mb:,} MB as your file browser shows sizes (Windows: {mb:,} × 1,048,576 bytes; "
            f"macOS and Linux: {mb * 1_000_000:,} bytes).")


def cookie_fingerprint(cookies) -> str:
    """A digest of the sign-in cookie(s) in ``cookies`` (name -> value); "" without sign-in cookie.

    Two requests with the same fingerprint carry the same signed sign-in cookie, so the same user's
    same sign-in (a new sign-in, or another user, gives another one).

    >>> cookie_fingerprint({"other": "x"})
    ''
    >>> cookie_fingerprint({"_streamlit_user": "a"}) == cookie_fingerprint({"_streamlit_user": "a", "z": "y"})
    True
    """
    parts = sorted((name, value) for name, value in cookies.items()
                   if name.startswith(USER_COOKIE) and not name.startswith(TOKENS_COOKIE))
    if not parts:
        return ""
    return hashlib.sha256(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()


def register_session(session_id: str, client_token: str, fingerprint: str) -> None:
    """Record that Streamlit session ``session_id`` belongs to the browser holding ``client_token``
    (its ``favmac_client`` cookie) with sign-in fingerprint ``fingerprint``. A session without the
    cookie is recorded with an empty token, which no request matches. An entry is only a key: it
    grants nothing once the session is no longer active (:func:`is_registered_for`); the session
    reaper (:func:`favmac.ui.server.reap_ended_sessions`) forgets it when the session has ended."""
    with _LOCK:
        _SESSIONS[session_id] = (client_token, fingerprint)


def forget_session(session_id: str) -> None:
    """Drop ``session_id`` from the registry and from the files it held (the session has ended)."""
    with _LOCK:
        _SESSIONS.pop(session_id, None)
        for file_id in [f for f, sids in _HELD.items() if session_id in sids]:
            _HELD[file_id].discard(session_id)
            if not _HELD[file_id]:
                del _HELD[file_id]


def register_current_session(user_key: str = "") -> None:
    """:func:`register_session` for the Streamlit session running this page, from the cookies its
    browser sent when it connected. ``user_key`` is only logged (the cookie fingerprint is what counts)."""
    import streamlit as st
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None:
        return
    cookies = dict(st.context.cookies)
    token = cookies.get(CLIENT_COOKIE, "")
    if not token:
        log.info("session %s (%s) connected without the %s cookie: its downloads are served to nobody",
                 ctx.session_id, user_key or "local", CLIENT_COOKIE)
    register_session(ctx.session_id, token, cookie_fingerprint(cookies))


def known_sessions() -> set:
    """Every session registered or seen holding a download (the reaper checks which have ended)."""
    with _LOCK:
        return set(_SESSIONS).union(*_HELD.values())


def registered_sessions() -> dict:
    """A copy of the registry (session id -> (client token, fingerprint))."""
    with _LOCK:
        return dict(_SESSIONS)


def _runtime():
    from streamlit.runtime import Runtime

    return Runtime.instance() if Runtime.exists() else None


def _active(session_id: str) -> bool:
    runtime = _runtime()
    return runtime is not None and runtime.is_active_session(session_id)


def is_registered_for(session_id: str, client_token: str, fingerprint: str) -> bool:
    """True when live session ``session_id`` was registered with this cookie and sign-in fingerprint."""
    if not client_token:
        return False
    with _LOCK:
        entry = _SESSIONS.get(session_id)
    if entry is None or not _active(session_id):
        return False
    return secrets.compare_digest(entry[0], client_token) and secrets.compare_digest(entry[1], fingerprint)


# file id -> the sessions seen holding it: Streamlit's table forgets a session's files at the start of each
# full run and learns them again as the run draws them, so a download clicked while a page reruns would
# find no holder; a session keeps its files here until it ends (forget_session)
_HELD: dict[str, set] = {}


def _media_table(runtime) -> dict:
    """file id -> the sessions Streamlit's media manager lists as showing it now (its private
    ``_files_by_session_and_coord``; see the module docstring)."""
    manager = runtime.media_file_mgr
    with manager._lock:  # noqa: SLF001 — Streamlit's own table of which session holds which file
        table = manager._files_by_session_and_coord  # noqa: SLF001
        held: dict[str, set] = {}
        for sid, by_coord in table.items():
            for file_id in by_coord.values():
                held.setdefault(file_id, set()).add(sid)
    return held


def observe_media_holders(runtime=None) -> None:
    """Remember which session shows which media file (run often: :func:`favmac.ui.server.lifespan`)."""
    runtime = runtime if runtime is not None else _runtime()
    if runtime is None:
        return
    table = _media_table(runtime)
    with _LOCK:
        for file_id, sids in table.items():
            _HELD.setdefault(file_id, set()).update(sids)


def sessions_holding(file_id: str) -> set:
    """The Streamlit sessions that show, or have shown, the media file ``file_id`` (Streamlit's
    table now, and what :func:`observe_media_holders` saw before), among sessions not yet forgotten."""
    runtime = _runtime()
    now = _media_table(runtime).get(file_id, set()) if runtime is not None else set()
    with _LOCK:
        if now:
            _HELD.setdefault(file_id, set()).update(now)
        return set(now) | set(_HELD.get(file_id, ()))


def _media_allowed(file_name: str, client_token: str, fingerprint: str) -> bool:
    file_id = file_name.split(".", 1)[0]
    return any(is_registered_for(sid, client_token, fingerprint) for sid in sessions_holding(file_id))


def _cookies(scope) -> dict:
    jar = http.cookies.SimpleCookie()
    for name, value in scope.get("headers", ()):
        if name == b"cookie":
            try:
                jar.load(value.decode("latin-1"))
            except http.cookies.CookieError:
                continue
    return {key: morsel.value for key, morsel in jar.items()}


def _header(scope, wanted: bytes) -> str:
    for name, value in scope.get("headers", ()):
        if name == wanted:
            return value.decode("latin-1")
    return ""


class BoundaryMiddleware:
    """ASGI middleware: the rules of the module docstring. ``prefix`` is the server's
    ``server.baseUrlPath`` as ``""`` or ``"/base"`` (:func:`favmac.ui.server.url_prefix`);
    ``pages`` the app's page URL paths (``"Data"``, ...): a sign-in started on one returns to it."""

    def __init__(self, app, prefix: str = "", pages=()):
        self.app = app
        self.prefix = prefix.rstrip("/")
        self.pages = frozenset(p for p in pages if p)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        if self.prefix and path.startswith(self.prefix):
            path = path[len(self.prefix):]
        cookies = _cookies(scope)
        token = cookies.get(CLIENT_COOKIE, "")
        if path == "/_stcore/metrics" or path.startswith("/_stcore/metrics/"):
            await _refuse(send, 404, b"Not found")
            return
        if path.startswith("/media/"):
            if not _media_allowed(path[len("/media/"):], token, cookie_fingerprint(cookies)):
                log.warning("download %s refused: the request does not come from the session that made it", path)
                await _refuse(send, 404, b"Not found")
                return
        elif path.startswith("/_stcore/upload_file/"):
            session_id = path[len("/_stcore/upload_file/"):].split("/", 1)[0]
            if scope.get("method") != "OPTIONS" and not is_registered_for(session_id, token, cookie_fingerprint(cookies)):
                log.warning("upload to session %s refused: the request does not come from that session's browser",
                            session_id)
                await _refuse(send, 403, b"Forbidden")
                return
        logout = path == "/auth/logout"
        login = path == "/auth/login"
        next_page = self._page_of(_header(scope, b"referer")) if login else ""
        callback = path == "/oauth2callback"
        return_to = cookies.get(NEXT_PAGE_COOKIE, "") if callback else ""
        provider_error = callback and b"error=" in scope.get("query_string", b"")
        secure = scope.get("scheme") == "https" or _header(scope, b"x-forwarded-proto") == "https"
        cookie_path = self.prefix or "/"

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() not in _OURS]
                headers.extend(SECURITY_HEADERS)
                content_type = next((v for k, v in headers if k.lower() == b"content-type"), b"")
                if callback and (provider_error or _sign_in_dropped(headers)):
                    # the provider refused, or Streamlit could not complete the sign-in (its log says why):
                    # the sign-in page says so instead of silently showing the button again
                    headers.append((b"set-cookie", _set_cookie(SIGN_IN_FAILED_COOKIE, "1", cookie_path, secure,
                                                               max_age=SIGN_IN_FAILED_SECONDS, same_site="Lax")))
                elif callback:
                    headers.append((b"set-cookie", _set_cookie(SIGN_IN_FAILED_COOKIE, "", cookie_path, secure,
                                                               max_age=0, same_site="Lax")))
                if login and next_page:  # Streamlit sends everyone home after a sign-in: remember the page
                    headers.append((b"set-cookie", _set_cookie(NEXT_PAGE_COOKIE, next_page, cookie_path, secure,
                                                               max_age=NEXT_PAGE_SECONDS, same_site="Lax")))
                if callback and return_to:
                    headers.append((b"set-cookie", _set_cookie(NEXT_PAGE_COOKIE, "", cookie_path, secure, max_age=0,
                                                               same_site="Lax")))
                    home = (self.prefix + "/").encode()
                    if return_to in self.pages and any(k.lower() == b"set-cookie" and v.startswith(USER_COOKIE.encode() + b"=")
                                                       and b"max-age=0" not in v.lower() for k, v in headers):
                        headers = [(k, (self.prefix + "/" + return_to).encode() if k.lower() == b"location" and v == home
                                    else v) for k, v in headers]
                if logout:
                    headers.append((b"set-cookie", _set_cookie(CLIENT_COOKIE, "", cookie_path, secure, max_age=0)))
                elif not token and content_type.startswith(b"text/html"):
                    headers.append((b"set-cookie", _set_cookie(CLIENT_COOKIE, secrets.token_urlsafe(32), cookie_path,
                                                               secure)))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _page_of(self, referer: str) -> str:
        """The app page a same-server ``Referer`` names ("" when none)."""
        from urllib.parse import urlsplit

        path = urlsplit(referer).path
        if self.prefix and path.startswith(self.prefix):
            path = path[len(self.prefix):]
        page = path.strip("/")
        return page if page in self.pages else ""


_OURS = frozenset(name for name, _ in SECURITY_HEADERS)


def _sign_in_dropped(headers) -> bool:
    """True when a response deletes Streamlit's sign-in cookie without setting a new one (a failed
    token exchange: Streamlit clears the cookies and sends the browser home)."""
    cookies = [v.decode("latin-1") for k, v in headers if k.lower() == b"set-cookie"]
    mine = [c for c in cookies if c.startswith(USER_COOKIE + "=")]
    return bool(mine) and all(c.startswith(USER_COOKIE + '=""') or c.startswith(USER_COOKIE + "=;")
                              or "max-age=0" in c.lower() for c in mine)


def _set_cookie(name: str, value: str, path: str, secure: bool, max_age: int | None = None,
                same_site: str = "Lax") -> bytes:
    parts = [f"{name}={value}", f"Path={path}", "HttpOnly", f"SameSite={same_site}"]
    if secure:
        parts.append("Secure")
    if max_age is not None:
        parts.append(f"Max-Age={max_age}")
    return "; ".join(parts).encode("latin-1")


async def _refuse(send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *SECURITY_HEADERS]})
    await send({"type": "http.response.body", "body": body})
