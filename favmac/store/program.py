"""A program: FavMac running for months in a store (docs/method.md "Programs: a standing FavMac in a store").

:class:`Program` is a view of one program's event log in a :class:`~favmac.store.Store`, acting as the
store's user. Its calibration state (:class:`~favmac.store.state.ProgramState`) is derived from the log:
built when the program is opened, kept up to date by each event it writes, and caught up with events
other processes wrote (read under the write lock before every write, so a batch is always decided on
the newest state). The audit trail, the status and the timeline are read from the same log.

Writes: ``predict`` (a batch of new patients: their sets, recorded with the threshold(s) and the
settings version), ``label`` (confirmed codes of predicted patients) and ``update_settings`` (a new
settings version). Each is one transaction: the whole batch or none of it.

Bad input is a :class:`~favmac.io.DataError` naming the batch, the row (as a spreadsheet of the batch
shows it: its first patient is row 2) and the column, and changes nothing. The same labels sent twice
for a patient are accepted as a no-op (a re-sent file is harmless; nothing is recorded again); labels
that differ from the ones recorded are refused, naming the patient and the codes.
"""
from __future__ import annotations

import json
import math
from datetime import datetime, timezone

import numpy as np
from sqlalchemy import insert, select, update

from ..io.errors import DataError, join_few, plural
from ..runspec import RunSpec, read_settings_json
from . import schema
from .members import BatchMembers, batch_members, by_patient_id
from .payload import pack, unpack
from .state import Decisions, ProgramState, check_program_spec

__all__ = ["Program", "batch_ids", "batch_labels", "batch_probs", "insert_ids", "members_arrays"]

MAX_BATCH = 2_000_000  # patients in one batch


def _now() -> datetime:
    return datetime.now(timezone.utc)


def insert_ids(connection, table, program_id: int, ids, seq: int) -> None:
    """One row (program, patient id, event) per patient into ``table`` (``patients`` or ``labels``, whose
    unique constraint refuses a patient recorded twice). PostgreSQL: one statement over an array of the
    ids (a row-by-row executemany is one round trip of the pipeline per row); SQLite: the driver's
    executemany; others: SQLAlchemy's."""
    values = [str(p) for p in np.asarray(ids, dtype=object).tolist()]
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(f"INSERT INTO {table.name} (program_id, patient_id, seq) "
                                   "SELECT %s, unnest(%s::text[]), %s", (int(program_id), values, int(seq)))
        return
    if connection.dialect.name == "sqlite":  # the driver's executemany: no per-row statement parameters built
        connection.exec_driver_sql(f"INSERT INTO {table.name} (program_id, patient_id, seq) VALUES (?, ?, ?)",
                                   [(int(program_id), p, int(seq)) for p in values])
        return
    connection.execute(insert(table), [{"program_id": program_id, "patient_id": p, "seq": seq} for p in values])


def batch_ids(ids, batch: str) -> np.ndarray:
    """Patient ids as text, unique in the batch, none empty; a DataError naming the batch and rows otherwise."""
    if isinstance(ids, (str, bytes)):
        raise DataError("ids must be a list of patient ids, not one string.", file=batch, column="patient_id")
    values = list(ids)
    if len(values) > MAX_BATCH:
        raise DataError(f"{len(values):,} patients in one batch; at most {MAX_BATCH:,}.", file=batch,
                        fix="Split the batch.")
    out = np.empty(len(values), dtype=object)
    seen = {}
    for i, value in enumerate(values):
        text = "" if value is None or (isinstance(value, float) and value != value) else str(value).strip()
        if not text:
            raise DataError("this patient has no id.", file=batch, row=i + 2, column="patient_id",
                            fix="Give every patient a patient_id.")
        if len(text) > schema.PATIENT_ID:
            raise DataError(f"the patient id is {len(text)} characters long; at most {schema.PATIENT_ID}.", file=batch,
                            row=i + 2, column="patient_id")
        if text in seen:
            raise DataError(f"patient {text!r} appears twice in the batch (rows {seen[text] + 2} and {i + 2}).",
                            file=batch, row=i + 2, column="patient_id", fix="Send each patient once.")
        seen[text] = i
        out[i] = text
    if not len(out):
        raise DataError("the batch holds no patient.", file=batch)
    if not all(text.isascii() for text in out):  # the readers' rule (pandas imported only for non-ASCII ids)
        from ..io.csv_parsing import check_ids_visible

        check_ids_visible(out.tolist(), np.arange(2, len(out) + 2), batch)
    return out


