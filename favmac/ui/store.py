"""The app's store: one :class:`favmac.store.Store` per server process, acting as the session's user.

* :func:`shared_store` opens the store once per server process (``st.cache_resource``) at
  ``$FAVMAC_STORE``, else ``favmac.open_store(None)``'s default (a SQLite file under the user's data
  directory). A store that cannot be reached is not cached: the next page run tries again.
* :func:`user_store` is that store acting as :func:`favmac.ui.auth.current_identity` (every program
  read and write is checked in the store itself, :mod:`favmac.access`).
* :func:`store_problem` is the message a page shows when the store cannot be used: it says the ad-hoc
  pages keep working, never with a traceback. In local mode (one user, on their own computer) it names the
  URL (password masked) and the reason; in sign-in mode only the kind of store and whom to ask, as
  :func:`store_shown` names the store: a host, path or database user is the server's configuration, not a
  team member's (the reason goes to the server's log, for the person who runs FavMac Studio).
* :func:`store_shown`, :func:`without_url` and :func:`failure_reason` apply that rule to a store name, a
  message naming the store and the reason a store action failed (the workspace's save or read).
"""
from __future__ import annotations

import logging
import os

import streamlit as st

import favmac
from favmac.store import StoreError
from favmac.store.database import ENV_VAR, kind, masked, store_url
from favmac.ui import auth

__all__ = ["ASK_OPERATOR", "StoreUnavailable", "configured_url", "failure_reason", "shared_store", "store_problem",
           "store_shown", "user_store", "without_url"]

_log = logging.getLogger(__name__)

#: What a signed-in user can do about the store (its URL and settings are the server's).
ASK_OPERATOR = "ask the person who runs FavMac Studio"
#: What keeps working without the store.
_STILL_WORKING = ("Programs and your saved workspace need the store; the Data, Value & cost, Online session, Trade-offs, "
                  "Patients, Export and Validity pages keep working on the data of this browser session.")


class StoreUnavailable(RuntimeError):
    """The store cannot be used; the message names the URL (password masked) and what still works."""


def configured_url() -> str:
    """The store URL the server uses: ``$FAVMAC_STORE``, else the default SQLite file."""
    return store_url(os.environ.get(ENV_VAR) or None)


@st.cache_resource(show_spinner="Opening the store…", max_entries=4, ttl=3600)  # an idle hour: reopened on demand
def _open(url: str):
    return favmac.open_store(url)


def shared_store():
    """The server's store (opened once per URL and process). Raises :class:`StoreUnavailable`."""
    url = configured_url()
    try:
        return _open(url)
    except StoreError as err:  # not cached: a store that comes back is used on the next run
        raise StoreUnavailable(store_problem(err, url)) from None
    except Exception as err:  # noqa: BLE001 — any driver failure is a message naming the URL, never a traceback
        raise StoreUnavailable(store_problem(f"Cannot open the store {masked(url)}: {type(err).__name__}: {err}",
                                             url)) from None


def user_store():
    """The store acting as this session's user. Raises :class:`StoreUnavailable`."""
    return shared_store().as_user(auth.current_identity())


def _signed_in_mode(signed_in: bool | None) -> bool:
    return auth.auth_settings().enabled if signed_in is None else bool(signed_in)


def store_shown(url: str | None = None, *, signed_in: bool | None = None) -> str:
    """How a page names the store at ``url`` (default: the server's): in local mode (one user, the server
    answers their own computer) its URL, password masked; in sign-in mode (``signed_in``; default: the
    server's mode) only its kind ("PostgreSQL", "SQLite file"), for every role: a host, path or database
    user is the server's configuration, not a team member's (the roles, viewer and auditor, are team roles;
    the operator reads the URL in ``$FAVMAC_STORE``)."""
    url = url or configured_url()
    return kind(url) if _signed_in_mode(signed_in) else masked(url)


def without_url(text: str, url: str | None = None, *, signed_in: bool | None = None) -> str:
    """``text`` (a store's message naming the store at ``url``, default the server's) as this user may read
    it: unchanged in local mode; in sign-in mode the URL (as given or masked) replaced by the store's kind."""
    url = url or configured_url()
    if not _signed_in_mode(signed_in):
        return text
    for form in sorted({url, masked(url)}, key=len, reverse=True):
        text = text.replace(form, f"({kind(url)})")
    return text


def failure_reason(err, url: str | None = None, *, signed_in: bool | None = None) -> str:
    """Why a store action failed, as this user may read it: ``err`` in local mode; in sign-in mode (a driver's
    message names hosts and paths) only the kind of store and whom to ask, the reason going to the server's log."""
    url = url or configured_url()
    if not _signed_in_mode(signed_in):
        return str(err)
    _log.warning("FavMac Studio's store failed: %s: %s (store %s)", type(err).__name__, str(err).strip(), masked(url))
    return f"the store ({kind(url)}) failed; if it keeps failing, {ASK_OPERATOR}"


def store_problem(err, url: str | None = None, *, signed_in: bool | None = None) -> str:
    """The page's message for a store that cannot be used: what still works, and in local mode the
    reason and the masked URL; in sign-in mode (``signed_in``; default: the server's mode) only the kind
    of store and whom to ask (the reason names hosts and paths: it goes to the server's log)."""
    url = url or configured_url()
    if _signed_in_mode(signed_in):
        _log.warning("FavMac Studio's store cannot be used: %s (store %s)", str(err).strip(), masked(url))
        return (f"The store ({kind(url)}) cannot be used right now. {_STILL_WORKING} To use programs and your "
                f"saved workspace, {ASK_OPERATOR}.")
    text = str(err).strip() or f"Cannot open the store {masked(url)}."
    if masked(url) not in text:
        text = f"{text} (store {masked(url)})"
    return f"{text} {_STILL_WORKING} Set {ENV_VAR} to a store URL the server can reach and reload."
