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


def over_orderings(probs, labels, value, cost, targets, n_orderings, figure, **options):
    """(orderings, targets) array of ``figure(result)`` over seeded random orderings of the stream."""
    rows = []
    for seed in range(n_orderings):
        perm = np.random.RandomState(seed).permutation(len(probs))
        rows.append(figure(replay(probs[perm], labels[perm], value, cost, targets, **options)))
    return np.array(rows)


def mean_cost(result):
    return result.cost.mean(axis=1)


def violation_rate(result):
    return result.violations.mean(axis=1)


def assert_controlled(per_ordering, bound):
    """Mean over orderings <= bound + 3 standard errors, and not vacuously below half the bound."""
    overall = per_ordering.mean(axis=0)
    stderr = per_ordering.std(axis=0, ddof=1) / np.sqrt(len(per_ordering))
    assert np.all(overall <= np.asarray(bound) + 3 * stderr), (overall, bound)
    assert np.all(overall >= 0.5 * np.asarray(bound)), "the control is so loose the test says nothing"


@pytest.mark.parametrize("universe", ["ratio", "prob", "value"])
def test_expected_cost_is_controlled(universe):
    probs, labels, w = synthetic()
    value, cost = AdditiveValue(w), AdditiveCost(w)
    targets = [round(f * w.sum(), 2) for f in (0.05, 0.15, 0.3)]
    means = over_orderings(probs, labels, value, cost, targets, 120, mean_cost, universe=universe, burn_in=30)
    assert_controlled(means, targets)


@pytest.mark.parametrize("universe", ["ratio", "prob"])
def test_violation_rate_is_controlled(universe):
    probs, labels, w = synthetic(seed=1)
    value, cost = AdditiveValue(w), AdditiveCost(w)
    delta = 0.1
    targets = [round(f * w.sum(), 2) for f in (0.1, 0.3)]
    rates = over_orderings(probs, labels, value, cost, targets, 120, violation_rate, delta=delta, universe=universe, burn_in=30)
    assert_controlled(rates, delta)


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


@pytest.mark.parametrize("universe", ["ratio", "prob"])
def test_price_score_controls_expected_cost(universe):
    probs, labels, w = synthetic(seed=3)
    value, cost = AdditiveValue(np.round(w[::-1], 2)), AdditiveCost(w)  # value and cost weights differ
    targets = [round(f * w.sum(), 2) for f in (0.05, 0.15, 0.3)]
    means = over_orderings(probs, labels, value, cost, targets, 120, mean_cost, universe=universe, burn_in=30, score="price")
    assert_controlled(means, targets)


@pytest.mark.parametrize("universe", ["ratio", "value"])
def test_price_score_controls_violations(universe):
    probs, labels, w = synthetic(seed=4)
    value, cost = AdditiveValue(np.round(w[::-1], 2)), AdditiveCost(w)
    delta = 0.1
    targets = [round(f * w.sum(), 2) for f in (0.1, 0.3)]
    rates = over_orderings(probs, labels, value, cost, targets, 120, violation_rate, delta=delta, universe=universe,
                           burn_in=30, score="price")
    assert_controlled(rates, delta)


def test_price_score_with_a_window_still_controls_cost():
    probs, labels, w = synthetic(n=500, seed=5)
    value, cost = AdditiveValue(), AdditiveCost(w)
    target = round(0.2 * w.sum(), 2)
    means = []
    for seed in range(60):
        perm = np.random.RandomState(seed).permutation(len(probs))
        res = replay(probs[perm], labels[perm], value, cost, [target], window=100, burn_in=100, score="price")
        means.append(res.cost.mean())
    means = np.array(means)
    assert means.mean() <= target + 3 * means.std(ddof=1) / np.sqrt(len(means))
    assert means.mean() >= 0.5 * target, "the control is so loose the test says nothing"


def test_price_score_buys_more_value_than_the_cost_score_under_expected_control():
    """The point of the price score (docs/score_comparison.md): same budget, more value."""
    probs, labels, w = synthetic(n=600, seed=6)
    value, cost = AdditiveValue(np.round(w[::-1], 2)), AdditiveCost(w)
    targets = [round(f * w.sum(), 2) for f in (0.1, 0.2)]
    gains = []
    for seed in range(30):
        perm = np.random.RandomState(seed).permutation(len(probs))
        runs = [replay(probs[perm], labels[perm], value, cost, targets, burn_in=100, score=score)
                for score in ("cost", "price")]
        gains.append(runs[1].value.mean() - runs[0].value.mean())
    gains = np.array(gains)
    assert gains.mean() > 3 * gains.std(ddof=1) / np.sqrt(len(gains)), gains.mean()
