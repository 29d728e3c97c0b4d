"""Sign-in: the app's two modes, the gate every page passes and the acting user (docs/method.md "Access").

The mode is decided once per server process, from Streamlit's secrets (``.streamlit/secrets.toml``
or the files ``secrets.files`` names):

* **local mode** — no ``[auth]`` section: one user, :data:`favmac.access.LOCAL_USER`; the server
  listens on 127.0.0.1 (``.streamlit/config.toml``) unless the operator overrides
  ``server.address``; the home page says so and how to turn sign-in on (:func:`show_local_mode_note`);
* **sign-in mode** — an ``[auth]`` section (Streamlit's own ``st.login``, OpenID Connect): every
  page, deep links included, shows only the sign-in button until ``st.user.is_logged_in``; the
  sidebar shows the user's name, teams and role and a sign-out button.

Teams and role come from the identity token's claims through :func:`favmac.access.identity_from_claims`;
the claim names are FavMac's own settings, in the same secrets file (docs/deploy.md)::

    [favmac.auth]
    groups_claim = "groups"          # the claim listing the user's teams
    role_claim = "favmac_role"       # the claim naming the role (may be the groups claim itself)
    auditor_values = ["auditor"]     # values of role_claim that make the user an auditor

A configuration the provider cannot serve (an issuer URL that answers nothing or no OpenID
configuration, a missing key), a token without the teams claim and a user in no team each get a
page that says what is wrong and who can fix it, never a traceback.

:func:`gate` is called by :func:`favmac.ui.bootstrap.page_setup`, first thing on every page;
:func:`current_identity` is the acting user for the store (``store.as_user(...)``).
"""
from __future__ import annotations

import json
import logging
import os
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import streamlit as st

from favmac.access import LOCAL_USER, Identity, identity_from_claims
from favmac.ui import boundary
from favmac.ui.text import md

__all__ = ["AuthSettings", "AuthConfigError", "auth_settings", "current_identity", "gate", "provider_problem",
           "read_auth_settings", "show_local_mode_note", "show_user"]

log = logging.getLogger(__name__)

#: Keys a provider needs (Streamlit refuses ``st.login`` without them).
PROVIDER_KEYS = ("client_id", "client_secret", "server_metadata_url")
#: Seconds a provider check (its OpenID configuration answered) is trusted before it is asked again.
PROVIDER_CHECK_TTL = 60.0
#: Seconds to wait for the provider's OpenID configuration.
PROVIDER_TIMEOUT = 5.0
DEPLOY_DOC = "docs/deploy.md"


class AuthConfigError(ValueError):
    """A sign-in configuration that cannot work; the message names the key and the fix."""


@dataclass(frozen=True)
class AuthSettings:
    """How this server signs users in (read once: :func:`auth_settings`).

    Attributes
    ----------
    enabled : bool
        False in local mode (no ``[auth]`` section).
    providers : dict
        Provider name -> its OpenID configuration URL (``server_metadata_url``). ``"default"`` for
        the keys directly under ``[auth]``, else each ``[auth.<name>]`` section.
    groups_claim, role_claim : str
    auditor_values : tuple of str
    problem : str
        Non-empty when ``[auth]`` exists but cannot work (a missing key): the message shown.
    """

    enabled: bool = False
    providers: Mapping = field(default_factory=dict)
    groups_claim: str = "groups"
    role_claim: str = "favmac_role"
    auditor_values: tuple = ("auditor",)
    problem: str = ""


def read_auth_settings(secrets: Mapping) -> AuthSettings:
    """The :class:`AuthSettings` a secrets mapping describes (``st.secrets`` as a dict).

    >>> read_auth_settings({}).enabled
    False
    >>> s = read_auth_settings({"auth": {"redirect_uri": "https://x.org/oauth2callback", "cookie_secret": "s" * 32,
    ...     "client_id": "c", "client_secret": "d", "server_metadata_url": "https://id.x.org/.well-known/openid-configuration"},
    ...     "favmac": {"auth": {"groups_claim": "roles"}}})
    >>> s.enabled, list(s.providers), s.groups_claim, s.problem
    (True, ['default'], 'roles', '')
    >>> print(read_auth_settings({"auth": {"cookie_secret": "s" * 32}}).problem)  # doctest: +ELLIPSIS
    The sign-in settings ([auth] in secrets.toml) have no redirect_uri...
    """
    auth = secrets.get("auth")
    if auth is None:
        return AuthSettings()
    ours = (secrets.get("favmac") or {}).get("auth") or {}
    claims = dict(groups_claim=str(ours.get("groups_claim", "groups")),
                  role_claim=str(ours.get("role_claim", "favmac_role")),
                  auditor_values=tuple(str(v) for v in _as_list(ours.get("auditor_values", ("auditor",)))))
    try:
        providers = _providers(auth)
    except AuthConfigError as exc:
        return AuthSettings(enabled=True, problem=str(exc), **claims)
    return AuthSettings(enabled=True, providers=providers, **claims)


def _as_list(value) -> list:
    return [value] if isinstance(value, str) else list(value)


