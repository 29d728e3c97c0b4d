"""Sign-in mode without a signed-in user, on every page (AppTest, no browser): each shows the
sign-in button and nothing else — no menu, no data, no download — and a configuration that
cannot work shows what is wrong instead. The browser's whole path: tests/browser/test_signin.py."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from favmac.ui import auth
from favmac.ui.navigation import PAGES

REPO = Path(__file__).resolve().parents[2]
AUTH = {"redirect_uri": "https://favmac.plan.org/oauth2callback", "cookie_secret": "x" * 40,
        "client_id": "favmac", "client_secret": "s",
        "server_metadata_url": "https://id.plan.org/.well-known/openid-configuration"}


@pytest.fixture
def fresh_mode(monkeypatch):
    auth.auth_settings.cache_clear()
    yield monkeypatch
    auth.auth_settings.cache_clear()


def run_page(path: str, secrets: dict) -> AppTest:
    at = AppTest.from_file(str(REPO / "studio.py"), default_timeout=60)
    for key, value in secrets.items():
        at.secrets[key] = value
    at.switch_page(path)
    return at.run()


@pytest.mark.parametrize("entry", PAGES, ids=[p.title for p in PAGES])
def test_every_page_shows_only_the_sign_in_button(fresh_mode, entry):
    fresh_mode.setattr(auth, "provider_problem", lambda settings, now=None: "")  # the provider answers
    at = run_page(entry.path, {"auth": AUTH})
    assert not at.exception
    assert [b.label for b in at.button] == ["Sign in"]
    assert [t.value for t in at.title] == ["FavMac Studio"]
    assert not at.get("page_link") and not at.get("download_button") and not at.get("file_uploader")
    assert not at.get("plotly_chart") and not at.get("arrow_data_frame") and not at.sidebar.markdown
    assert "dataset" not in at.session_state  # nothing was loaded for the visitor


def test_a_configuration_that_cannot_work_is_shown_not_raised(fresh_mode):
    at = run_page(PAGES[1].path, {"auth": {k: v for k, v in AUTH.items() if k != "cookie_secret"}})
    assert not at.exception and not at.button
    (error,) = at.error
    assert "Sign-in is not working on this server" in error.value and r"no cookie\_secret" in error.value


def test_several_providers_get_one_button_each(fresh_mode):
    fresh_mode.setattr(auth, "provider_problem", lambda settings, now=None: "")
    provider = {k: AUTH[k] for k in auth.PROVIDER_KEYS}
    at = run_page(PAGES[0].path, {"auth": {"redirect_uri": AUTH["redirect_uri"], "cookie_secret": "x" * 40,
                                           "okta": provider, "keycloak": provider}})
    assert [b.label for b in at.button] == ["Sign in with okta", "Sign in with keycloak"]
