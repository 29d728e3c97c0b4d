"""The CMS-HCC payment value: a huge dollar scale keeps the unsupported cost exact.

Second hostile-input audit: the CMS-HCC payment value (tests/test_audit_*.py hold the first round)."""
import numpy as np
import pytest

from favmac import CmsHccCost, CmsHccValue, replay

CODES = ["HCC37", "HCC38", "HCC226", "HCC280", "HCC18"]


def _cohort(n=60, seed=3):
    rng = np.random.default_rng(seed)
    probs = rng.uniform(0, 1, (n, len(CODES)))
    labels = rng.uniform(0, 1, (n, len(CODES))) < probs
    return probs, labels


@pytest.mark.parametrize("adjust", [{"base_rate": 1e300}, {"normalization": 1e-300}, {"base_rate": 1e18}])
def test_a_huge_dollar_scale_keeps_the_unsupported_cost_exact(adjust):
    """A base rate of 1e300 (or normalization 1e-300) overflowed int64 (OverflowError traceback):
    the same run in RAF units, scaled, must choose the same sets."""
    probs, labels = _cohort()
    factor = adjust.get("base_rate", 1) / adjust.get("normalization", 1)
    plain = CmsHccValue(CODES)
    big = CmsHccValue(CODES, **adjust)
    small_run = replay(probs, labels, plain, CmsHccCost(plain), [0.5], burn_in=20)
    with pytest.warns(UserWarning, match="too large for exact int64"):  # the documented exact Python-integer path
        big_run = replay(probs, labels, big, CmsHccCost(big), [0.5 * factor], burn_in=20)
    assert np.array_equal(small_run.selected, big_run.selected)
    np.testing.assert_allclose(big_run.cost, small_run.cost * factor, rtol=1e-9)