def batch_probs(probs, n: int, codes, batch: str, ids=None) -> np.ndarray:
    """(n, K) probabilities in [0, 1]; a DataError naming the batch, the row and the code otherwise. A DataFrame's
    columns are matched by code name and, indexed by the batch's ``ids``, its rows by patient id."""
    if hasattr(probs, "columns") and hasattr(probs, "to_numpy"):  # a DataFrame: columns by code name
        probs = by_patient_id(probs, ids, batch, what="the probabilities table")
        columns = [str(c) for c in probs.columns]
        if sorted(columns) != sorted(codes):
            missing = [c for c in codes if c not in columns]
            extra = [c for c in columns if c not in codes]
            raise DataError("the batch's codes differ from the program's: "
                            + "; ".join(part for part in (f"missing {join_few(missing)}" if missing else "",
                                                          f"not the program's {join_few(extra)}" if extra else "") if part)
                            + ".", file=batch, row=1, fix=f"Give exactly the program's {len(codes)} codes.")
        probs = probs[list(codes)].to_numpy(dtype=float)
    try:
        arr = np.asarray(probs, dtype=float)
    except (TypeError, ValueError):
        raise DataError("the probabilities are not numbers.", file=batch) from None
    if arr.ndim != 2 or arr.shape != (n, len(codes)):
        raise DataError(f"the probabilities have shape {arr.shape}; expected ({n}, {len(codes)}): one row per patient "
                        f"and one column per code of the program ({join_few(codes)}).", file=batch,
                        fix="Give the codes in the program's order.")
    bad = ~np.isfinite(arr) | (arr < 0) | (arr > 1)
    if bad.any():
        row, column = (int(v) for v in np.argwhere(bad)[0])
        value = float(arr[row, column])
        raise DataError(f"{value!r} is not a probability (a number from 0 to 1)"
                        + (f"; {int(bad.sum()) - 1} more cells are not either" if bad.sum() > 1 else "") + ".",
                        file=batch, row=row + 2, column=codes[column], fix="Probabilities must be numbers in [0, 1].")
    return arr


def batch_labels(labels, n: int, codes, batch: str, ids=None) -> np.ndarray:
    """(n, K) bool labels; a DataFrame's columns are matched by code name and, indexed by the batch's ``ids``,
    its rows by patient id."""
    if hasattr(labels, "columns") and hasattr(labels, "to_numpy"):
        labels = by_patient_id(labels, ids, batch, what="the labels table")
        columns = [str(c) for c in labels.columns]
        if sorted(columns) != sorted(codes):
            raise DataError(f"the labels' codes differ from the program's ({join_few(codes)}).", file=batch, row=1)
        labels = labels[list(codes)].to_numpy()
    arr = np.asarray(labels)
    if arr.ndim != 2 or arr.shape != (n, len(codes)):
        raise DataError(f"the labels have shape {arr.shape}; expected ({n}, {len(codes)}): one row per patient and one "
                        "0/1 column per code, in the program's code order.", file=batch)
    try:
        ok = (arr == 0) | (arr == 1)
    except (TypeError, ValueError):
        ok = np.zeros(arr.shape, dtype=bool)
    if not np.all(ok):
        row, column = (int(v) for v in np.argwhere(~ok)[0])
        value = arr[row, column]
        shown = repr(value.item() if hasattr(value, "item") else value)
        raise DataError(f"{shown} is not a label (0 or 1).", file=batch, row=row + 2, column=codes[column])
    return arr.astype(bool)


