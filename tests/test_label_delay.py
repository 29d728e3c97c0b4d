"""Labels that arrive later (favmac.arrivals): replay with label_delay / label_available_at against a
FavMac loop that updates only with the patients whose labels have arrived, and the literal oracle."""
import math

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, FavMac, replay

import oracle
from instances import random_instance


def arrival_of(n_patients, delay=None, given=None):
    """Where each label arrives (after that position's prediction), as the user states it."""
    if given is not None:
        return list(given)
    return [i + (delay or 0) for i in range(n_patients)]


def favmac_loop(probs, labels, value, cost, target, arrival, burn_in, groups=None, **settings):
    """The online session by hand: predict patient n, then add the patients whose labels arrive right
    after n (in stream order); burn-in patients are added before the first prediction."""
    fm = FavMac(value, cost, target, n_codes=probs.shape[1], **settings)
    group = (lambda i: None) if groups is None else (lambda i: groups[i])
    for i in range(burn_in):
        fm.update(probs[i], labels[i], group=group(i), adapt=False)
    thresholds, sets = [], []
    for n in range(burn_in, len(probs)):
        thresholds.append(fm.threshold_for(group(n)))
        sets.append(fm.predict(probs[n], group=group(n)))
        for i in range(burn_in, len(probs)):
            if arrival[i] == n:
                fm.update(probs[i], labels[i], group=group(i))
    return thresholds, np.array(sets).reshape(len(thresholds), probs.shape[1]), fm


@pytest.mark.parametrize("delta", [None, 0.2])
@pytest.mark.parametrize("score", ["cost", "price"])
def test_delay_equals_a_favmac_loop_that_waits_for_labels(delta, score):
    rng = np.random.RandomState(5)
    for trial in range(16):
        probs, labels, v, w = random_instance(rng, integer_weights=trial % 2 == 0)
        n_patients = len(probs)
        value, cost = AdditiveValue(v), AdditiveCost(w)
        targets = [0.3, float(sum(w)) / 2 + 0.1, 1.1]
        burn_in = int(rng.randint(0, n_patients))
        window = None if trial % 3 else 3
        for delay in (0, 1, 2, 5):
            if delay >= n_patients:
                continue
            res = replay(probs, labels, value, cost, targets, delta=delta, burn_in=burn_in, window=window,
                         score=score, label_delay=delay)
            arrival = arrival_of(n_patients, delay)
            stream = list(zip(probs, labels))
            for t, c in enumerate(targets):
                thresholds, sets, fm = favmac_loop(probs, labels, value, cost, c, arrival, burn_in, delta=delta,
                                                   window=window, score=score)
                assert res.thresholds[t].tolist() == thresholds, (trial, delay, t)
                assert (res.selected[t] == sets).all()
                for n in range(burn_in, n_patients):
                    cal = oracle.arrived(stream, arrival, n, burn_in, window)
                    literal = (oracle.expected_threshold(cal, v, w, c, "ratio", score=score) if delta is None
                               else oracle.violation_threshold(cal, v, w, c, delta, "ratio", score=score))
                    assert res.thresholds[t, n - burn_in] == literal
                # the final thresholds use every patient of the file (all labels known by then)
                every = FavMac(value, cost, c, delta=delta, window=window, n_codes=len(v), score=score)
                for i in sorted(range(n_patients), key=lambda i: (burn_in - 1 if i < burn_in else arrival[i], i)):
                    every.update(probs[i], labels[i])
                assert res.final_thresholds[t] == every.threshold


