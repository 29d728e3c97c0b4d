"""Session state of FavMac Studio: the documented keys and the actions that change them.

Each browser session has its own ``st.session_state``; nothing here is module-global, so two
sessions never see each other's data. File parsing is cached across sessions with
``st.cache_data`` keyed on the file *bytes* (immutable inputs); ``st.cache_data`` hands every
caller its own copy, so a cached object is never shared or mutated.

Keys (plain values, not widget keys, so they survive page switches):

================  ===========================================================================
dataset           ``favmac.io.Dataset`` — the labelled calibration stream being analysed
dataset_key       str — fingerprint of the calibration data (content hash)
new_patients      DataFrame | None — unlabelled patients' probabilities (columns = dataset codes)
new_patients_name str | None — file the new patients came from
weights           DataFrame (index code; columns weight, description) — risk weights in use,
                  including edits made in the weights table
weights_source    str — where the weights came from ("sample file", "CMS-HCC V28 CNA", ...)
settings          dict — the settings form's working copy: value/cost/control/target/... and the
                  trade-off grid (see ``favmac.ui.settings_form``); everything that uses it
                  goes through ``spec()``, a ``favmac.runspec.RunSpec`` with the weights
session           ``favmac.ui.playback.Playback`` — online playback: ``position`` (patients
                  shown), ``playing``, ``speed`` (patients per second), ``key`` (run the
                  position belongs to), ``last_tick``
messages          dict[area, (level, text)] — last message per area ("calibration",
                  "new_patients", "weights", "settings", "settings_json"); level is
                  "error", "warning" or "success"
results           dict[run key, ReplayResult] — this session's replays, newest last (at most 4)
jobs              dict[name, favmac.ui.jobs.Job] — computations running in the background
                  ("online", "tradeoffs", "exports", "validity"); kept across page switches, so leaving a
                  page does not stop or restart its work
tradeoffs         dict | None — last trade-off comparison: key, points, table, skipped
exports           dict | None — CSV bytes and previews of the last export, with the key of the
                  replay, weights and new patients they were made from
validity          (run key, ValidityReport) | None — the last validity check
validity_params   dict — the Validity page's orderings and seed (its widgets' keys are dropped
                  when another page runs)
_sidebar_summary_slot  this run's sidebar-summary placeholder (``widgets.refresh_sidebar_summary``)
_page_runs        int — page runs so far in this session (``bootstrap.page_setup`` counts them); the
                  first one draws the page's title and first controls and leaves the menu (except
                  on Home), tables and charts to the next (``bootstrap.draw_rest_later``)
_rest_pending     bool — that first run left things for the next and its timer is about to rerun
                  the page
================  ===========================================================================

Widget keys (``upload_wide``, ``target``, ...) hold only what a widget shows; callbacks and
form handlers copy their values into the keys above.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from favmac import export
from favmac import io as fio
from favmac.functions import FormulaError
from favmac.runspec import RunSpec, SettingsError
from favmac.ui import jobs as bg
from favmac.ui import playback, samples, settings_form, tradeoffs as tradeoff_runs, weights_view

RESULTS_KEPT = 4
# Parsed uploads are cached across sessions (same bytes, same result) but bounded: a few entries,
# a size cap, and dropped CACHE_TTL_SECONDS after they were stored, so memory comes back when sessions end.
CACHE_TTL_SECONDS = 900
# Above this many calibration patients the export files are built on click, not on arrival.
AUTO_EXPORT_PATIENTS = 50_000


# --------------------------------------------------------------------------- cached parsing


@st.cache_data(show_spinner="Reading the calibration data…", max_entries=2, max_size="1GB", ttl=CACHE_TTL_SECONDS)
def parse_calibration(probs: bytes, probs_name: str, labels: bytes | None = None, labels_name: str | None = None) -> fio.Dataset:
    """Dataset from uploaded bytes (one wide file, or probabilities + labels)."""
    labels_source = None if labels is None else samples.NamedBytes(labels, labels_name or "labels.csv")
    name = probs_name if labels is None else f"{probs_name} + {labels_name}"
    return fio.load_calibration(samples.NamedBytes(probs, probs_name), labels_source, name=name, keep_columns=True)


@st.cache_data(show_spinner="Reading the new patients…", max_entries=2, max_size="512MB", ttl=CACHE_TTL_SECONDS)
def parse_new_patients(data: bytes, name: str, codes: tuple[str, ...]):
    return fio.load_new_patients(samples.NamedBytes(data, name), list(codes), name=name)


@st.cache_data(show_spinner="Reading the weights…", max_entries=8, max_size="16MB", ttl=CACHE_TTL_SECONDS)
def parse_weights(data: bytes, name: str, codes: tuple[str, ...]):
    return fio.read_weights(samples.NamedBytes(data, name), list(codes), name=name)


@st.cache_data(show_spinner="Looking up CMS-HCC weights…", max_entries=32, max_size="16MB", ttl=CACHE_TTL_SECONDS)
def cms_weights(model: str, segment: str, codes: tuple[str, ...]):
    return fio.cms_hcc_weights(model, segment, list(codes))


# --------------------------------------------------------------------------- defaults


def init_state() -> None:
    """Fill in missing keys; load the bundled HCC sample when no data is loaded yet."""
    ss = st.session_state
    ss.setdefault("messages", {})
    ss.setdefault("results", {})
    ss.setdefault("tradeoffs", None)
    if not isinstance(ss.get("session"), playback.Playback):
        ss["session"] = playback.Playback()
    if "dataset" not in ss:
        try:
            load_sample(samples.DEFAULT_SAMPLE)
        except (fio.DataError, OSError) as err:
            set_message("calibration", "error", f"Could not load the bundled sample: {err}")


def set_message(area: str, level: str, text: str) -> None:
    st.session_state.setdefault("messages", {})[area] = (level, text)


def _settings_changed() -> None:
    """Redraw this run's sidebar summary, which was drawn before the change."""
    from favmac.ui import widgets  # widgets draws with state's values; imported here to avoid a cycle

    widgets.refresh_sidebar_summary()


