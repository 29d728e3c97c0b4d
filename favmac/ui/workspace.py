"""The user's workspace in the store: what this session's data and settings are, saved as the user acts.

The session keeps its data in memory (``st.session_state``); a reload, a deep link or a new browser
tab starts a fresh session. So every action that changes the data or the settings
(:mod:`favmac.ui.actions`) also records it in the acting user's workspace in the store
(:class:`favmac.store.workspace.Workspace`, readable by that user only), and a fresh session restores
it (:mod:`favmac.ui.workspace_restore`) instead of loading the bundled sample.

Items of the workspace:

* ``session.json`` — the document below (what the session runs on);
* ``calibration`` / ``calibration_labels`` — the calibration file(s) the user uploaded, as uploaded;
* ``new_patients`` — the new-patients file the user uploaded, as uploaded.

The document (:data:`FORMAT`): ``data`` (``{"kind": "sample", "sample": key}`` or ``{"kind":
"upload", "probs_name", "labels_name", "sha256"}``), ``new_patients`` (None, ``{"kind": "sample",
"sample": key}`` or ``{"kind": "upload", "name", "sha256"}``), ``weights`` (the table in use: codes,
weights, descriptions), ``weights_source``, ``settings`` (the settings form's dict) and
``dataset_key``. A file is written only when its bytes differ from the saved ones.

Nothing here draws; a failure to save is the session's "workspace" message, and the session keeps
working on what it has.
"""
from __future__ import annotations

import hashlib
import json

import pandas as pd

from favmac.ui import store
from favmac.ui.session import Session

__all__ = ["CALIBRATION", "DOC", "FORMAT", "LABELS", "NEW_PATIENTS", "handled", "note_failure", "reading", "record", "weights_doc",
           "weights_table"]

FORMAT = 1
DOC = "session.json"
CALIBRATION = "calibration"
LABELS = "calibration_labels"
NEW_PATIENTS = "new_patients"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def weights_doc(table) -> dict | None:
    """The weights table (index code; weight, description) as JSON-ready lists."""
    if table is None:
        return None
    return {"code": [str(c) for c in table.index], "weight": [float(w) for w in table["weight"]],
            "description": ["" if d is None or (isinstance(d, float) and d != d) else str(d)
                            for d in (table["description"] if "description" in table else [""] * len(table))]}


def weights_table(doc: dict):
    """The weights table back from :func:`weights_doc`."""
    frame = pd.DataFrame({"weight": [float(w) for w in doc["weight"]], "description": [str(d) for d in doc["description"]]},
                         index=pd.Index([str(c) for c in doc["code"]], name="code"))
    return frame


def _write_file(space, name: str, data: bytes, file_name: str, doc_entry: dict | None) -> str:
    digest = _sha(data)
    if not (doc_entry and doc_entry.get("sha256") == digest):
        space.save(name, data, {"file_name": file_name})
    return digest


def record(ss: Session, *, sample: str | None = None, calibration=None, labels=None, new_patients=None,
           new_patients_sample: str | None = None) -> bool:
    """Save the session's data and settings in its workspace (no-op without one: ``ss.workspace`` None).

    ``sample`` (a bundled sample's key, data and new patients from it) or ``calibration`` / ``labels``
    (``(bytes, file name)`` of an upload) say where a new dataset came from; ``new_patients`` a new
    new-patients upload. Called after the session changed. Returns True when saved; a failure is
    the "workspace" message (the session keeps its data; a reload would not find it).
    """
    space = ss.workspace
    if space is None:
        return False
    previous = ss.workspace_doc or {}
    doc = {"format": FORMAT, "data": previous.get("data"), "new_patients": previous.get("new_patients")}
    try:
        if sample is not None:
            doc["data"] = {"kind": "sample", "sample": sample}
            doc["new_patients"] = {"kind": "sample", "sample": sample} if ss.new_patients is not None else None
        elif calibration is not None:
            before = previous.get("data") or {}
            data, name = calibration
            entry = {"kind": "upload", "probs_name": name,
                     "sha256": _write_file(space, CALIBRATION, data, name, before if before.get("kind") == "upload" else None)}
            if labels is not None:
                labels_data, labels_name = labels
                same = before if before.get("labels_name") else None
                entry["labels_name"] = labels_name
                entry["labels_sha256"] = _sha(labels_data)
                if not (same and same.get("labels_sha256") == entry["labels_sha256"]):
                    space.save(LABELS, labels_data, {"file_name": labels_name})
            doc["data"] = entry
            if ss.new_patients is None:  # set aside by the new data (other codes)
                doc["new_patients"] = None
        if new_patients is not None:
            data, name = new_patients
            before = previous.get("new_patients") or {}
            doc["new_patients"] = {"kind": "upload", "name": name,
                                   "sha256": _write_file(space, NEW_PATIENTS, data, name,
                                                         before if before.get("kind") == "upload" else None)}
        elif new_patients_sample is not None:
            doc["new_patients"] = {"kind": "sample", "sample": new_patients_sample}
        if doc["data"] is None:  # nothing the session could be rebuilt from: not saved
            return False
        doc.update(dataset_key=ss.dataset_key, dataset_name=None if ss.dataset is None else ss.dataset.name,
                   weights=weights_doc(ss.weights), weights_source=ss.weights_source, settings=ss.settings)
        space.save(DOC, json.dumps(doc, default=_json_default).encode(), {"dataset": doc["dataset_name"]})
    except Exception as err:  # noqa: BLE001 — a store that fails is a message; the session keeps its data
        note_failure(ss, err)
        return False
    ss.workspace_doc = doc
    if ss.message_level("workspace") in ("warning", "error"):
        ss.clear_message("workspace")
    return True


def reading(ss: Session, kind: str, *files) -> None:
    """An action starts reading these uploaded files as ``kind`` ("calibration", "new_patients", "weights").
    A page change can cut the action short (Streamlit stops a run at its next element when another is asked
    for); then :mod:`favmac.ui.workspace_uploads` finishes it on the next page."""
    ids = [f.file_id for f in files if getattr(f, "file_id", None)]
    if ids:
        started = ss.uploads_reading if isinstance(ss.uploads_reading, dict) else {}
        ss.uploads_reading = {**started, **{i: (kind, ids) for i in ids}}


def handled(ss: Session, *files) -> None:
    """An action finished reading these uploaded files (Streamlit UploadedFiles: their ``file_id``), whether it
    kept or refused them (:mod:`favmac.ui.workspace_uploads` tells a file no action read)."""
    ids = {getattr(f, "file_id", None) for f in files} - {None}
    if ids:
        read = ss.uploads_read if isinstance(ss.uploads_read, set) else set()
        ss.uploads_read = read | ids
        if isinstance(ss.uploads_reading, dict):
            ss.uploads_reading = {k: v for k, v in ss.uploads_reading.items() if k not in ids}


def note_failure(ss: Session, err) -> None:
    ss.set_message("workspace", "warning", f"Your workspace could not be saved in the store ({store.failure_reason(err)}). "
                   "This browser session keeps its data and settings, but a reload would not find them.")


def _json_default(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)
