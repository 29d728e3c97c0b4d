"""The command line on the distributed engine: favmac calibrate, favmac predict --engine dask."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

from dist_helpers import tied_data, tree_thresholds, wide_frame, write_parts  # noqa: E402

from favmac import AdditiveCost, AdditiveValue, FavMac  # noqa: E402
from favmac.cli import main  # noqa: E402


def test_cli_calibrate_writes_settings_that_predict_loads(tmp_path, capsys):
    from favmac.runspec import read_settings_json

    probs, labels = tied_data(101, 300, 5, 2)
    weights = np.array([1.5, 0.25, 2.0, 1.0, 0.75])
    write_parts(tmp_path / "cal", probs, labels, [0, 1, 150, 149])
    pd.DataFrame({"code": [f"C{k}" for k in range(5)], "weight": weights}).to_csv(tmp_path / "w.csv", index=False)
    settings = tmp_path / "run.json"
    status = main(["calibrate", "--data", str(tmp_path / "cal" / "*.parquet"), "--weights", str(tmp_path / "w.csv"),
                   "--value", "weighted_tp", "--cost", "weighted_fp", "--score", "cost", "--targets", "0.5,1.1,2.25",
                   "--scheduler", "synchronous", "--settings-out", str(settings)])
    out = capsys.readouterr().out
    assert status == 0 and "300 patients x 5 codes" in out
    value, cost = AdditiveValue(weights), AdditiveCost(weights)
    want = tree_thresholds(probs, labels, value, cost, [0.5, 1.1, 2.25], score="cost")
    loaded = read_settings_json(settings.read_bytes(), codes=[f"C{k}" for k in range(5)], extras=("calibration",))
    assert loaded.spec.cost_kind == "weighted_fp" and loaded.spec.targets == (0.5, 1.1, 2.25)
    assert [float(t) for t in loaded.extras["calibration"]["thresholds"]] == want.tolist()

    new = pd.DataFrame(tied_data(102, 50, 5, 2)[0], columns=[f"C{k}" for k in range(5)])
    new.insert(0, "patient_id", [f"N{i}" for i in range(50)])
    os.makedirs(tmp_path / "new")
    new.to_parquet(tmp_path / "new" / "part-0.parquet", index=False)
    status = main(["predict", "--settings", str(settings), "--target", "1.1", "--new", str(tmp_path / "new"),
                   "--out", str(tmp_path / "chosen")])
    assert status == 0
    fm = FavMac(value, cost, 1.1)
    fm.update(probs, labels)
    chosen = pd.read_parquet(tmp_path / "chosen")
    assert chosen["codes"].tolist() == [";".join(f"C{k}" for k in np.flatnonzero(m)) for m in fm.predict(new.iloc[:, 1:].to_numpy())]
    status = main(["predict", "--settings", str(settings), "--target", "3", "--new", str(tmp_path / "new"),
                   "--out", str(tmp_path / "chosen3")])
    assert status == 2 and "calibrated for targets 0.5, 1.1, 2.25 only" in capsys.readouterr().err
    assert not (tmp_path / "chosen3").exists()

def test_cli_segments_round_trip(tmp_path, capsys):

    probs, labels = tied_data(131, 200, 4, 1)
    plans = np.array(["a", "b", "c"], dtype=object)[np.arange(200) % 3]
    frame = wide_frame(probs, labels)
    frame.insert(1, "plan", plans)
    os.makedirs(tmp_path / "cal")
    frame.iloc[:90].to_parquet(tmp_path / "cal" / "p0.parquet", index=False)
    frame.iloc[90:].to_parquet(tmp_path / "cal" / "p1.parquet", index=False)
    settings = tmp_path / "run.json"
    assert main(["calibrate", "--data", str(tmp_path / "cal"), "--segment-column", "plan", "--score", "cost",
                 "--targets", "0.6,1.2", "--delta", "0.2", "--scheduler", "synchronous",
                 "--settings-out", str(settings)]) == 0
    assert "plan=a (n=67)" in capsys.readouterr().out
    new = pd.DataFrame(tied_data(132, 30, 4, 1)[0], columns=[f"C{k}" for k in range(4)])
    new.insert(0, "patient_id", [f"N{i}" for i in range(30)])
    new.insert(1, "plan", ["a", "b", "c", "d", "a"] * 6)
    new.to_parquet(tmp_path / "new.parquet", index=False)
    os.makedirs(tmp_path / "new")
    os.replace(tmp_path / "new.parquet", tmp_path / "new" / "new.parquet")
    assert main(["predict", "--settings", str(settings), "--target", "1.2", "--new", str(tmp_path / "new"),
                 "--out", str(tmp_path / "out")]) == 0
    fm = FavMac(AdditiveValue(), AdditiveCost(), 1.2, delta=0.2).update(probs, labels, group=plans)
    masks = fm.predict(new.iloc[:, 2:].to_numpy(), group=new["plan"].to_numpy(dtype=object))
    written = pd.read_parquet(tmp_path / "out")
    assert written["codes"].tolist() == [";".join(f"C{k}" for k in np.flatnonzero(m)) for m in masks]
    assert written["segment"].tolist() == new["plan"].tolist()

def test_cli_predict_notes_a_too_small_segment_from_the_settings(tmp_path, capsys):
    from favmac.segments import too_small_reason

    probs, labels = tied_data(181, 80, 3, 1)
    frame = wide_frame(probs, labels)
    frame.insert(1, "plan", ["a"] * 77 + ["tiny"] * 3)
    os.makedirs(tmp_path / "cal")
    frame.to_parquet(tmp_path / "cal" / "p0.parquet", index=False)
    settings = tmp_path / "run.json"
    assert main(["calibrate", "--data", str(tmp_path / "cal"), "--segment-column", "plan", "--score", "cost",
                 "--targets", "0.5", "--scheduler", "synchronous", "--settings-out", str(settings)]) == 0
    new = pd.DataFrame(tied_data(182, 4, 3, 1)[0], columns=["C0", "C1", "C2"])
    new.insert(0, "patient_id", ["N0", "N1", "N2", "N3"])
    new.insert(1, "plan", ["a", "tiny", "a", "tiny"])
    os.makedirs(tmp_path / "new")
    new.to_parquet(tmp_path / "new" / "n.parquet", index=False)
    assert main(["predict", "--settings", str(settings), "--target", "0.5", "--new", str(tmp_path / "new"),
                 "--out", str(tmp_path / "out")]) == 0
    written = pd.read_parquet(tmp_path / "out")
    assert written["note"].tolist() == ["", "segment 'tiny': " + too_small_reason(3, 0.5, 3)] * 2
    assert written.loc[written["plan" if "plan" in written else "segment"] == "tiny", "codes"].eq("").all()
