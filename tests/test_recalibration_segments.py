"""Recalibration per segment (favmac.recalibration.SegmentRecalibration; recalibrate_by="segment")."""
import json
import math

import numpy as np
import pandas as pd
import pytest

from favmac import AdditiveCost, AdditiveValue, FavMac, RunSpec, predict_with_threshold, replay
from favmac.export import new_patient_sets, stream_sets
from favmac.recalibration import (
    MIN_SEGMENT_CLASS,
    Recalibration,
    SegmentRecalibration,
    as_recalibration,
    calibration_error,
    fit_recalibration,
    recalibration_of,
)
from favmac.runspec import SettingsError, read_settings_json


def _stream(seed, n=1200, k=5, shifted=0.35, shift=2.0):
    """True q, y ~ Bernoulli(q), segments "a"/"b" (b a fraction ``shifted``), and p whose logit is
    shifted up by ``shift`` for segment b only (a miscalibrated subgroup)."""
    rng = np.random.RandomState(seed)
    logit_q = rng.randn(n, k) * 1.5 - 1.5
    q = 1 / (1 + np.exp(-logit_q))
    y = rng.rand(n, k) < q
    groups = np.where(rng.rand(n) < shifted, "b", "a").astype(object)
    p = 1 / (1 + np.exp(-(logit_q + shift * (groups == "b")[:, None])))
    return p, y, groups, AdditiveValue(rng.rand(k) * 5 + 0.5), AdditiveCost()


def _write_wide(path, p, y, groups) -> list:
    """A one-file calibration CSV (patient_id, segment, prob_<code>, label_<code>); returns the codes."""
    codes = [f"C{k}" for k in range(p.shape[1])]
    frame = pd.DataFrame({"patient_id": [f"P{i}" for i in range(len(p))], "segment": groups})
    for k, code in enumerate(codes):
        frame[f"prob_{code}"] = p[:, k]
        frame[f"label_{code}"] = y[:, k].astype(int)
    frame.to_csv(path, index=False)
    return codes


# ---------------------------------------------------------------------- the maps
def test_segment_maps_follow_the_rule():
    p, y, groups, _, _ = _stream(0, n=600)
    groups[:3] = "tiny"  # a segment with 3 fold patients: every code falls back to the pooled map
    maps = fit_recalibration(p, y, "platt", by="segment", groups=groups, codes=list("ABCDE"))
    assert isinstance(maps, SegmentRecalibration)
    assert maps.pooled == fit_recalibration(p, y, "platt", codes=list("ABCDE"))
    for label in ("a", "b", "tiny"):
        rows = groups == label
        positives = y[rows].sum(axis=0)
        alone = fit_recalibration(p[rows], y[rows], "platt", codes=list("ABCDE"))
        expected = (positives >= MIN_SEGMENT_CLASS) & (rows.sum() - positives >= MIN_SEGMENT_CLASS) & ~alone.fallback
        assert maps.own[label].tolist() == expected.tolist()
        assert maps.segments[label] == alone
        mapped = maps.apply(p[rows], groups=groups[rows])
        assert np.array_equal(mapped[:, expected], alone.apply(p[rows])[:, expected])
        assert np.array_equal(mapped[:, ~expected], maps.pooled.apply(p[rows])[:, ~expected])
    assert not maps.own["tiny"].any() and maps.own["a"].any()
    # a segment the fold never saw uses the pooled maps
    assert np.array_equal(maps.apply(p[:4], groups=["new"] * 4), maps.pooled.apply(p[:4]))
    assert np.array_equal(maps.apply(p[0], groups="a"), maps.apply(p[:1], groups=["a"])[0])


def test_segment_maps_repair_the_shifted_subgroup():
    p, y, groups, _, _ = _stream(1, n=4000)
    fold, rest = slice(0, 2000), slice(2000, None)
    pooled = fit_recalibration(p[fold], y[fold], "platt")
    by_segment = fit_recalibration(p[fold], y[fold], "platt", by="segment", groups=groups[fold])
    shifted = groups[rest] == "b"
    error = {name: calibration_error(maps.apply(p[rest], groups=groups[rest])[shifted], y[rest][shifted])["ece"].mean()
             for name, maps in (("pooled", pooled), ("segment", by_segment))}
    raw = calibration_error(p[rest][shifted], y[rest][shifted])["ece"].mean()
    assert error["segment"] < 0.5 * error["pooled"] and error["segment"] < 0.3 * raw