class Program:
    """One program of a store, as the store's acting user sees it (``store.program(name)``).

    Attributes
    ----------
    name, team : str
    codes : list of str
        The program's codes: the column order of every probability and label array.
    """

    def __init__(self, store, row):
        self._store = store
        self._id = int(row.id)
        self.name = row.name
        self.team = row.team
        self.codes = json.loads(row.codes)
        self._state: ProgramState | None = None
        self._seq = 0
        self._version = 0
        self._spec = None
        self._ledger = _Ledger(self.codes)

    def __repr__(self):
        return (f"Program({self.name!r}, team {self.team!r}, {len(self.codes)} codes, version {self._version}, "
                f"{self._ledger.n_predicted} predicted)")

    # ------------------------------------------------------------------ reading the log
    @property
    def version(self) -> int:
        """The current settings version (1 at creation)."""
        return self._version

    @property
    def spec(self) -> RunSpec:
        """The current settings (burn-in = the history's size minus the fold)."""
        return self._spec

    def _read_events(self, connection, after: int = 0):
        rows = connection.execute(select(schema.events).where(schema.events.c.program_id == self._id,
                                                              schema.events.c.seq > after)
                                  .order_by(schema.events.c.seq))
        for row in rows:
            arrays, doc = unpack(row.payload)
            yield row, arrays, doc

    def _spec_of(self, settings_text: str, history_size: int) -> RunSpec:
        spec = read_settings_json(settings_text.encode(), codes=self.codes).spec
        return check_program_spec(spec, self.codes, history_size)

    def _rebuild(self, connection) -> None:
        """The state, ledger and version from the whole log (the settings: the last version's)."""
        latest = connection.execute(select(schema.versions).where(schema.versions.c.program_id == self._id)
                                    .order_by(schema.versions.c.version.desc()).limit(1)).one()
        events = list(self._read_events(connection))
        history = next(doc for row, arrays, doc in events if row.kind == "history")
        spec = self._spec_of(latest.settings, len(history["ids"]))
        state = ProgramState(spec, self.codes)
        ledger = _Ledger(self.codes)
        for row, arrays, doc in events:
            _apply(state, ledger, row, arrays, doc)
        self._state, self._ledger, self._spec, self._version = state, ledger, spec, int(latest.version)
        self._seq = events[-1][0].seq if events else 0

    def _sync(self, connection, last_seq: int) -> None:
        """Apply the events other writers added since this view last read the log."""
        if self._state is None:
            self._rebuild(connection)
            return
        if last_seq <= self._seq:
            return
        events = list(self._read_events(connection, after=self._seq))
        if any(row.kind == "settings" for row, _, _ in events):
            self._rebuild(connection)
            return
        for row, arrays, doc in events:
            _apply(self._state, self._ledger, row, arrays, doc)
            self._seq = row.seq

    def refresh(self) -> "Program":
        """Read the events other processes wrote since this view last read the log. Returns self."""
        self._store._authorize("open", self)
        with self._store._engine.connect() as connection:
            last = connection.execute(select(schema.programs.c.last_seq).where(schema.programs.c.id == self._id)).scalar()
            self._sync(connection, int(last))
        return self

    # ------------------------------------------------------------------ writing
    def _locked(self, connection) -> int:
        """Lock the program's row until the transaction ends; the last event's sequence number."""
        return int(connection.execute(select(schema.programs.c.last_seq).where(schema.programs.c.id == self._id)
                                      .with_for_update()).scalar())

    def _append(self, connection, seq: int, kind: str, batch: str, n: int, payload: bytes, version: int | None = None):
        user = self._store.identity
        connection.execute(insert(schema.events).values(
            program_id=self._id, seq=seq, kind=kind, at=_now(), user_id=user.user_id, user_name=user.name,
            version=self._version if version is None else version, batch=batch[: schema.NAME], n_patients=n,
            payload=payload))
        connection.execute(update(schema.programs).where(schema.programs.c.id == self._id).values(last_seq=seq))

    def _event_row(self, connection, seq: int):
        """The event's row as written (its time as the database stores it), without its payload."""
        columns = [c for c in schema.events.c if c.name != "payload"]
        return connection.execute(select(*columns).where(schema.events.c.program_id == self._id,
                                                         schema.events.c.seq == seq)).one()

    def predict(self, ids, probs, members=None, *, batch: str | None = None):
        """Choose the sets of a batch of new patients and record them.

        Parameters
        ----------
        ids : sequence of str
            The patients' ids: each is predicted at most once per program.
        probs : ndarray (b, K), or a DataFrame with one column per code
            Base-classifier probabilities, in the program's code order.
        members : DataFrame or dict, optional
            Per-patient context (:func:`favmac.store.members.batch_members`): grouping columns, the CMS
            cell (``cms_cell``), known codes (``known_codes`` / ``known_<code>`` / ``known``).
        batch : str, optional
            A name for the batch in messages and the audit trail (e.g. the file's name).

        Returns
        -------
        DataFrame
            One row per patient: ``patient_id``, ``codes`` (the codes flagged), ``threshold``,
            ``version``, ``target`` (in force), ``n_codes``, and ``threshold_<column>`` per grouping.

        Cost: O(b K log K) for the sets plus the writes (one event and b patient rows).
        """
        store = self._store
        store._authorize("predict", self)
        number = self._ledger.n_predict_events + 1
        label = f"predict batch {number}" + (f" ({batch})" if batch else "")
        ids = batch_ids(ids, label)
        probs = batch_probs(probs, len(ids), self.codes, label, ids)
        context = batch_members(members, len(ids), self.codes, batch=label, ids=ids)
        with store._writing() as connection:
            last = self._locked(connection)
            self._sync(connection, last)
            label = f"predict batch {self._ledger.n_predict_events + 1}" + (f" ({batch})" if batch else "")
            self._refuse_known(ids, label)
            decisions = self._state.decide(probs, context, batch=label)
            seq = last + 1
            arrays = {"probs": probs, "chosen": np.packbits(decisions.chosen, axis=1), "thresholds": decisions.thresholds,
                      "targets": decisions.targets, **members_arrays(context)}
            arrays.update({f"grouping_{g}": values for g, values in enumerate(decisions.by_grouping.values())})
            doc = {"ids": ids.tolist(), "columns": {k: v.tolist() for k, v in context.columns.items()},
                   "cells": None if context.cells is None else context.cells.tolist(),
                   "groupings": list(decisions.by_grouping), "version": self._version}
            self._append(connection, seq, "predict", label, len(ids), pack(arrays, doc))
            insert_ids(connection, schema.patients, self._id, ids, seq)
            row = self._event_row(connection, seq)
        self._state.add_predicted(ids, context, decisions, batch=label)
        self._ledger.predicted(row, ids, decisions, self._version, context=context)
        self._seq = seq
        return self._ledger.batch_frame(-1)

    def _refuse_known(self, ids, label) -> None:
        state = self._state
        known = [p for p in ids.tolist() if state.is_known(p)]
        if not known:
            return
        earlier = self._ledger.batch_of(known[0])
        row = int(np.flatnonzero(ids == known[0])[0]) + 2
        if len(known) == len(ids) and earlier is not None and self._ledger.batch_size(earlier) == len(ids) \
                and all(self._ledger.batch_of(p) == earlier for p in known):
            raise DataError(f"this batch was sent before: its {plural(len(ids), 'patient')} "
                            f"({join_few(known)}) were predicted in {earlier}. Nothing was recorded again.",
                            file=label, column="patient_id")
        where = f"predicted in {earlier}" if earlier else "in the program's history"
        raise DataError(f"{plural(len(known), 'patient id')} {'was' if len(known) == 1 else 'were'} given to the program "
                        f"before ({join_few(known)}; the first {where}). A patient is predicted at most once per program.",
                        file=label, row=row, column="patient_id", fix="Leave those patients out of the batch.")

    def label(self, ids, labels, *, batch: str | None = None) -> int:
        """Record the confirmed codes of predicted patients; they join the calibration at once.

        ``labels`` is a boolean (b, K) array in the program's code order (or a DataFrame with one
        column per code). Returns the number of patients labelled now: a patient already labelled
        with the same codes is skipped (a no-op), with different codes refused. Cost: O(b K log K)
        for the sets plus O(b K log n) tree inserts, and the writes.
        """
        store = self._store
        store._authorize("label", self)
        label = f"label batch {self._ledger.n_label_events + 1}" + (f" ({batch})" if batch else "")
        ids = batch_ids(ids, label)
        labels = batch_labels(labels, len(ids), self.codes, label, ids)
        with store._writing() as connection:
            last = self._locked(connection)
            self._sync(connection, last)
            label = f"label batch {self._ledger.n_label_events + 1}" + (f" ({batch})" if batch else "")
            keep = self._check_labels(ids, labels, label)
            if not keep.any():
                return 0
            ids, labels = ids[keep], labels[keep]
            seq = last + 1
            self._append(connection, seq, "label", label, len(ids),
                         pack({"labels": np.packbits(labels, axis=1)}, {"ids": ids.tolist()}))
            insert_ids(connection, schema.labels, self._id, ids, seq)
            row = self._event_row(connection, seq)
        self._state.add_labels(ids, labels)
        self._ledger.labelled(row, ids, labels)
        self._seq = seq
        return len(ids)

    def _check_labels(self, ids, labels, label) -> np.ndarray:
        state, ledger = self._state, self._ledger
        unknown = [i for i, p in enumerate(ids.tolist()) if not state.is_predicted(p)]
        if unknown:
            first = ids[unknown[0]]
            history = [ids[i] for i in unknown if state.is_known(ids[i])]
            if history:
                raise DataError(f"{plural(len(history), 'patient')} ({join_few(history)}) belong to the program's history, "
                                "labelled when it was created.", file=label, row=unknown[0] + 2, column="patient_id",
                                fix="Label only patients the program predicted.")
            raise DataError(f"{plural(len(unknown), 'patient id')} {'was' if len(unknown) == 1 else 'were'} never predicted "
                            f"by this program ({join_few([ids[i] for i in unknown])}; the first is {first!r}).",
                            file=label, row=unknown[0] + 2, column="patient_id",
                            fix="Label only patients the program predicted (program.predict first).")
        keep = np.ones(len(ids), dtype=bool)
        for i, patient in enumerate(ids.tolist()):
            if state.is_labelled(patient):
                before = ledger.labels_of(patient)
                if np.array_equal(before, labels[i]):
                    keep[i] = False
                    continue
                differ = [self.codes[k] for k in np.flatnonzero(before != labels[i])]
                raise DataError(f"patient {patient!r} was labelled before with other codes (they differ at "
                                f"{join_few(differ)}). A patient is labelled once.", file=label, row=i + 2,
                                column=differ[0], fix="Leave the patient out, or send the labels recorded before.")
        return keep

    def update_settings(self, spec) -> int:
        """A new settings version for the events after it; returns its number.

        ``spec`` is a :class:`~favmac.RunSpec` (or a settings file's bytes). Earlier decisions keep the
        version they were made with; the calibration under the new version is computed from the same
        events (a replay under the new settings). Settings the program's data cannot satisfy (a grouping
        column some batch lacks, a fold larger than the history, ...) are refused and change nothing.
        """
        store = self._store
        store._authorize("settings", self)
        if isinstance(spec, (bytes, bytearray)):
            spec = read_settings_json(bytes(spec), codes=self.codes).spec
        with store._writing() as connection:
            last = self._locked(connection)
            self._sync(connection, last)
            spec = check_program_spec(spec, self.codes, self._ledger.history_size)
            state = ProgramState(spec, self.codes)
            ledger = _Ledger(self.codes)
            for row, arrays, doc in self._read_events(connection):  # the same events under the new settings
                _apply(state, ledger, row, arrays, doc)
            version = self._version + 1
            seq = last + 1
            settings = spec.to_json(self.codes).decode()
            self._append(connection, seq, "settings", f"settings version {version}", 0,
                         pack({}, {"settings": settings, "version": version}), version=version)
            connection.execute(insert(schema.versions).values(program_id=self._id, version=version, seq=seq,
                                                              settings=settings, created_at=_now(),
                                                              user_id=store.identity.user_id))
            row = self._event_row(connection, seq)
        ledger.settings(row)
        self._state, self._ledger, self._spec, self._version, self._seq = state, ledger, spec, version, seq
        return version

    # ------------------------------------------------------------------ views
    def status(self) -> dict:
        """Patients predicted, labelled and pending; the realized mean cost (expected-cost control) or the
        violation rate (violation control) of the labelled predicted patients against the target, with its
        standard error; the value captured (and the value their confirmed codes held)."""
        self._store._authorize("status", self)
        return self._ledger.status(self._spec, self._state, self._specs(), self._version)

    def decisions(self):
        """The audit trail: one row per predicted patient (DataFrame; see :meth:`_Ledger.decisions`)."""
        self._store._authorize("decisions", self)
        return self._ledger.decisions(self._specs())

    def timeline(self):
        """One row per event: when, who, kind, threshold(s) used, target, labels pending, realized cost
        against the target and value captured so far (DataFrame)."""
        self._store._authorize("timeline", self)
        return self._ledger.timeline(self._specs())

    def export(self, path, *, format: str | None = None) -> None:
        """Write the audit trail as CSV (formula cells and bidi/format characters neutralized) or Parquet."""
        self._store._authorize("export", self)
        frame = self._ledger.decisions(self._specs())
        suffix = str(path).lower().rsplit("/", 1)[-1].rpartition(".")[2] if "." in str(path).rsplit("/", 1)[-1] else ""
        if format is None and suffix not in ("", "csv", "txt", "parquet", "pq"):
            raise ValueError(f"path: {str(path)!r} ends in .{suffix}; the audit trail is written as CSV (.csv) or "
                             "Parquet (.parquet), or give format='csv' / 'parquet'")
        kind = format or ("parquet" if suffix in ("parquet", "pq") else "csv")
        if kind == "parquet":
            frame.to_parquet(path, index=False)
            return
        if kind != "csv":
            raise ValueError(f"format: csv or parquet; got {format!r}")
        from ..io import to_safe_csv

        with open(path, "wb") as handle:
            handle.write(to_safe_csv(frame, index=False))

    def _specs(self) -> dict:
        """Version -> settings (for the audit trail's realized costs under each decision's version)."""
        with self._store._engine.connect() as connection:
            rows = connection.execute(select(schema.versions.c.version, schema.versions.c.settings)
                                      .where(schema.versions.c.program_id == self._id)).all()
        size = self._ledger.history_size
        return {int(v): self._spec_of(text, size) for v, text in rows}

    @property
    def state(self) -> ProgramState:
        """The calibration state (derived from the log; read-only use)."""
        return self._state


