"""favmac.distributed with several segment columns (docs/method.md "Several groupings at once"): every group of
every grouping gets its final threshold exactly as the in-memory replay's, and predict uses the
smallest of each patient's groups' thresholds."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

from dist_helpers import tied_data, wide_frame  # noqa: E402

from favmac import AdditiveCost, AdditiveValue, DataError, FavMac, replay  # noqa: E402
from favmac.distributed import calibrate, predict  # noqa: E402
from favmac.export import new_patient_sets  # noqa: E402


def _cohort(seed, n, k):
    probs, labels = tied_data(seed, n, k, 1)
    rng = np.random.default_rng(seed + 1)
    plans = rng.choice(np.array(["A", "B", "C", "tiny"], dtype=object), size=n, p=[0.45, 0.35, 0.17, 0.03])
    bands = rng.choice(np.array(["<50", "50-74", "75+", "A"], dtype=object), size=n, p=[0.4, 0.35, 0.2, 0.05])
    return probs, labels, plans, bands


def _write(folder, probs, labels, plans, bands, sizes, fmt="parquet"):
    os.makedirs(folder)
    start = 0
    for i, size in enumerate(sizes):
        frame = wide_frame(probs[start:start + size], labels[start:start + size], first_id=start)
        frame.insert(1, "plan", plans[start:start + size].astype(str))
        frame.insert(2, "band", bands[start:start + size].astype(str))
        path = os.path.join(folder, f"part-{i}.{fmt}")
        frame.to_parquet(path, index=False) if fmt == "parquet" else frame.to_csv(path, index=False)
        start += size


@pytest.mark.parametrize("delta,score,fmt", [(None, "cost", "parquet"), (0.2, "cost", "csv"), (None, "price", "parquet"),
                                             (0.1, "cost", "parquet")])
def test_each_grouping_matches_the_in_memory_replay_exactly(tmp_path, delta, score, fmt):
    n, k = 300, 5
    probs, labels, plans, bands = _cohort(7 if delta is None else 8, n, k)
    weights = np.array([1.0, 0.5, 2.0, 1.5, 1.0])
    value, cost = AdditiveValue(weights), AdditiveCost(weights)
    _write(tmp_path / "cal", probs, labels, plans, bands, [0, 1, 140, 159], fmt)
    targets = [0.5, 1.0, 2.5, 4.0]
    pooled, by_grouping, details = calibrate(str(tmp_path / "cal"), value, cost, targets, delta=delta, score=score,
                                             segment=["plan", "band"], scheduler="synchronous", return_details=True)
    memory = replay(probs, labels, value, cost, targets, delta=delta, score=score, burn_in=n,
                    groups={"plan": plans, "band": bands})
    assert np.array_equal(pooled, memory.final_thresholds)
    assert list(by_grouping) == ["plan", "band"]
    for grouping in memory.groupings:
        got = by_grouping[grouping.name]
        assert sorted(got) == sorted(grouping.final_thresholds)
        for label, values in grouping.final_thresholds.items():
            assert np.array_equal(got[label], values), (grouping.name, label)  # exact, +-inf included
        assert details["segment_sizes"][grouping.name] == {g: int(s) for g, s in grouping.sizes.items()}
    assert "A" in by_grouping["plan"] and "A" in by_grouping["band"]  # a label shared by two groupings stays apart

    # predict: the smallest of the patient's groups' thresholds, as FavMac.threshold_for((plan, band))
    new_probs, _ = tied_data(99, 48, k, 1)
    new = pd.DataFrame(new_probs, columns=[f"C{j}" for j in range(k)])
    new.insert(0, "patient_id", [f"N{i}" for i in range(48)])
    new.insert(1, "plan", (["A", "B", "C", "platinum"] * 12))
    new.insert(2, "band", (["<50", "50-74", "75+"] * 16))
    new.to_parquet(tmp_path / "new.parquet", index=False)
    t = 1
    chosen = {column: {label: float(v[t]) for label, v in by_label.items()} for column, by_label in by_grouping.items()}
    predict(str(tmp_path / "new.parquet"), value, cost, chosen, tmp_path / "out", score=score, delta=delta,
            target=targets[t], segment=["plan", "band"], segment_sizes=details["segment_sizes"],
            scheduler="synchronous")
    written = pd.read_parquet(tmp_path / "out").set_index("patient_id").loc[new["patient_id"]]
    tree = FavMac(value, cost, targets[t], delta=delta, score=score).update(probs, labels, group=(plans, bands))
    groups = list(zip(new["plan"], new["band"]))
    seen = np.array([p != "platinum" for p, _ in groups])
    want = np.array([tree.threshold_for(g) if s else -np.inf for g, s in zip(groups, seen)])
    np.testing.assert_allclose(written["threshold"].to_numpy(), want, rtol=1e-11)
    masks = tree.predict(new_probs[seen], group=(new["plan"].to_numpy(dtype=object)[seen],
                                                 new["band"].to_numpy(dtype=object)[seen]))
    assert written["codes"][seen].tolist() == [";".join(f"C{j}" for j in np.flatnonzero(m)) for m in masks]
    assert (written["codes"][~seen] == "").all()
    assert written["note"][~seen].str.contains("plan 'platinum' is not in the calibration data").all()
    assert written["segment"].iloc[0] == "plan=A; band=<50"
    # the same table as the in-memory export of the replay's result
    frame = new_patient_sets(new.set_index("patient_id")[[f"C{j}" for j in range(k)]], memory, value, cost,
                             target_index=t, score=score, groups={"plan": new["plan"], "band": new["band"]})
    assert frame["codes"].tolist() == written["codes"].tolist()
    assert frame["note"].tolist() == written["note"].tolist()


def test_several_segment_columns_are_checked(tmp_path):
    probs, labels, plans, bands = _cohort(3, 40, 3)
    _write(tmp_path / "cal", probs, labels, plans, bands, [40])
    with pytest.raises(DataError, match="no column named 'region' to read the segments from"):
        calibrate(str(tmp_path / "cal"), AdditiveValue(), AdditiveCost(), [1.0], segment=["plan", "region"])
    with pytest.raises(ValueError, match="names a column twice"):
        calibrate(str(tmp_path / "cal"), AdditiveValue(), AdditiveCost(), [1.0], segment=["plan", "plan"])
    with pytest.raises(ValueError, match="column -> {segment label -> threshold}"):
        predict(str(tmp_path / "cal"), AdditiveValue(), AdditiveCost(), {"plan": {"A": 1.0}}, tmp_path / "o",
                segment=["plan", "band"])


def test_cli_calibrate_and_predict_with_two_segment_columns(tmp_path, capsys):
    """favmac calibrate / predict --engine dask with --segment-column twice (settings round trip and
    direct calibration) equal the in-memory predict with the same columns."""
    from favmac.cli import main

    n, k = 240, 4
    probs, labels, plans, bands = _cohort(21, n, k)
    _write(tmp_path / "cal", probs, labels, plans, bands, [100, 140])
    settings = tmp_path / "run.json"
    flags = ["--segment-column", "plan", "--segment-column", "band", "--score", "cost"]
    assert main(["calibrate", "--data", str(tmp_path / "cal"), *flags, "--targets", "0.8,1.5",
                 "--scheduler", "synchronous", "--settings-out", str(settings)]) == 0
    out = capsys.readouterr().out
    assert f"plan=A (n={int((plans == 'A').sum())})" in out and f"band=A (n={int((bands == 'A').sum())})" in out
    new_probs, _ = tied_data(22, 30, k, 1)
    new = pd.DataFrame(new_probs, columns=[f"C{j}" for j in range(k)])
    new.insert(0, "patient_id", [f"N{i}" for i in range(30)])
    new.insert(1, "plan", ["A", "B", "C", "D", "tiny"] * 6)
    new.insert(2, "band", ["<50", "50-74", "75+"] * 10)
    os.makedirs(tmp_path / "new")
    new.to_parquet(tmp_path / "new" / "n.parquet", index=False)
    assert main(["predict", "--engine", "dask", "--settings", str(settings), "--target", "1.5",
                 "--new", str(tmp_path / "new"), "--out", str(tmp_path / "a")]) == 0
    assert main(["predict", "--engine", "dask", "--calibration", str(tmp_path / "cal"), *flags, "--target", "1.5",
                 "--new", str(tmp_path / "new"), "--scheduler", "synchronous", "--out", str(tmp_path / "b")]) == 0
    said = capsys.readouterr()
    assert "of 2 groupings with their own thresholds; each patient uses the smallest" in said.out + said.err
    wide_frame(probs, labels).assign(plan=plans, band=bands).to_csv(tmp_path / "cal.csv", index=False)
    new.to_csv(tmp_path / "new.csv", index=False)
    assert main(["predict", "--calibration", str(tmp_path / "cal.csv"), *flags, "--target", "1.5",
                 "--new", str(tmp_path / "new.csv"), "--out", str(tmp_path / "m.csv")]) == 0
    memory = pd.read_csv(tmp_path / "m.csv", dtype={"patient_id": str}, keep_default_na=False)
    for folder in ("a", "b"):
        written = pd.read_parquet(tmp_path / folder).set_index("patient_id").loc[memory["patient_id"]]
        assert written["codes"].tolist() == memory["codes"].tolist()
        assert written["note"].tolist() == memory["note"].tolist()
        np.testing.assert_allclose(written["threshold"].to_numpy(), memory["threshold"].to_numpy(dtype=float))
