"""The Trade-offs schedule with two FavMac replays at once (HEAVY_AT_ONCE): the limit holds,
heavy tasks start in order, the baselines go longest first, candidate sets are shared only
between replays that do not overlap, and every table equals the one-thread run's."""
import threading
import time

import numpy as np
import pandas as pd

from favmac import tradeoffs
from favmac import target_grid
from favmac.ui import tradeoffs as tradeoffs_view

from test_tradeoff_summaries import ALL_METHODS, _spec, _stream


def test_run_methods_runs_at_most_heavy_at_once_heavy_tasks():
    lock, running, log = threading.Lock(), [], []

    def task(name, heavy):
        def run():
            with lock:
                running.append(heavy)
                log.append((name, sum(running)))
            time.sleep(0.02)
            with lock:
                running.remove(heavy)
            return name

        return run

    specs = [("F1", True, 0), ("F2", True, 0), ("F3", True, 0), ("B1", False, 1.0), ("B2", False, 3.0), ("B3", False, 2.0)]
    outcomes = tradeoffs.run_methods([task(name, heavy) for name, heavy, _ in specs], [s[1] for s in specs], workers=3,
                                     heavy_at_once=2, cost=[s[2] for s in specs])
    assert [r for r, _ in outcomes] == [s[0] for s in specs]
    assert max(heavy for _, heavy in log) == 2
    assert [name for name, _ in log if name.startswith("F")] == ["F1", "F2", "F3"]
    assert [name for name, _ in log if name.startswith("B")] == ["B2", "B3", "B1"]  # longest first


def test_two_replays_at_once_give_the_sequential_tables(monkeypatch):
    """Every table of a run with two FavMac replays at once equals the one-thread run's, to the
    last bit. The ratio universe's candidate sets are shared by its two users one after another
    (built once), never by two replays running at once (each builds its own)."""
    probs, labels, weights = _stream(17)
    n_patients, n_codes = probs.shape
    codes, ids = [f"C{k}" for k in range(n_codes)], [f"p{i}" for i in range(n_patients)]
    spec = _spec(n_patients, n_codes, weights, "expected", "weighted_fp")
    targets = target_grid.tradeoff_targets(spec.c_max(n_codes), 5, 50, 5, False)
    monkeypatch.setattr(tradeoffs, "machine_has_a_free_core", lambda: True)
    monkeypatch.setattr(tradeoffs, "TRADEOFF_MODE", "side_by_side")  # two methods at once (the app's default is "inner")
    built = []
    real_candidate_sets = tradeoffs.candidate_sets

    def counting(*args):
        built.append(args[-1])
        return real_candidate_sets(*args)

    monkeypatch.setattr(tradeoffs, "candidate_sets", counting)
    runs = {}
    for workers in (2, 1):
        monkeypatch.setattr(tradeoffs, "TRADEOFF_WORKERS", workers)
        built.clear()
        runs[workers] = tradeoffs_view.run_tradeoffs(probs, labels, codes, ids, spec, targets, ALL_METHODS)
        assert built == ([] if workers == 2 else ["ratio"])
    for key in ("points", "table"):
        pd.testing.assert_frame_equal(runs[2][key], runs[1][key], check_exact=True)
    assert np.array_equal(runs[2]["targets"], runs[1]["targets"])
