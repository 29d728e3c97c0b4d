"""The trade-off comparison: every chosen method over a grid of targets, summarised (a library service; no Streamlit).

Methods come from the one registry, :mod:`favmac.methods`; this module runs the applicable ones
through :func:`favmac.methods.run_method` on the threads the machine can spare
(:func:`run_comparison`, :func:`run_methods`) and stacks their summaries (:func:`tradeoff_points`).
The targets come from :mod:`favmac.target_grid`. The Trade-offs page (:mod:`favmac.ui.tradeoffs`)
adds its comparison table in the auditor's units; scripts call this module directly.
"""
from __future__ import annotations

import dataclasses
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from . import parallel
from .protocols import bind_rows, is_additive, n_rows, own_sequences, prefix_values
from .methods import applicability, get_method, method_labels, run_method
from .runspec import RunSpec
from .universe import PerRows, candidate_sets

__all__ = ["method_applicability", "applicable_methods", "value_max", "value_scale", "RECALIBRATED_METHOD",
           "RECALIBRATED_LABEL", "ADDITIVE_LABEL", "TRADEOFF_WORKERS", "HEAVY_AT_ONCE", "LIGHT_COST", "TRADEOFF_MODES",
           "TRADEOFF_MODE", "machine_has_a_free_core", "tradeoff_workers", "run_comparison", "replays_engine",
           "run_methods", "shared_universes", "method_summary", "tradeoff_points", "weightless_skips",
           "additive_cost_skips", "realized_payment", "additive_summaries", "method_run", "dropped_settings", "session_fold",
           "session_settings"]

#: The unsupported payment (favmac.payment.CmsHccCost): a cost that is a set function, which the baselines cannot run.
UNSUPPORTED_PAYMENT = "cms_unsupported"


def method_applicability(control: str, methods=None, n_codes: int | None = None) -> dict[str, str | None]:
    """For each method label: None if it applies to ``control`` (and K = ``n_codes``), else the reason."""
    labels = method_labels(n_codes=1) if methods is None else list(methods)
    return {label: applicability(label, control, n_codes) for label in labels}


def applicable_methods(labels, control: str, n_codes: int) -> list[str]:
    """The ``labels`` that apply to ``control`` with ``n_codes`` codes, in order (the page's choices)."""
    return [label for label in labels if applicability(label, control, n_codes) is None]


def value_max(value, n_codes: int) -> float:
    """Largest value any set can have (all codes chosen and present); scales value to 0–100."""
    rows = n_rows(value)  # a per-patient value (the CMS payment): the largest over the patients
    everything = np.ones(n_codes if rows is None else (rows, n_codes), dtype=bool)
    return float(np.max(value(everything, everything)))


def value_scale(value, n_codes: int) -> float:
    vmax = value_max(value, n_codes)
    return 100.0 / vmax if vmax > 0 else 1.0


RECALIBRATED_METHOD = "FavMac (price)"


RECALIBRATED_LABEL = "FavMac (price) + recalibration"


#: Threads of one Trade-offs run: this machine's two cores (the compiled kernels release the GIL),
#: as methods at the same time or as threads inside each method (:data:`TRADEOFF_MODE`). Used only
#: while a core is free (:func:`tradeoff_workers`).
TRADEOFF_WORKERS = 2


#: FavMac replays (:func:`replays_engine`) that may run at the same time on those threads. Two:
#: the FavMac variants are about three quarters of the work, so with one at a time the second
#: thread ran out of baselines early and the comparison took as long as the chain of variants;
#: two at once hold two replays' memory, about what one replay and CRC held before the
#: baselines stopped building their (T, S, K) sets (docs/large_cohorts.md, "Fourth round").
HEAVY_AT_ONCE = 2


#: The baselines' relative CPU time (300,000 x 35, 10 targets: CRC 4.0 s, ClassWise 2.6 s,
#: InnerSet 1.0 s, RCPS about ClassWise's): a free thread takes the longest first, so the two
#: threads end together. Methods not listed count as 0 and keep their order.
LIGHT_COST = {"CRC": 4.0, "ClassWise": 2.6, "RCPS": 2.6, "InnerSet": 1.0}


