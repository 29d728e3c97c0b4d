"""What the user's actions do to the session: load a sample, upload files, edit weights, apply
or restore settings.

Each action takes the :class:`favmac.ui.session.Session`, parses what it was given
(:mod:`favmac.ui.parsing`), checks it, and either stores it or leaves the session as it was and
records why under its message area. Actions draw nothing: a page that acts after its sidebar is
drawn redraws the summary itself (``widgets.refresh_sidebar_summary``). They return True when
the session changed. Each change is also saved in the user's workspace in the store
(:func:`favmac.ui.workspace.record`; a no-op without a store), so a reload restores it.

The path of an upload: the Data page's uploader callback -> :func:`apply_calibration_upload` ->
``parsing.parse_calibration`` -> :func:`set_dataset` (weights, new patients and settings adapted
to the new codes) -> ``Session.dataset``; the pages then hand ``(session.dataset,
session.spec())`` to the runs in :mod:`favmac.ui.jobs`.
"""
from __future__ import annotations

from favmac import io as fio
from favmac.functions import FormulaError
from favmac.runspec import SettingsError
from favmac.segments import check_groupings
from favmac.ui import parsing, payment_view, playback, recalibration_view, samples, settings_form, weights_view, workspace
from favmac.ui.session import Session

__all__ = ["apply_calibration_upload", "apply_cms_weights", "apply_edited_weights", "apply_new_patients_upload",
           "apply_settings", "apply_settings_json", "apply_weights_upload", "clear_stale", "init_state", "load_sample",
           "reset_playback", "set_dataset", "use_recalibration"]


