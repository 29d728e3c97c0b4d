"""The app's store: one :class:`favmac.store.Store` per server process, acting as the session's user.

* :func:`shared_store` opens the store once per server process (``st.cache_resource``) at
  ``$FAVMAC_STORE``, else ``favmac.open_store(None)``'s default (a SQLite file under the user's data
  directory). A store that cannot be reached is not cached: the next page run tries again.
* :func:`user_store` is that store acting as :func:`favmac.ui.auth.current_identity` (every program
  read and write is checked in the store itself, :mod:`favmac.access`).
* :func:`store_problem` is the message a page shows when the store cannot be used: it names the URL
  (password masked) and says the ad-hoc pages keep working; never a traceback.
"""
from __future__ import annotations

import os

import streamlit as st

import favmac
from favmac.store import StoreError
from favmac.store.database import ENV_VAR, masked, store_url
from favmac.ui import auth

__all__ = ["StoreUnavailable", "configured_url", "shared_store", "store_problem", "user_store"]


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


def store_problem(err, url: str | None = None) -> str:
    """The page's message for a store that cannot be used (names the URL; says what still works)."""
    text = str(err).strip() or f"Cannot open the store {masked(url or configured_url())}."
    if url is not None and masked(url) not in text:
        text = f"{text} (store {masked(url)})"
    return (f"{text} Programs and your saved workspace need the store; the Data, Value & cost, Online session, "
            f"Trade-offs, Patients, Export and Validity pages keep working on the data of this browser session. "
            f"Set {ENV_VAR} to a store URL the server can reach and reload.")
