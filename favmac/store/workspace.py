"""A user's workspace in the store: their uploads and settings, readable by nobody else.

Items are named: bytes (an uploaded file, a settings file) with a small JSON of metadata (file names,
sizes, content hashes, anything the app records). Every query is keyed by the acting user's id
(:attr:`favmac.access.Identity.user_id`), so another user cannot list, open or delete an item: to them
it does not exist. A reload of the app restores the workspace from here.

>>> import favmac, tempfile, os
>>> store = favmac.open_store("sqlite:///" + os.path.join(tempfile.mkdtemp(), "s.sqlite"))
>>> space = store.workspace()
>>> space.save("probabilities.csv", b"patient_id,HCC18\\np1,0.25\\n", {"file_name": "probabilities.csv"})
>>> space.load("probabilities.csv")[0], space.names()
(b'patient_id,HCC18\\np1,0.25\\n', ['probabilities.csv'])
"""
from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone

from sqlalchemy import delete, insert, select, update

from . import schema

__all__ = ["MAX_ITEM_BYTES", "Workspace"]

#: The largest item a workspace holds (bytes).
MAX_ITEM_BYTES = 2_000_000_000


class Workspace:
    """The acting user's items (``store.workspace()``)."""

    def __init__(self, store):
        self._store = store
        self.user_id = store.identity.user_id

    def _where(self, name=None):
        table = schema.workspace_items
        clauses = [table.c.user_id == self.user_id]
        if name is not None:
            clauses.append(table.c.name == self._name(name))
        return clauses

    @staticmethod
    def _name(name) -> str:
        text = str(name).strip()
        if not text or len(text) > schema.NAME:
            raise ValueError(f"name: a workspace item needs a name of 1 to {schema.NAME} characters")
        return text

    def save(self, name, data: bytes, meta: dict | None = None) -> None:
        """Save (or replace) the item ``name``: ``data`` bytes and ``meta`` (a JSON object). The metadata
        gains ``size`` and ``sha256`` of the bytes."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data: expected bytes; got {type(data).__name__}")
        data = bytes(data)
        if len(data) > MAX_ITEM_BYTES:
            raise ValueError(f"data: {len(data):,} bytes; a workspace item holds at most {MAX_ITEM_BYTES:,}")
        doc = dict(meta or {})
        doc.update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
        text = json.dumps(doc)
        table = schema.workspace_items
        now = datetime.now(timezone.utc)
        name = self._name(name)
        with self._store._writing() as connection:
            found = connection.execute(select(table.c.id).where(*self._where(name)).with_for_update()).scalar()
            values = dict(data=data, meta=text, size=len(data), sha256=doc["sha256"], updated_at=now)
            if found is None:
                connection.execute(insert(table).values(user_id=self.user_id, name=name, **values))
            else:
                connection.execute(update(table).where(table.c.id == found).values(**values))

    def load(self, name) -> tuple[bytes, dict]:
        """``(data, meta)`` of the item ``name``; KeyError when the acting user has no such item."""
        table = schema.workspace_items
        with self._store._engine.connect() as connection:
            row = connection.execute(select(table.c.data, table.c.meta).where(*self._where(name))).one_or_none()
        if row is None:
            raise KeyError(f"no workspace item named {str(name)!r}")
        return bytes(row.data), json.loads(row.meta)

    def items(self):
        """The acting user's items (DataFrame: name, size, sha256, updated_at, meta)."""
        import pandas as pd

        table = schema.workspace_items
        with self._store._engine.connect() as connection:
            rows = connection.execute(select(table.c.name, table.c.size, table.c.sha256, table.c.updated_at, table.c.meta)
                                      .where(*self._where()).order_by(table.c.name)).all()
        return pd.DataFrame([{"name": r.name, "size": int(r.size), "sha256": r.sha256, "updated_at": r.updated_at,
                              "meta": json.loads(r.meta)} for r in rows],
                            columns=["name", "size", "sha256", "updated_at", "meta"])

    def names(self) -> list:
        """The names of the acting user's items, sorted."""
        return self.items()["name"].tolist()

    def delete(self, name) -> None:
        """Delete the item ``name``; KeyError when the acting user has no such item."""
        with self._store._writing() as connection:
            gone = connection.execute(delete(schema.workspace_items).where(*self._where(name))).rowcount
        if not gone:
            raise KeyError(f"no workspace item named {str(name)!r}")