#: The schedules of a Trade-offs run while a core is free (:func:`run_tradeoffs`' ``mode``):
#: ``"inner"``: the methods one after another, each on :data:`TRADEOFF_WORKERS` threads inside
#: itself (:func:`favmac.parallel.using`: its chunks, e.g. a baseline's outcomes or a replay's
#: chunks), so only one method's memory is alive at a time, as on one thread;
#: ``"side_by_side"``: :data:`TRADEOFF_WORKERS` methods at once (:func:`run_methods`, at most
#: :data:`HEAVY_AT_ONCE` FavMac replays at once), each on one thread.
TRADEOFF_MODES = ("inner", "side_by_side")


#: The schedule the app uses while a core is free (one of :data:`TRADEOFF_MODES`; on a busy server
#: both are one thread). "inner": on a quiet 2-core machine at 300,000 x 35 (docs/large_cohorts.md,
#: "Seventh round, all branches together") it took 2.40-2.96x one (one-thread) FavMac replay's wall time
#: at a 2.85x-the-data peak (one method's memory); side by side was faster (2.23-2.59x) but held two
#: replays' memory, 4.39x the data.
TRADEOFF_MODE = "inner"


def machine_has_a_free_core() -> bool:
    """Whether the 1-minute load average leaves a core idle (below cores - 0.5); True where the
    load average cannot be read."""
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):
        return True
    return load < (os.cpu_count() or 1) - 0.5


def tradeoff_workers() -> int:
    """Threads for a Trade-offs run started now: :data:`TRADEOFF_WORKERS` while a core is free,
    else one. On an idle 2-core machine the second thread, inside each method (:data:`TRADEOFF_MODE`
    "inner"), cut a 300,000 x 35 comparison's wall time by 40 % at one method's peak memory
    (docs/large_cohorts.md, "Seventh round"); on a busy server (other sessions computing) it buys no
    time. The tables are the same either way."""
    if TRADEOFF_WORKERS <= 1:
        return 1
    return TRADEOFF_WORKERS if machine_has_a_free_core() else 1


