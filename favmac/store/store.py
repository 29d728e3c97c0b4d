"""The store: programs, their event logs and each user's workspace, in one database, behind one access check.

``favmac.open_store(url)`` opens it (SQLite by default, PostgreSQL by URL; :mod:`favmac.store.database`).
A :class:`Store` acts as one user (:class:`favmac.access.Identity`; :data:`favmac.access.LOCAL_USER` by
default, ``store.as_user(identity)`` for another): every read and write of a program goes through
:meth:`Store._authorize`, which calls :func:`favmac.access.authorize` with the program's team. A refusal
raises :class:`~favmac.access.AccessDenied` and is recorded (table ``refusals``: user, action, program,
time, message) and logged (logger ``favmac.store``). Workspaces are keyed by the acting user's id: no
other user can address them.
"""
from __future__ import annotations

import json
import logging
from datetime import datetime, timezone

import numpy as np
from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from ..access import LOCAL_USER, AccessDenied, Identity, authorize
from ..io.errors import DataError
from . import schema
from .database import connect, writing
from .members import batch_members
from .payload import pack
from .program import Program, batch_ids, batch_labels, batch_probs, insert_ids, members_arrays
from .state import ProgramState, check_program_spec

__all__ = ["Store", "open_store"]

logger = logging.getLogger("favmac.store")
logger.addHandler(logging.NullHandler())  # the application decides where refusals are logged


class ProgramNotFound(LookupError):
    """No program of that name in the store."""


def open_store(url=None) -> "Store":
    """The store at ``url`` (default: ``$FAVMAC_STORE``, else a SQLite file in the user's data directory),
    migrated to the newest schema, acting as :data:`favmac.access.LOCAL_USER`.

    Raises :class:`favmac.store.StoreError` when the store cannot be reached or written (the message
    names the URL, its password masked); nothing is written then.
    """
    engine, shown = connect(url)
    return Store(engine, shown, LOCAL_USER)