def members_arrays(context: BatchMembers) -> dict:
    return {} if context.known is None else {"known": np.packbits(context.known, axis=1)}


def _members_of(arrays, doc, n: int, n_codes: int) -> BatchMembers:
    known = arrays.get("known")
    return BatchMembers({k: np.array(v, dtype=object) for k, v in (doc.get("columns") or {}).items()},
                        None if doc.get("cells") is None else np.array(doc["cells"], dtype=object),
                        None if known is None else np.unpackbits(known, axis=1, count=n_codes).astype(bool))


def _apply(state: ProgramState, ledger: "_Ledger", row, arrays, doc) -> None:
    """One event of the log applied to a state and a ledger (the settings event changes neither state)."""
    k = state.n_codes
    if row.kind == "history":
        ids = np.array(doc["ids"], dtype=object)
        labels = np.unpackbits(arrays["labels"], axis=1, count=k).astype(bool)
        context = _members_of(arrays, doc, len(ids), k)
        state.add_history(ids, arrays["probs"], labels, context, batch=row.batch)
        ledger.history(row, ids, labels)
    elif row.kind == "predict":
        ids = np.array(doc["ids"], dtype=object)
        context = _members_of(arrays, doc, len(ids), k)
        decisions = state.decide(arrays["probs"], context, batch=row.batch)  # under the state's settings
        state.add_predicted(ids, context, decisions, batch=row.batch)
        recorded = Decisions(np.unpackbits(arrays["chosen"], axis=1, count=k).astype(bool), decisions.index,
                             arrays["thresholds"], {name: arrays[f"grouping_{g}"] for g, name in enumerate(doc["groupings"])},
                             arrays["targets"], decisions.probs)
        ledger.predicted(row, ids, recorded, int(doc["version"]), context=context)
    elif row.kind == "label":
        ids = np.array(doc["ids"], dtype=object)
        labels = np.unpackbits(arrays["labels"], axis=1, count=k).astype(bool)
        state.add_labels(ids, labels)
        ledger.labelled(row, ids, labels)
    else:
        ledger.settings(row)


