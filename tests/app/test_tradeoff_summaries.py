"""Large cohorts: the Trade-offs page keeps summaries, not runs, and its caches are bounded.

* What ``run_tradeoffs`` returns (each method's result reduced to ``summarize`` as it ends)
  is identical, to the last bit, to the tables computed from every method's full result kept
  until the end (the way it was computed before), for FavMac and every baseline, both controls.
* The baselines' one-pass outcomes (``favmac.baselines.kernels.set_outcomes``) equal the
  realized cost, value and exact exceedance flags recomputed from their chosen sets.
* Every ``st.cache_data`` of the app is bounded (entries, bytes, time to live), and a
  session's replays are capped.
* The methods computed on two threads (``TRADEOFF_WORKERS``, ``run_methods``) give the tables of
  the one-thread run, to the last bit; progress comes from every method, one thread at a time;
  a failing method loses no other method's result; one FavMac replay at a time when asked
  (two at once: tests/app/test_tradeoff_schedule.py).
"""
from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pandas as pd
import pytest

import favmac.ui
from favmac.baselines.common import _realized
from favmac.methods import run_method
from favmac.metrics import compare_methods, summarize
from favmac.thresholds import ExactCosts
from favmac import tradeoffs
from favmac import target_grid
from favmac.ui import jobs, settings_form as form, tradeoffs as tradeoffs_view

ALL_METHODS = ["FavMac (price)", "FavMac (ratio)", "FavMac (value)", "FavMac (prob)", "FavMac (full)", "ClassWise", "InnerSet",
               "FPCP", "CRC", "RCPS"]


def _stream(seed, n_patients=400, n_codes=5):
    rng = np.random.RandomState(seed)
    prevalence = rng.uniform(0.1, 0.4, size=n_codes)
    labels = rng.rand(n_patients, n_codes) < prevalence
    probs = np.round(np.clip(0.5 * labels + 0.5 * rng.rand(n_patients, n_codes), 0, 1), 2)  # ties in keys
    weights = rng.choice([0.1, 0.331, 1.0, 1.3, 2.5], size=n_codes)
    return probs, labels.astype(int), weights


def _spec(n_patients, n_codes, weights, control, cost_kind, value_kind="weighted_tp"):
    settings = {**form.default_settings(n_patients, n_codes, weights), "burn_in": 60, "control": control,
                "cost_kind": cost_kind, "value_kind": value_kind}
    if control == "violation":
        settings["score"] = "cost"
    return form.to_spec(settings, weights)


def _from_full_results(probs, labels, codes, ids, spec, targets, methods):
    """The comparison as computed from every method's full result, all kept to the end."""
    grid_spec = spec.replace(targets=tuple(float(t) for t in targets), window=None, segment=None, adaptive_rate=None)
    value, _ = spec.build()
    cmax = spec.c_max(len(codes))
    vscale = tradeoffs.value_scale(value, len(codes))
    runnable = [m for m in methods if tradeoffs.method_applicability(spec.control, [m], len(codes))[m] is None]
    results = [run_method(grid_spec, m, probs, labels, codes=codes, patient_ids=ids) for m in runnable]
    assert all(r.selected.shape == (len(targets), len(probs) - spec.burn_in, len(codes)) for r in results)
    points = tradeoffs.tradeoff_points({m: summarize(r) for m, r in zip(runnable, results)}, cmax, vscale)
    table = compare_methods(results, value_scale=tradeoffs_view.CHARTS, cost_scale=tradeoffs_view.CHARTS)
    predicted = np.asarray(labels)[spec.burn_in:].astype(bool)
    oracle = float(np.mean(value(predicted, predicted)))
    return points, tradeoffs_view.comparison_display(table, oracle * tradeoffs_view.CHARTS, vscale / tradeoffs_view.CHARTS,
                                                {"cost_kind": spec.cost_kind, "value_kind": spec.value_kind})