def run_comparison(probs, labels, codes, patient_ids, spec: RunSpec, targets, methods, progress=None,
                   recalibrate: int | None = None, members=None, mode: str | None = None, groups=None,
                   label_available_at=None) -> dict:
    """Replay every applicable method over ``targets`` and summarise.

    Every method runs under the session's own settings (``spec``): its segments (``groups``, any number of
    groupings, as :func:`favmac.methods.run_method` takes them), its label delay or arrival column
    (``label_available_at``), its rolling window and its recalibration fold (``recalibrate="auto"``
    resolved for these patients, :meth:`favmac.runspec.RunSpec.with_default_fold`: every row then
    excludes the fold's patients and reads the probabilities through the maps fitted on it). FavMac's rows
    are the replays of ``spec``; the baselines honour the same settings
    (:func:`favmac.baselines.settings.run_baseline`); the adaptive target is FavMac's alone, and a row that
    drops a setting names it in "dropped" ({method: [setting, ...]}).
    Returns {"points": one row per (method, target) (see ``tradeoff_points``), "summaries":
    {method: its ``favmac.metrics.summarize`` table} (in the order of ``methods``; the payment value's
    additive row last), "oracle_value": the mean value per chart of choosing exactly the true codes
    (the predicted patients'), "value_scale": the factor to the paper's 0-100 value scale, "skipped":
    {method: reason}, "targets": the targets}; :func:`favmac.ui.tradeoffs.run_tradeoffs` adds the page's
    comparison table. Each method's result is reduced to its ``favmac.metrics.summarize``
    table as soon as it ends and then dropped: the chosen sets of every method x target x
    patient are never all held at once (at 300,000 patients one baseline's are 100 MB).

    With ``recalibrate=R`` and a session without a fold, a row :data:`RECALIBRATED_LABEL` is added:
    FavMac (price) with the first R patients as a recalibration fold (``spec.recalibration``); every
    other method then calibrates on those R patients too (burn-in R + ``spec.burn_in``), so every row is
    measured on the same patients after the fold and burn-in. When the session recalibrates, every row
    already does, and the extra row is skipped with that reason.

    The methods run on :func:`tradeoff_workers` threads, scheduled by ``mode`` (default
    :data:`TRADEOFF_MODE`, one of :data:`TRADEOFF_MODES`): ``"side_by_side"`` runs that many
    methods at once (:func:`run_methods`: at most :data:`HEAVY_AT_ONCE` FavMac replays at once),
    ``"inner"`` one method at a time on that many inner threads (:func:`favmac.parallel.using`).
    The price and ratio variants share their candidate sets when they run one after another. The
    tables are those of running the methods one after another on one thread, to the last bit, in
    the order of ``methods``, in every mode. ``progress(fraction)`` gets the mean of the methods' fractions,
    from one thread at a time. When a method fails, the others still run to their end; then the
    first failing method's error (in the order of ``methods``) is raised, as a sequential run
    raises it, with the comparison of the methods that finished as its ``tradeoffs`` attribute
    (the failed ones in ``skipped``).
    """
    mode = TRADEOFF_MODE if mode is None else mode
    if mode not in TRADEOFF_MODES:
        raise ValueError(f"mode: expected one of {', '.join(map(repr, TRADEOFF_MODES))} (favmac.tradeoffs.TRADEOFF_MODES); got {mode!r}")
    spec = spec.with_default_fold(len(probs))  # the session's fold, as its own runs resolve it
    if spec.segment is not None and groups is None:
        raise ValueError(f"groups: the session runs per segment (column {spec.segment!r}) but no segment labels were given")
    if spec.label_available_column is not None and label_available_at is None:
        raise ValueError(f"label_available_at: the session reads label arrivals from column {spec.label_available_column!r} "
                         "but none were given")
    groups = groups if spec.segment is not None else None
    label_available_at = label_available_at if spec.label_available_column is not None else None
    reasons = method_applicability(spec.control, methods, len(codes))
    runnable = [m for m in methods if reasons[m] is None]
    skipped = {m: reasons[m] for m in methods if reasons[m] is not None}
    # every method under the session's settings; a fold asked for one extra row only: the others calibrate on it
    session_fold = spec.recalibrate is not None
    grid_spec = spec.replace(targets=tuple(float(t) for t in targets),
                             burn_in=spec.burn_in + (0 if session_fold or recalibrate is None else int(recalibrate)))
    extra = {}
    if recalibrate is not None and session_fold:
        skipped[RECALIBRATED_LABEL] = (f"every row already recalibrates on the session's fold of the first {spec.recalibrate:,} "
                                       "patients")
    elif recalibrate is not None and label_available_at is not None:
        skipped[RECALIBRATED_LABEL] = ("a recalibration fold cannot be combined with the session's label arrival column "
                                       "(its positions count the fold's rows)")
    elif recalibrate is not None:
        extra = {RECALIBRATED_LABEL: grid_spec.replace(recalibrate=int(recalibrate), burn_in=spec.burn_in)}
    if extra and method_applicability(spec.control, [RECALIBRATED_METHOD], len(codes))[RECALIBRATED_METHOD] is None:
        runnable += list(extra)
    context = {"groups": groups, "label_available_at": label_available_at}
    value, _ = spec.build(codes, members)
    n_codes = len(codes)
    skipped.update(weightless_skips(value, runnable, n_codes))  # the payment value with several cells
    skipped.update(additive_cost_skips(spec, runnable))  # baselines: the unsupported payment is not additive
    runnable = [m for m in runnable if m not in skipped]
    cmax = spec.c_max(n_codes, codes, members)
    vscale = value_scale(value, n_codes)
    # built outside the replays: additive values, and values with their own compiled greedy (the CMS payment)
    compiled = is_additive(value) or own_sequences(value) is not None
    workers = tradeoff_workers()
    inner = workers if mode == "inner" else 1  # threads inside each method
    workers = 1 if mode == "inner" else workers  # methods at once
    # A Candidates object fills caches as a replay reads it, so cheap candidate sets (additive values) are
    # shared only between replays that run one after another, and two replays at once each build their own.
    # The payment value's greedy is the expensive part (twice its work when each builds its own): its sets
    # are built once, under a lock, with every lazy part settled (:func:`_settled`), and then only read.
    overlap = workers > 1 and HEAVY_AT_ONCE > 1
    expensive = compiled and not is_additive(value)
    sharing = (shared_universes([m for m in runnable if m not in extra])
               if compiled and (expensive or not overlap) and grid_spec.recalibrate is None else {})  # a fold maps p per run
    shared = {}  # universe -> its candidates, while a method still to start needs them
    building = threading.Lock()
    report = _SharedProgress(progress, len(runnable))

    def summary_of(i, method):
        part = report.part(i)
        part(0.0)  # a cancelled job (its progress raises) stops here, before any candidate sets are built
        if method in extra:
            summary = method_summary(extra[method], RECALIBRATED_METHOD, probs, labels, codes, patient_ids, progress=part,
                                     members=members, **context).assign(method=method)
        else:
            universe = get_method(method).universe
            try:
                mine = None
                if universe in sharing:
                    with building:
                        if universe not in shared:
                            built = candidate_sets(probs, *grid_spec.build(codes, members), universe)
                            shared[universe] = _settled(built) if overlap else built
                        mine = shared[universe]
                summary = method_summary(grid_spec, method, probs, labels, codes, patient_ids, progress=part, members=members,
                                         candidates=mine, **context)
            finally:
                if universe in sharing and sharing[universe][-1] == method:
                    shared.pop(universe, None)  # its last user is done (peak memory)
        part(1.0)
        return summary

    tasks = [lambda i=i, method=method: summary_of(i, method) for i, method in enumerate(runnable)]
    heavy = [method in extra or replays_engine(method) for method in runnable]
    cost = [LIGHT_COST.get(method, 0.0) for method in runnable]
    # payment-aware FavMac vs the additive one, on the payment scale: one more FavMac replay, run beside the
    # others (it used to start after all of them); its table joins last, as before, and only if none failed
    compare = spec.value_kind == "cms_payment" and bool(runnable) and spec.cost_kind != UNSUPPORTED_PAYMENT
    if compare and grid_spec.weights is None:
        try:
            value.weights_for(n_codes)
        except ValueError as err:  # members of several cells: no one additive weight per code to choose by
            compare = False
            skipped[ADDITIVE_LABEL] = f"it needs one additive weight per code ({err})"
    if compare:
        tasks.append(lambda: additive_summaries(grid_spec, value, probs, labels, codes, patient_ids, run_method, **context))
        heavy.append(True)
        cost.append(0.0)
    outcomes = run_methods(tasks, heavy, workers=workers, cost=cost, inner=inner)
    additive = outcomes.pop() if compare else None
    summaries = {method: summary for method, (summary, error) in zip(runnable, outcomes) if error is None}
    failed = {method: error for method, (_, error) in zip(runnable, outcomes) if error is not None}
    if additive is not None and not failed:
        comparison, error = additive
        if error is not None:
            raise error
        summaries.update(comparison)
    first = grid_spec.burn_in + (grid_spec.recalibrate or 0)  # the fold and the burn-in: every row's first prediction
    predicted = np.asarray(labels)[first:].astype(bool)
    scored = bind_rows(value, slice(first, None))  # a per-patient value: the predicted rows
    oracle = float(np.mean(scored(predicted, predicted))) if len(predicted) else float("nan")
    out = {
        "points": tradeoff_points(summaries, cmax, vscale),
        "summaries": summaries,
        "oracle_value": oracle,
        "value_scale": vscale,
        "skipped": {**skipped, **{method: f"it failed ({type(error).__name__}: {error})" for method, error in failed.items()}},
        "targets": np.asarray(targets, dtype=float),
        "dropped": {method: drops for method in summaries if (drops := dropped_settings(grid_spec, method))},
        "settings": session_settings(grid_spec),
    }
    if failed:  # the first failing method's error, raised as the sequential loop raised it; the others' comparison rides along
        method, error = next(iter(failed.items()))
        error.add_note(f"(Trade-offs: raised by {method}; the comparison of the methods that finished is the error's 'tradeoffs')")
        error.tradeoffs = out
        raise error
    return out


