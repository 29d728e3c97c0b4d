"""Alembic migrations of the store, shipped in the package and run by :func:`favmac.store.database.migrate`."""