def clear_message(area: str) -> None:
    st.session_state.setdefault("messages", {}).pop(area, None)


def clear_stale(*areas: str) -> None:
    """Drop the warnings and errors of ``areas``: they described data or settings that just changed."""
    messages = st.session_state.setdefault("messages", {})
    for area in areas:
        if messages.get(area, ("",))[0] in ("warning", "error"):
            messages.pop(area)


def has_dataset() -> bool:
    return st.session_state.get("dataset") is not None


# --------------------------------------------------------------------------- loading data


def load_sample(sample: str) -> None:
    """Load a bundled sample (calibration stream, new patients and weights)."""
    sample_files = samples.SAMPLES[sample]
    folder = samples.sample_dir()
    calibration = (folder / sample_files.calibration).read_bytes()
    dataset = parse_calibration(calibration, sample_files.calibration)
    dataset.name = sample_files.label
    codes = tuple(dataset.codes)
    new_path, weights_path = folder / sample_files.new_patients, folder / sample_files.weights
    new_patients = parse_new_patients(new_path.read_bytes(), sample_files.new_patients, codes) if new_path.exists() else None
    weights = parse_weights(weights_path.read_bytes(), sample_files.weights, codes) if weights_path.exists() else None
    set_dataset(
        dataset,
        f"sample:{sample}:{samples.content_key(calibration)}",
        new_patients=new_patients,
        new_patients_name=sample_files.new_patients if new_patients is not None else None,
        weights=weights,
        weights_source=f"sample file {sample_files.weights}" if weights is not None else None,
    )
    set_message("calibration", "success", f"Loaded the bundled sample: {sample_files.label}.")


