"""The app's long computations: what each computes, and how it runs in the background.

**Runs** are plain functions of ``(dataset, RunSpec)`` (no Streamlit, no session):
:func:`replay_online` (the Online session's replay), :func:`compare_tradeoffs` (the Trade-offs
comparison), :func:`check_validity` (the Validity check) and :func:`build_exports` (the
chosen-sets CSV files). Each takes a ``progress(fraction)`` callback.

**Jobs**: a :class:`Job` runs ``fn(progress)`` in a daemon thread. ``progress(fraction)`` records
how far it got (0..1) and raises :class:`JobCancelled` once the job was cancelled (a newer run
replaced it), which ends the thread early. The session keeps the job object, not the script
run, so a page switch or a rerun does not interrupt or restart it: returning finds the same
job, with its progress or its result.

**The session's runs**: :func:`online`, :func:`tradeoffs`, :func:`exports` and :func:`validity`
give a page the run for the session's current data and settings, memoised in the session under
the run's key (``settings_form.run_key``), started as a job, and waited for a moment
(:data:`FOREGROUND_SECONDS`); a longer one draws its progress and stops the page.

>>> job = Job("key", "Counting", lambda progress: [progress(i / 4) for i in range(4)] and 42).start()
>>> job.wait(10), job.result, job.fraction
(True, 42, 1.0)
"""
from __future__ import annotations

import ctypes
import ctypes.util
import threading
import time

import pandas as pd
import streamlit as st

from favmac import export
from favmac.io import to_safe_csv
from favmac.tradeoffs import method_applicability
from favmac.ui import groupings, playback, samples, settings_form, tradeoffs as tradeoff_runs, weights_view
from favmac.ui.session import Session
from favmac.ui.units import cost_unit
from favmac.validity import validity_check

__all__ = ["AUTO_EXPORT_PATIENTS", "FOREGROUND_SECONDS", "RESULTS_KEPT", "Job", "JobCancelled", "background", "build_exports",
           "check_validity", "compare_tradeoffs", "exports", "finish", "online", "replay_online", "return_freed_memory", "segment_groups", "tradeoffs",
           "validity"]

# How long a page waits for a job before drawing its progress instead: a quick job then shows
# its result at once (no flicker), a slow one never freezes the page for longer than this.
FOREGROUND_SECONDS = 0.5
RESULTS_KEPT = 4  # online replays kept per session (the newest)
# Above this many calibration patients the export files are built on click, not on arrival.
AUTO_EXPORT_PATIENTS = 50_000


