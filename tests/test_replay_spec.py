"""replay and FavMac accept a RunSpec (the one carrier); the keyword forms build the same spec (favmac.replay.replay_spec)."""
import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, FavMac, RunSpec, replay, replay_spec


def _stream(n=300, k=4, seed=2):
    rng = np.random.RandomState(seed)
    y = rng.rand(n, k) < 0.3
    return np.clip(0.6 * y + 0.4 * rng.rand(n, k), 0, 1), y


@pytest.mark.parametrize("settings", [
    dict(burn_in=40),
    dict(delta=0.2, burn_in=10, window=80, score="price"),
    dict(burn_in=5, label_delay=7, c_max=6.5),
    dict(burn_in=20, recalibrate=100, recalibration="platt"),
])
def test_a_spec_runs_the_keywords_run(settings):
    p, y = _stream()
    w = np.array([1.0, 2.0, 0.5, 1.5])
    by_keywords = replay(p, y, AdditiveValue(w), AdditiveCost(w), [0.5, 1.2], **settings)
    spec = replay_spec([0.5, 1.2], **settings).replace(value_kind="weighted_tp", cost_kind="weighted_fp", weights=tuple(w))
    by_spec = replay(p, y, spec)
    assert np.array_equal(by_spec.thresholds, by_keywords.thresholds) and np.array_equal(by_spec.cost, by_keywords.cost)
    assert by_spec.settings == by_keywords.settings


def test_a_spec_is_validated_against_the_data_and_says_the_whole_run():
    p, y = _stream()
    with pytest.raises(ValueError, match="weights must hold one weight per code"):
        replay(p, y, RunSpec(value_kind="weighted_tp", weights=(1.0, 2.0), recalibrate=None))
    with pytest.raises(ValueError, match="leave window, score unset"):
        replay(p, y, RunSpec(recalibrate=None), window=5, score="cost")
    with pytest.raises(ValueError, match="groups: the spec is per segment"):
        replay(p, y, RunSpec(segment="plan", recalibrate=None))
    with pytest.raises(TypeError, match="give a RunSpec"):
        replay(p, y, AdditiveValue())
    big = np.repeat(p, 12, axis=0), np.repeat(y, 12, axis=0)  # 3,600 labelled patients: "auto" folds 1,000
    assert replay(*big, RunSpec(burn_in=100)).burn_in == 1100


def test_favmac_takes_a_spec():
    p, y = _stream()
    spec = RunSpec(targets=(1.0,), control="violation", delta=0.2, window=50)
    direct = FavMac(AdditiveValue(), AdditiveCost(), 1.0, delta=0.2, window=50)
    for fm in (FavMac(spec), FavMac.of(spec, codes=list("ABCD"))):
        fm.update(p[:100], y[:100])
        direct.reset().update(p[:100], y[:100])
        assert fm.threshold == direct.threshold and fm.score == direct.score
    with pytest.raises(ValueError, match="one target"):
        FavMac(RunSpec(targets=(1.0, 2.0)))
    with pytest.raises(ValueError, match="leave delta unset"):
        FavMac(spec, delta=0.1)