def set_dataset(dataset, key: str, *, new_patients=None, new_patients_name=None, weights=None, weights_source=None) -> list[str]:
    """Make ``dataset`` the current stream; keep or adapt weights, new patients and settings."""
    ss = st.session_state
    notes = []
    codes = dataset.codes
    had_data = ss.get("dataset") is not None and "settings" in ss
    old_cmax = c_max() if had_data else None
    old_n = ss["dataset"].n_patients if had_data else None
    clear_stale("new_patients", "weights", "settings_json")  # they were about the data being replaced
    # each note goes to the area whose upload makes it obsolete (a later upload replaces it)
    if weights is None:
        weights, note = weights_view.weights_for_codes(ss.get("weights"), codes)
        if note:
            set_message("weights", "warning", note)
            weights_source = "all ones (no weights for these codes)"
        else:
            weights_source = ss.get("weights_source")
    else:
        clear_message("weights")
    if new_patients is None and ss.get("new_patients") is not None:
        if list(ss["new_patients"].columns) == codes:
            new_patients, new_patients_name = ss["new_patients"], ss.get("new_patients_name")
        else:
            set_message("new_patients", "warning", "The new-patients file had other codes and was set aside; upload new patients for these codes.")
    elif new_patients is not None:
        clear_message("new_patients")
    ss["dataset"] = dataset
    ss["dataset_key"] = key
    ss["new_patients"] = new_patients
    ss["new_patients_name"] = new_patients_name
    _set_weights(weights, weights_source)
    w = weights_view.weight_array(weights, codes)
    if "settings" not in ss:
        ss["settings"] = settings_form.default_settings(dataset.n_patients, dataset.n_codes, w)
    else:
        ss["settings"], adapted = settings_form.adapt_settings(ss["settings"], dataset.n_patients, dataset.n_codes, w, old_cmax,
                                                               old_n_patients=old_n)
        notes += adapted
    if ss["settings"].get("segment") and ss["settings"]["segment"] not in dataset.segment_columns():
        notes.append(f"Per-segment control turned off: this data has no column {ss['settings']['segment']!r}.")
        ss["settings"] = {**ss["settings"], "segment": None}
    reset_session()
    if notes:
        set_message("settings", "warning", "Adapted to the new data: " + " ".join(notes))
    else:
        clear_message("settings")
    return notes


def _set_weights(weights, source: str | None) -> None:
    ss = st.session_state
    ss["weights"] = weights
    ss["weights_source"] = source or "unknown"
    ss.pop("weights_editor", None)  # edits belonged to the previous table
    ss["tradeoffs"] = None


def reset_session() -> None:
    pb = st.session_state.get("session")
    if isinstance(pb, playback.Playback):
        playback.reset(pb)
        pb.key = None
    else:
        st.session_state["session"] = playback.Playback()
    st.session_state["tradeoffs"] = None


def apply_calibration_upload(probs_file, labels_file=None) -> bool:
    """Parse uploaded calibration file(s) and make them current.

    ``probs_file`` / ``labels_file`` are Streamlit UploadedFiles (or anything with ``.name``
    and ``.getvalue()``). A DataError leaves the loaded data untouched and is shown as
    the "calibration" message. Returns True when the data was replaced.
    """
    probs = probs_file.getvalue()
    labels = None if labels_file is None else labels_file.getvalue()
    try:
        dataset = parse_calibration(probs, probs_file.name, labels, None if labels_file is None else labels_file.name)
        if not dataset.has_labels:
            raise fio.DataError("the calibration file has no labels.", file=probs_file.name, fix="Upload the labels too, or a wide file with label_<code> columns.")
    except fio.DataError as err:
        current = st.session_state.get("dataset")
        kept = f" The data already loaded ({current.name}) is unchanged." if current is not None else ""
        set_message("calibration", "error", f"{err}{kept}")
        return False
    set_dataset(dataset, f"upload:{samples.content_key(probs, labels)}")
    set_message("calibration", "success", f"Loaded {dataset.name}: {dataset.n_patients:,} patients × {dataset.n_codes} codes.")
    return True


def apply_new_patients_upload(file) -> bool:
    ss = st.session_state
    try:
        frame = parse_new_patients(file.getvalue(), file.name, tuple(ss["dataset"].codes))
    except fio.DataError as err:
        set_message("new_patients", "error", str(err))
        return False
    ss["new_patients"], ss["new_patients_name"] = frame, file.name
    set_message("new_patients", "success", f"Loaded {len(frame):,} new patients from {file.name}.")
    return True


def _apply_weights(load, source: str, success: str) -> bool:
    """Use the weights ``load()`` returns; on a DataError keep the current ones and say why."""
    try:
        weights = load()
    except fio.DataError as err:
        set_message("weights", "error", str(err))
        return False
    _set_weights(weights, source)
    clear_stale("settings")  # "Target set to ..." was about the weights being replaced
    set_message("weights", "success", success.format(n=len(weights)))
    return True


def apply_weights_upload(file) -> bool:
    codes = tuple(st.session_state["dataset"].codes)
    return _apply_weights(lambda: parse_weights(file.getvalue(), file.name, codes), f"upload {file.name}",
                          f"Loaded weights for {{n}} codes from {file.name}.")


