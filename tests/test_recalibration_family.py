"""Maps with each code's hierarchy family as context ("platt_family"; issue 33 item 3: the co-occurrence of a
family's suspicions, fitted on the recalibration fold only)."""
import json

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, replay
from favmac.payment_tables import hierarchy_families
from favmac.recalibration import Recalibration, fit_recalibration

CODES = ["HCC37", "HCC38", "HCC48", "HCC17", "HCC18"]  # families (37, 38) and (17, 18); 48 alone


def _spill(seed, n=3000):
    """A ladder per family (at most one level per member) and a classifier whose score of each level sees the
    family's evidence (sibling spill): each code's p is calibrated on average but not given its siblings."""
    rng = np.random.RandomState(seed)
    y = np.zeros((n, 5), dtype=bool)
    for members, rate in (((0, 1), 0.3), ((3, 4), 0.15)):
        sick = rng.rand(n) < rate
        level = rng.randint(0, 2, n)
        for j, k in enumerate(members):
            y[:, k] = sick & (level == j)
    y[:, 2] = rng.rand(n) < 0.1
    score = 2.0 * y + rng.randn(n, 5)
    for members in ((0, 1), (3, 4)):
        evidence = y[:, list(members)].any(axis=1)
        for k in members:
            score[:, k] += 1.6 * evidence * ~y[:, k]  # a sibling's truth raises this code's score
    p = np.empty_like(score)
    for k in range(5):  # calibrated marginally: the rate of y_k in bins of the score
        edges = np.quantile(score[:, k], np.linspace(0, 1, 21))
        bins = np.clip(np.searchsorted(edges, score[:, k], side="right") - 1, 0, 19)
        rates = np.array([y[bins == b, k].mean() for b in range(20)])
        p[:, k] = np.clip(rates[bins], 0.002, 0.998)
    return p, y


def _logit(p):
    return np.log(p) - np.log1p(-p)


def _irls(design, target, iterations=100):
    beta = np.zeros(design.shape[1])
    for _ in range(iterations):
        mu = 1 / (1 + np.exp(-design @ beta))
        w = mu * (1 - mu)
        grad = design.T @ (target - mu)
        beta += np.linalg.solve(design.T @ (design * w[:, None]), grad)
    return beta


def test_hierarchy_families_are_the_cms_hierarchies_among_the_codes():
    assert hierarchy_families(CODES) == ((0, 1), (3, 4))
    assert hierarchy_families(["A", "B"]) == () and hierarchy_families(["HCC48"]) == ()


def test_the_family_map_is_the_fit_on_the_code_and_its_familys_highest_other_logit():
    p, y = _spill(0)
    maps = fit_recalibration(p[:1000], y[:1000], "platt_family", codes=CODES)
    clipped = np.clip(p[:1000], maps.clip, 1 - maps.clip)
    for k, sibling in ((0, 1), (1, 0), (3, 4), (4, 3)):
        assert list(maps.siblings[k]) == [sibling]
        positives, n = y[:1000, k].sum(), 1000
        target = np.where(y[:1000, k], (positives + 1) / (positives + 2), 1 / (n - positives + 2))  # Platt's targets
        design = np.c_[_logit(clipped[:, k]), _logit(clipped[:, sibling]), np.ones(n)]
        a, c, b = _irls(design, target)
        assert (maps.slope[k], maps.sibling_slope[k], maps.intercept[k]) == pytest.approx((a, c, b), rel=1e-6, abs=1e-8)
        assert maps.sibling_slope[k] != 0  # the fold rejects the identity: the family's context is used
    assert maps.siblings[2] == () and maps.sibling_slope[2] == 0  # no family: the code's tested Platt map
    tested = fit_recalibration(p[:1000], y[:1000], "platt_tested", codes=CODES)
    assert (maps.slope[2], maps.intercept[2]) == (tested.slope[2], tested.intercept[2])


def test_the_family_map_repairs_the_spill_on_later_patients():
    p, y = _spill(1, n=6000)
    maps = fit_recalibration(p[:2000], y[:2000], "platt_family", codes=CODES)
    tested = fit_recalibration(p[:2000], y[:2000], "platt_tested", codes=CODES)
    later, truth = p[2000:], y[2000:]

    def loss(q):
        q = np.clip(q, 1e-9, 1 - 1e-9)
        return -np.mean(np.where(truth, np.log(q), np.log1p(-q)))

    assert loss(maps.apply(later)) < loss(tested.apply(later)) - 0.01
    value = AdditiveValue([0.166, 0.166, 0.186, 4.209, 2.341])
    gains = []
    for method in ("platt_tested", "platt_family"):
        result = replay(p, y, value, AdditiveCost(), [0.3, 1.0], recalibrate=2000, recalibration=method, burn_in=1000,
                        codes=CODES)
        gains.append(result.value.mean(axis=1))
    assert np.all(gains[1] > gains[0])


def test_a_calibrated_family_keeps_its_probabilities_and_codes_without_families_equal_platt_tested():
    rng = np.random.RandomState(2)
    q = rng.beta(0.5, 3, size=(2000, 5))
    y = rng.rand(2000, 5) < q
    maps = fit_recalibration(q, y, "platt_family", codes=CODES)
    # independent, calibrated codes: no family map is accepted (each test at level 0.05; this seed's are all kept)
    assert np.all(maps.sibling_slope == 0) and maps.to_dict()["maps"] == fit_recalibration(q, y, "platt_tested", codes=CODES).to_dict()["maps"]
    plain = fit_recalibration(q, y, "platt_family", codes=["A", "B", "C", "D", "E"])  # no hierarchy: platt_tested
    assert plain.to_dict()["maps"] == fit_recalibration(q, y, "platt_tested", codes=["A", "B", "C", "D", "E"]).to_dict()["maps"]


def test_the_family_map_round_trips_and_refuses_bad_siblings():
    p, y = _spill(3)
    maps = fit_recalibration(p[:1000], y[:1000], "platt_family", codes=CODES)
    doc = json.loads(json.dumps(maps.to_dict()))
    again = Recalibration.from_dict(doc, codes=CODES)
    assert again == maps and np.array_equal(again.apply(p[1000:1100]), maps.apply(p[1000:1100]))
    bad = json.loads(json.dumps(doc))
    bad["maps"][0]["siblings"] = [7]
    with pytest.raises(ValueError, match=r"recalibration_maps\.maps\[0\]\.siblings"):
        Recalibration.from_dict(bad)
    bad["maps"][0]["siblings"] = [0]  # itself
    with pytest.raises(ValueError, match=r"recalibration_maps\.maps\[0\]\.siblings"):
        Recalibration.from_dict(bad)
