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
    status = main(["predict", "--engine", "dask", "--settings", str(settings),
                   "--target", "1.1", "--new", str(tmp_path / "new"),
                   "--out", str(tmp_path / "chosen")])
    assert status == 0
    fm = FavMac(value, cost, 1.1, score="cost")  # the run's --score
    fm.update(probs, labels)
    chosen = pd.read_parquet(tmp_path / "chosen")
    assert chosen["codes"].tolist() == [";".join(f"C{k}" for k in np.flatnonzero(m)) for m in fm.predict(new.iloc[:, 1:].to_numpy())]
    status = main(["predict", "--engine", "dask", "--settings", str(settings),
                   "--target", "3", "--new", str(tmp_path / "new"),
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
    assert main(["predict", "--engine", "dask", "--settings", str(settings),
                 "--target", "1.2", "--new", str(tmp_path / "new"),
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
    assert main(["predict", "--engine", "dask", "--settings", str(settings),
                 "--target", "0.5", "--new", str(tmp_path / "new"),
                 "--out", str(tmp_path / "out")]) == 0
    written = pd.read_parquet(tmp_path / "out")
    assert written["note"].tolist() == ["", "segment 'tiny': " + too_small_reason(3, 0.5, 3)] * 2
    assert written.loc[written["plan" if "plan" in written else "segment"] == "tiny", "codes"].eq("").all()


# ----------------------------------------------------------------------------- choosing the engine


def _small_sets(tmp_path):
    """A labelled folder of two Parquet parts, a folder of new patients, and a single new-patients CSV."""
    probs, labels = tied_data(191, 80, 3, 1)
    write_parts(tmp_path / "cal", probs, labels, [40, 40])
    new = pd.DataFrame(tied_data(192, 10, 3, 1)[0], columns=["C0", "C1", "C2"])
    new.insert(0, "patient_id", [f"N{i}" for i in range(10)])
    os.makedirs(tmp_path / "new")
    new.to_parquet(tmp_path / "new" / "n.parquet", index=False)
    new.to_csv(tmp_path / "new.csv", index=False)
    return probs, labels, new


@pytest.mark.parametrize("which", ["calibration glob", "calibration folder", "new folder", "scheduler"])
def test_memory_engine_refuses_file_sets_and_says_to_pass_engine_dask(tmp_path, capsys, which):
    """No silent switch: the default engine (memory) refuses what only Dask reads, naming --engine dask
    and what it writes; nothing is written."""
    _small_sets(tmp_path)
    calibration = {"calibration glob": str(tmp_path / "cal" / "*.parquet"),
                   "calibration folder": str(tmp_path / "cal")}.get(which, str(tmp_path / "cal" / "part-001.parquet"))
    new = str(tmp_path / "new") if which == "new folder" else str(tmp_path / "new.csv")
    extra = {"scheduler": ["--scheduler", "synchronous"]}  # --settings is the run's settings file with either engine
    status = main(["predict", "--calibration", calibration, "--new", new, "--target", "1.1",
                   "--out", str(tmp_path / "out.csv"), *extra.get(which, [])])
    err = capsys.readouterr().err
    assert status == 2 and "Pass --engine dask" in err and "folder of Parquet parts" in err and "not as a CSV" in err
    assert ("the Dask engine only" in err) and not (tmp_path / "out.csv").exists()


def test_engine_dask_says_what_it_writes_where_and_equals_the_memory_engine(tmp_path, capsys):
    probs, labels, new = _small_sets(tmp_path)
    common = ["--target", "1.1", "--score", "cost"]
    assert main(["predict", "--engine", "dask", "--calibration", str(tmp_path / "cal"), "--new", str(tmp_path / "new"),
                 "--out", str(tmp_path / "chosen"), *common]) == 0
    captured = capsys.readouterr()
    assert f"the chosen sets go to the folder {tmp_path / 'chosen'} as Parquet parts" in captured.err
    assert f"wrote 10 patients as Parquet parts to {tmp_path / 'chosen'}" in captured.out
    assert sorted(os.listdir(tmp_path / "chosen")) == ["part-00000.parquet"]
    # the in-memory engine on one file of the same patients: the same sets
    pd.concat([pd.read_parquet(p) for p in sorted((tmp_path / "cal").iterdir())]).to_csv(tmp_path / "cal.csv", index=False)
    assert main(["predict", "--calibration", str(tmp_path / "cal.csv"), "--new", str(tmp_path / "new.csv"),
                 "--out", str(tmp_path / "chosen.csv"), *common]) == 0
    in_memory = pd.read_csv(tmp_path / "chosen.csv", keep_default_na=False)
    on_dask = pd.read_parquet(tmp_path / "chosen")
    assert on_dask["codes"].tolist() == in_memory["codes"].tolist()
    assert on_dask["threshold"].tolist() == in_memory["threshold"].tolist()
    fm = FavMac(AdditiveValue(), AdditiveCost(), 1.1, score="cost").update(probs, labels)  # the run's --score
    assert on_dask["threshold"].iloc[0] == fm.threshold


def test_engine_dask_refuses_standard_output(tmp_path, capsys):
    _small_sets(tmp_path)
    assert main(["predict", "--engine", "dask", "--calibration", str(tmp_path / "cal"), "--new", str(tmp_path / "new"),
                 "--target", "1.1", "--out", "-"]) == 2
    assert "cannot write to standard output" in capsys.readouterr().err
