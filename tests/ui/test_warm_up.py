"""The first page view's background warm-up loads (or compiles) the additive and the CMS-HCC payment
kernels, and what a first Trade-offs run loads, without raising: a failure there would be silent in
the app (the thread swallows it)."""
from __future__ import annotations

import sys

from favmac import target_grid
from favmac.ui import bootstrap, tradeoffs as tradeoffs_view


def test_warm_up_runs_the_additive_and_payment_replays(monkeypatch):
    seen = []
    real = bootstrap.run_method

    def spy(spec, method, probs, labels, **kwargs):
        seen.append((spec.value_kind, method))
        return real(spec, method, probs, labels, **kwargs)

    compared = []
    real_tradeoffs = tradeoffs_view.run_tradeoffs

    def spy_tradeoffs(probs, labels, codes, patient_ids, spec, targets, methods, **kwargs):
        out = real_tradeoffs(probs, labels, codes, patient_ids, spec, targets, methods, **kwargs)
        compared.append((spec.control, set(out["table"]["Method"])))
        return out

    monkeypatch.setattr(bootstrap, "run_method", spy)
    monkeypatch.setattr(tradeoffs_view, "run_tradeoffs", spy_tradeoffs)
    bootstrap.warm_up(0)
    assert ("cms_payment", "FavMac (price)") in seen and seen.count(("tp", "FavMac (ratio)")) == 2
    # the Trade-offs page's default methods under both controls: scipy.stats and every baseline's kernels loaded
    assert [control for control, _ in compared] == ["expected", "violation"]
    assert set().union(*(methods for _, methods in compared)) == set(target_grid.DEFAULT_METHODS)
    assert "scipy.stats" in sys.modules