def test_dict_round_trip_and_bad_dicts():
    p, y, groups, _, _ = _stream(2, n=600)
    maps = fit_recalibration(p, y, "isotonic", by="segment", groups=groups, codes=list("ABCDE"))
    doc = json.loads(json.dumps(maps.to_dict()))
    assert doc["by"] == "segment" and [s["segment"] for s in doc["segments"]] == ["a", "b"]
    again = as_recalibration(doc, codes=list("ABCDE"))
    assert isinstance(again, SegmentRecalibration) and again == maps
    assert np.array_equal(again.apply(p, groups=groups), maps.apply(p, groups=groups))
    with pytest.raises(ValueError, match=r"recalibration_maps.by"):
        Recalibration.from_dict(doc)
    bad = json.loads(json.dumps(doc))
    bad["segments"][1]["own"] = [True]
    with pytest.raises(ValueError, match=r"segments\[1\].own: expected 5 true/false"):
        as_recalibration(bad)
    bad = json.loads(json.dumps(doc))
    bad["segments"][0]["maps"]["maps"][0]["prevalence"] = 2
    with pytest.raises(ValueError, match=r"segments\[0\]: recalibration_maps.maps\[0\].prevalence"):
        as_recalibration(bad)
    bad = json.loads(json.dumps(doc))
    bad["segments"][1]["segment"] = "a"
    with pytest.raises(ValueError, match="appears twice"):
        as_recalibration(bad)


def test_errors_name_the_setting():
    p, y, groups, v, c = _stream(3, n=400)
    with pytest.raises(ValueError, match="recalibrate_by: expected one of code, segment"):
        fit_recalibration(p, y, by="plan")
    with pytest.raises(ValueError, match="recalibrate_by: 'segment' needs each fold patient's segment"):
        fit_recalibration(p, y, by="segment")
    maps = fit_recalibration(p, y, by="segment", groups=groups)
    with pytest.raises(ValueError, match="groups: these maps were fitted per segment"):
        maps.apply(p)
    with pytest.raises(ValueError, match="recalibrate_by: 'segment' needs segments"):
        replay(p, y, v, c, [1.0], recalibrate=100, recalibrate_by="segment")
    with pytest.raises(ValueError, match="exactly one grouping"):
        replay(p, y, v, c, [1.0], recalibrate=100, recalibrate_by="segment", groups=[groups, groups])
    fm = FavMac(v, c, 1.0, recalibrate=100, recalibrate_by="segment")
    with pytest.raises(ValueError, match="group: recalibrate_by='segment' needs each patient's segment"):
        fm.update(p[:10], y[:10])
    with pytest.raises(ValueError, match="recalibrate_by: expected one of"):
        FavMac(v, c, 1.0, recalibrate=100, recalibrate_by="segments")
    with pytest.raises(SettingsError, match="recalibrate_by"):
        RunSpec(recalibrate=100, recalibrate_by="segment").validate(5, 400)  # no segment column
    with pytest.raises(SettingsError, match="recalibrate_by"):
        RunSpec(recalibrate=100, recalibrate_by="segment", segment=("plan", "band")).validate(5, 400)
    with pytest.raises(SettingsError, match="recalibrate_by"):
        RunSpec(recalibrate_by="by-code").validate(5, 400)


# ---------------------------------------------------------------------- replay, FavMac, the fold
def test_replay_equals_the_favmac_loop():
    p, y, groups, v, c = _stream(4, n=700)
    res = replay(p, y, v, c, [0.6], recalibrate=300, burn_in=100, groups=groups, recalibrate_by="segment",
                 score="price")
    fm = FavMac(v, c, 0.6, recalibrate=300, recalibrate_by="segment", score="price")
    fm.update(p[:250], y[:250], group=groups[:250])  # a batch that stops inside the fold
    fm.update(p[250:400], y[250:400], group=groups[250:400])  # one that crosses its end
    for n in range(400, 700):
        assert np.array_equal(fm.predict(p[n], group=groups[n]), res.selected[0, n - 400])
        assert fm.threshold_for(groups[n]) == res.thresholds[0, n - 400]
        fm.update(p[n], y[n], group=groups[n])
    assert fm.recalibration_maps == recalibration_of(res)
    assert res.settings["recalibrate_by"] == "segment" and res.burn_in == 400
    # a group tuple of one grouping is the same as the label
    tup = FavMac(v, c, 0.6, recalibrate=300, recalibrate_by="segment", score="price")
    tup.update(p[:400], y[:400], group=(groups[:400],))
    assert tup.recalibration_maps == fm.recalibration_maps


