"""The first page view's background warm-up loads (or compiles) the additive and the CMS-HCC payment
kernels without raising: a failure there would be silent in the app (the thread swallows it)."""
from __future__ import annotations

from favmac.ui import bootstrap


def test_warm_up_runs_the_additive_and_payment_replays(monkeypatch):
    seen = []
    real = bootstrap.run_method

    def spy(spec, method, probs, labels, **kwargs):
        seen.append((spec.value_kind, method))
        return real(spec, method, probs, labels, **kwargs)

    monkeypatch.setattr(bootstrap, "run_method", spy)
    bootstrap.warm_up(0)
    assert ("cms_payment", "FavMac (price)") in seen and seen.count(("tp", "FavMac (ratio)")) == 2