def apply_cms_weights(model: str, segment: str) -> bool:
    codes = tuple(st.session_state["dataset"].codes)
    return _apply_weights(lambda: cms_weights(model, segment, codes), f"CMS-HCC {model} {segment}",
                          f"Using CMS-HCC {model} risk factors, segment {segment}.")


def apply_edited_weights(edited) -> bool:
    """Store the table returned by the weights editor if it differs; False if a weight is invalid."""
    ss = st.session_state
    current = ss["weights"]
    if edited is None or edited.equals(current):
        return True
    try:
        weights_view.weight_array(edited, list(current.index))
    except SettingsError as err:
        set_message("weights", "error", str(err))
        return False
    ss["weights"] = edited.copy()
    source = ss.get("weights_source", "")
    ss["weights_source"] = source if source.endswith("(edited)") else f"{source} (edited)"
    ss["tradeoffs"] = None
    clear_message("weights")
    clear_stale("settings")
    _settings_changed()
    return True


def apply_settings(new_settings: dict) -> bool:
    """Validate and store settings; errors become the "settings" message."""
    ss = st.session_state
    dataset = ss["dataset"]
    try:
        cleaned = settings_form.validate_settings(new_settings, dataset.n_codes, dataset.n_patients, weights(), dataset=dataset)
    except (SettingsError, FormulaError) as err:
        set_message("settings", "error", str(err))
        return False
    ss["settings"] = cleaned
    set_message("settings", "success", "Settings saved.")
    _settings_changed()
    return True


def apply_settings_json(raw: bytes, file_name: str) -> bool:
    ss = st.session_state
    dataset = ss["dataset"]
    try:
        settings, new_weights, notes = settings_form.settings_from_json(raw, ss["settings"], dataset.codes, dataset.n_patients, weights(), dataset=dataset)
    except (SettingsError, FormulaError) as err:
        set_message("settings_json", "error", f"{file_name}: {err}")
        return False
    if new_weights is not None:
        table = ss["weights"].copy()
        table["weight"] = [new_weights[c] for c in table.index]
        _set_weights(table, f"restored from {file_name}")
    ss["settings"] = settings
    reset_session()
    _settings_changed()
    clear_stale("settings")  # an adapted-to-the-data note is replaced by the restored settings
    set_message("settings_json", "success", " ".join([f"Restored the settings from {file_name}.", *notes]))
    return True


# --------------------------------------------------------------------------- derived values


def dataset():
    return st.session_state["dataset"]


def settings() -> dict:
    return st.session_state["settings"]


def weights():
    """Risk weights of the dataset's codes, in data order (floats)."""
    return weights_view.weight_array(st.session_state["weights"], st.session_state["dataset"].codes)


def spec() -> RunSpec:
    """The current run: the settings form's values with the weights in use."""
    return settings_form.to_spec(settings(), weights())


def value_and_cost():
    return spec().build()


def c_max() -> float:
    return spec().c_max(st.session_state["dataset"].n_codes)


def online_key() -> str:
    return settings_form.run_key(st.session_state["dataset_key"], spec(), "online")


def background(name: str, key: str, label: str, fn, *, start: bool = True):
    """The session's background job ``name`` for ``key``: the running or finished one, else a new
    one running ``fn(progress)`` (None when ``start`` is False). A job for another key is cancelled."""
    running = st.session_state.setdefault("jobs", {})
    job = running.get(name)
    if job is not None and job.key != key:
        running.pop(name).cancel()
        job = None
    if job is None and start:
        job = running[name] = bg.Job(key, label, fn).start()
    return job


def finish(name: str, job):
    """``job``'s result once it is done (waiting ``favmac.ui.jobs.FOREGROUND_SECONDS`` at most);
    otherwise draw its progress, which follows the job and reruns the page when it ends, and stop."""
    if not job.done:
        job.wait(bg.FOREGROUND_SECONDS)
    if job.done:
        st.session_state.setdefault("jobs", {}).pop(name, None)
        if job.error is not None:
            raise job.error
        return job.result
    _follow_job(name)
    st.stop()


@st.fragment(run_every=0.5)
def _follow_job(name: str) -> None:
    job = st.session_state.get("jobs", {}).get(name)
    if job is None or job.done:
        st.rerun()
    st.progress(job.fraction, text=f"{job.label} {int(job.fraction * 100)} % — you can switch pages meanwhile; the work goes on.")