def _settled(candidates):
    """``candidates`` with every part a replay would compute on first read already computed (Chat, Vhat and
    the steps, unless computed per row selection), so threads that share them only read."""
    if not isinstance(candidates.chat_source, PerRows):
        candidates.chat
    candidates.vhat
    if candidates.steps_source is not None and not isinstance(candidates.steps_source, PerRows):
        candidates.steps
    return candidates


def replays_engine(method: str) -> bool:
    """Whether ``method`` runs FavMac's exact threshold engine (a FavMac variant or FPCP), the
    memory-heavy kind of which :func:`run_methods` runs at most :data:`HEAVY_AT_ONCE` at once.

    >>> [replays_engine(m) for m in ("FavMac (value)", "FPCP", "CRC")]
    [True, True, False]
    """
    record = get_method(method)
    return record.is_favmac or record.key == "fpcp"


def run_methods(tasks, heavy, workers: int | None = None, heavy_at_once: int | None = None, cost=None,
                inner: int = 1) -> list[tuple]:
    """Run every callable of ``tasks`` on ``workers`` threads (default :func:`tradeoff_workers`);
    ``[(result, None) or (None, error)]`` in the order of ``tasks``. Each task runs with ``inner``
    threads of its own (:func:`favmac.parallel.using`; 1: its chunks in its thread).

    At most ``heavy_at_once`` (default :data:`HEAVY_AT_ONCE`) tasks marked in ``heavy`` (FavMac
    replays) run at the same time, and heavy tasks start in their order. A free thread takes the
    first heavy task it may, else the other task with the largest ``cost`` (the first of equal
    ones; default: in order), else waits for a heavy one to end. Every task runs whatever the
    others raise, so one error loses no other result; the results do not depend on the schedule
    (each task's inputs are its own). One worker (or one task): the tasks in order in this thread.
    """
    workers = tradeoff_workers() if workers is None else int(workers)
    limit = max(1, HEAVY_AT_ONCE if heavy_at_once is None else int(heavy_at_once))
    cost = [0.0] * len(tasks) if cost is None else list(cost)
    outcomes: list = [None] * len(tasks)
    pending = list(range(len(tasks)))
    turn = threading.Condition()
    heavy_running = [0]

    def take():
        with turn:
            while pending:
                pick = next((i for i in pending if heavy[i]), None) if heavy_running[0] < limit else None
                if pick is None:
                    pick = max((i for i in pending if not heavy[i]), key=lambda i: cost[i], default=None)
                if pick is not None:
                    pending.remove(pick)
                    heavy_running[0] += bool(heavy[pick])
                    return pick
                turn.wait()
            return None

    def work():
        while (i := take()) is not None:
            try:
                with parallel.using(inner):
                    outcomes[i] = (tasks[i](), None)
            except BaseException as error:  # noqa: BLE001 — returned with the task, raised by the caller
                outcomes[i] = (None, error)
            finally:
                with turn:
                    heavy_running[0] -= bool(heavy[i])
                    turn.notify_all()

    threads = max(1, min(workers, len(tasks)))
    if threads == 1:
        work()
    else:
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="favmac trade-offs") as pool:
            for _ in range(threads):
                pool.submit(work)
    return outcomes


