"""Store fixtures: the same tests on SQLite and on a real PostgreSQL (127.0.0.1:5432, trust auth).

Each PostgreSQL test gets a fresh database with a unique name, dropped after. Where no server is
reachable the PostgreSQL tests skip, saying so; under ``CI=true`` they fail instead."""
from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

POSTGRES_ADMIN = os.environ.get("FAVMAC_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")


def _admin():
    import psycopg

    return psycopg.connect(POSTGRES_ADMIN, autocommit=True, connect_timeout=5)


def postgres_database():
    """(url, drop) of a fresh database; skips (or fails under CI=true) when no server answers."""
    try:
        admin = _admin()
    except Exception as err:  # noqa: BLE001 - any failure to reach the server
        message = f"no PostgreSQL server reachable at {POSTGRES_ADMIN} ({type(err).__name__}: {str(err).strip()[:120]})"
        if os.environ.get("CI") == "true":
            pytest.fail(message + "; under CI=true the PostgreSQL tests must run")
        pytest.skip(message)
    name = f"favmac_test_{uuid.uuid4().hex[:12]}"
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base = POSTGRES_ADMIN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)

    def drop():
        with _admin() as conn:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> "
                         "pg_backend_pid()", (name,))
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')

    return f"{base}/{name}", drop


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request, tmp_path):
    """A URL of an empty store on each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.sqlite'}"
        return
    url, drop = postgres_database()
    try:
        yield url
    finally:
        drop()