def _providers(auth: Mapping) -> dict:
    redirect = auth.get("redirect_uri")
    if not redirect:
        raise AuthConfigError("The sign-in settings ([auth] in secrets.toml) have no redirect_uri. Set it to this "
                              "server's public address followed by /oauth2callback, e.g. "
                              "redirect_uri = \"https://favmac.plan.org/oauth2callback\" (" + DEPLOY_DOC + ").")
    if not str(redirect).rstrip("/").endswith("/oauth2callback"):
        raise AuthConfigError(f"The sign-in settings' redirect_uri ({redirect}) must end with /oauth2callback, the "
                              f"address Streamlit receives the provider's answer on ({DEPLOY_DOC}).")
    if not str(auth.get("cookie_secret") or "").strip():
        raise AuthConfigError("The sign-in settings ([auth] in secrets.toml) have no cookie_secret: set a long random "
                              "string, e.g. the output of `python3 -c \"import secrets; print(secrets.token_hex(32))\"`.")
    providers = {}
    if any(key in auth for key in PROVIDER_KEYS):
        providers["default"] = auth
    for name, section in auth.items():
        if isinstance(section, Mapping) and name != "client_kwargs" and any(key in section for key in PROVIDER_KEYS):
            if "_" in name:
                raise AuthConfigError(f"The sign-in provider [auth.{name}]: a provider's name may not contain '_' "
                                      f"(Streamlit's rule); rename the section, e.g. [auth.{name.replace('_', '')}].")
            providers[name] = section
    if not providers:
        raise AuthConfigError("The sign-in settings ([auth] in secrets.toml) name no provider: add client_id, "
                              "client_secret and server_metadata_url under [auth], or an [auth.<provider>] section "
                              f"with them ({DEPLOY_DOC}).")
    for name, section in providers.items():
        missing = [key for key in PROVIDER_KEYS if not section.get(key)]
        if missing:
            where = "[auth]" if name == "default" else f"[auth.{name}]"
            raise AuthConfigError(f"The sign-in provider {where} lacks {', '.join(missing)} ({DEPLOY_DOC}).")
    return {name: str(section["server_metadata_url"]) for name, section in providers.items()}


@lru_cache(maxsize=1)
def auth_settings() -> AuthSettings:
    """This server's :class:`AuthSettings`, read from Streamlit's secrets on the first call (the
    mode is decided once per process: a secrets file edited later needs a restart;
    ``auth_settings.cache_clear()`` forgets it). A secrets file that cannot be read keeps every page
    closed (sign-in mode with the problem shown), never silently open in local mode."""
    try:
        secrets = _secrets_dict()
    except Exception as exc:  # noqa: BLE001 — whatever the TOML reader raises, the page says it
        log.error("the secrets file cannot be read: %s", exc)
        return AuthSettings(enabled=True, problem=f"The secrets file (.streamlit/secrets.toml) cannot be read: {exc}. "
                                                  "Fix it and restart the server.")
    return read_auth_settings(secrets)


def _secrets_dict() -> dict:
    """Streamlit's secrets as a dict; {} without a secrets file. A file that exists but does not parse
    raises (Streamlit's own loader only logs it and carries on without secrets: that would be local mode)."""
    if st.secrets.load_if_toml_exists():
        return st.secrets.to_dict()
    existing = [path for path in (st.get_option("secrets.files") or ()) if os.path.isfile(path)]
    if existing:
        st.secrets.to_dict()  # raises Streamlit's parse error, naming the file
        raise ValueError(f"{existing[0]} exists but could not be loaded")
    return {}


# ------------------------------------------------------------------ provider check


@lru_cache(maxsize=32)
def _provider_check(url: str, bucket: int) -> str:
    """"" when ``url`` answers an OpenID configuration, else what is wrong (cached per TTL bucket)."""
    del bucket  # only the cache key: a new bucket every PROVIDER_CHECK_TTL seconds
    try:
        with urllib.request.urlopen(url, timeout=PROVIDER_TIMEOUT) as response:
            body = response.read(1_000_000)
    except urllib.error.HTTPError as exc:
        return (f"The sign-in provider's address {url} answered HTTP {exc.code}: the issuer URL "
                f"(server_metadata_url) is probably wrong.")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"The sign-in provider at {url} cannot be reached ({reason})."
    try:
        metadata = json.loads(body)
    except ValueError:
        return f"The sign-in provider's address {url} answered, but not with an OpenID configuration (not JSON)."
    if not isinstance(metadata, dict) or not metadata.get("authorization_endpoint") or not metadata.get("issuer"):
        return (f"The sign-in provider's address {url} answered, but not with an OpenID configuration "
                f"(no issuer or authorization_endpoint).")
    return ""