@pytest.mark.parametrize("control", ["expected", "violation"])
@pytest.mark.parametrize("cost_kind", ["fp", "weighted_fp"])
def test_tradeoffs_summaries_equal_those_of_full_results(control, cost_kind):
    probs, labels, weights = _stream(3)
    n_patients, n_codes = probs.shape
    codes, ids = [f"C{k}" for k in range(n_codes)], [f"p{i}" for i in range(n_patients)]
    spec = _spec(n_patients, n_codes, weights, control, cost_kind)
    targets = target_grid.tradeoff_targets(spec.c_max(n_codes), 5, 50, 6, cost_kind == "fp")
    out = tradeoffs_view.run_tradeoffs(probs, labels, codes, ids, spec, targets, ALL_METHODS)
    points, table = _from_full_results(probs, labels, codes, ids, spec, targets, ALL_METHODS)
    shown = set(out["points"]["method"])
    assert {"ClassWise", "CRC"} <= shown if control == "expected" else "RCPS" in shown
    assert {"FavMac (price)", "FavMac (full)", "InnerSet", "FPCP"} <= shown
    pd.testing.assert_frame_equal(out["points"], points, check_exact=True)
    pd.testing.assert_frame_equal(out["table"], table, check_exact=True)


def test_compare_methods_takes_summaries_or_results():
    probs, labels, weights = _stream(5, n_patients=200)
    spec = _spec(200, 5, weights, "expected", "weighted_fp").replace(targets=(0.5, 1.0, 2.0))
    results = [run_method(spec, m, probs, labels) for m in ("FavMac (price)", "CRC", "FavMac (price)")]
    from_results = compare_methods(results, value_scale=2.0, cost_scale=3.0)
    from_tables = compare_methods([summarize(r) for r in results], value_scale=2.0, cost_scale=3.0)
    pd.testing.assert_frame_equal(from_results, from_tables, check_exact=True)
    assert from_tables["n_runs"].tolist() == [2, 1] and from_tables["n_targets"].tolist() == [3, 3]


@pytest.mark.parametrize("method", ["ClassWise", "InnerSet", "CRC", "RCPS"])
@pytest.mark.parametrize("value_kind", ["weighted_tp", "tp", "formula"])
def test_baseline_outcomes_equal_those_recomputed_from_their_sets(method, value_kind):
    probs, labels, weights = _stream(11, n_patients=300, n_codes=4)
    control = "violation" if method == "RCPS" else "expected"
    spec = _spec(300, 4, weights, control, "weighted_fp", value_kind).replace(targets=(0.0, 0.331, 1.0, 2.2, 10.0))
    result = run_method(spec, method, probs, labels)
    value, cost = spec.build()
    step_labels = labels[spec.burn_in:].astype(bool)
    assert np.array_equal(result.cost, _realized(cost, result.selected, step_labels, hit=False))
    assert np.array_equal(result.value, _realized(value, result.selected, step_labels, hit=True))
    exact = ExactCosts.of(cost, 4).exceeds(result.selected, step_labels, result.targets)
    assert np.array_equal(result.exceeds, exact)
    assert result.exceeds.any() and not result.exceeds.all()


def _cached_functions():
    """Every st.cache_data / st.cache_resource function defined in the app's modules."""
    from streamlit.runtime.caching.cache_utils import CachedFunc

    found = {}
    for info in pkgutil.iter_modules(favmac.ui.__path__):
        module = importlib.import_module(f"favmac.ui.{info.name}")
        for name, obj in vars(module).items():
            if isinstance(obj, CachedFunc) and obj._info.func.__module__ == module.__name__:
                found[f"{module.__name__}.{name}"] = obj
    return found


def test_every_app_cache_is_bounded():
    from streamlit.runtime.caching.cache_resource_api import CachedResourceFuncInfo

    cached = _cached_functions()
    assert any(name.endswith("parse_calibration") for name in cached), sorted(cached)
    for name, func in cached.items():
        info = func._info
        assert info.max_entries is not None and info.max_entries <= 32, name
        assert info.ttl is not None, f"{name}: entries must expire when no session uses them"
        if not isinstance(info, CachedResourceFuncInfo):  # a resource (the store's engine) is shared, not copied: no size
            assert getattr(info, "max_size_bytes", None) is not None, f"{name}: no size cap"
    patient_data = [f for n, f in cached.items() if n.endswith(("parse_calibration", "parse_new_patients"))]
    assert patient_data and all(f._info.max_entries <= 2 for f in patient_data)


def test_a_sessions_replays_are_capped():
    assert 1 <= jobs.RESULTS_KEPT <= 4