def online_result(*, wait: bool = True):
    """This session's FavMac replay for the current data and settings (memoised per session).

    Runs in the background: when it takes longer than a moment the page shows its progress and
    stops here; leaving and coming back finds the same replay, further along or done. With
    ``wait=False`` it returns None at once while the replay is still running (started if need
    be), so a page can draw its controls first and call it again with ``wait=True``.
    """
    ss = st.session_state
    key = online_key()
    results = ss.setdefault("results", {})
    if key in results:
        return results[key]
    ds, run = dataset(), spec()
    probs, labels = ds.prob_array(), ds.label_array()
    groups = ds.segments(run.segment) if run.segment else None
    job = background("online", key, f"Replaying {ds.n_patients:,} patients…",
                     lambda progress: playback.run_online(probs, labels, ds.codes, ds.patient_ids, run, progress=progress, groups=groups))
    if not wait and not job.done:
        return None
    result = finish("online", job)
    results[key] = result
    while len(results) > RESULTS_KEPT:
        results.pop(next(iter(results)))
    return result


def tradeoffs(targets, methods, *, start: bool = False):
    """Trade-off summaries for ``targets`` and ``methods`` (kept until data or settings change).

    Computed on demand: None until ``start`` (the page's Run button) asks for it; then in the
    background, with progress, kept across page switches.
    """
    ss = st.session_state
    run = spec()
    key = settings_form.run_key(ss["dataset_key"], run, ["tradeoffs", list(map(float, targets)), list(methods)])
    cached = ss.get("tradeoffs")
    if cached is not None and cached["key"] == key:
        return cached
    ds = dataset()
    reasons = tradeoff_runs.method_applicability(run.control, methods, ds.n_codes)
    n_methods = sum(reasons[m] is None for m in methods)
    label = f"Comparing {n_methods} methods on {ds.n_patients:,} patients × {len(targets)} targets…"
    probs, labels, targets, methods = ds.prob_array(), ds.label_array(), list(targets), list(methods)
    job = background("tradeoffs", key, label, start=start,
                     fn=lambda progress: tradeoff_runs.run_tradeoffs(probs, labels, ds.codes, ds.patient_ids, run, targets, methods,
                                                                     progress=progress))
    if job is None:
        return None
    out = finish("tradeoffs", job)
    out["key"] = key
    ss["tradeoffs"] = out
    return out


def exports(*, start: bool = True) -> dict | None:
    """CSV bytes (formula cells neutralized) and 20-row previews of both exports, memoised.

    Keys: "calibration", "calibration_preview", "new" and "new_preview" (None without new
    patients), "threshold" (the final threshold used for new patients), "key". Built in the
    background; None when nothing is built yet and ``start`` is False (large data: on click).
    """
    ss = st.session_state
    new = ss.get("new_patients")
    descs = weights_view.descriptions(ss["weights"], ss["dataset"].codes)
    new_key = "" if new is None else str(int(pd.util.hash_pandas_object(new).sum()))
    key = samples.content_key(online_key(), "|".join(descs), new_key)
    cached = ss.get("exports")
    if cached is not None and cached["key"] == key:
        return cached
    job = ss.get("jobs", {}).get("exports")
    if not start and (job is None or job.key != key):
        return None
    ds, run = dataset(), spec()
    result = online_result()
    probs, labels = ds.prob_array(), ds.label_array()

    def build(progress):
        value, cost = run.build()
        calibration = export.stream_sets(result, probs, labels, value, cost, universe=run.universe, descriptions=descs)
        progress(0.6 if new is not None else 0.9)
        out = {"key": key, "calibration": fio.to_safe_csv(calibration), "calibration_preview": calibration.head(20),
               "n_calibration": len(calibration), "new": None, "new_preview": None, "threshold": float(result.final_thresholds[0])}
        if new is not None:
            new_sets = export.new_patient_sets(new, result, value, cost, universe=run.universe, descriptions=descs)
            out.update(new=fio.to_safe_csv(new_sets), new_preview=new_sets.head(20), n_new=len(new_sets))
        return out

    out = finish("exports", background("exports", key, f"Preparing the export files ({ds.n_patients:,} patients)…", build))
    ss["exports"] = out
    return out