def provider_problem(settings: AuthSettings, now: float | None = None) -> str:
    """What keeps sign-in from working ("" when nothing): the configuration's own problem, else the
    first provider whose OpenID configuration does not answer (checked at most once a minute)."""
    if settings.problem:
        return settings.problem
    bucket = int((time.time() if now is None else now) // PROVIDER_CHECK_TTL)
    for url in settings.providers.values():
        problem = _provider_check(url, bucket)
        if problem:
            return problem
    return ""


# ------------------------------------------------------------------ the acting user


def current_identity() -> Identity:
    """The acting user of this session: :data:`LOCAL_USER` in local mode, else the signed-in user's
    :class:`favmac.access.Identity` from the identity token's claims (claim names from
    :func:`auth_settings`).

    Raises :class:`favmac.access.ClaimsError` when the token lacks the teams claim or the user is in
    no team, and :class:`PermissionError` when nobody is signed in (the gate shows the sign-in page first).
    """
    settings = auth_settings()
    if not settings.enabled:
        return LOCAL_USER
    if not _signed_in():
        raise PermissionError("Nobody is signed in.")
    claims = st.user.to_dict()
    return identity_from_claims(claims, groups_claim=settings.groups_claim, role_claim=settings.role_claim,
                                auditor_values=settings.auditor_values)


def gate() -> Identity:
    """Let the page run only for a signed-in user with a team (sign-in mode); the acting user.

    In sign-in mode a visitor who is not signed in gets only the sign-in button; a configuration
    that cannot work, or a token that names no team, gets a page saying so. Either way the page's
    script stops here (``st.stop()``). The session is registered with :mod:`favmac.ui.boundary` so
    its downloads and uploads are served to this browser (and user) alone.
    """
    settings = auth_settings()
    if not settings.enabled:
        boundary.register_current_session(user_key="")
        return LOCAL_USER
    if not _signed_in():
        problem = provider_problem(settings)
        if problem:
            _config_problem_page(problem)
        _sign_in_page(settings)
    try:
        identity = current_identity()
    except ValueError as exc:  # ClaimsError (no teams claim, no team), or a name or team list Identity refuses
        _claims_problem_page(str(exc))
    boundary.register_current_session(user_key=identity.user_id)
    return identity


def _signed_in() -> bool:
    """``st.user.is_logged_in``, False where the session has no user information at all (a test run)."""
    return bool(st.user.get("is_logged_in", False))


def _stop_page() -> None:
    st.stop()


def _sign_in_page(settings: AuthSettings) -> None:
    st.title("FavMac Studio")
    if st.context.cookies.get(boundary.SIGN_IN_FAILED_COOKIE):
        log.warning("a sign-in came back without a user (see Streamlit's log for the provider's answer)")
        st.warning("**The last sign-in did not complete.** The identity provider refused it, or this server could "
                   "not verify its answer (a wrong client_id or client_secret, a clock out of step). Try again; if "
                   "it keeps failing, ask the server's administrator: the server's log says why.",
                   icon=":material/warning:")
    st.markdown("This server holds patient-level data. **Sign in** with your organisation's account to continue.")
    for name in settings.providers:
        label = "Sign in" if name == "default" else f"Sign in with {name}"
        st.button(label, key=f"favmac-sign-in-{name}", type="primary", icon=":material/login:",
                  on_click=_login, args=(None if name == "default" else name,))
    _stop_page()


def _login(provider: str | None) -> None:
    if provider is None:
        st.login()
    else:
        st.login(provider)


def _config_problem_page(problem: str) -> None:
    log.error("sign-in is misconfigured: %s", problem)
    st.title("FavMac Studio")
    st.error("**Sign-in is not working on this server.** " + md(problem), icon=":material/error:")
    st.markdown("Nobody can sign in until the server's administrator fixes the sign-in settings "
                f"(`.streamlit/secrets.toml`, see `{DEPLOY_DOC}`) and restarts the server. No data is shown meanwhile.")
    _stop_page()


def _claims_problem_page(problem: str) -> None:
    name = st.user.get("email") or st.user.get("sub") or "unknown"
    log.warning("sign-in refused for %s: %s", name, problem)
    st.title("FavMac Studio")
    st.error(md(problem), icon=":material/group_off:")
    st.markdown(f"You are signed in as **{md(str(name))}**, but FavMac Studio shows programs by team, "
                "so it cannot show you anything yet.")
    st.button("Sign out", key="favmac-sign-out-claims", icon=":material/logout:", on_click=st.logout)
    _stop_page()


def show_user(identity: Identity) -> None:
    """The sidebar's user block: name, teams and role, and a sign-out button (sign-in mode); in local
    mode one line saying so."""
    with st.sidebar:
        if not auth_settings().enabled:
            st.caption("Local mode: one user, this computer only.")
            return
        teams = ", ".join(identity.teams)
        st.markdown(f"**{md(identity.name)}**  \n{md(identity.role)} · team{'s' if len(identity.teams) > 1 else ''} "
                    f"{md(teams)}")
        st.button("Sign out", key="favmac-sign-out", icon=":material/logout:", on_click=st.logout)


def show_local_mode_note() -> None:
    """The home page's note in local mode (nothing in sign-in mode)."""
    if auth_settings().enabled:
        return
    st.info("**Local mode:** no sign-in is configured, so you work as the one local user and the server answers "
            "this computer only (127.0.0.1). To share FavMac Studio with a team, turn sign-in on: add an `[auth]` "
            f"section (OpenID Connect) to `.streamlit/secrets.toml` and restart — see `{DEPLOY_DOC}`.",
            icon=":material/lock_person:")
