"""The replay engine's fast paths give the straightforward paths' results, bit for bit.

* Groupings with few groups share the stream's key slots (owner per slot); with many, each
  group has its own sorted keys (``_Engine._layout``). Forcing either layout changes nothing.
* Equal keys (ties) spread over their slots; the pooled final threshold read from an
  expected pass's leaves equals the one summed from the points.
* Numpy group labels are checked per distinct value: same labels and errors as a list.
* The adaptive bound with labels that arrive later (favmac.adaptive): an adversarial stream
  breaks the no-delay bound and keeps the one with the lag.
"""
import importlib

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, replay
from favmac.adaptive import adaptive_bound, adaptive_series, result_lag
from favmac.segments import check_group_labels, segment_table

engine = importlib.import_module("favmac.replay.engine")


def _stream(n, seed, ties):
    rng = np.random.RandomState(seed)
    y = rng.rand(n, 6) < rng.uniform(0.05, 0.4, size=6)
    p = np.clip(0.5 * y + 0.5 * rng.rand(n, 6), 0, 1)
    w = rng.uniform(0.2, 2.0, size=6)
    if ties:
        p, w = np.round(p, 1), np.round(w)
    value = AdditiveValue() if ties else AdditiveValue(rng.uniform(0.1, 3.0, size=6))
    return p, y, value, AdditiveCost(np.round(w, 3)), rng


def _same(a, b):
    for name in ("thresholds", "final_thresholds", "cost", "value", "exceeds", "adaptive_targets"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            np.testing.assert_array_equal(x, y, err_msg=name)
    np.testing.assert_array_equal(a.chosen.index, b.chosen.index)
    for ga, gb in zip(a.groupings or [], b.groupings or []):
        np.testing.assert_array_equal(ga.thresholds, gb.thresholds)
        assert ga.sizes == gb.sizes and ga.final_thresholds.keys() == gb.final_thresholds.keys()
        for label in ga.final_thresholds:
            np.testing.assert_array_equal(ga.final_thresholds[label], gb.final_thresholds[label])


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("delta", [None, 0.1])
@pytest.mark.parametrize("window", [None, 150])
def test_shared_slots_equal_per_group_keys(monkeypatch, ties, delta, window):
    p, y, value, cost, rng = _stream(900, 11 + ties, ties)
    groups = [rng.choice(["a", "b", "c"], size=900), rng.randint(0, 5, size=900)]
    targets = [0.4, 1.1, 2.5]
    for score in ("cost", "price"):
        for delay in ({}, {"label_delay": 40}, {"label_available_at": np.arange(900) + rng.randint(0, 90, size=900)}):
            settings = dict(delta=delta, window=window, burn_in=100, score=score, groups=groups, **delay)
            shared = replay(p, y, value, cost, targets, **settings)
            monkeypatch.setattr(engine, "_SHARED_GROUPS", 0)  # every grouping on its groups' own sorted keys
            own = replay(p, y, value, cost, targets, **settings)
            monkeypatch.undo()
            _same(shared, own)
            one = [replay(p, y, value, cost, targets, **{**settings, "groups": g}) for g in groups]
            np.testing.assert_array_equal(shared.thresholds, np.minimum(one[0].thresholds, one[1].thresholds))


@pytest.mark.parametrize("window", [None, 120])
def test_adaptive_layouts_agree(monkeypatch, window):
    p, y, value, cost, rng = _stream(700, 5, True)
    settings = dict(adaptive_rate=0.05, window=window, burn_in=100, groups=rng.choice(["a", "b"], size=700),
                    label_delay=30)
    shared = replay(p, y, value, cost, [0.8, 1.5], **settings)
    monkeypatch.setattr(engine, "_SHARED_GROUPS", 0)
    _same(shared, replay(p, y, value, cost, [0.8, 1.5], **settings))


def test_numpy_labels_read_like_lists():
    rng = np.random.RandomState(0)
    for labels in (rng.choice(["x", " y", "z "], size=50), rng.randint(0, 4, size=50), rng.rand(50) < 0.5):
        assert check_group_labels(labels, 50).tolist() == check_group_labels(labels.tolist(), 50).tolist()
    bad = np.array(["a", "b", " ", "a"])
    with pytest.raises(ValueError, match=r"the patient at row 4 \(the header is row 1; array index 2\) has no group label"):
        check_group_labels(bad, 4)


def test_adaptive_bound_with_label_delay_on_an_adversarial_stream():
    """Calibration patients make every set free, then every predicted code is wrong: with a
    delay d the target keeps falling for the d labels outstanding, so the no-delay bound
    fails while the bound with lag L = d holds (for the whole run, each step, each segment)."""
    n_codes, burn_in, steps = 4, 60, 40
    rng = np.random.RandomState(0)
    probs = rng.uniform(0.05, 0.95, size=(burn_in + steps, n_codes))
    labels = np.zeros((burn_in + steps, n_codes), bool)
    labels[:burn_in] = True
    weights = np.array([1.0, 2.0, 1.5, 0.5])
    c_max, target, gamma = float(weights.sum()), 0.5, 0.1
    broken = False
    for delay in (0, 5, 20):
        res = replay(probs, labels, AdditiveValue(), AdditiveCost(weights), [target], burn_in=burn_in,
                     adaptive_rate=gamma, label_delay=delay or None)
        lag = result_lag(res)
        assert lag == delay
        mean = res.cost[0].mean()
        assert mean <= adaptive_bound(target, gamma, c_max, steps, lag=lag)
        broken |= mean > adaptive_bound(target, gamma, c_max, steps)
        series = adaptive_series(res)
        assert (series["mean_cost"] <= series["bound"] + 1e-12).all()
    assert broken  # the no-delay bound does not hold with a delay
    grouped = replay(probs, labels, AdditiveValue(), AdditiveCost(weights), [target], burn_in=burn_in,
                     adaptive_rate=gamma, label_delay=20, groups=np.arange(burn_in + steps) % 2)
    table = segment_table(grouped)
    assert table["within_target"].all()


def test_adaptive_bound_with_delay_on_random_orderings():
    p, y, value, cost, rng = _stream(600, 3, False)
    for seed in range(20):
        order = np.random.RandomState(seed).permutation(600)
        for delay in (1, 25, 200):
            res = replay(p[order], y[order], value, cost, [0.6], burn_in=50, adaptive_rate=0.2, label_delay=delay)
            c_max = res.settings["c_max"]
            assert res.cost[0].mean() <= adaptive_bound(0.6, 0.2, c_max, res.n_steps, lag=result_lag(res))
            series = adaptive_series(res)
            assert (series["mean_cost"] <= series["bound"] + 1e-12).all()