class _SharedProgress:
    """One ``progress(fraction)`` for methods running at once: the mean of each method's
    fraction (each only grows), reported under a lock, so the callback is never called from
    two threads at a time. With one method at a time it reports what the sequential loop did,
    (i + fraction) / n."""

    def __init__(self, progress, n_methods: int):
        self.progress = progress
        self.fractions = [0.0] * max(1, n_methods)
        self.lock = threading.Lock()

    def part(self, i: int):
        def report(fraction):
            if self.progress is None:
                return
            with self.lock:
                self.fractions[i] = max(self.fractions[i], float(fraction))
                self.progress(sum(self.fractions) / len(self.fractions))

        return report


def shared_universes(methods) -> dict[str, list[str]]:
    """FavMac universes that several of ``methods`` use (e.g. the price and cost scores of the
    ratio universe) -> those methods, in order: their candidate sets are built once.

    >>> shared_universes(["FavMac (price)", "FavMac (value)", "FavMac (ratio)", "CRC"])
    {'ratio': ['FavMac (price)', 'FavMac (ratio)']}
    """
    by_universe: dict[str, list[str]] = {}
    for method in methods:
        record = get_method(method)
        if record.is_favmac and record.universe is not None:
            by_universe.setdefault(record.universe, []).append(method)
    return {universe: users for universe, users in by_universe.items() if len(users) > 1}


def method_summary(grid_spec: RunSpec, method: str, probs, labels, codes, patient_ids, progress=None, members=None,
                   candidates=None, groups=None, label_available_at=None) -> pd.DataFrame:
    """``favmac.metrics.summarize`` of one method's run over ``grid_spec``'s targets, under its settings
    (:func:`method_run`).

    The run (its thresholds, chosen sets, per-patient cost and value) lives only inside this
    call: what the Trade-offs page shows is computed from it here, exactly as from a kept result.
    ``candidates``: FavMac's candidate sets in its universe, shared with another run (the same result).
    """
    from favmac.metrics import summarize

    return summarize(method_run(grid_spec, method, probs, labels, codes, patient_ids, progress=progress, members=members,
                                candidates=candidates, groups=groups, label_available_at=label_available_at))


