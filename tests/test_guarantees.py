"""The statistical guarantees, across many random orderings of exchangeable data."""
import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, replay


def synthetic(n=400, k=6, seed=0):
    rng = np.random.RandomState(seed)
    latent = rng.randn(n, 1)
    logits = latent + rng.randn(n, k) - 1.0
    labels = rng.rand(n, k) < 1 / (1 + np.exp(-logits))
    noisy = logits + 0.8 * rng.randn(n, k)  # an imperfect classifier
    probs = np.round(1 / (1 + np.exp(-noisy)), 3)
    weights = np.round(rng.uniform(0.2, 2.0, size=k), 2)
    return probs, labels, weights


@pytest.mark.parametrize("universe", ["ratio", "prob", "value"])
def test_expected_cost_is_controlled(universe):
    probs, labels, w = synthetic()
    value, cost = AdditiveValue(w), AdditiveCost(w)
    targets = [round(f * w.sum(), 2) for f in (0.05, 0.15, 0.3)]
    per_ordering = []
    for seed in range(120):
        perm = np.random.RandomState(seed).permutation(len(probs))
        res = replay(probs[perm], labels[perm], value, cost, targets, universe=universe, burn_in=30)
        per_ordering.append(res.cost.mean(axis=1))
    means = np.array(per_ordering)  # (orderings, targets)
    overall = means.mean(axis=0)
    stderr = means.std(axis=0, ddof=1) / np.sqrt(len(means))
    assert np.all(overall <= np.array(targets) + 3 * stderr), (overall, targets)
    assert np.all(overall >= 0.5 * np.array(targets)), "the control is so loose the test says nothing"


@pytest.mark.parametrize("universe", ["ratio", "prob"])
def test_violation_rate_is_controlled(universe):
    probs, labels, w = synthetic(seed=1)
    value, cost = AdditiveValue(w), AdditiveCost(w)
    delta = 0.1
    targets = [round(f * w.sum(), 2) for f in (0.1, 0.3)]
    rates = []
    for seed in range(120):
        perm = np.random.RandomState(seed).permutation(len(probs))
        res = replay(probs[perm], labels[perm], value, cost, targets, delta=delta, universe=universe, burn_in=30)
        rates.append(res.violations.mean(axis=1))
    rates = np.array(rates)
    overall = rates.mean(axis=0)
    stderr = rates.std(axis=0, ddof=1) / np.sqrt(len(rates))
    assert np.all(overall <= delta + 3 * stderr), overall
    assert np.all(overall >= 0.5 * delta), "the control is so loose the test says nothing"


def test_rolling_window_still_controls_cost():
    probs, labels, w = synthetic(n=500, seed=2)
    value, cost = AdditiveValue(w), AdditiveCost(w)
    target = round(0.2 * w.sum(), 2)
    means = []
    for seed in range(60):
        perm = np.random.RandomState(seed).permutation(len(probs))
        res = replay(probs[perm], labels[perm], value, cost, [target], window=100, burn_in=100)
        means.append(res.cost.mean())
    means = np.array(means)
    assert means.mean() <= target + 3 * means.std(ddof=1) / np.sqrt(len(means))
