"""Rules decided once and shared by RunSpec.validate, replay and FavMac (favmac.validation, favmac.runspec)."""
import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, FavMac, RunSpec, replay
from favmac.runspec import SettingsError, read_settings_json
from favmac.validation import check_c_max


def _stream(n=120, k=4, seed=0):
    rng = np.random.RandomState(seed)
    y = rng.rand(n, k) < 0.3
    return np.clip(0.6 * y + 0.4 * rng.rand(n, k), 0, 1), y


@pytest.mark.parametrize("bad", [-2, 0, float("inf"), float("nan"), "3", True])
def test_c_max_is_refused_by_every_entry_point(bad):
    p, y = _stream()
    with pytest.raises(ValueError, match="c_max: expected None"):
        check_c_max(bad)
    with pytest.raises(ValueError, match="c_max: expected None"):
        replay(p, y, AdditiveValue(), AdditiveCost(), [1.0], c_max=bad)
    with pytest.raises(ValueError, match="c_max: expected None"):
        FavMac(AdditiveValue(), AdditiveCost(), 1.0, c_max=bad)
    with pytest.raises(SettingsError, match="largest_cost expected None"):
        RunSpec(largest_cost=bad).validate()


def test_largest_cost_is_c_max_and_travels_in_the_settings_file():
    spec = RunSpec(largest_cost=10.0, targets=(6.0,)).validate(n_codes=4)  # 6 > 4 codes, but C_max is 10
    assert spec.c_max(4) == 10.0
    back = read_settings_json(spec.to_json()).spec
    assert back.largest_cost == 10.0
    with pytest.raises(SettingsError, match="C_max = 4"):
        RunSpec(targets=(6.0,)).validate(n_codes=4)


def test_score_of_a_result_is_the_runs_or_the_one_default():
    from types import SimpleNamespace

    from favmac.scores import default_score, result_score

    assert result_score(SimpleNamespace(settings={"score": "cost"}, delta=None, targets=[1.0])) == "cost"
    for delta in (None, 0.1):
        baseline = SimpleNamespace(settings={"universe": "ratio"}, delta=delta, targets=np.array([2.0]))
        assert result_score(baseline, [1.0, 1.0]) == default_score("ratio", delta, np.array([2.0]), [1.0, 1.0])