def test_crc_distinct_ranks_equal_numpy_unique():
    from favmac.baselines.crc import distinct_ranks

    rng = np.random.RandomState(4)
    for shape in [(0, 3), (1, 1), (60, 4), (500, 7)]:
        probs = np.round(rng.rand(*shape), 2)
        values, ranks = distinct_ranks(probs)
        expected_values, expected_ranks = np.unique(probs, return_inverse=True)
        assert np.array_equal(values, expected_values) and np.array_equal(ranks, expected_ranks.reshape(shape))


@pytest.mark.parametrize("control", ["expected", "violation"])
def test_shared_candidates_give_the_same_runs(control):
    """FavMac runs on one universe given its candidates built once (as Trade-offs does for the
    price and cost scores) equal runs that build their own, every array to the last bit."""
    from favmac.universe import candidate_sets

    probs, labels, weights = _stream(8, n_patients=300)
    spec = _spec(300, 5, weights, control, "weighted_fp").replace(targets=(0.331, 1.0, 2.2))
    value, cost = spec.build()
    for universe, methods in (("ratio", ["FavMac (price)", "FavMac (ratio)"]), ("value", ["FavMac (value)"])):
        shared = candidate_sets(probs, value, cost, universe)
        for method in methods:
            alone, with_shared = run_method(spec, method, probs, labels), run_method(spec, method, probs, labels, candidates=shared)
            for name in ("thresholds", "final_thresholds", "cost", "value", "exceeds"):
                assert np.array_equal(getattr(alone, name), getattr(with_shared, name)), (method, name)
            assert np.array_equal(alone.selected, with_shared.selected), method
            pd.testing.assert_frame_equal(summarize(alone), summarize(with_shared), check_exact=True)


def test_shared_candidates_are_checked_and_grouped_by_universe():
    from favmac.universe import candidate_sets

    probs, labels, weights = _stream(9, n_patients=120)
    spec = _spec(120, 5, weights, "expected", "weighted_fp").replace(targets=(1.0,))
    value, cost = spec.build()
    with pytest.raises(ValueError, match="built for the 'prob' universe and 120 patients; this replay has the 'ratio'"):
        run_method(spec, "FavMac (ratio)", probs, labels, candidates=candidate_sets(probs, value, cost, "prob"))
    with pytest.raises(ValueError, match="80 patients"):
        run_method(spec, "FavMac (ratio)", probs, labels, candidates=candidate_sets(probs[:80], value, cost, "ratio"))
    with pytest.raises(ValueError, match="candidates is not supported by CRC"):
        run_method(spec, "CRC", probs, labels, candidates=candidate_sets(probs, value, cost, "ratio"))
    assert tradeoffs.shared_universes(ALL_METHODS) == {"ratio": ["FavMac (price)", "FavMac (ratio)"]}


def test_a_finished_job_lets_go_of_its_inputs():
    """A job's function (whose closure holds a session's data) is dropped once it ends, and the
    freed memory is handed back to the system (glibc's malloc_trim; a no-op elsewhere)."""
    import gc
    import weakref

    class Data:
        pass

    data = Data()
    alive = weakref.ref(data)
    job = jobs.Job("key", "Holding", lambda progress, data=data: 42).start()
    del data
    assert job.wait(10) and job.result == 42
    gc.collect()
    assert alive() is None and job.fn is None
    jobs.return_freed_memory()  # callable any time


@pytest.mark.parametrize("control", ["expected", "violation"])
def test_concurrent_tradeoffs_equal_the_sequential_run(control, monkeypatch):
    """The methods on TRADEOFF_WORKERS threads give every table of the one-thread run, to the last
    bit and in the same order (with the recalibrated row too), and the same progress at the end."""
    probs, labels, weights = _stream(13)
    n_patients, n_codes = probs.shape
    codes, ids = [f"C{k}" for k in range(n_codes)], [f"p{i}" for i in range(n_patients)]
    spec = _spec(n_patients, n_codes, weights, control, "weighted_fp")
    targets = target_grid.tradeoff_targets(spec.c_max(n_codes), 5, 50, 6, False)
    assert tradeoffs.TRADEOFF_WORKERS == 2
    monkeypatch.setattr(tradeoffs, "machine_has_a_free_core", lambda: True)  # two threads whatever the load
    runs = {}
    for workers in (2, 1):
        monkeypatch.setattr(tradeoffs, "TRADEOFF_WORKERS", workers)
        seen = []
        runs[workers] = (tradeoffs_view.run_tradeoffs(probs, labels, codes, ids, spec, targets, ALL_METHODS, progress=seen.append,
                                                 recalibrate=80), seen)
    (together, progress_together), (alone, progress_alone) = runs[2], runs[1]
    assert list(together) == list(alone)
    for key in ("points", "table"):
        pd.testing.assert_frame_equal(together[key], alone[key], check_exact=True)
    assert together["skipped"] == alone["skipped"] and np.array_equal(together["targets"], alone["targets"])
    assert tradeoffs.RECALIBRATED_LABEL in set(together["points"]["method"])
    for seen in (progress_together, progress_alone):
        assert seen[-1] == 1.0 and all(a <= b for a, b in zip(seen, seen[1:]))  # never goes back


