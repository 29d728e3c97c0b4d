"""Opening a store's database: the URL, the one clear error when it cannot be used, migrations, locks.

* :func:`store_url`: the URL asked for, else ``FAVMAC_STORE``, else one SQLite file under the user's data
  directory (``$XDG_DATA_HOME/favmac/store.sqlite``, by default ``~/.local/share/favmac/store.sqlite``).
* :func:`connect`: an engine whose schema is at the newest revision (:mod:`favmac.store.migrations`, run
  with Alembic's ``command.upgrade`` on the package's own script directory: an older store is migrated,
  not rejected). Anything that keeps the store from being used -- a refused connection, a wrong
  password, an unknown database, a read-only SQLite file or directory, a file that is not a database --
  is one :class:`StoreError` naming the URL with its password masked, raised before anything is written.
* :func:`writing`: a transaction that holds the database's write lock from its first statement
  (SQLite ``BEGIN IMMEDIATE``; PostgreSQL takes row locks with ``SELECT ... FOR UPDATE`` inside it),
  so two processes writing one program are serialized by the database.
"""
from __future__ import annotations

import os
import stat
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, event, inspect
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, SQLAlchemyError

__all__ = ["ENV_VAR", "StoreError", "connect", "default_url", "kind", "masked", "migrate", "store_url", "writing"]

#: The environment variable naming the store's URL.
ENV_VAR = "FAVMAC_STORE"
_MIGRATIONS = Path(__file__).resolve().parent / "migrations"
_BUSY_SECONDS = 60  # how long a SQLite writer waits for another's lock before giving up


class StoreError(RuntimeError):
    """A store that cannot be opened or used; the message names the URL (password masked) and the fix."""


def default_url() -> str:
    """``sqlite:///<data dir>/favmac/store.sqlite`` (XDG_DATA_HOME, else ~/.local/share)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return f"sqlite:///{os.path.join(base, 'favmac', 'store.sqlite')}"


def store_url(url=None) -> str:
    """The URL of the store to open: ``url``, else ``$FAVMAC_STORE``, else :func:`default_url`."""
    return str(url or os.environ.get(ENV_VAR) or default_url())


def masked(url) -> str:
    """The URL as it may be shown: the password replaced by ***.

    >>> masked("postgresql+psycopg://favmac:s3cret@db.plan.org/favmac")
    'postgresql+psycopg://favmac:***@db.plan.org/favmac'
    """
    try:
        return make_url(str(url)).render_as_string(hide_password=True)
    except ArgumentError:
        return "<a store URL that cannot be read>"


#: The kinds of store :func:`kind` names (by SQLAlchemy backend); any other is named by its backend.
_KINDS = {"postgresql": "PostgreSQL", "sqlite": "SQLite file"}


def kind(url) -> str:
    """What kind of store ``url`` is, naming no host, path, user or password.

    >>> kind("postgresql+psycopg://favmac:s3cret@db.plan.org/favmac"), kind("sqlite:////srv/favmac/store.sqlite")
    ('PostgreSQL', 'SQLite file')
    >>> kind("sqlite://"), kind("mysql+pymysql://u@h/db"), kind("not a url")
    ('SQLite in memory', 'mysql', 'unknown')
    """
    try:
        parsed = make_url(str(url))
    except ArgumentError:
        return "unknown"
    backend = parsed.get_backend_name()
    if backend == "sqlite" and parsed.database in (None, "", ":memory:"):
        return "SQLite in memory"
    return _KINDS.get(backend, backend)


def _reason(err) -> str:
    """The first line of a driver's error (psycopg: "connection refused", "password authentication failed ...")."""
    original = getattr(err, "orig", None) or err
    text = str(original).strip().splitlines()
    return text[0].strip().rstrip(".") if text else type(original).__name__


def _sqlite_file(url) -> str | None:
    database = url.database
    if not database or database == ":memory:" or str(database).startswith("file:"):
        return None
    return os.path.abspath(database)


