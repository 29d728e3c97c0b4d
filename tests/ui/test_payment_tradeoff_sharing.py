"""Trade-offs with the CMS-HCC payment value on two threads: the payment greedy's candidate sets are
built once per universe (under a lock, every lazy part computed first) and read by the replays that run
at the same time; the tables equal one thread's, to the last bit."""
from __future__ import annotations

import numpy as np
import pandas as pd

from favmac import CmsHccValue
from favmac.payment_tables import CELL_NAMES, model_tables
from favmac.runspec import RunSpec
from favmac import tradeoffs
from favmac.ui import tradeoffs as tradeoffs_view


def _cohort(n=240, n_codes=20, seed=3):
    rng = np.random.RandomState(seed)
    codes = [f"HCC{c}" for c in sorted(model_tables("V28", 2026).hccs, key=int)[:n_codes]]
    cells = rng.choice(list(CELL_NAMES), n).astype(object)
    known = rng.rand(n, n_codes) < 0.05
    probs = np.round(rng.rand(n, n_codes) ** 2.0, 3)
    labels = (rng.rand(n, n_codes) < probs).astype(np.int8)
    return codes, probs, labels, {"cells": cells, "known": known}


def _run(monkeypatch, free_core, calls):
    codes, probs, labels, members = _cohort()
    spec = RunSpec(value_kind="cms_payment", cost_kind="fp", control="expected", targets=(1.0,), universe="ratio",
                   burn_in=60, weights=tuple(np.linspace(0.2, 2.0, len(codes)))).validate(n_codes=len(codes), n_patients=len(probs))
    monkeypatch.setattr(tradeoffs, "machine_has_a_free_core", lambda: free_core)
    from favmac.universe import candidate_sets as real

    def counted(probs, value, cost, universe):
        calls.append(universe)
        return real(probs, value, cost, universe)

    monkeypatch.setattr(tradeoffs, "candidate_sets", counted)
    methods = ["FavMac (price)", "FavMac (ratio)", "FavMac (prob)", "InnerSet", "CRC"]
    ids = np.array([f"P{i}" for i in range(len(probs))], dtype=object)
    return tradeoffs_view.run_tradeoffs(probs, labels, codes, ids, spec, [0.5, 1.0, 2.0], methods, members=members)


def test_payment_candidates_are_built_once_and_shared_by_replays_at_once(monkeypatch):
    assert tradeoffs.TRADEOFF_WORKERS > 1 and tradeoffs.HEAVY_AT_ONCE > 1
    calls_two, calls_one = [], []
    two = _run(monkeypatch, True, calls_two)
    one = _run(monkeypatch, False, calls_one)
    assert calls_two.count("ratio") == 1 and calls_one.count("ratio") == 1  # price and ratio share the greedy
    pd.testing.assert_frame_equal(two["points"], one["points"])
    pd.testing.assert_frame_equal(two["table"], one["table"])
    assert "FavMac (price, additive)" in set(two["points"]["method"])


def test_settled_candidates_need_no_further_writes():
    codes, probs, labels, members = _cohort(n=50)
    value = CmsHccValue(codes, cells=members["cells"], known=members["known"])
    from favmac import AdditiveCost

    built = tradeoffs._settled(tradeoffs.candidate_sets(probs, value, AdditiveCost(), "ratio"))
    assert not callable(built.chat_source) and not callable(built.vhat_source) and not callable(built.steps_source)