def test_progress_is_reported_for_every_method_from_one_thread_at_a_time(monkeypatch):
    """Every method's fractions reach the callback (the total is the mean of the methods'), and
    the callback is never entered by two threads at once."""
    import time

    probs, labels, weights = _stream(14, n_patients=300)
    spec = _spec(300, 5, weights, "expected", "weighted_fp")
    codes, ids = [f"C{k}" for k in range(5)], [f"p{i}" for i in range(300)]
    targets = target_grid.tradeoff_targets(spec.c_max(5), 5, 50, 4, False)
    methods = ["FavMac (price)", "FavMac (value)", "ClassWise", "CRC"]
    per_method = {}
    real_run_method = tradeoffs.run_method

    def recording(grid_spec, method, *args, progress=None, **kwargs):
        def report(fraction):
            per_method.setdefault(method, []).append(fraction)
            progress(fraction)

        return real_run_method(grid_spec, method, *args, progress=report, **kwargs)

    monkeypatch.setattr(tradeoffs, "run_method", recording)
    inside, overlaps, totals = [0], [], []

    def progress(total):
        inside[0] += 1
        overlaps.append(inside[0])
        time.sleep(0.001)  # widen the window two threads would need to overlap in
        totals.append(total)
        inside[0] -= 1

    out = tradeoffs_view.run_tradeoffs(probs, labels, codes, ids, spec, targets, methods, progress=progress)
    assert set(out["points"]["method"]) == set(methods) == set(per_method)
    assert all(fractions[0] == 0.0 and fractions[-1] == 1.0 for fractions in per_method.values()), per_method
    assert max(overlaps) == 1 and totals[-1] == 1.0
    assert all(a <= b for a, b in zip(totals, totals[1:]))


def test_an_error_in_one_method_keeps_the_others_results(monkeypatch):
    """A method that fails does not stop the others: each still runs to its end; the failing
    method's own error is raised (as a sequential run raises it), carrying the comparison of the
    others, equal to a run without the failing method."""
    probs, labels, weights = _stream(15, n_patients=300)
    spec = _spec(300, 5, weights, "expected", "weighted_fp")
    codes, ids = [f"C{k}" for k in range(5)], [f"p{i}" for i in range(300)]
    targets = target_grid.tradeoff_targets(spec.c_max(5), 5, 50, 4, False)
    methods = ["FavMac (price)", "FavMac (ratio)", "ClassWise", "InnerSet", "CRC"]
    expected = tradeoffs_view.run_tradeoffs(probs, labels, codes, ids, spec, targets, [m for m in methods if m != "ClassWise"])
    real_run_method = tradeoffs.run_method
    finished = []

    def failing(grid_spec, method, *args, **kwargs):
        if method == "ClassWise":
            raise ValueError("ClassWise broke")
        result = real_run_method(grid_spec, method, *args, **kwargs)
        finished.append(method)
        return result

    monkeypatch.setattr(tradeoffs, "run_method", failing)
    monkeypatch.setattr(tradeoffs, "machine_has_a_free_core", lambda: True)
    for workers in (2, 1):
        monkeypatch.setattr(tradeoffs, "TRADEOFF_WORKERS", workers)
        finished.clear()
        with pytest.raises(ValueError, match="ClassWise broke") as raised:
            tradeoffs_view.run_tradeoffs(probs, labels, codes, ids, spec, targets, methods)
        assert sorted(finished) == sorted(m for m in methods if m != "ClassWise")
        partial = raised.value.tradeoffs
        pd.testing.assert_frame_equal(partial["points"], expected["points"], check_exact=True)
        pd.testing.assert_frame_equal(partial["table"], expected["table"], check_exact=True)
        assert partial["skipped"] == {"ClassWise": "it failed (ValueError: ClassWise broke)"}
        assert any("raised by ClassWise" in note for note in raised.value.__notes__)