def _count(n: int, word: str) -> str:
    """``n`` (thousands separated) and ``word``, in the plural unless ``n == 1``: "1 code", "4,000 patients"."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def init_state(ss: Session) -> None:
    """Fill in missing keys; load the bundled default sample when no data is loaded yet."""
    ss.fill_defaults()
    if "dataset" not in ss.store:
        try:
            load_sample(ss, samples.DEFAULT_SAMPLE, save=False)  # not the user's choice: nothing to save
        except (fio.DataError, OSError) as err:
            ss.set_message("calibration", "error", f"Could not load the bundled sample: {err}")


def clear_stale(ss: Session, *areas: str) -> None:
    """Drop the warnings and errors of ``areas``: they described data or settings that just changed."""
    for area in areas:
        if ss.message_level(area) in ("warning", "error"):
            ss.clear_message(area)


# --------------------------------------------------------------------------- data


def load_sample(ss: Session, sample: str, *, save: bool = True) -> None:
    """Load a bundled sample (calibration stream, new patients and weights); ``save``: record it in the
    workspace (not when the workspace itself is being restored)."""
    sample_files = samples.SAMPLES[sample]
    folder = samples.sample_dir()
    calibration = (folder / sample_files.calibration).read_bytes()
    dataset = parsing.parse_calibration(calibration, sample_files.calibration)
    dataset.name = sample_files.label
    codes = tuple(dataset.codes)
    new_path, weights_path = folder / sample_files.new_patients, folder / sample_files.weights
    new_patients = parsing.parse_new_patients(new_path.read_bytes(), sample_files.new_patients, codes,
                                              tuple(dataset.segment_columns())) if new_path.exists() else None
    weights = parsing.parse_weights(weights_path.read_bytes(), sample_files.weights, codes) if weights_path.exists() else None
    set_dataset(
        ss,
        dataset,
        f"sample:{sample}:{samples.content_key(calibration)}",
        new_patients=new_patients,
        new_patients_name=sample_files.new_patients if new_patients is not None else None,
        weights=weights,
        weights_source=f"sample file {sample_files.weights}" if weights is not None else None,
    )
    ss.set_message("calibration", "success", f"Loaded the bundled sample: {sample_files.label}.")
    if save:
        workspace.record(ss, sample=sample)


def set_dataset(ss: Session, dataset, key: str, *, new_patients=None, new_patients_name=None, weights=None,
                weights_source=None) -> list[str]:
    """Make ``dataset`` the current stream; keep or adapt weights, new patients and settings.

    Returns the notes on what was adapted (also the "settings" message)."""
    notes = []
    codes = dataset.codes
    had_data = ss.has_dataset and ss.settings is not None
    old_cmax = ss.c_max() if had_data else None
    old_n = ss.dataset.n_patients if had_data else None
    clear_stale(ss, "new_patients", "weights", "settings_json")  # they were about the data being replaced
    # each note goes to the area whose upload makes it obsolete (a later upload replaces it)
    if weights is None:
        weights, note = weights_view.weights_for_codes(ss.weights, codes)
        if note:
            ss.set_message("weights", "warning", note)
            weights_source = "all ones (no weights for these codes)"
        else:
            weights_source = ss.weights_source
    else:
        ss.clear_message("weights")
    if new_patients is None and ss.new_patients is not None:
        if list(ss.new_patients.columns) == codes:
            new_patients, new_patients_name = ss.new_patients, ss.new_patients_name
        else:
            ss.set_message("new_patients", "warning", "The new-patients file had other codes and was set aside; upload new patients for these codes.")
    elif new_patients is not None:
        ss.clear_message("new_patients")
    ss.dataset = dataset
    ss.dataset_key = key
    ss.new_patients = new_patients
    ss.new_patients_name = new_patients_name
    _set_weights(ss, weights, weights_source)
    w = weights_view.weight_array(weights, codes)
    if ss.settings is None:
        ss.settings = settings_form.default_settings(dataset.n_patients, dataset.n_codes, w)
        ss.settings.update(payment_view.payment_defaults(list(codes)))  # CMS-HCC codes: the payment value by default
    else:
        ss.settings, adapted = settings_form.adapt_settings(ss.settings, dataset.n_patients, dataset.n_codes, w, old_cmax,
                                                            old_n_patients=old_n)
        notes += adapted
        if ss.settings["value_kind"] == "cms_payment" and payment_view.payment_model_of(list(codes)) is None:
            ss.settings = {**ss.settings, "value_kind": "weighted_tp"}
            notes.append("Value set to risk-weighted TP: the new data's codes are not CMS-HCC payment codes.")
    segment = ss.settings.get("segment")
    missing = [c for c in ([segment] if isinstance(segment, str) else segment or ()) if c not in dataset.segment_columns()]
    if missing:
        notes.append(f"Per-segment control turned off: this data has no column {missing[0]!r}.")
        ss.settings = {**ss.settings, "segment": None}
    elif segment and not isinstance(segment, str):  # several groupings: each group needs two patients or more
        try:
            check_groupings({c: dataset.segments(c) for c in segment}, dataset.n_patients, rows=dataset.rows)
        except ValueError as err:  # a one-patient group, named by its value and file row (as Apply refuses it)
            notes.append(f"Per-segment control turned off ({dataset.name}): {err}")
            ss.settings = {**ss.settings, "segment": None}
    arrivals = ss.settings.get("label_available_column")
    if arrivals is not None and arrivals != dataset.label_available_column:
        notes.append(f"Labels now arrive all at once: this data has no label-arrival column {arrivals!r}.")
        ss.settings = {**ss.settings, "label_available_column": None}
    reset_playback(ss)
    if notes:
        ss.set_message("settings", "warning", "Adapted to the new data: " + " ".join(notes))
    else:
        ss.clear_message("settings")
    return notes


def _set_weights(ss: Session, weights, source: str | None) -> None:
    ss.weights = weights
    ss.weights_source = source or "unknown"
    ss.store.pop("weights_editor", None)  # the editor's edits belonged to the previous table
    ss.tradeoffs = None


def reset_playback(ss: Session) -> None:
    """Back to the start of the stream, for a new run (new data or restored settings)."""
    if isinstance(ss.playback, playback.Playback):
        playback.reset(ss.playback)
        ss.playback.key = None
    else:
        ss.playback = playback.Playback()
    ss.tradeoffs = None


def apply_calibration_upload(ss: Session, probs_file, labels_file=None) -> bool:
    """Parse uploaded calibration file(s) and make them current.

    ``probs_file`` / ``labels_file`` are Streamlit UploadedFiles (or anything with ``.name``
    and ``.getvalue()``). A DataError leaves the loaded data untouched and is shown as
    the "calibration" message. Returns True when the data was replaced.
    """
    workspace.reading(ss, "calibration", probs_file, *([] if labels_file is None else [labels_file]))
    probs = probs_file.getvalue()
    labels = None if labels_file is None else labels_file.getvalue()
    try:
        dataset = parsing.parse_calibration(probs, probs_file.name, labels, None if labels_file is None else labels_file.name)
        if not dataset.has_labels:
            raise fio.DataError("the calibration file has no labels.", file=probs_file.name, fix="Upload the labels too, or a wide file with label_<code> columns.")
    except fio.DataError as err:
        kept = f" The data already loaded ({ss.dataset.name}) is unchanged." if ss.has_dataset else ""
        ss.set_message("calibration", "error", f"{err}{kept}")
        workspace.handled(ss, probs_file, labels_file)
        return False
    set_dataset(ss, dataset, f"upload:{samples.content_key(probs, labels)}")
    ss.set_message("calibration", "success", f"Loaded {dataset.name}: {_count(dataset.n_patients, 'patient')} × "
                   f"{_count(dataset.n_codes, 'code')}.")
    workspace.record(ss, calibration=(probs, probs_file.name),
                     labels=None if labels_file is None else (labels, labels_file.name))
    workspace.handled(ss, probs_file, labels_file)
    return True


def apply_new_patients_upload(ss: Session, file) -> bool:
    workspace.reading(ss, "new_patients", file)
    try:
        frame = parsing.parse_new_patients(file.getvalue(), file.name, tuple(ss.dataset.codes),
                                           tuple(ss.dataset.segment_columns()))
    except fio.DataError as err:
        ss.set_message("new_patients", "error", str(err))
        workspace.handled(ss, file)
        return False
    ss.new_patients, ss.new_patients_name = frame, file.name
    ss.set_message("new_patients", "success", f"Loaded {_count(len(frame), 'new patient')} from {file.name}.")
    workspace.record(ss, new_patients=(file.getvalue(), file.name))
    workspace.handled(ss, file)
    return True


# --------------------------------------------------------------------------- weights


def _apply_weights(ss: Session, load, source: str, success: str) -> bool:
    """Use the weights ``load()`` returns; on a DataError keep the current ones and say why."""
    try:
        weights = load()
    except fio.DataError as err:
        ss.set_message("weights", "error", str(err))
        return False
    _set_weights(ss, weights, source)
    clear_stale(ss, "settings")  # "Target set to ..." was about the weights being replaced
    ss.set_message("weights", "success", success.format(codes=_count(len(weights), "code")))
    workspace.record(ss)
    return True


def apply_weights_upload(ss: Session, file) -> bool:
    workspace.reading(ss, "weights", file)
    codes = tuple(ss.dataset.codes)
    done = _apply_weights(ss, lambda: parsing.parse_weights(file.getvalue(), file.name, codes), f"upload {file.name}",
                          f"Loaded weights for {{codes}} from {file.name}.")
    workspace.handled(ss, file)  # not reached when a page change cuts the reading short
    return done


def apply_cms_weights(ss: Session, model: str, segment: str) -> bool:
    codes = tuple(ss.dataset.codes)
    return _apply_weights(ss, lambda: parsing.cms_weights(model, segment, codes), f"CMS-HCC {model} {segment}",
                          f"Using CMS-HCC {model} risk factors, segment {segment}.")


def apply_edited_weights(ss: Session, edited) -> bool:
    """Store the table returned by the weights editor; True when it differed and every weight is valid."""
    current = ss.weights
    if edited is None or edited.equals(current):
        return False
    try:
        weights_view.weight_array(edited, list(current.index))
    except SettingsError as err:
        ss.set_message("weights", "error", str(err))
        return False
    ss.weights = edited.copy()
    source = ss.weights_source or ""
    ss.weights_source = source if source.endswith("(edited)") else f"{source} (edited)"
    ss.tradeoffs = None
    ss.clear_message("weights")
    clear_stale(ss, "settings")
    workspace.record(ss)
    return True


# --------------------------------------------------------------------------- settings


def apply_settings(ss: Session, new_settings: dict) -> bool:
    """Validate and store settings; errors become the "settings" message."""
    dataset = ss.dataset
    try:
        cleaned = settings_form.validate_settings(new_settings, dataset.n_codes, dataset.n_patients, ss.weight_array(),
                                                  dataset=dataset)
    except (SettingsError, FormulaError) as err:
        ss.set_message("settings", "error", str(err))
        return False
    ss.settings = cleaned
    ss.set_message("settings", "success", "Settings saved.")
    workspace.record(ss)
    return True


def use_recalibration(ss: Session, method: str, fold: int) -> bool:
    """The Data page's "Use ..." button: recalibrate with ``method`` (on the settings' fold, or ``fold`` when
    recalibration is off); the outcome is the "recalibration" message."""
    settings = {**ss.settings, "recalibration": method, "recalibrate": ss.settings.get("recalibrate") or fold}
    if not apply_settings(ss, settings):
        ss.set_message("recalibration", "error", (ss.messages or {}).get("settings", ("", "The settings were not changed."))[1])
        return False
    ss.clear_message("settings")
    ss.set_message("recalibration", "success", f"Recalibration now uses {recalibration_view.SHORT_LABELS[method]} "
                   f"({method}) on the first {settings['recalibrate']:,} patients (Value & cost → Recalibration); the Online "
                   "session and Trade-offs run with it.")
    return True


def apply_settings_json(ss: Session, raw: bytes, file_name: str) -> bool:
    """Restore the settings (and weights, when the file has them) from a settings JSON."""
    dataset = ss.dataset
    try:
        settings, new_weights, notes = settings_form.settings_from_json(raw, ss.settings, dataset.codes, dataset.n_patients,
                                                                        ss.weight_array(), dataset=dataset)
    except (SettingsError, FormulaError) as err:
        ss.set_message("settings_json", "error", f"{file_name}: {err}")
        return False
    if new_weights is not None:
        table = ss.weights.copy()
        table["weight"] = [new_weights[c] for c in table.index]
        _set_weights(ss, table, f"restored from {file_name}")
    ss.settings = settings
    reset_playback(ss)
    clear_stale(ss, "settings")  # an adapted-to-the-data note is replaced by the restored settings
    ss.set_message("settings_json", "success", " ".join([f"Restored the settings from {file_name}.", *notes]))
    workspace.record(ss)
    return True
