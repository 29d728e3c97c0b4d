"""The Trade-offs schedules (favmac.tradeoffs.TRADEOFF_MODES) give the same tables, to the last bit.

"inner": the methods one after another, each on TRADEOFF_WORKERS inner threads (favmac.parallel);
"side_by_side": that many methods at once, each on one thread; a busy server: one thread, one method
at a time, whatever the mode. Small chunks are forced (favmac.parallel.CHUNKS_PER_THREAD,
favmac.baselines.kernels.SPLIT_FROM), so the baselines' chunk-parallel parts really run on threads.
"""
import threading

import numpy as np
import pandas as pd
import pytest

from favmac import parallel
from favmac.baselines import kernels
from favmac import tradeoffs
from favmac import target_grid
from favmac.ui import tradeoffs as tradeoffs_view

from test_tradeoff_summaries import ALL_METHODS, _spec, _stream


def _inputs(seed, control):
    probs, labels, weights = _stream(seed)
    n_patients, n_codes = probs.shape
    codes, ids = [f"C{k}" for k in range(n_codes)], [f"p{i}" for i in range(n_patients)]
    spec = _spec(n_patients, n_codes, weights, control, "weighted_fp")
    targets = target_grid.tradeoff_targets(spec.c_max(n_codes), 5, 50, 5, False)
    return probs, labels, codes, ids, spec, targets


@pytest.mark.parametrize("control", ["expected", "violation"])
def test_every_mode_gives_the_one_thread_tables(monkeypatch, control):
    monkeypatch.setattr(parallel, "CHUNKS_PER_THREAD", 50)
    monkeypatch.setattr(kernels, "SPLIT_FROM", 1)
    monkeypatch.setattr(tradeoffs, "machine_has_a_free_core", lambda: True)
    probs, labels, codes, ids, spec, targets = _inputs(23, control)
    seen = []  # (method, inner threads, methods running at that moment)
    running, lock = [0], threading.Lock()
    real_summary = tradeoffs.method_summary

    def watching(grid_spec, method, *args, **kwargs):
        with lock:
            running[0] += 1
            seen.append((method, parallel.inner_threads(), running[0]))
        try:
            return real_summary(grid_spec, method, *args, **kwargs)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(tradeoffs, "method_summary", watching)
    runs = {}
    for name, workers, mode in (("one thread", 1, "inner"), ("inner", 2, "inner"), ("side by side", 2, "side_by_side")):
        monkeypatch.setattr(tradeoffs, "TRADEOFF_WORKERS", workers)
        seen.clear()
        runs[name] = tradeoffs_view.run_tradeoffs(probs, labels, codes, ids, spec, targets, ALL_METHODS, mode=mode)
        assert seen, name
        if name == "inner":  # one method at a time, each on both threads
            assert {threads for _, threads, _ in seen} == {2} and max(at_once for *_, at_once in seen) == 1
        else:
            assert {threads for _, threads, _ in seen} == {1}
    for name in ("inner", "side by side"):
        for key in ("points", "table"):
            pd.testing.assert_frame_equal(runs[name][key], runs["one thread"][key], check_exact=True)
        assert runs[name]["skipped"] == runs["one thread"]["skipped"]
        assert np.array_equal(runs[name]["targets"], runs["one thread"]["targets"])


def test_inner_mode_on_a_busy_server_is_one_thread(monkeypatch):
    """No free core: one thread, each method on it alone (inner_threads() is 1), as before the modes."""
    monkeypatch.setattr(tradeoffs, "machine_has_a_free_core", lambda: False)
    monkeypatch.setattr(tradeoffs, "TRADEOFF_WORKERS", 2)
    probs, labels, codes, ids, spec, targets = _inputs(5, "expected")
    threads = []
    real_summary = tradeoffs.method_summary
    monkeypatch.setattr(tradeoffs, "method_summary",
                        lambda *args, **kwargs: threads.append(parallel.inner_threads()) or real_summary(*args, **kwargs))
    tradeoffs_view.run_tradeoffs(probs, labels, codes, ids, spec, targets, ["CRC", "InnerSet"], mode="inner")
    assert threads == [1, 1]


def test_an_unknown_mode_is_refused_by_name():
    probs, labels, codes, ids, spec, targets = _inputs(5, "expected")
    with pytest.raises(ValueError, match=r"mode: expected one of 'inner', 'side_by_side'.*got 'both'"):
        tradeoffs_view.run_tradeoffs(probs, labels, codes, ids, spec, targets, ["CRC"], mode="both")