def test_maps_depend_on_the_fold_only():
    p, y, groups, v, c = _stream(5, n=600)
    base = replay(p, y, v, c, [1.0], recalibrate=200, burn_in=50, groups=groups, recalibrate_by="segment")
    later = y.copy()
    later[200:] = ~later[200:]  # every label after the fold changes
    moved = groups.copy()
    moved[200:] = "a"  # and every segment after the fold
    other = replay(p, later, v, c, [1.0], recalibrate=200, burn_in=50, groups=moved, recalibrate_by="segment")
    assert base.settings["recalibration_maps"] == other.settings["recalibration_maps"]
    changed = y.copy()
    changed[199] = ~changed[199]  # a fold patient's label does move them
    assert replay(p, changed, v, c, [1.0], recalibrate=200, burn_in=50, groups=groups,
                  recalibrate_by="segment").settings["recalibration_maps"] != base.settings["recalibration_maps"]
    assert base.group_sizes == {"a": int((groups[200:] == "a").sum()), "b": int((groups[200:] == "b").sum())}


@pytest.mark.parametrize("method", ["platt", "isotonic"])
def test_guarantees_hold_over_many_orderings(method):
    """Exchangeable stream, maps per segment, Mondrian control: for each ordering the last patient's
    cost and violation; means over 150 orderings within 3 standard errors of c and delta, per segment too."""
    p, y, groups, v, c = _stream(6, n=3000, k=6)
    target, delta, orderings = 1.0, 0.1, 150
    costs, violations, last_group = [], [], []
    for seed in range(orderings):
        order = np.random.RandomState(seed).permutation(3000)[:500]
        common = dict(recalibrate=200, recalibration=method, recalibrate_by="segment", groups=groups[order],
                      burn_in=299)
        exp = replay(p[order], y[order], v, c, [target], score="price", **common)
        costs.append(exp.cost[0, -1])
        vio = replay(p[order], y[order], v, c, [target], delta=delta, score="cost", **common)
        violations.append(vio.violations[0, -1])
        last_group.append(groups[order[-1]])
    costs, violations, last_group = np.array(costs), np.array(violations), np.array(last_group)
    assert costs.mean() <= target + 3 * costs.std() / math.sqrt(orderings)
    assert violations.mean() <= delta + 3 * math.sqrt(delta * (1 - delta) / orderings)
    for label in ("a", "b"):
        mine = last_group == label
        assert costs[mine].mean() <= target + 3 * costs.std() / math.sqrt(mine.sum())
        assert violations[mine].mean() <= delta + 3 * math.sqrt(delta * (1 - delta) / mine.sum())


# ---------------------------------------------------------------------- new patients, export, RunSpec, CLI
def test_new_patients_and_export_use_each_segment_maps():
    p, y, groups, v, c = _stream(7, n=800)
    res = replay(p, y, v, c, [1.0], recalibrate=300, burn_in=200, groups=groups, recalibrate_by="segment",
                 score="price")
    maps = recalibration_of(res)
    frame = stream_sets(res, p, y, v, c)  # the expected value is on each patient's own segment's maps
    mapped = maps.apply(p[500:], groups=groups[500:])
    assert np.allclose(frame["expected_value"], (res.selected[0] * mapped * v.weights_for(5)).sum(axis=1))
    assert not np.allclose(frame["expected_value"],
                           (res.selected[0] * maps.pooled.apply(p[500:]) * v.weights_for(5)).sum(axis=1))
    new_p, _, new_groups, _, _ = _stream(8, n=40)
    codes = [f"C{k}" for k in range(5)]
    new = pd.DataFrame(new_p, columns=codes, index=[f"N{i}" for i in range(40)])
    out = new_patient_sets(new, res, v, c, groups=new_groups)
    thresholds = np.array([res.group_thresholds[g][0] for g in new_groups])
    expected = predict_with_threshold(new_p, v, c, thresholds, score="price", recalibration=maps.to_dict(),
                                      groups=new_groups)
    assert out["codes"].tolist() == [";".join(np.array(codes)[row]) for row in expected]
    with pytest.raises(ValueError, match="groups: these maps were fitted per segment"):
        predict_with_threshold(new_p, v, c, 1.0, score="price", recalibration=maps)


