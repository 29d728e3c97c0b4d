"""The store's tables (SQLAlchemy Core), at the newest revision of :mod:`favmac.store.migrations`.

The tables are append-only where they hold the truth: a program's ``events`` (one row per event, its
arrays as one binary payload), the ``patients`` it was given and the ``labels`` that arrived (one
row each, unique per program and patient id: the database itself refuses a patient recorded twice),
its settings ``versions``; ``programs.last_seq`` is the one row a writer updates, under a lock, to
serialize writers. ``refusals`` record every access refused, and ``workspace_items`` hold each
user's uploads and settings.

A schema change is a new migration in ``migrations/versions`` and the matching change here.
"""
from __future__ import annotations

from sqlalchemy import (BigInteger, Column, DateTime, ForeignKey, Index, Integer, LargeBinary, MetaData, String, Table,
                        Text, UniqueConstraint)

__all__ = ["metadata", "programs", "versions", "events", "patients", "labels", "refusals", "workspace_items"]

metadata = MetaData()

NAME = 200  # characters of a program, user, team or item name
PATIENT_ID = 400

programs = Table(
    "programs", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(NAME), nullable=False, unique=True),
    Column("team", String(NAME), nullable=False),
    Column("codes", Text, nullable=False),  # JSON list
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("created_by", String(NAME), nullable=False),
    Column("last_seq", Integer, nullable=False, default=0),
)

versions = Table(
    "versions", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("program_id", Integer, ForeignKey("programs.id"), nullable=False),
    Column("version", Integer, nullable=False),
    Column("seq", Integer, nullable=False),
    Column("settings", Text, nullable=False),  # the settings file (RunSpec.to_json)
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("user_id", String(NAME), nullable=False),
    UniqueConstraint("program_id", "version", name="uq_versions_program_version"),
)

events = Table(
    "events", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("program_id", Integer, ForeignKey("programs.id"), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("kind", String(16), nullable=False),  # history / predict / label / settings
    Column("at", DateTime(timezone=True), nullable=False),
    Column("user_id", String(NAME), nullable=False),
    Column("user_name", String(NAME), nullable=False),
    Column("version", Integer, nullable=False),
    Column("batch", String(NAME), nullable=False),
    Column("n_patients", Integer, nullable=False),
    Column("payload", LargeBinary, nullable=False),
    UniqueConstraint("program_id", "seq", name="uq_events_program_seq"),
)

patients = Table(
    "patients", metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("program_id", Integer, ForeignKey("programs.id"), nullable=False),
    Column("patient_id", String(PATIENT_ID), nullable=False),
    Column("seq", Integer, nullable=False),
    UniqueConstraint("program_id", "patient_id", name="uq_patients_program_patient"),
)

labels = Table(
    "labels", metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("program_id", Integer, ForeignKey("programs.id"), nullable=False),
    Column("patient_id", String(PATIENT_ID), nullable=False),
    Column("seq", Integer, nullable=False),
    UniqueConstraint("program_id", "patient_id", name="uq_labels_program_patient"),
)

refusals = Table(
    "refusals", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("user_id", String(NAME), nullable=False),
    Column("user_name", String(NAME), nullable=False),
    Column("action", String(32), nullable=False),
    Column("program", String(NAME), nullable=True),
    Column("team", String(NAME), nullable=True),
    Column("message", Text, nullable=False),
)

# ---- revision 0002
workspace_items = Table(
    "workspace_items", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("user_id", String(NAME), nullable=False),
    Column("name", String(NAME), nullable=False),
    Column("data", LargeBinary, nullable=False),
    Column("meta", Text, nullable=False),  # JSON
    Column("size", BigInteger, nullable=False),
    Column("sha256", String(64), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("user_id", "name", name="uq_workspace_user_name"),
)

Index("ix_refusals_at", refusals.c.at)