def test_run_methods_runs_heavy_tasks_one_at_a_time_when_asked():
    """The schedule with ``heavy_at_once=1``: heavy tasks (FavMac replays) one at a time and in
    their order, light ones beside them; every outcome in the order of the tasks, errors
    returned, not raised."""
    import threading
    import time

    lock, running, log = threading.Lock(), [], []

    def task(name, heavy, fail=False):
        def run():
            with lock:
                running.append((name, heavy))
                log.append(("start", name, sum(h for _, h in running)))
            time.sleep(0.02)
            with lock:
                running.remove((name, heavy))
            if fail:
                raise RuntimeError(name)
            return name

        return run

    specs = [("F1", True, False), ("F2", True, True), ("B1", False, False), ("F3", True, False), ("B2", False, False)]
    outcomes = tradeoffs.run_methods([task(*s) for s in specs], [s[1] for s in specs], workers=2, heavy_at_once=1)
    assert [r for r, _ in outcomes] == ["F1", None, "B1", "F3", "B2"]
    assert isinstance(outcomes[1][1], RuntimeError) and all(e is None for i, (_, e) in enumerate(outcomes) if i != 1)
    assert max(heavy_running for _, _, heavy_running in log) == 1
    assert [name for _, name, _ in log if name.startswith("F")] == ["F1", "F2", "F3"]
    assert {name for _, name, _ in log[:2]} == {"F1", "B1"}  # both threads busy from the start


def test_a_cancelled_comparison_stops_every_method(monkeypatch):
    """A job's progress raises once the job is cancelled: no method then starts (nor builds its
    candidate sets), and the cancellation is what run_tradeoffs raises."""
    probs, labels, weights = _stream(16, n_patients=200)
    spec = _spec(200, 5, weights, "expected", "weighted_fp")
    codes, ids = [f"C{k}" for k in range(5)], [f"p{i}" for i in range(200)]
    started = []
    monkeypatch.setattr(tradeoffs, "run_method", lambda *args, **kwargs: started.append(args[1]))
    monkeypatch.setattr(tradeoffs, "candidate_sets", lambda *args: started.append("candidates"))

    def cancelled(fraction):
        raise jobs.JobCancelled("Comparing")

    with pytest.raises(jobs.JobCancelled):
        tradeoffs_view.run_tradeoffs(probs, labels, codes, ids, spec, [0.5, 1.0], ["FavMac (price)", "FavMac (ratio)", "CRC"],
                                progress=cancelled)
    assert started == []


@pytest.mark.parametrize("free, expected", [(True, 2), (False, 1)])
def test_the_second_thread_is_used_only_while_a_core_is_free(free, expected, monkeypatch):
    """A busy server (no idle core) runs the methods one after another in the calling thread:
    the second thread would add a baseline's peak memory and buy no time."""
    import threading

    monkeypatch.setattr(tradeoffs, "machine_has_a_free_core", lambda: free)
    assert tradeoffs.tradeoff_workers() == expected
    threads, gate = set(), threading.Barrier(2, timeout=5) if expected == 2 else None

    def task():
        threads.add(threading.current_thread().name)
        if gate is not None:
            gate.wait()  # both light tasks are running at once
        return len(threads)

    outcomes = tradeoffs.run_methods([task, task], [False, False])
    assert [error for _, error in outcomes] == [None, None]
    if expected == 1:
        assert threads == {threading.current_thread().name}
    else:
        assert len(threads) == 2 and threading.current_thread().name not in threads


def test_the_free_core_rule_reads_the_load_average(monkeypatch):
    monkeypatch.setattr(tradeoffs.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(tradeoffs.os, "getloadavg", lambda: (0.3, 0.0, 0.0))
    assert tradeoffs.machine_has_a_free_core()
    monkeypatch.setattr(tradeoffs.os, "getloadavg", lambda: (1.6, 0.0, 0.0))
    assert not tradeoffs.machine_has_a_free_core()

    def unreadable():
        raise OSError("no load average here")

    monkeypatch.setattr(tradeoffs.os, "getloadavg", unreadable)
    assert tradeoffs.machine_has_a_free_core()
