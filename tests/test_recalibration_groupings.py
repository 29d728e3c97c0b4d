"""Per-code maps with any number of groupings (docs/method.md "Recalibration on a split": maps per segment need
exactly one grouping; per-code maps work with several)."""
import numpy as np
import pandas as pd
import pytest

from favmac import AdditiveCost, AdditiveValue, FavMac, RunSpec, replay
from favmac.cli import main
from favmac.methods import run_method
from favmac.recalibration import fit_recalibration
from favmac.runspec import SettingsError


def _stream(seed=0, n=700, k=5):
    rng = np.random.RandomState(seed)
    q = 1 / (1 + np.exp(-(rng.randn(n, k) * 1.5 - 1.5)))
    y = rng.rand(n, k) < q
    p = 1 / (1 + np.exp(-2.5 * np.log(q / (1 - q))))  # over-confident: the maps move every code
    plan = rng.choice(["P1", "P2", "P3"], n).astype(object)
    band = rng.choice(["<50", "50-74", "75+"], n).astype(object)
    return p, y, {"plan": plan, "band": band}


@pytest.mark.parametrize("delta", [None, 0.2])
def test_replay_with_two_groupings_equals_the_maps_then_the_replay(delta):
    p, y, groups = _stream()
    value, cost, size = AdditiveValue(np.linspace(0.5, 3, 5)), AdditiveCost(), 200
    result = replay(p, y, value, cost, [0.8, 1.5], delta=delta, burn_in=150, groups=groups, recalibrate=size)
    maps = fit_recalibration(p[:size], y[:size])  # the default map, on the fold only
    rest = {name: labels[size:] for name, labels in groups.items()}
    oracle = replay(maps.apply(p[size:]), y[size:], value, cost, [0.8, 1.5], delta=delta, burn_in=150, groups=rest)
    assert np.array_equal(result.thresholds, oracle.thresholds)
    assert np.array_equal(result.selected, oracle.selected)
    assert [g.name for g in result.groupings] == ["plan", "band"]
    assert result.burn_in == size + 150 and result.settings["recalibrate"] == size


def test_replay_equals_the_favmac_loop_with_two_groupings():
    p, y, groups = _stream(1, n=500)
    value, cost, size = AdditiveValue(np.linspace(0.5, 3, 5)), AdditiveCost(), 150
    result = replay(p, y, value, cost, [1.0], burn_in=100, groups=groups, recalibrate=size)
    model = FavMac(value, cost, 1.0, recalibrate=size)
    labels = list(zip(groups["plan"], groups["band"]))
    model.update(p[: size + 100], y[: size + 100], group=tuple(np.asarray(g[: size + 100]) for g in groups.values()))
    for i in range(size + 100, len(p)):
        chosen = model.predict(p[i], group=labels[i])
        assert np.array_equal(chosen, result.selected[0, i - size - 100]), i
        model.update(p[i], y[i], group=labels[i])


def test_runspec_and_run_method_accept_per_code_maps_with_several_columns():
    p, y, groups = _stream(2)
    spec = RunSpec(value_kind="tp", targets=(1.0,), burn_in=100, segment=("plan", "band"), recalibrate=200)
    spec = spec.validate(n_codes=5, n_patients=len(p))
    assert spec.recalibrate == 200 and spec.segment == ("plan", "band")
    result = run_method(spec, "favmac", p, y, groups=groups)
    assert result.burn_in == 300 and len(result.groupings) == 2
    with pytest.raises(SettingsError, match="recalibrate_by"):
        spec.replace(recalibrate_by="segment").validate(n_codes=5, n_patients=len(p))


def test_command_line_recalibrates_with_two_segment_columns(tmp_path, capsys):
    p, y, groups = _stream(3, n=600)
    frame = pd.DataFrame({"patient_id": [f"P{i}" for i in range(len(p))], "plan": groups["plan"], "band": groups["band"]})
    for k in range(p.shape[1]):
        frame[f"prob_{k}"], frame[f"label_{k}"] = p[:, k].round(4), y[:, k].astype(int)
    data = tmp_path / "wide.csv"
    frame.to_csv(data, index=False)
    out = tmp_path / "replay.csv"
    assert main(["replay", "--calibration", str(data), "--targets", "1.0", "--burn-in", "100", "--recalibrate", "200",
                 "--segment-column", "plan", "--segment-column", "band", "--out", str(out)]) == 0
    assert "Recalibrated (platt_tested) on the first 200 patients" in capsys.readouterr().out
    assert len(pd.read_csv(out)) == 600 - 300
