"""Programs that last: FavMac running for months in a database, every decision on record (docs/programs.md).

* :func:`open_store` -> :class:`Store` (SQLAlchemy 2; SQLite by default, PostgreSQL by URL; Alembic
  migrations shipped in ``migrations/``), acting as a user (:mod:`favmac.access`);
* :class:`Program`: ``predict``, ``label``, ``update_settings``, ``status``, ``decisions``, ``timeline``,
  ``export`` over the program's append-only event log;
* :class:`~favmac.store.workspace.Workspace`: each user's uploads and settings;
* :mod:`~favmac.store.state`: the calibration state a program derives from its log (exactly replay's),
  each part's points in a :class:`~favmac.store.runs.SortedRuns`;
* ``favmac program ...``: :mod:`favmac.cli.program`.
"""
from .database import StoreError
from .program import Program
from .store import ProgramNotFound, Store, open_store

__all__ = ["Program", "ProgramNotFound", "Store", "StoreError", "open_store"]
