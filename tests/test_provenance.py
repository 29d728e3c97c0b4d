"""Provenance records, the drift & segments demo sample, and the command line's segments,
adaptive rate and provenance sidecar."""
from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd

from favmac import AdditiveCost, AdditiveValue, RunSpec, load_calibration, read_weights, replay
from favmac.adaptive import adaptive_bound
from favmac.cli import main
from favmac.provenance import PROVENANCE_FORMAT, digest, package_versions, provenance

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data"


def sha(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_provenance_record_and_stable_id():
    spec = RunSpec(value_kind="weighted_tp", weights=(1.0, 2.0), targets=(1.1,), segment="plan")
    one = provenance(spec, inputs={"a.csv": digest(b"x")}, codes=["A", "B"], cms={"model": "V28", "segment": "CNA"},
                     outputs={"o.csv": b"1"})
    two = provenance(spec, inputs={"a.csv": digest(b"x")}, codes=["A", "B"], cms={"model": "V28", "segment": "CNA"},
                     outputs={"o.csv": b"1"})
    assert one["format"] == PROVENANCE_FORMAT and one["provenance_id"] == two["provenance_id"]
    assert one["settings"]["weights"] == {"A": 1.0, "B": 2.0} and one["settings"]["run"]["segment"] == "plan"
    assert one["cms_hcc"] == {"model": "V28", "year": 2026, "segment": "CNA"}
    assert one["outputs"]["o.csv"] == hashlib.sha256(b"1").hexdigest()
    assert provenance(spec, inputs={"a.csv": digest(b"y")})["provenance_id"] != one["provenance_id"]
    versions = package_versions()
    assert versions["numpy"] == np.__version__ and versions["pandas"] == pd.__version__ and versions["python"]


def test_drift_sample_shows_both_effects():
    data = load_calibration(SAMPLE / "drift_calibration.csv")
    assert (data.n_patients, data.n_codes) == (3000, 12) and set(data.groups) == {"North", "South", "East"}
    w = read_weights(SAMPLE / "drift_weights.csv", data.codes)["weight"].to_numpy()
    value, cost = AdditiveValue(w), AdditiveCost(w)
    p, y, g = data.prob_array(), data.label_array(), data.groups
    plain = replay(p, y, value, cost, [1.0], burn_in=500)
    adaptive = replay(p, y, value, cost, [1.0], burn_in=500, adaptive_rate=0.05)
    assert plain.cost[0, 1000:].mean() > 1.3  # the second half drifts
    assert adaptive.cost.mean() <= float(adaptive_bound(1.0, 0.05, 10.2, 2500))
    first = slice(0, 1500)  # before the drift: East's over-confidence is the only problem
    pooled = replay(p[first], y[first], value, cost, [1.0], burn_in=500)
    grouped = replay(p[first], y[first], value, cost, [1.0], burn_in=500, groups=g[first])
    east = g[500:1500] == "East"
    assert pooled.cost[0, east].mean() > 1.2 and grouped.cost[0, east].mean() < pooled.cost[0, east].mean() - 0.2
    script_spec = importlib.util.spec_from_file_location("make_sample_data", ROOT / "scripts" / "make_sample_data.py")
    script = importlib.util.module_from_spec(script_spec)
    script_spec.loader.exec_module(script)
    assert script.DRIFT_CODES == data.codes


def test_drift_sample_regenerates_identically(tmp_path):
    script_spec = importlib.util.spec_from_file_location("make_sample_data", ROOT / "scripts" / "make_sample_data.py")
    script = importlib.util.module_from_spec(script_spec)
    script_spec.loader.exec_module(script)
    script.make_drift(tmp_path, 2023)
    for name in ("drift_calibration.csv", "drift_new_patients.csv", "drift_weights.csv"):
        assert sha(tmp_path / name) == sha(SAMPLE / name), name
        assert (SAMPLE / name).stat().st_size < 1024 * 1024


def test_cli_replay_per_segment_with_provenance(tmp_path, capsys):
    out = tmp_path / "replay.csv"
    code = main(["replay", "--calibration", str(SAMPLE / "drift_calibration.csv"), "--weights",
                 str(SAMPLE / "drift_weights.csv"), "--cost", "weighted_fp", "--targets", "1.0", "--burn-in", "500",
                 "--segment-column", "segment", "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "per segment" in printed and "East" in printed
    frame = pd.read_csv(out)
    assert set(frame["segment"]) == {"North", "South", "East"}
    doc = json.loads(Path(f"{out}.provenance.json").read_text())
    assert doc["inputs"] == {"drift_calibration.csv": sha(SAMPLE / "drift_calibration.csv"),
                             "drift_weights.csv": sha(SAMPLE / "drift_weights.csv")}
    assert doc["outputs"] == {"replay.csv": sha(out)} and doc["settings"]["run"]["segment"] == "segment"


def test_cli_adaptive_rate(tmp_path, capsys):
    out = tmp_path / "replay.csv"
    args = ["replay", "--calibration", str(SAMPLE / "drift_calibration.csv"), "--targets", "1.1", "--burn-in", "500",
            "--out", str(out)]
    assert main(args + ["--adaptive-rate", "0.05"]) == 0
    frame = pd.read_csv(out)
    assert frame["adaptive_target"].iloc[0] == 1.1 and frame["cost"].mean() <= float(adaptive_bound(1.1, 0.05, 12, 2500))
    assert main(args + ["--adaptive-rate", "0.05", "--delta", "0.1"]) == 2
    assert "--adaptive-rate applies to expected-cost control only" in capsys.readouterr().err


def test_cli_predict_uses_each_segments_threshold(tmp_path, capsys):
    new = tmp_path / "new.csv"
    frame = pd.read_csv(SAMPLE / "drift_new_patients.csv", dtype={"segment": str})
    frame.loc[0, "segment"] = "West"  # not in the calibration data
    frame.to_csv(new, index=False)
    out = tmp_path / "sets.csv"
    code = main(["predict", "--calibration", str(SAMPLE / "drift_calibration.csv"), "--new", str(new),
                 "--target", "1.1", "--segment-column", "segment", "--out", str(out)])
    assert code == 0
    sets = pd.read_csv(out, keep_default_na=False)
    assert sets.loc[0, "segment"] == "West" and sets.loc[0, "n_codes"] == 0
    assert "not in the calibration data" in sets.loc[0, "note"]
    east = sets[sets["segment"] == "East"]
    assert east["threshold"].nunique() == 1 and east["threshold"].iloc[0] != sets[sets["segment"] == "North"]["threshold"].iloc[0]
    assert Path(f"{out}.provenance.json").exists()
    missing = main(["predict", "--calibration", str(SAMPLE / "hcc_calibration.csv"), "--new",
                    str(SAMPLE / "hcc_new_patients.csv"), "--target", "1.1", "--segment-column", "plan", "--out",
                    str(out)])
    assert missing == 2 and "no column named 'plan'" in capsys.readouterr().err
