"""favmac.ui.auth without a browser: the mode and claim names read from the secrets, the
configuration problems named before anyone clicks "Sign in", and the provider check against a
real OpenID Connect provider, a server that answers 404 and a port where nothing listens.
(Sign-in itself, in Chromium: tests/browser/test_signin.py.)"""
from __future__ import annotations

import http.server
import socket
import threading

import pytest

from favmac.ui import auth

GOOD = {"redirect_uri": "https://favmac.plan.org/oauth2callback", "cookie_secret": "x" * 40, "client_id": "favmac",
        "client_secret": "s", "server_metadata_url": "https://id.plan.org/.well-known/openid-configuration"}


def test_no_auth_section_is_local_mode():
    settings = auth.read_auth_settings({"other": {"x": 1}})
    assert not settings.enabled and settings.providers == {} and settings.problem == ""


def test_claim_names_come_from_the_favmac_auth_section():
    settings = auth.read_auth_settings({"auth": GOOD, "favmac": {"auth": {
        "groups_claim": "roles", "role_claim": "roles", "auditor_values": ["coding-auditors", "leads"]}}})
    assert settings.enabled and settings.problem == ""
    assert (settings.groups_claim, settings.role_claim, settings.auditor_values) == ("roles", "roles",
                                                                                     ("coding-auditors", "leads"))
    defaults = auth.read_auth_settings({"auth": GOOD})
    assert (defaults.groups_claim, defaults.role_claim, defaults.auditor_values) == ("groups", "favmac_role", ("auditor",))


def test_named_providers_each_get_a_button():
    okta = {k: v for k, v in GOOD.items() if k in auth.PROVIDER_KEYS}
    settings = auth.read_auth_settings({"auth": {"redirect_uri": GOOD["redirect_uri"], "cookie_secret": "x" * 40,
                                                 "okta": okta, "entra": {**okta, "server_metadata_url": "https://e/x"}}})
    assert settings.problem == "" and list(settings.providers) == ["okta", "entra"]


@pytest.mark.parametrize("change, says", [
    ({"redirect_uri": None}, "no redirect_uri"),
    ({"redirect_uri": "https://favmac.plan.org/"}, "must end with /oauth2callback"),
    ({"cookie_secret": None}, "no cookie_secret"),
    ({"client_secret": None}, "lacks client_secret"),
    ({"client_id": None, "client_secret": None, "server_metadata_url": None}, "name no provider"),
])
def test_a_configuration_that_cannot_work_is_named(change, says):
    section = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    settings = auth.read_auth_settings({"auth": section})
    assert settings.enabled and says in settings.problem, settings.problem
    assert auth.provider_problem(settings) == settings.problem  # shown without asking any provider


def test_a_provider_name_with_an_underscore_is_refused():
    okta = {k: v for k, v in GOOD.items() if k in auth.PROVIDER_KEYS}
    settings = auth.read_auth_settings({"auth": {"redirect_uri": GOOD["redirect_uri"], "cookie_secret": "x" * 40,
                                                 "my_okta": okta}})
    assert "may not contain '_'" in settings.problem


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def with_metadata_url(url: str) -> auth.AuthSettings:
    return auth.read_auth_settings({"auth": {**GOOD, "server_metadata_url": url}})


def test_an_unreachable_provider_is_named():
    url = f"http://127.0.0.1:{free_port()}/.well-known/openid-configuration"
    problem = auth.provider_problem(with_metadata_url(url), now=1.0)
    assert "cannot be reached" in problem and url in problem


class _NotFound(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 — http.server's name
        body = b"<html>not here</html>" if self.path.startswith("/missing") else b"<html>a web page</html>"
        self.send_response(404 if self.path.startswith("/missing") else 200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def web_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_wrong_issuer_url_is_named(web_server):
    problem = auth.provider_problem(with_metadata_url(f"{web_server}/missing/.well-known/openid-configuration"), now=2.0)
    assert "answered HTTP 404" in problem and "probably wrong" in problem
    problem = auth.provider_problem(with_metadata_url(f"{web_server}/page"), now=2.0)
    assert "not with an OpenID configuration" in problem


def test_a_real_provider_passes_the_check():
    oidc_provider_mock = pytest.importorskip("oidc_provider_mock")
    with oidc_provider_mock.run_server_in_thread() as server:
        url = f"http://localhost:{server.server_port}/.well-known/openid-configuration"
        assert auth.provider_problem(with_metadata_url(url), now=3.0) == ""


def test_local_mode_acts_as_the_local_user(monkeypatch):
    monkeypatch.setattr(auth, "_secrets_dict", lambda: {})
    auth.auth_settings.cache_clear()
    try:
        from favmac.access import LOCAL_USER

        assert auth.current_identity() == LOCAL_USER
    finally:
        auth.auth_settings.cache_clear()


@pytest.mark.parametrize("module", [auth, __import__("favmac.ui.boundary", fromlist=["x"])])
def test_docstring_examples(module):
    import doctest

    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0 and tried > 0


def test_a_secrets_file_that_cannot_be_read_keeps_the_pages_closed(monkeypatch):
    def broken():
        raise ValueError("Invalid value (at line 3, column 9)")

    monkeypatch.setattr(auth, "_secrets_dict", broken)
    auth.auth_settings.cache_clear()
    try:
        settings = auth.auth_settings()
        assert settings.enabled and "cannot be read: Invalid value (at line 3, column 9)" in settings.problem
    finally:
        auth.auth_settings.cache_clear()


def test_a_secrets_file_with_a_toml_error_is_not_local_mode(tmp_path):
    """Streamlit's loader logs a TOML error and goes on without secrets; the mode must not fall open."""
    import subprocess
    import sys
    from pathlib import Path

    bad = tmp_path / "secrets.toml"
    bad.write_text("[auth]\nredirect_uri = \n")
    code = ("from streamlit import config; config.set_option('secrets.files', [%r]); "
            "from favmac.ui import auth; s = auth.auth_settings(); print(s.enabled, s.problem)" % str(bad))
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**__import__("os").environ, "PYTHONPATH": str(repo)})
    assert done.stdout.startswith("True The secrets file"), done.stdout + done.stderr
    assert "Invalid value (at line 2" in done.stdout
