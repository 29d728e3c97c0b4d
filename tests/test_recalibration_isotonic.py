"""Isotonic recalibration without scikit-learn (favmac.recalibration._isotonic: scipy's PAV, a core dependency)."""
import sys

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, replay
from favmac.recalibration import fit_recalibration


def _fold(seed, n=400, k=4):
    rng = np.random.RandomState(seed)
    q = rng.rand(n, k)
    y = rng.rand(n, k) < q ** 2
    p = np.round(q, 2)  # ties in p, as in real scores
    return p, y


def test_isotonic_needs_no_scikit_learn(monkeypatch):
    # a library-only install: importing sklearn fails
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.isotonic", None)
    p, y = _fold(0, n=1200)
    maps = fit_recalibration(p, y, "isotonic")
    assert maps.method == "isotonic"
    res = replay(p, y, AdditiveValue(), AdditiveCost(), [1.0], recalibrate=200, recalibration="isotonic")
    assert res.settings["recalibration"] == "isotonic" and res.cost.shape == (1, 1000)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_isotonic_knots_are_scikit_learns(seed):
    isotonic = pytest.importorskip("sklearn.isotonic")
    p, y = _fold(seed)
    from favmac.recalibration import _isotonic

    for k in range(p.shape[1]):
        knots_x, knots_y = _isotonic(p[:, k], y[:, k])
        model = isotonic.IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip").fit(
            p[:, k], y[:, k].astype(float))
        np.testing.assert_array_equal(knots_x, model.X_thresholds_)
        np.testing.assert_allclose(knots_y, model.y_thresholds_, rtol=0, atol=1e-12)