def method_run(spec: RunSpec, method: str, probs, labels, codes, patient_ids, progress=None, members=None, candidates=None,
               groups=None, label_available_at=None):
    """One method's run under ``spec``'s settings: FavMac's through :func:`favmac.methods.run_method` (the
    replay of ``spec``), a baseline's through :func:`favmac.baselines.settings.run_baseline` with the same
    segments, label arrivals, window and fold (the adaptive target dropped: :func:`dropped_settings`)."""
    record = get_method(method)
    if record.is_favmac:
        optional = {} if candidates is None else {"candidates": candidates}
        return run_method(spec, method, probs, labels, codes=codes, patient_ids=patient_ids, progress=progress, members=members,
                          groups=groups, label_available_at=label_available_at, **optional)
    spec = spec.with_default_fold(len(probs))
    if spec.segment is None and spec.label_delay is None and spec.label_available_column is None and spec.recalibrate is None:
        return run_method(spec.replace(adaptive_rate=None), method, probs, labels, codes=codes, patient_ids=patient_ids,
                          progress=progress, members=members)  # every earlier patient (or the window): the method as it is
    from .baselines.settings import run_baseline

    value, cost = spec.build(codes, members)
    fold = {} if spec.recalibrate is None else {"recalibrate": spec.recalibrate, "recalibration": spec.recalibration,
                                                 "recalibrate_by": spec.recalibrate_by}
    return run_baseline(record.key, probs, labels, value, cost, list(spec.targets), delta=spec.control_delta,
                        burn_in=spec.burn_in, window=spec.window, groups=groups if spec.segment is not None else None,
                        label_delay=spec.label_delay,
                        label_available_at=label_available_at if spec.label_available_column is not None else None,
                        codes=None if codes is None else list(codes),
                        patient_ids=None if patient_ids is None else np.asarray(patient_ids, dtype=object),
                        progress=progress, **fold)


def session_fold(spec: RunSpec, n_patients: int) -> int | None:
    """The recalibration fold every row of a comparison of ``n_patients`` runs on under ``spec`` ("auto"
    resolved as the session's own runs resolve it), None when the session does not recalibrate: then, and
    only then, a comparison may add :data:`RECALIBRATED_LABEL`.

    >>> from favmac.runspec import RunSpec
    >>> session_fold(RunSpec(), 4000), session_fold(RunSpec(), 2000), session_fold(RunSpec(recalibrate=None), 4000)
    (1000, None, None)
    """
    return spec.with_default_fold(int(n_patients)).recalibrate


def dropped_settings(spec: RunSpec, method: str) -> list[str]:
    """The session settings ``method``'s row does not honour (words for the page), [] when it honours all.

    The baselines honour segments, label arrivals, the window and the fold
    (:func:`favmac.baselines.settings.run_baseline`); the adaptive target is FavMac's alone.

    >>> from favmac.runspec import RunSpec
    >>> dropped_settings(RunSpec(adaptive_rate=0.05), "CRC"), dropped_settings(RunSpec(adaptive_rate=0.05), "FavMac (price)")
    (['the adaptive target'], [])
    """
    if method not in method_labels() or get_method(method).is_favmac:
        return []
    return ["the adaptive target"] if spec.adaptive_rate is not None else []


def session_settings(spec: RunSpec) -> list[str]:
    """The session settings every row runs under, in words (the page's caption), e.g. ["segments plan, age",
    "labels 30 positions late", "a window of 500", "recalibration on the first 1,000 patients (platt_tested)"]."""
    words = []
    if spec.segment is not None:
        columns = (spec.segment,) if isinstance(spec.segment, str) else tuple(spec.segment)
        words.append(("segments " if len(columns) > 1 else "segment ") + ", ".join(columns))
    if spec.label_delay is not None:
        words.append(f"labels {int(spec.label_delay):,} positions late")
    if spec.label_available_column is not None:
        words.append(f"labels arriving as column {spec.label_available_column} says")
    if spec.window is not None:
        words.append(f"a window of the last {int(spec.window):,} calibration patients")
    if spec.recalibrate is not None:
        words.append(f"recalibration on the first {int(spec.recalibrate):,} patients ({spec.recalibration})")
    if spec.adaptive_rate is not None:
        words.append(f"the adaptive target (rate {spec.adaptive_rate:g}; FavMac's rows only)")
    return words


