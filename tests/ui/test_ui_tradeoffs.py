"""favmac.tradeoffs (the comparison: applicability from the registry, the run) and favmac.ui.tradeoffs (its table)."""
from __future__ import annotations

import numpy as np
import pytest

from favmac import tradeoffs
from favmac import target_grid
from favmac.ui import settings_form as form, tradeoffs as tradeoffs_view


def test_tradeoff_targets():
    np.testing.assert_allclose(target_grid.tradeoff_targets(35, 5, 50, 10, True),
                               [1.75, 3.5, 5.25, 7.1, 8.75, 10.5, 12.25, 14.1, 15.75, 17.5])
    np.testing.assert_allclose(target_grid.tradeoff_targets(10, 10, 50, 5, False), [1, 2, 3, 4, 5])
    np.testing.assert_allclose(target_grid.tradeoff_targets(10, 10, 50, 5, True), [1.1, 2.1, 3.1, 4.1, 5.1])  # the paper's grid


def test_method_applicability_follows_library():
    expected = tradeoffs.method_applicability("expected")
    violation = tradeoffs.method_applicability("violation")
    assert expected["RCPS"] and not expected["CRC"] and not expected["ClassWise"]
    assert violation["CRC"] and violation["ClassWise"] and not violation["RCPS"]
    assert all(expected[m] is None and violation[m] is None for m in expected if m.startswith("FavMac"))
    assert tradeoffs.method_applicability("expected", ["FavMac (full)"], n_codes=35)["FavMac (full)"]


def test_run_tradeoffs_small_stream():
    rng = np.random.RandomState(0)
    probs = rng.uniform(size=(120, 4))
    labels = (rng.uniform(size=(120, 4)) < probs).astype(int)
    s = {**form.default_settings(120, 4), "burn_in": 40}
    targets = target_grid.tradeoff_targets(4, 10, 40, 3, True)
    seen = []
    out = tradeoffs_view.run_tradeoffs(probs, labels, list("wxyz"), [f"p{i}" for i in range(120)], form.to_spec(s, np.ones(4)), targets,
                                 ["FavMac (ratio)", "InnerSet", "RCPS"], progress=seen.append)
    assert set(out["points"]["method"]) == {"FavMac (ratio)", "InnerSet"}
    assert list(out["skipped"]) == ["RCPS"]
    assert len(out["points"]) == 2 * len(targets)
    assert seen and seen[-1] == pytest.approx(1.0) and all(a <= b for a, b in zip(seen, seen[1:]))
    assert list(out["table"].columns) == list(tradeoffs_view.comparison_columns({"cost_kind": "fp", "value_kind": "weighted_tp"}).values())


# --------------------------------------------------------------------------- patients & export