@pytest.mark.parametrize("delta", [None, 0.15])
def test_random_per_patient_arrivals_with_groups_and_windows(delta):
    rng = np.random.RandomState(8)
    for trial in range(20):
        n_patients = int(rng.randint(6, 40))
        n_codes = int(rng.randint(1, 5))
        probs = rng.choice([0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0], size=(n_patients, n_codes))
        labels = rng.rand(n_patients, n_codes) < 0.4
        w = rng.choice([0.5, 1.0, 2.0], size=n_codes)
        value, cost = AdditiveValue(), AdditiveCost(w)
        given = np.arange(n_patients) + rng.randint(0, 12, size=n_patients)  # some beyond the stream
        burn_in = int(rng.randint(0, n_patients // 2))
        window = [None, 2, 5][trial % 3]
        groups = np.array(["a", "b"])[rng.randint(0, 2, size=n_patients)] if trial % 2 else None
        targets = [0.5, 1.3]
        res = replay(probs, labels, value, cost, targets, delta=delta, burn_in=burn_in, window=window, groups=groups,
                     label_available_at=given, score="price" if trial % 4 == 1 else "cost")
        for t, c in enumerate(targets):
            thresholds, sets, _ = favmac_loop(probs, labels, value, cost, c, given, burn_in, groups=groups, delta=delta,
                                              window=window, score=res.settings["score"])
            assert res.thresholds[t].tolist() == thresholds, (trial, t)
            assert (res.selected[t] == sets).all()
        # pending labels and calibration sizes, counted by hand
        for n in range(burn_in, n_patients):
            pending = sum(1 for i in range(burn_in, n) if given[i] >= n)
            arrived = burn_in + sum(1 for i in range(burn_in, n) if given[i] < n)
            assert res.labels_pending[n - burn_in] == pending
            assert res.calibration_sizes[n - burn_in] == (arrived if window is None else min(arrived, window))


def test_adaptive_target_moves_when_the_label_arrives():
    rng = np.random.RandomState(2)
    for trial in range(10):
        n_patients, n_codes = 30, 4
        probs = rng.choice([0.1, 0.25, 0.5, 0.75, 0.9], size=(n_patients, n_codes))
        labels = rng.rand(n_patients, n_codes) < 0.4
        v, w = np.ones(n_codes), rng.choice([0.5, 1.0, 1.5], size=n_codes)
        burn_in = 8
        if trial % 2:
            arrival = list(np.arange(n_patients) + rng.randint(0, 6, size=n_patients))
            kwargs = {"label_available_at": arrival}
        else:
            delay = int(rng.randint(0, 5))
            arrival, kwargs = arrival_of(n_patients, delay), {"label_delay": delay}
        window = None if trial % 3 else 6
        for score in ("cost", "price"):
            res = replay(probs, labels, AdditiveValue(v), AdditiveCost(w), [0.9, 1.4], burn_in=burn_in, window=window,
                         adaptive_rate=0.3, score=score, **kwargs)
            stream = list(zip(probs, labels))
            for t, c in enumerate([0.9, 1.4]):
                thresholds, targets = oracle.delayed_adaptive_session(stream, arrival, v, w, c, 0.3, "ratio", burn_in,
                                                                      window, score)
                assert res.thresholds[t].tolist() == thresholds
                assert res.adaptive_targets[t].tolist() == [float(x) for x in targets]


def test_no_delay_is_the_plain_replay_and_burn_in_is_labelled_from_the_start():
    rng = np.random.RandomState(0)
    probs, labels = rng.rand(120, 5), rng.rand(120, 5) < 0.3
    value, cost = AdditiveValue(), AdditiveCost()
    plain = replay(probs, labels, value, cost, [0.5, 1.0], burn_in=30)
    zero = replay(probs, labels, value, cost, [0.5, 1.0], burn_in=30, label_delay=0)
    assert (plain.thresholds == zero.thresholds).all() and (plain.cost == zero.cost).all()
    assert not plain.labels_pending.any() and plain.calibration_sizes.tolist() == list(range(30, 120))
    late = replay(probs, labels, value, cost, [0.5, 1.0], burn_in=30, label_delay=10)
    # the first ten predictions all see exactly the burn-in
    assert (late.thresholds[:, :11] == plain.thresholds[:, :1]).all()
    assert late.labels_pending[:12].tolist() == list(range(11)) + [10]
    assert "labels_pending" in late.to_frame().columns and "labels_pending" not in plain.to_frame().columns


def test_bad_delays_and_arrivals_are_refused_clearly():
    probs, labels = np.full((5, 2), 0.5), np.zeros((5, 2))
    args = (probs, labels, AdditiveValue(), AdditiveCost(), [1.0])
    with pytest.raises(ValueError, match="label_delay: a delay cannot be negative"):
        replay(*args, label_delay=-1)
    with pytest.raises(ValueError, match="label_delay: 5 stream positions is longer than the stream of 5 patients"):
        replay(*args, label_delay=5)
    with pytest.raises(ValueError, match="label_delay: expected a whole number"):
        replay(*args, label_delay=1.5)
    with pytest.raises(ValueError, match=r"label_available_at: the patient at row 4 \(the header is row 1; array index 2\) gets its labels at position 1, "
                                         "before its own position 2"):
        replay(*args, label_available_at=[0, 1, 1, 3, 4])
    with pytest.raises(ValueError, match="label_available_at: expected one arrival position per patient"):
        replay(*args, label_available_at=[0, 1])
    with pytest.raises(ValueError, match="give one of them"):
        replay(*args, label_delay=1, label_available_at=[0, 1, 2, 3, 4])
    with pytest.raises(ValueError, match="spec: a RunSpec says the whole run; leave burn_in unset"):
        from favmac.replay import replay_spec

        replay(*args[:2], replay_spec([1.0], label_delay=1), burn_in=1)


def test_a_spec_equals_the_keywords():
    from favmac.replay import replay_spec

    rng = np.random.RandomState(3)
    probs, labels = rng.rand(80, 4), rng.rand(80, 4) < 0.3
    args = (probs, labels, AdditiveValue(), AdditiveCost(), [0.7])
    by_keywords = replay(*args, delta=0.2, burn_in=20, window=30, label_delay=4, score="price")
    by_options = replay(probs, labels, replay_spec([0.7], delta=0.2, burn_in=20, window=30, label_delay=4, score="price"))
    assert (by_keywords.thresholds == by_options.thresholds).all()
    assert by_options.settings["label_delay"] == 4 and math.isfinite(by_options.calibration_sizes[0])