def tradeoff_points(summaries: dict[str, pd.DataFrame], cmax: float, vscale: float) -> pd.DataFrame:
    """Stack per-method ``favmac.metrics.summarize`` tables into one plotting table.

    Adds: method, target_pct (target as % of C_max), value_pct (mean value on the 0–100 scale).
    """
    frames = []
    for method, summary in summaries.items():
        frame = summary.copy()
        frame["method"] = method
        frame["target_pct"] = 100.0 * frame["target"] / cmax if cmax > 0 else np.nan
        frame["value_pct"] = frame["mean_value"] * vscale
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=["method", "target", "mean_value", "mean_cost", "excess_cost", "violation_freq", "target_pct", "value_pct"])
    return pd.concat(frames, ignore_index=True)


def weightless_skips(value, methods, n_codes: int) -> dict:
    """{method: reason} for the FavMac runs whose 'value' universe needs one weight per code, when
    ``value`` (a payment value with several demographic cells) has none; {} otherwise."""
    try:
        value.weights_for(n_codes)
    except ValueError as err:
        return {m: f"its 'value' universe needs one weight per code ({err})" for m in methods
                if m in method_labels() and get_method(m).is_favmac and get_method(m).universe == "value"}
    return {}


def additive_cost_skips(spec, methods) -> dict:
    """{method: reason} for the methods that need an additive cost (the baselines), when ``spec``'s cost is
    the unsupported payment; {} otherwise. FavMac's rows run on it.

    >>> from favmac.runspec import RunSpec
    >>> additive_cost_skips(RunSpec(value_kind="cms_payment", cost_kind="cms_unsupported"), ["FavMac (price)", "CRC"])
    {'CRC': 'it needs an additive cost (per-code weights); the unsupported payment is a set function'}
    """
    if spec.cost_kind != UNSUPPORTED_PAYMENT:
        return {}
    return {m: "it needs an additive cost (per-code weights); the unsupported payment is a set function"
            for m in methods if m in method_labels() and not get_method(m).is_favmac}


#: The Trade-offs row of FavMac choosing with the additive value (risk-weighted TP) but scored in payment.
ADDITIVE_LABEL = "FavMac (price, additive)"


def realized_payment(result, value, labels):
    """``result`` (a replay) with its value replaced by the payment ``value`` of its chosen sets
    (V(S ∩ y) of each predicted patient): any method's sets on the payment scale."""
    labels = np.asarray(labels)[result.burn_in:].astype(bool)
    scored = bind_rows(value, slice(result.burn_in, result.burn_in + labels.shape[0]))
    chosen = result.chosen
    along = prefix_values(scored)
    if chosen is not None and chosen.order is not None and along is not None:  # one compiled pass, no (T, S, K) sets
        paid = along(chosen.order, chosen.index, labels)
    else:
        paid = np.stack([np.asarray(scored(result.selected[t], labels), dtype=float) for t in range(len(result.targets))])
    return dataclasses.replace(result, value=paid.reshape(np.shape(result.value)))


def additive_summaries(grid_spec, value, probs, labels, codes, patient_ids, run_method, groups=None,
                       label_available_at=None) -> dict:
    """{ADDITIVE_LABEL: summary}: FavMac (price score) with the additive risk-weighted value used
    only to choose the sets, each set then paid by ``value`` (the payment value), per target; under
    ``grid_spec``'s settings (segments ``groups``, label arrivals, window, fold)."""
    from favmac.metrics import summarize

    additive = grid_spec.replace(value_kind="weighted_tp",
                                 weights=tuple(value.weights_for(len(codes))) if grid_spec.weights is None else grid_spec.weights)
    result = run_method(additive, "FavMac (price)", probs, labels, codes=codes, patient_ids=patient_ids, groups=groups,
                        label_available_at=label_available_at)
    summary = summarize(realized_payment(result, value, labels))
    summary["method"] = ADDITIVE_LABEL
    return {ADDITIVE_LABEL: summary}
