"""replay (the whole online session in one pass) against the FavMac loop."""
import math

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, FavMac, replay
from favmac.scores import default_score

import oracle
from instances import UNIVERSES, random_instance, targets_for


@pytest.mark.parametrize("delta", [None, 0.2])
@pytest.mark.parametrize("universe", UNIVERSES)
@pytest.mark.parametrize("integer_weights", [True, False])
def test_replay_equals_favmac_loop(universe, delta, integer_weights):
    rng = np.random.RandomState(7)
    for trial in range(15):
        probs, labels, v, w = random_instance(rng, integer_weights)
        targets = targets_for(rng, w, integer_weights)
        burn_in = int(rng.randint(0, len(probs)))
        window = None if trial % 3 else int(rng.randint(1, 6))
        value, cost = AdditiveValue(v), AdditiveCost(w)
        res = replay(probs, labels, value, cost, targets, delta=delta, universe=universe, burn_in=burn_in, window=window)
        # a replay over several targets uses one score for all: "price" under violation control only
        # when every target is below the cheapest false flag (favmac.scores.default_score)
        score = default_score(universe, delta, targets, w)
        for t, c in enumerate(targets):
            fm = FavMac(value, cost, c, delta=delta, universe=universe, window=window, n_codes=len(v), score=score)
            for n in range(len(probs)):
                if n >= burn_in:
                    s = n - burn_in
                    assert res.thresholds[t, s] == fm.threshold
                    chosen = fm.predict(probs[n])
                    assert (res.selected[t, s] == chosen).all()
                    assert res.cost[t, s] == pytest.approx(cost(chosen, labels[n]))
                    assert res.value[t, s] == pytest.approx(value(chosen, labels[n]))
                fm.update(probs[n], labels[n])
            assert res.final_thresholds[t] == fm.threshold


def test_replay_handles_targets_with_many_decimals_exactly():
    """2% of C_max can print as 0.7000000000000001: still the fast exact path, same thresholds."""
    import warnings

    rng = np.random.RandomState(0)
    labels = rng.rand(200, 5) < 0.3
    probs = rng.rand(200, 5).round(3)
    w = np.array([0.3, 1.2, 0.7, 0.05, 2.0])
    targets = [0.7000000000000001, 1 / 3, -0.2, 1.1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the slow-path warning would fail the test
        res = replay(probs, labels, AdditiveValue(w), AdditiveCost(w), targets, burn_in=10, window=50)
    for t, c in enumerate(targets):
        fm = FavMac(AdditiveValue(w), AdditiveCost(w), c, window=50)
        fm.update(probs[:10], labels[:10])
        for n in range(10, 200):
            assert fm.threshold == res.thresholds[t, n - 10]
            fm.update(probs[n], labels[n])



def test_replay_exceeds_flags_are_exact():
    # C_max = 0.1 + 0.2; target C_max allows every set; the float cost 0.30000000000000004 is no violation
    probs = np.full((4, 2), 0.5)
    labels = np.zeros((4, 2), bool)
    res = replay(probs, labels, AdditiveValue(), AdditiveCost([0.1, 0.2]), [0.3], burn_in=1)
    assert res.selected.all() and np.all(res.cost > 0.3)
    assert not res.violations.any()


def test_replay_rejects_bad_inputs_with_one_wording():
    probs, labels = np.full((4, 2), 0.5), np.zeros((4, 2), bool)
    value, cost = AdditiveValue(), AdditiveCost()
    with pytest.raises(ValueError, match="burn_in: expected an integer between 0 and the number of patients \\(4\\)"):
        replay(probs, labels, value, cost, [1.0], burn_in=5)
    with pytest.raises(ValueError, match="labels: expected shape \\(4, 2\\)"):
        replay(probs, labels[:, :1], value, cost, [1.0])
    with pytest.raises(ValueError, match="targets: expected one or more finite"):
        replay(probs, labels, value, cost, [])