def _code_lists(chosen: np.ndarray, codes: np.ndarray) -> list:
    """The codes of each row of a (b, K) boolean table, as tuples: one tuple per distinct row (a batch
    holds few distinct sets), so O(b K) numpy plus O(b) Python."""
    if not len(chosen):
        return []
    packed = np.packbits(chosen, axis=1)
    distinct, first, inverse = np.unique(packed, axis=0, return_index=True, return_inverse=True)
    sets = [tuple(codes[chosen[i]].tolist()) for i in first.tolist()]
    return [sets[i] for i in inverse.ravel().tolist()]


class _Ledger:
    """The audit view of a log: every predicted patient's decision and labels, every event, in order."""

    def __init__(self, codes):
        self.codes = codes
        self.events = []  # (seq, kind, at, user_id, user_name, version, batch, n)
        self.batches = []  # dict per predict batch
        self.where = {}  # predicted patient id -> (batch number, row)
        self.history_rows = {}  # history patient id -> row
        self.history_labels = None
        self.history_size = 0
        self.n_predicted = self.n_labelled = 0
        self.n_predict_events = self.n_label_events = 0

    def _event(self, row) -> None:
        self.events.append({"seq": int(row.seq), "kind": row.kind, "at": row.at, "user_id": row.user_id,
                            "user": row.user_name, "version": int(row.version), "batch": row.batch,
                            "n_patients": int(row.n_patients), "predicted": self.n_predicted,
                            "labelled": self.n_labelled})

    def history(self, row, ids, labels) -> None:
        self.history_size = len(ids)
        self.history_labels = labels
        self.history_rows = dict(zip(ids.tolist(), range(len(ids))))
        self._event(row)

    def predicted(self, row, ids, decisions: Decisions, version: int, context=None) -> None:
        number = len(self.batches)
        n = len(ids)
        self.batches.append({"seq": int(row.seq), "at": row.at, "user": row.user_name, "version": version,
                             "batch": row.batch, "ids": ids, "chosen": decisions.chosen,
                             "thresholds": np.asarray(decisions.thresholds, dtype=float),
                             "by_grouping": {k: np.asarray(v, dtype=float) for k, v in decisions.by_grouping.items()},
                             "targets": np.asarray(decisions.targets, dtype=float), "context": context,
                             "labels": np.zeros((n, len(self.codes)), dtype=bool), "label_seq": np.zeros(n, dtype=np.int64),
                             "label_at": [None] * n, "label_user": [None] * n})
        for i, patient in enumerate(ids.tolist()):
            self.where[patient] = (number, i)
        self.n_predicted += n
        self.n_predict_events += 1
        self._event(row)

    def labelled(self, row, ids, labels) -> None:
        """Record a label event: batch by batch, as arrays (O(b) Python only for the ids' places)."""
        where = self.where
        places = np.array([where[patient] for patient in ids.tolist()], dtype=np.int64).reshape(-1, 2)
        labels = np.asarray(labels, dtype=bool)
        for number in np.unique(places[:, 0]).tolist():
            picked = np.flatnonzero(places[:, 0] == number)
            here = places[picked, 1]
            batch = self.batches[number]
            batch["labels"][here] = labels[picked]
            batch["label_seq"][here] = int(row.seq)
            label_at, label_user = batch["label_at"], batch["label_user"]
            for i in here.tolist():
                label_at[i] = row.at
                label_user[i] = row.user_name
        self.n_labelled += len(ids)
        self.n_label_events += 1
        self._event(row)

    def settings(self, row) -> None:
        self._event(row)

    def batch_of(self, patient) -> str | None:
        place = self.where.get(patient)
        return None if place is None or place[0] < 0 else self.batches[place[0]]["batch"]

    def batch_size(self, name) -> int:
        return next(len(b["ids"]) for b in self.batches if b["batch"] == name)

    def labels_of(self, patient) -> np.ndarray:
        place = self.where.get(patient)
        if place is None:
            return self.history_labels[self.history_rows[patient]]
        return self.batches[place[0]]["labels"][place[1]]

    def batch_frame(self, number: int):
        import pandas as pd

        batch = self.batches[number]
        chosen = batch["chosen"]
        codes = np.array(self.codes, dtype=object)
        frame = pd.DataFrame({"patient_id": batch["ids"],
                              "codes": [list(flagged) for flagged in _code_lists(chosen, codes)],
                              "n_codes": chosen.sum(axis=1).astype(int),
                              "threshold": batch["thresholds"],
                              "version": batch["version"],
                              "target": batch["targets"]})
        for column, values in batch["by_grouping"].items():
            frame[f"threshold_{column}"] = values
        return frame

    # ----------------------------------------------------------------- outcomes
    def _outcomes(self, specs: dict):
        """Per predicted patient (in prediction order): labelled?, realized cost, value, violation, target, the
        value of all its confirmed codes, under the settings of the version it was decided with."""
        from ..costs import exact_costs

        out = {"labelled": [], "cost": [], "value": [], "violation": [], "target": [], "available": []}
        for batch in self.batches:
            n = len(batch["ids"])
            labelled = batch["label_seq"] > 0
            spec = specs[batch["version"]]
            cost = np.full(n, math.nan)
            value = np.full(n, math.nan)
            available = np.full(n, math.nan)
            violation = np.zeros(n, dtype=bool)
            rows = np.flatnonzero(labelled)
            if len(rows):
                context = batch["context"] or BatchMembers({})
                part = context.take(rows)
                value_fn, cost_fn = spec.build(self.codes, part.for_value(len(rows), spec.cms_segment))
                chosen, labels = batch["chosen"][rows], batch["labels"][rows]
                cost[rows] = np.asarray(cost_fn(chosen, labels), dtype=float)
                value[rows] = np.asarray(value_fn(chosen, labels), dtype=float)
                available[rows] = np.asarray(value_fn(labels, labels), dtype=float)
                costs = exact_costs(cost_fn, len(self.codes), None)
                violation[rows] = np.array([int(c) > costs.bound(spec.targets[0])
                                            for c in costs.set_costs(chosen, labels)], dtype=bool)
            out["labelled"].append(labelled)
            out["cost"].append(cost)
            out["value"].append(value)
            out["violation"].append(violation)
            out["target"].append(np.full(n, float(spec.targets[0])))
            out["available"].append(available)
        if not self.batches:
            return {key: np.zeros(0) for key in out}
        return {key: np.concatenate(values) for key, values in out.items()}

    def status(self, spec: RunSpec, state: ProgramState, specs: dict, version: int) -> dict:
        outcomes = self._outcomes(specs)
        labelled = outcomes["labelled"].astype(bool)
        m = int(labelled.sum())
        cost, value = outcomes["cost"][labelled], outcomes["value"][labelled]
        violations = outcomes["violation"][labelled]
        control = spec.control
        if control == "expected":
            realized = float(cost.mean()) if m else math.nan
            error = float(cost.std(ddof=1) / math.sqrt(m)) if m > 1 else math.nan
        else:
            realized = float(violations.mean()) if m else math.nan
            error = float(math.sqrt(realized * (1 - realized) / m)) if m > 1 else math.nan
        available = float(outcomes["available"][labelled].sum()) if m else 0.0
        return {
            "version": version,
            "control": control,
            "target": float(spec.targets[0]) if control == "expected" else float(spec.delta),
            "target_cost": float(spec.targets[0]),
            "predicted": self.n_predicted,
            "labelled": m,
            "pending": self.n_predicted - m,
            "history": self.history_size,
            "realized": realized,
            "standard_error": error,
            "mean_cost": float(cost.mean()) if m else math.nan,
            "violation_rate": float(violations.mean()) if m else math.nan,
            "value_captured": float(value.sum()) if m else 0.0,
            "value_available": available,
            "value_share": float(value.sum()) / available if available > 0 else math.nan,
            "threshold": state.pooled_threshold(),
        }

    def decisions(self, specs: dict):
        import pandas as pd

        outcomes = self._outcomes(specs)
        if not self.batches:
            return pd.DataFrame(columns=["patient_id", "codes_flagged", "n_codes", "predicted_at", "predicted_by",
                                         "batch", "threshold", "version", "target", "labelled_at", "labelled_by",
                                         "confirmed_codes", "realized_cost", "realized_value"])
        codes = np.array(self.codes, dtype=object)
        frames = []
        for batch in self.batches:
            n = len(batch["ids"])
            labelled = batch["label_seq"] > 0
            frame = pd.DataFrame({
                "patient_id": batch["ids"],
                "codes_flagged": [";".join(flagged) for flagged in _code_lists(batch["chosen"], codes)],
                "n_codes": batch["chosen"].sum(axis=1).astype(int),
                "predicted_at": [batch["at"]] * n,
                "predicted_by": [batch["user"]] * n,
                "batch": [batch["batch"]] * n,
                "threshold": batch["thresholds"],
                "version": batch["version"],
                "target": batch["targets"],
                "labelled_at": batch["label_at"],
                "labelled_by": batch["label_user"],
                "confirmed_codes": [";".join(codes[row].tolist()) if ok else None
                                    for row, ok in zip(batch["labels"], labelled)],
            })
            for column, values in batch["by_grouping"].items():
                frame[f"threshold_{column}"] = values
            frames.append(frame)
        out = pd.concat(frames, ignore_index=True)
        out["realized_cost"] = outcomes["cost"]
        out["realized_value"] = outcomes["value"]
        return out

    def timeline(self, specs: dict):
        import pandas as pd

        outcomes = self._outcomes(specs)
        position = {}
        start = 0
        for number, batch in enumerate(self.batches):
            position[number] = np.arange(start, start + len(batch["ids"]))
            start += len(batch["ids"])
        label_seq = np.concatenate([b["label_seq"] for b in self.batches]) if self.batches else np.zeros(0, dtype=np.int64)
        predict_seq = np.concatenate([np.full(len(b["ids"]), b["seq"]) for b in self.batches]) if self.batches else \
            np.zeros(0, dtype=np.int64)
        rows = []
        by_seq = {b["seq"]: b for b in self.batches}
        for event in self.events:
            seq = event["seq"]
            done = (label_seq > 0) & (label_seq <= seq)
            m = int(done.sum())
            cost = outcomes["cost"][done]
            batch = by_seq.get(seq)
            row = {**{k: event[k] for k in ("seq", "kind", "at", "user", "version", "batch", "n_patients")},
                   "threshold": math.nan, "threshold_min": math.nan, "threshold_max": math.nan, "target": math.nan,
                   "predicted": int((predict_seq <= seq).sum()), "labelled": m,
                   "pending": int((predict_seq <= seq).sum()) - m,
                   "mean_cost": float(cost.mean()) if m else math.nan,
                   "cost_se": float(cost.std(ddof=1) / math.sqrt(m)) if m > 1 else math.nan,
                   "violation_rate": float(outcomes["violation"][done].mean()) if m else math.nan,
                   "target_cost": float(outcomes["target"][done][-1]) if m else math.nan,
                   "value_captured": float(outcomes["value"][done].sum()) if m else 0.0}
            if batch is not None:
                t = batch["thresholds"]
                row.update(threshold=float(t[0]) if np.all(t == t[0]) else math.nan, threshold_min=float(t.min()),
                           threshold_max=float(t.max()), target=float(np.mean(batch["targets"])))
            rows.append(row)
        return pd.DataFrame(rows)
