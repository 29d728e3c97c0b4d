"""A fresh session (a reload, a deep link, a new tab) restores the user's workspace (:mod:`favmac.ui.workspace`).

:func:`restore` rebuilds the session from the workspace's document: the dataset (the bundled sample it
names, or the uploaded files, parsed again), the new patients, the weights table and the settings
(validated against the data again). Anything that cannot be rebuilt any more (a file the readers now
refuse, settings the data no longer satisfies) is said in the "calibration" or "settings" message and the
rest is kept; a workspace that cannot be read at all leaves the session to the bundled sample, saying why.
"""
from __future__ import annotations

import json

from favmac import io as fio
from favmac.functions import FormulaError
from favmac.runspec import SettingsError
from favmac.ui import actions, parsing, samples, settings_form, store, workspace
from favmac.ui.session import Session

__all__ = ["attach", "restore"]


def attach(ss: Session) -> None:
    """Every page run: bind the session to its user's workspace (``ss.workspace``; None when the store
    cannot be used, said in the "store" message) and, in a fresh session, restore it."""
    try:
        ss.workspace = store.user_store().workspace()
    except store.StoreUnavailable as err:
        ss.workspace = None
        ss.fill_defaults()
        ss.set_message("store", "warning", str(err))
        return
    ss.clear_message("store")  # the store is (back) up
    if "dataset" not in ss.store:
        restore(ss)


def _load(space, name: str):
    data, meta = space.load(name)
    return data, meta.get("file_name") or name


def restore(ss: Session) -> bool:
    """Rebuild the session from its workspace; True when it was (False: nothing saved, or no store)."""
    space = ss.workspace
    if space is None:
        return False
    try:
        raw, _ = space.load(workspace.DOC)
    except KeyError:
        return False
    except Exception as err:  # noqa: BLE001 — an unreadable store: the sample, and the reason
        ss.fill_defaults()
        ss.set_message("workspace", "warning", f"Your saved workspace could not be read ({store.failure_reason(err)}); "
                       "showing the bundled sample.")
        return False
    ss.fill_defaults()
    try:
        doc = json.loads(raw)
        _restore(ss, space, doc)
    except (fio.DataError, KeyError, ValueError, TypeError, OSError) as err:
        for key in ("dataset", "dataset_key", "new_patients", "new_patients_name", "weights", "weights_source", "settings"):
            ss.store.pop(key, None)
        ss.set_message("workspace", "warning", f"Your saved workspace could not be restored ({err}); showing the "
                                               "bundled sample. Upload your files again on the Data page.")
        return False
    ss.workspace_doc = doc
    return True


def _restore(ss: Session, space, doc: dict) -> None:
    data = doc["data"]
    if data["kind"] == "sample":
        actions.load_sample(ss, data["sample"], save=False)
        where = f"the bundled sample {samples.SAMPLES[data['sample']].label}"
    else:
        probs, probs_name = _load(space, workspace.CALIBRATION)
        labels, labels_name = _load(space, workspace.LABELS) if data.get("labels_name") else (None, None)
        dataset = parsing.parse_calibration(probs, probs_name, labels, labels_name)
        actions.set_dataset(ss, dataset, f"upload:{samples.content_key(probs, labels)}")
        where = dataset.name
    dataset = ss.dataset
    codes = tuple(dataset.codes)
    notes = []
    new = doc.get("new_patients")
    if new is None:
        ss.new_patients, ss.new_patients_name = None, None
    elif new["kind"] == "upload":
        content, name = _load(space, workspace.NEW_PATIENTS)
        try:
            ss.new_patients = parsing.parse_new_patients(content, name, codes, tuple(dataset.segment_columns()))
            ss.new_patients_name = name
        except fio.DataError as err:
            ss.new_patients, ss.new_patients_name = None, None
            notes.append(f"The new patients were not restored: {err}")
    weights = doc.get("weights")
    if weights and weights["code"] == list(codes):
        ss.weights = workspace.weights_table(weights)
        ss.weights_source = doc.get("weights_source") or "restored from your workspace"
    settings = doc.get("settings")
    if settings:
        try:
            ss.settings = settings_form.validate_settings(settings, dataset.n_codes, dataset.n_patients, ss.weight_array(),
                                                          dataset=dataset)
        except (SettingsError, FormulaError) as err:
            notes.append(f"The saved settings were not restored ({err}); the defaults for this data are used.")
    actions.reset_playback(ss)
    ss.clear_message("settings")
    ss.set_message("calibration", "success", f"Restored your workspace: {where} ({dataset.n_patients:,} patients × "
                                             f"{dataset.n_codes} codes), with its weights and settings.")
    if notes:
        ss.set_message("workspace", "warning", " ".join(notes))