def _c_library():
    """glibc, for :func:`return_freed_memory`; None elsewhere (musl, macOS, Windows)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


_LIBC = _c_library()


def return_freed_memory() -> None:
    """Hand the memory a finished job freed back to the system.

    Workaround for glibc's allocator, which keeps freed heap memory for reuse instead of
    returning it (a job's temporaries are hundreds of MB at 300,000 patients), so a server's
    RSS stayed near its highest after sessions ended. ``malloc_trim(0)`` returns it; it took
    1-2 ms after a Trade-offs run at 100,000 x 35 (``scripts/bench_large_cohort.py``). A no-op
    without glibc.
    """
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


class JobCancelled(Exception):
    """Raised inside a cancelled job's progress callback to end its thread."""


class Job:
    """``fn(progress)`` in a daemon thread: ``fraction``, ``result``, ``error``, ``done``.

    Parameters
    ----------
    key : str
        What the job computes (a run key); a page reuses a job only for the same key.
    label : str
        What the progress bar says ("Replaying 4,000 patients…").
    fn : callable
        ``fn(progress) -> result``; ``progress(fraction)`` may be called any number of times.
    """

    def __init__(self, key: str, label: str, fn):
        self.key = key
        self.label = label
        self.fn = fn
        self.fraction = 0.0
        self.result = None
        self.error: BaseException | None = None
        self.started: float | None = None
        self.finished: float | None = None
        self._done = threading.Event()
        self._cancelled = threading.Event()

    def start(self) -> "Job":
        """Start the thread (once); returns the job."""
        if self.started is None:
            self.started = time.monotonic()
            threading.Thread(target=self._run, name=f"favmac job: {self.label}", daemon=True).start()
        return self

    def _progress(self, fraction) -> None:
        if self._cancelled.is_set():
            raise JobCancelled(self.label)
        self.fraction = min(1.0, max(self.fraction, float(fraction)))

    def _run(self) -> None:
        try:
            self.result = self.fn(self._progress)
            self.fraction = 1.0
        except BaseException as err:  # noqa: BLE001 — handed to the page that shows the job
            self.error = err
        finally:
            self.fn = None  # the closure holds the session's data and settings: not needed any more
            return_freed_memory()
            self.finished = time.monotonic()
            self._done.set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def wait(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for the job; True when it has finished."""
        return self._done.wait(max(0.0, float(seconds)))

    def cancel(self) -> None:
        """Ask the job to stop at its next progress report (its result is no longer wanted)."""
        self._cancelled.set()

    def elapsed(self) -> float:
        if self.started is None:
            return 0.0
        return (self.finished or time.monotonic()) - self.started

    def __repr__(self):
        state = "done" if self.done else ("cancelled" if self.cancelled else f"{self.fraction:.0%}")
        return f"Job({self.label!r}, {state})"


# --------------------------------------------------------------------------- runs: functions of (dataset, RunSpec)


def segment_groups(dataset, spec):
    """The labels of ``spec.segment`` in ``dataset``: None (pooled), one column's labels, or
    column -> labels for several groupings (``favmac.methods.run_method``'s ``groups``)."""
    if not spec.segment:
        return None
    if isinstance(spec.segment, str):
        return dataset.segments(spec.segment)
    return {column: dataset.segments(column) for column in spec.segment}


def replay_online(dataset, spec, progress=None):
    """The Online session's FavMac replay of ``dataset`` under ``spec`` (per segment when
    ``spec.segment`` is set): a ``favmac.result.ReplayResult``."""
    groups = segment_groups(dataset, spec)
    return playback.run_online(dataset.prob_array(), dataset.label_array(), dataset.codes, dataset.patient_ids, spec,
                               progress=progress, groups=groups, members=dataset.members,
                               label_available_at=dataset.label_available_at if spec.label_available_column else None)


def compare_tradeoffs(dataset, spec, targets, methods, progress=None, recalibrate: int | None = None) -> dict:
    """The Trade-offs comparison of ``methods`` over ``targets`` under the session's segments, label arrivals,
    window and fold (``tradeoffs.run_tradeoffs``; with ``recalibrate`` R and no session fold, plus FavMac (price)
    recalibrated on the first R patients)."""
    return tradeoff_runs.run_tradeoffs(dataset.prob_array(), dataset.label_array(), dataset.codes, dataset.patient_ids, spec,
                                       list(targets), list(methods), progress=progress, recalibrate=recalibrate,
                                       members=dataset.members, groups=segment_groups(dataset, spec),
                                       label_available_at=dataset.label_available_at if spec.label_available_column else None)


def check_validity(dataset, spec, n_orderings: int, seed: int, progress=None):
    """``favmac.validity.validity_check`` of ``dataset`` under ``spec`` (its first target; every
    segment column, the label delay or arrival column, and the recalibration fold of the spec)."""
    value, cost = spec.build(dataset.codes, dataset.members)
    groups = segment_groups(dataset, spec) if spec.segment else dataset.groups
    arrivals = dataset.label_available_at if spec.label_available_column else None
    recalibration = {} if spec.recalibrate is None else {"recalibrate": spec.recalibrate, "recalibration": spec.recalibration,
                                                         "recalibrate_by": spec.recalibrate_by}
    return validity_check(dataset.prob_array(), dataset.label_array(), value, cost, spec.target,
                          delta=spec.control_delta, universe=spec.universe, burn_in=spec.burn_in,
                          window=spec.window, groups=groups, segment_control=spec.segment is not None,
                          adaptive_rate=spec.adaptive_rate, label_delay=spec.label_delay, label_available_at=arrivals,
                          n_orderings=int(n_orderings), seed=int(seed), score=spec.score, progress=progress,
                          cost_unit=cost_unit({"cost_kind": spec.cost_kind, "base_rate": spec.base_rate}), **recalibration)


def build_exports(dataset, spec, result, new_patients, descriptions, progress=None) -> dict:
    """The chosen-sets export of ``result`` (the replay of ``dataset`` under ``spec``).

    Keys: "calibration" (CSV bytes, formula cells neutralized), "calibration_preview" (20 rows),
    "n_calibration", "new" and "new_preview" (None without new patients), "n_new", "threshold"
    (the final threshold used for new patients), and "new_refused" (why new-patient sets were not
    built: the library's ValueError, e.g. several groupings and no group of each per new patient).
    """
    value, cost = spec.build(dataset.codes, dataset.members)
    calibration = export.stream_sets(result, dataset.prob_array(), dataset.label_array(), value, cost, universe=spec.universe,
                                     descriptions=descriptions)
    if progress is not None:
        progress(0.6 if new_patients is not None else 0.9)
    out = {"calibration": to_safe_csv(calibration), "calibration_preview": calibration.head(20), "n_calibration": len(calibration),
           "new": None, "new_preview": None, "threshold": float(result.final_thresholds[0])}
    if new_patients is not None:
        value, cost = spec.build(dataset.codes, new_patients.attrs.get("members"))  # the new patients' own cells and known codes
        try:
            new_patients = groupings.new_patients_for(new_patients, spec.segment)  # the groups of the settings' columns
            new_sets = export.new_patient_sets(new_patients, result, value, cost, universe=spec.universe, descriptions=descriptions)
        except ValueError as err:  # the library's refusal (or a grouping column the file lacks), shown as it words it
            out["new_refused"] = str(err)
        else:
            out.update(new=to_safe_csv(new_sets), new_preview=new_sets.head(20), n_new=len(new_sets))
    return out


# --------------------------------------------------------------------------- the session's jobs


def background(ss: Session, name: str, key: str, label: str, fn, *, start: bool = True) -> Job | None:
    """The session's background job ``name`` for ``key``: the running or finished one, else a new
    one running ``fn(progress)`` (None when ``start`` is False). A job for another key is cancelled."""
    running = ss.running_jobs()
    job = running.get(name)
    if job is not None and job.key != key:
        running.pop(name).cancel()
        job = None
    if job is None and start:
        job = running[name] = Job(key, label, fn).start()
    return job


def finish(ss: Session, name: str, job: Job):
    """``job``'s result once it is done (waiting :data:`FOREGROUND_SECONDS` at most); otherwise
    draw its progress, which follows the job and reruns the page when it ends, and stop the page."""
    if not job.done:
        job.wait(FOREGROUND_SECONDS)
    if job.done:
        ss.running_jobs().pop(name, None)
        if job.error is not None:
            raise job.error
        return job.result
    _follow_job(name)
    st.stop()


@st.fragment(run_every=0.5)
def _follow_job(name: str) -> None:
    job = (st.session_state.get("jobs") or {}).get(name)
    if job is None or job.done:
        st.rerun()
    st.progress(job.fraction, text=f"{job.label} {int(job.fraction * 100)} % — you can switch pages meanwhile; the work goes on.")


def online(ss: Session, *, wait: bool = True):
    """The session's online replay for its current data and settings (:func:`replay_online`, memoised).

    When it takes longer than a moment the page shows its progress and stops here; leaving and
    coming back finds the same replay, further along or done. With ``wait=False`` it returns
    None at once while the replay is still running (started if need be), so a page can draw its
    controls first and call it again with ``wait=True``.
    """
    key = ss.online_key()
    results = ss.results
    if key in results:
        return results[key]
    dataset, spec = ss.dataset, ss.spec()
    job = background(ss, "online", key, f"Replaying {dataset.n_patients:,} patients…",
                     lambda progress: replay_online(dataset, spec, progress))
    if not wait and not job.done:
        return None
    result = finish(ss, "online", job)
    results[key] = result
    while len(results) > RESULTS_KEPT:
        results.pop(next(iter(results)))
    return result


def tradeoffs(ss: Session, targets, methods, *, start: bool = False, recalibrate: int | None = None) -> dict | None:
    """The session's trade-off comparison for ``targets`` and ``methods`` (:func:`compare_tradeoffs`;
    kept until data or settings change). None until ``start`` (the page's Run button) asks for it."""
    spec = ss.spec()
    targets, methods = list(map(float, targets)), list(methods)
    key = settings_form.run_key(ss.dataset_key, spec, ["tradeoffs", targets, methods] + ([recalibrate] if recalibrate else []))
    if ss.tradeoffs is not None and ss.tradeoffs["key"] == key:
        return ss.tradeoffs
    dataset = ss.dataset
    reasons = method_applicability(spec.control, methods, dataset.n_codes)
    n_methods = sum(reasons[m] is None for m in methods)
    label = f"Comparing {n_methods} methods on {dataset.n_patients:,} patients × {len(targets)} targets…"
    job = background(ss, "tradeoffs", key, label, lambda progress: compare_tradeoffs(dataset, spec, targets, methods, progress, recalibrate),
                     start=start)
    if job is None:
        return None
    ss.tradeoffs = {**finish(ss, "tradeoffs", job), "key": key}
    return ss.tradeoffs


def exports(ss: Session, *, start: bool = True) -> dict | None:
    """The session's export files (:func:`build_exports` of its online replay), memoised with the
    key of the replay, weights' descriptions and new patients they were made from. None when
    nothing is built yet and ``start`` is False (large data: built on click)."""
    new = ss.new_patients
    descriptions = weights_view.descriptions(ss.weights, ss.dataset.codes)
    new_key = "" if new is None else str(int(pd.util.hash_pandas_object(new).sum()))
    key = samples.content_key(ss.online_key(), "|".join(descriptions), new_key)
    if ss.exports is not None and ss.exports["key"] == key:
        return ss.exports
    job = ss.running_jobs().get("exports")
    if not start and (job is None or job.key != key):
        return None
    dataset, spec = ss.dataset, ss.spec()
    result = online(ss)
    job = background(ss, "exports", key, f"Preparing the export files ({dataset.n_patients:,} patients)…",
                     lambda progress: build_exports(dataset, spec, result, new, descriptions, progress))
    ss.exports = {**finish(ss, "exports", job), "key": key}
    return ss.exports


def validity(ss: Session, n_orderings: int, seed: int, *, start: bool = True):
    """The session's validity report for ``n_orderings`` and ``seed`` (:func:`check_validity`).

    The stored report of the same check, else (``start``, or a job for it already running) the
    job's result. None when nothing was run and ``start`` is False.
    """
    spec, n_orderings, seed = ss.spec(), int(n_orderings), int(seed)
    key = settings_form.run_key(ss.dataset_key, spec, ["validity", n_orderings, seed])
    if not start and ss.validity is not None and ss.validity[0] == key:
        return ss.validity[1]
    dataset = ss.dataset
    label = f"Replaying {n_orderings} random orderings of {dataset.n_patients:,} patients…"
    job = background(ss, "validity", key, label, lambda progress: check_validity(dataset, spec, n_orderings, seed, progress),
                     start=start)
    if job is None:
        return None
    report = finish(ss, "validity", job)
    ss.validity = (key, report)
    return report