class Store:
    """A store, acting as ``identity``. See the module docstring."""

    def __init__(self, engine, url: str, identity: Identity = LOCAL_USER):
        if not isinstance(identity, Identity):
            raise TypeError(f"identity: expected a favmac.access.Identity; got {type(identity).__name__}")
        self._engine = engine
        self.url = url  # the password masked
        self.identity = identity

    def __repr__(self):
        return f"Store({self.url!r}, acting as {self.identity.label})"

    def as_user(self, identity: Identity) -> "Store":
        """The same store acting as ``identity``."""
        return Store(self._engine, self.url, identity)

    def close(self) -> None:
        """Release the store's connections."""
        self._engine.dispose()

    def _writing(self):
        return writing(self._engine)

    # ------------------------------------------------------------------ access: the one check
    def _authorize(self, action: str, program=None, *, team: str | None = None, name: str | None = None) -> None:
        """Raise AccessDenied (recorded and logged) unless the acting user may take ``action`` on ``program``
        (or on a program of ``team`` named ``name``)."""
        if program is not None:
            team, name = program.team, program.name
        try:
            authorize(self.identity, action, team)
        except AccessDenied as err:
            self._refused(action, name, team, str(err))
            raise

    def _refused(self, action: str, name, team, message: str) -> None:
        user = self.identity
        logger.warning("access refused: user %r, action %r, program %r (team %r): %s", user.user_id, action, name, team,
                       message)
        with self._writing() as connection:
            connection.execute(insert(schema.refusals).values(
                at=datetime.now(timezone.utc), user_id=user.user_id, user_name=user.name, action=action,
                program=None if name is None else str(name)[: schema.NAME],
                team=None if team is None else str(team)[: schema.NAME], message=message))

    def refusals(self):
        """Every refusal recorded (DataFrame: at, user_id, user_name, action, program, team, message).
        The store's administrators read this table; it is not filtered by team."""
        import pandas as pd

        with self._engine.connect() as connection:
            rows = connection.execute(select(schema.refusals).order_by(schema.refusals.c.id)).all()
        return pd.DataFrame([dict(row._mapping) for row in rows],
                            columns=["id", "at", "user_id", "user_name", "action", "program", "team", "message"])

    # ------------------------------------------------------------------ programs
    def _team_for_new(self, team) -> str:
        if team is not None:
            return str(team)
        if len(self.identity.teams) == 1:
            return self.identity.teams[0]
        raise ValueError(f"team: {self.identity.name} is in {len(self.identity.teams)} teams "
                         f"({', '.join(self.identity.teams) or 'none'}); say which team the program belongs to (team=...)")

    def create_program(self, name, spec, ids, probs, labels, *, codes, members=None, team=None) -> Program:
        """Create a program from its history: labelled patients that calibrate from the start.

        Parameters
        ----------
        name : str
            Unique in the store.
        spec : RunSpec
            The settings (version 1). One target; with ``recalibrate=R`` the history's first R patients are
            the recalibration fold, and ``burn_in`` becomes len(history) - R.
        ids, probs, labels : the history: patient ids, (n, K) probabilities, (n, K) 0/1 labels
        codes : list of str
            The program's codes, the column order of every array it is given.
        members : DataFrame or dict, optional
            Per-patient context (:func:`favmac.store.members.batch_members`).
        team : str, optional
            The team the program belongs to (default: the acting user's one team).
        """
        team = self._team_for_new(team)
        name = str(name).strip()
        if not name or len(name) > schema.NAME:
            raise ValueError(f"name: a program needs a name of 1 to {schema.NAME} characters")
        self._authorize("create", team=team, name=name)
        codes = [str(c) for c in codes]
        if not codes or len(set(codes)) != len(codes):
            raise ValueError("codes: give the program's codes, each once")
        for k, code in enumerate(codes):
            if not code.strip():
                raise DataError(f"code {k + 1} of {len(codes)} has no name.", file="codes", fix="Name every code.")
        from ..io.csv_parsing import check_code_names  # imported on use: it imports pandas

        check_code_names(codes, "codes")  # the readers' rule: no ';' (the trail joins codes with it), no bidi controls
        label = "history"
        ids = batch_ids(ids, label)
        probs = batch_probs(probs, len(ids), codes, label, ids)
        labels = batch_labels(labels, len(ids), codes, label, ids)
        context = batch_members(members, len(ids), codes, batch=label, ids=ids)
        spec = check_program_spec(spec, codes, len(ids))
        state = ProgramState(spec, codes)
        state.add_history(ids, probs, labels, context, batch=label)  # checks the grouping columns, fits the maps
        now = datetime.now(timezone.utc)
        user = self.identity
        settings = spec.to_json(codes).decode()
        payload = pack({"probs": probs, "labels": np.packbits(labels, axis=1), **members_arrays(context)},
                       {"ids": ids.tolist(), "columns": {k: v.tolist() for k, v in context.columns.items()},
                        "cells": None if context.cells is None else context.cells.tolist()})
        try:
            with self._writing() as connection:
                program_id = connection.execute(insert(schema.programs).values(
                    name=name, team=team, codes=json.dumps(codes), created_at=now, created_by=user.user_id,
                    last_seq=2)).inserted_primary_key[0]
                common = dict(program_id=program_id, at=now, user_id=user.user_id, user_name=user.name, version=1)
                connection.execute(insert(schema.events).values(seq=1, kind="settings", batch="settings version 1",
                                                                n_patients=0, payload=pack({}, {"settings": settings,
                                                                                                "version": 1}), **common))
                connection.execute(insert(schema.versions).values(program_id=program_id, version=1, seq=1,
                                                                  settings=settings, created_at=now, user_id=user.user_id))
                connection.execute(insert(schema.events).values(seq=2, kind="history", batch=label, n_patients=len(ids),
                                                                payload=payload, **common))
                insert_ids(connection, schema.patients, program_id, ids, 2)
        except IntegrityError:
            raise ValueError(f"name: the store already holds a program named {name!r}; choose another name") from None
        return self.program(name)

    def _row(self, name):
        with self._engine.connect() as connection:
            row = connection.execute(select(schema.programs).where(schema.programs.c.name == str(name))).one_or_none()
        if row is None:
            raise ProgramNotFound(f"no program named {name!r} in the store {self.url}")
        return row

    def program(self, name) -> Program:
        """Open the program ``name`` (its state rebuilt from its log). AccessDenied unless the acting user is
        in its team."""
        row = self._row(name)
        program = Program(self, row)
        self._authorize("open", program)
        program.refresh()
        return program

    def programs(self):
        """The programs of the acting user's teams (DataFrame: name, team, created_at, created_by, events)."""
        import pandas as pd

        teams = list(self.identity.teams)
        with self._engine.connect() as connection:
            rows = connection.execute(select(schema.programs).where(schema.programs.c.team.in_(teams))
                                      .order_by(schema.programs.c.name)).all() if teams else []
        visible = []
        for row in rows:
            try:
                authorize(self.identity, "list", row.team)
            except AccessDenied:
                continue
            visible.append({"name": row.name, "team": row.team, "created_at": row.created_at,
                            "created_by": row.created_by, "events": int(row.last_seq)})
        return pd.DataFrame(visible, columns=["name", "team", "created_at", "created_by", "events"])

    # ------------------------------------------------------------------ workspaces
    def workspace(self):
        """The acting user's workspace (:class:`favmac.store.workspace.Workspace`)."""
        from .workspace import Workspace

        return Workspace(self)