def _read_only(path: str) -> bool:
    """No write permission (also for root, who may write anyway: a file marked read-only is read-only here)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not os.access(path, os.W_OK) or not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)


def _check_sqlite_path(url, shown: str) -> None:
    path = _sqlite_file(url)
    if path is None:
        return
    folder = os.path.dirname(path)
    if os.path.isdir(path):
        raise StoreError(f"Cannot open the store {shown}: {path} is a folder, not a database file. Give the path of a "
                         ".sqlite file.")
    if os.path.exists(path) and _read_only(path):
        raise StoreError(f"Cannot open the store {shown}: the file {path} is read-only, and the store must write to it "
                         "(every event, and SQLite's own journal). Make it writable, or open another store (--store URL "
                         f"or {ENV_VAR}).")
    if not os.path.isdir(folder):
        if os.path.exists(folder):
            raise StoreError(f"Cannot open the store {shown}: {folder} is not a folder.")
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as err:
            raise StoreError(f"Cannot create the store {shown}: the folder {folder} cannot be made ({err.strerror}). "
                             f"Choose another place (--store URL or {ENV_VAR}).") from None
    if _read_only(folder):
        raise StoreError(f"Cannot open the store {shown}: its folder {folder} is read-only, and SQLite writes its journal "
                         "beside the database. Make the folder writable, or open another store (--store URL or "
                         f"{ENV_VAR}).")


def _engine(url, shown: str) -> Engine:
    if url.get_backend_name() == "sqlite":
        _check_sqlite_path(url, shown)
        engine = create_engine(url, connect_args={"timeout": _BUSY_SECONDS})

        @event.listens_for(engine, "connect")
        def _connect(dbapi_connection, record):  # SQLAlchemy's recipe: the driver's own BEGIN off, ours below
            dbapi_connection.isolation_level = None
            dbapi_connection.execute("PRAGMA foreign_keys = ON")

        @event.listens_for(engine, "begin")
        def _begin(connection):
            immediate = connection.info.pop("favmac_write", False)
            connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

        return engine
    return create_engine(url, pool_pre_ping=True)


def connect(url=None) -> tuple[Engine, str]:
    """``(engine, shown URL)`` of the store at ``url`` (:func:`store_url`), migrated to the newest schema.

    Raises :class:`StoreError` (and writes nothing) when the store cannot be reached or written.
    """
    text = store_url(url)
    shown = masked(text)
    try:
        parsed = make_url(text)
    except ArgumentError:
        raise StoreError(f"Cannot open the store {shown}: not a database URL. Write e.g. sqlite:///path/to/store.sqlite "
                         "or postgresql+psycopg://user:password@host/database.") from None
    if parsed.get_backend_name() == "postgresql" and parsed.get_driver_name() in ("", "psycopg2"):
        parsed = parsed.set(drivername="postgresql+psycopg")  # psycopg 3, the driver the package depends on
    try:
        engine = _engine(parsed, shown)
        with engine.connect() as connection:  # reach it (and authenticate) before anything else
            connection.exec_driver_sql("SELECT 1")
            connection.rollback()
        migrate(engine)
    except StoreError:
        raise
    except (NoSuchModuleError, ImportError):  # a dialect SQLAlchemy lacks, or knows but whose driver is not installed
        raise StoreError(f"Cannot open the store {shown}: no database driver for {parsed.drivername!r}. Use sqlite:/// "
                         "or postgresql+psycopg://.") from None
    except (DBAPIError, SQLAlchemyError) as err:
        raise StoreError(f"Cannot open the store {shown}: {_reason(err)}. Check the URL, that the server is running and "
                         "reachable, and the user name and password.") from None
    return engine, shown


@contextmanager
def writing(engine: Engine):
    """A write transaction holding the database's write lock from its start (SQLite: BEGIN IMMEDIATE)."""
    with engine.connect() as connection:
        connection.info["favmac_write"] = True
        try:
            with connection.begin():
                yield connection
        finally:
            connection.info.pop("favmac_write", None)


def migrate(engine: Engine) -> None:
    """Bring the store's schema to the newest revision (Alembic, the package's script directory)."""
    from alembic import command
    from alembic.config import Config

    with writing(engine) as connection:
        config = Config()
        config.set_main_option("script_location", str(_MIGRATIONS))
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def revision(engine: Engine) -> str | None:
    """The store's schema revision (None for an empty database)."""
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return None
        return connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