def test_runspec_round_trip_and_method_registry():
    from favmac.methods import run_method

    spec = RunSpec(value_kind="weighted_tp", weights=(1, 2, 3, 4, 5), targets=(1.0,), burn_in=100, recalibrate=200,
                   recalibrate_by="segment", segment="plan").validate(5, 600)
    back = read_settings_json(spec.to_json(list("ABCDE")), codes=list("ABCDE")).spec
    assert back.recalibrate_by == "segment" and back.segment == "plan"
    assert "recalibrate_by" not in json.loads(RunSpec(recalibrate=200).to_json())["settings"]
    p, y, groups, _, _ = _stream(9, n=600)
    res = run_method(spec, "favmac_price", p, y, groups=groups)
    direct = replay(p, y, AdditiveValue([1, 2, 3, 4, 5]), AdditiveCost(), [1.0], burn_in=100, recalibrate=200,
                    recalibrate_by="segment", groups=groups, score="price")
    assert np.array_equal(res.selected, direct.selected)
    assert res.settings["recalibration_maps"] == direct.settings["recalibration_maps"]


def test_cli_recalibrate_by_segment(tmp_path, capsys):
    from favmac.cli import main

    p, y, groups, _, _ = _stream(10, n=600)
    codes = _write_wide(tmp_path / "cal.csv", p, y, groups)
    out = tmp_path / "steps.csv"
    assert main(["replay", "--calibration", str(tmp_path / "cal.csv"), "--targets", "1", "--burn-in", "100",
                 "--recalibrate", "200", "--recalibrate-by", "segment", "--segment-column", "segment",
                 "--out", str(out)]) == 0
    assert "Recalibrated (platt_tested) on the first 200 patients (no prediction, not calibration), per segment (" in \
        capsys.readouterr().out
    code = main(["replay", "--calibration", str(tmp_path / "cal.csv"), "--targets", "1", "--burn-in", "100",
                 "--recalibrate", "200", "--recalibrate-by", "segment", "--out", str(out)])
    assert code == 2
    assert "--recalibrate-by 'segment' fits maps per group of one segment column" in capsys.readouterr().err


def test_cli_predict_applies_each_new_patient_segment_maps(tmp_path, capsys):
    from favmac.cli import main

    p, y, groups, _, _ = _stream(11, n=600)
    codes = _write_wide(tmp_path / "cal.csv", p, y, groups)
    new_p, _, new_groups, _, _ = _stream(12, n=30)
    new = pd.DataFrame({"patient_id": [f"N{i}" for i in range(30)], "segment": new_groups})
    for k, code in enumerate(codes):
        new[code] = new_p[:, k]
    new.to_csv(tmp_path / "new.csv", index=False)
    out = tmp_path / "sets.csv"
    assert main(["predict", "--calibration", str(tmp_path / "cal.csv"), "--new", str(tmp_path / "new.csv"),
                 "--target", "1", "--recalibrate", "200", "--recalibrate-by", "segment", "--segment-column", "segment",
                 "--out", str(out)]) == 0
    capsys.readouterr()
    written = pd.read_csv(out, dtype={"codes": str}, keep_default_na=False)
    # the CLI's in-memory predict: the whole file calibrates (burn-in N - R), new patients use the final thresholds
    res = replay(p, y, AdditiveValue(), AdditiveCost(), [1.0], burn_in=400, recalibrate=200, groups=groups,
                 recalibrate_by="segment", codes=codes)
    thresholds = np.array([res.group_thresholds[g][0] for g in new_groups])
    expected = predict_with_threshold(new_p, AdditiveValue(), AdditiveCost(), thresholds, score="price",
                                      recalibration=recalibration_of(res), groups=new_groups)
    assert written["codes"].tolist() == [";".join(np.array(codes)[row]) for row in expected]


def test_cli_distributed_engine_refuses_maps_per_segment(tmp_path, capsys):
    from favmac.cli import main

    p, y, groups, _, _ = _stream(13, n=400)
    _write_wide(tmp_path / "cal.csv", p, y, groups)
    code = main(["calibrate", "--data", str(tmp_path / "cal.csv"), "--targets", "1", "--recalibrate", "100",
                 "--recalibrate-by", "segment", "--segment-column", "segment", "--settings-out",
                 str(tmp_path / "s.json")])
    assert code != 0
    assert "fits one recalibration map per code only; --recalibrate-by segment is not available" in \
        capsys.readouterr().err
