"""favmac.distributed.runner: schedulers and clusters, and the exact duplicate-id check."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

from dist_helpers import targets_for, tied_data, tree_thresholds, wide_frame, write_parts  # noqa: E402

from favmac import AdditiveCost, AdditiveValue, DataError  # noqa: E402
from favmac.distributed import calibrate, calibration, runner, sources  # noqa: E402


def test_two_worker_local_cluster_matches_favmac(tmp_path):
    distributed = pytest.importorskip("distributed")
    probs, labels = tied_data(81, 400, 6, 1)
    weights = np.array([0.5, 1.25, 2.0, 1.0, 0.75, 1.5])
    value, cost = AdditiveValue(weights), AdditiveCost(weights)
    write_parts(tmp_path, probs, labels, [0, 1, 150, 0, 1, 248])
    targets = targets_for(weights.sum())
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            expected = calibrate(str(tmp_path), value, cost, targets, scheduler=client)
            violation = calibrate(str(tmp_path), value, cost, targets, delta=0.1, scheduler=cluster.scheduler_address)
            with pytest.raises(DataError, match="is not 0 or 1"):
                frame = pd.read_parquet(tmp_path / "part-005.parquet")
                frame.loc[3, "label_C0"] = 3
                frame.to_parquet(tmp_path / "part-005.parquet", index=False)
                calibrate(str(tmp_path), value, cost, targets, scheduler=client)
    assert np.array_equal(expected, tree_thresholds(probs, labels, value, cost, targets))
    assert np.array_equal(violation, tree_thresholds(probs, labels, value, cost, targets, delta=0.1))

def test_duplicate_ids_across_files_are_refused(tmp_path):
    probs, labels = tied_data(161, 40, 3, 1)
    paths = write_parts(tmp_path, probs, labels, [15, 10, 15])
    frame = pd.read_parquet(paths[2])
    frame.loc[4, "patient_id"] = " P3 "  # spaces around an id do not make it another id
    frame.to_parquet(paths[2], index=False)
    with pytest.raises(DataError, match="1 patient id appears more than once: 'P3'") as err:
        calibrate(str(tmp_path), AdditiveValue(), AdditiveCost(), [1.0], scheduler="synchronous")
    assert (err.value.file, err.value.row, err.value.column) == (paths[2], 6, "patient_id")
    assert f"{paths[0]} row 5, {paths[2]} row 6" in str(err.value)

def test_duplicate_ids_in_one_csv_in_different_batches(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "BATCH_ROWS", 5)
    probs, labels = tied_data(162, 30, 3, 1)
    frame = wide_frame(probs, labels)
    frame.loc[[21, 27], "patient_id"] = ["P2", "P8"]
    frame.to_csv(tmp_path / "a.csv", index=False)
    file = str(tmp_path / "a.csv")
    with pytest.raises(DataError, match="2 patient ids appear more than once") as err:
        calibrate(file, AdditiveValue(), AdditiveCost(), [1.0], delta=0.1, scheduler="synchronous")
    assert (err.value.row, err.value.column) == (23, "patient_id")
    assert f"'P2' ({file} row 4, {file} row 23); 'P8' ({file} row 10, {file} row 29)" in str(err.value)
    frame.loc[1, "patient_id"] = "P0"  # within one batch: favmac.io's own message
    frame.to_csv(tmp_path / "a.csv", index=False)
    with pytest.raises(DataError, match="'P0' \\(rows 2, 3\\)") as err:
        calibrate(file, AdditiveValue(), AdditiveCost(), [1.0], scheduler="synchronous")

def test_duplicate_ids_across_dask_partitions(tmp_path):
    probs, labels = tied_data(163, 30, 3, 1)
    frame = wide_frame(probs, labels)
    frame.loc[25, "patient_id"] = "P1"
    with pytest.raises(DataError, match="'P1' \\(partition 0 row 3, partition 2 row 7\\)") as err:
        calibrate(dd.from_pandas(frame, npartitions=3), AdditiveValue(), AdditiveCost(), [1.0], scheduler="threads")
    assert (err.value.file, err.value.row) == ("partition 2", 7)

def test_hash_collisions_between_different_ids_are_not_reported(tmp_path, monkeypatch):
    """With a deliberately weak hash (the id's length) every id collides: the exact pass clears them."""
    calls = []
    def weak(ids):
        return np.array([len(i) for i in ids], dtype=np.uint64)

    monkeypatch.setattr(runner, "id_hashes", weak)
    monkeypatch.setattr(calibration, "id_hashes", weak)
    monkeypatch.setattr(runner, "ID_CHECK_BATCH", 1)
    original = runner.rows_with_ids
    monkeypatch.setattr(runner, "rows_with_ids", lambda *args: calls.append(1) or original(*args))
    probs, labels = tied_data(164, 120, 4, 1)  # ids P0..P119: lengths 2, 3 and 4
    write_parts(tmp_path, probs, labels, [0, 50, 70])
    targets = [0.5, 1.5]
    got = calibrate(str(tmp_path), AdditiveValue(), AdditiveCost(), targets, scheduler="synchronous")
    assert np.array_equal(got, tree_thresholds(probs, labels, AdditiveValue(), AdditiveCost(), targets))
    assert len(calls) == 3 * 3  # three colliding hashes, one id-only pass (3 tasks) each

def test_every_piece_is_read_once_per_pass(tmp_path, monkeypatch):
    """The duplicate check shares the first pass's reading (no extra pass without repeated hashes)."""
    reads = []
    original = sources.batches
    monkeypatch.setattr(sources, "batches", lambda piece, *args: reads.append(piece.file) or original(piece, *args))
    probs, labels = tied_data(165, 90, 4, 1)
    paths = write_parts(tmp_path, probs, labels, [30, 30, 30])
    _, details = calibrate(str(tmp_path), AdditiveValue(), AdditiveCost(), [1.0], scheduler="threads",
                           return_details=True)
    assert sorted(reads) == sorted(paths * details["passes"])
