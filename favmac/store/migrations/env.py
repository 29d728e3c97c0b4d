"""Alembic's environment for the store: run on the connection :func:`favmac.store.database.migrate` passes."""
from alembic import context

from favmac.store.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - the store always passes its connection
    raise RuntimeError("favmac.store migrations run through favmac.store.database.migrate (no alembic.ini)")
context.configure(connection=connection, target_metadata=metadata, render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
