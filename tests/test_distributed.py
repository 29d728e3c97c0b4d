"""favmac.distributed: thresholds on Dask equal FavMac fed every row, exactly."""
from __future__ import annotations

import math
import os
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import favmac.distributed as dist  # noqa: E402
from favmac import AdditiveCost, AdditiveValue, DataError, FavMac  # noqa: E402
from favmac.distributed import calibrate, key_of_bits, ordered_bits, predict  # noqa: E402


# ----------------------------------------------------------------------------- data


def tied_data(seed, n_patients, n_codes, decimals):
    """Probabilities rounded to ``decimals`` (many ties; 0.0 and 1.0 occur) and 0/1 labels."""
    rng = np.random.default_rng(seed)
    probs = np.round(rng.random((n_patients, n_codes)), decimals)
    probs[rng.random((n_patients, n_codes)) < 0.08] = 1.0  # zero cost step: ratio +inf, Chat ties
    probs[rng.random((n_patients, n_codes)) < 0.05] = 0.0
    labels = (rng.random((n_patients, n_codes)) < np.clip(probs, 0.1, 0.9)).astype(np.int8)
    return probs, labels


def wide_frame(probs, labels, codes=None, first_id=0):
    codes = codes or [f"C{k}" for k in range(probs.shape[1])]
    columns = {"patient_id": [f"P{first_id + i}" for i in range(len(probs))]}
    for k, code in enumerate(codes):
        columns[f"prob_{code}"] = probs[:, k]
        columns[f"label_{code}"] = labels[:, k]
    return pd.DataFrame(columns)


def write_parts(folder, probs, labels, sizes, fmt="parquet"):
    """Split the rows into files of the given sizes (0 = an empty file, 1 = a one-row file)."""
    assert sum(sizes) == len(probs)
    os.makedirs(folder, exist_ok=True)
    paths, start = [], 0
    for i, size in enumerate(sizes):
        frame = wide_frame(probs[start : start + size], labels[start : start + size], first_id=start)
        path = os.path.join(folder, f"part-{i:03d}.{fmt}")
        if fmt == "parquet":
            frame.to_parquet(path, index=False)
        else:
            frame.to_csv(path, index=False)
        paths.append(path)
        start += size
    return paths


def split_sizes(rng, n):
    """Random sizes with empty and one-row parts among them."""
    sizes = [0, 1]
    rest = n - 1
    while rest > 0:
        size = int(min(rest, rng.integers(1, max(2, n // 3))))
        sizes.append(size)
        rest -= size
        if rng.random() < 0.3:
            sizes.append(0)
    return sizes


def tree_thresholds(probs, labels, value, cost, targets, delta=None, universe="ratio", c_max=None, seed=0, score="cost"):
    """FavMac (the online QuantileTree) fed every row, in a shuffled order."""
    order = np.random.default_rng(seed).permutation(len(probs))
    out = []
    for target in targets:
        fm = FavMac(value, cost, target, delta=delta, universe=universe, c_max=c_max, score=score)
        fm.update(probs[order], labels[order])
        out.append(fm.threshold)
    return np.array(out, dtype=float)


def targets_for(c_max):
    """Targets from below 0 to above C_max, on the cost's own decimals (exact ties happen)."""
    return [-0.5, 0.0, 0.1, 0.5, 1.0, 1.1, round(c_max / 3, 1), round(c_max / 2, 1), float(c_max), c_max + 1.0]


# ----------------------------------------------------------------------------- ordered keys


def test_ordered_bits_sort_like_floats_and_round_trip():
    rng = np.random.default_rng(3)
    keys = np.concatenate([rng.standard_normal(500) * 10.0 ** rng.integers(-5, 5, 500),
                           [-np.inf, np.inf, 0.0, -0.0, 5e-324, -5e-324, 1.7976931348623157e308]])
    patterns = ordered_bits(keys)
    assert np.array_equal(np.sort(keys, kind="stable"), keys[np.argsort(patterns, kind="stable")])
    for k, pattern in zip(keys, patterns):
        assert key_of_bits(int(pattern)) == k
    assert ordered_bits([-0.0])[0] == ordered_bits([0.0])[0]
    with pytest.raises(ValueError, match="NaN"):
        ordered_bits([np.nan])


def test_exact_sums_switch_to_python_ints_before_overflow():
    ids = np.array([0, 1, 1, 2, 2, 2])
    small = np.array([5, 2**40, 3, 2**50, 2**50, 1], dtype=np.int64)
    assert dist._group_sum(ids, small, 3).tolist() == [5, 2**40 + 3, 2**51 + 1]
    huge = np.array([1, 2**61, 2**61, 2**61, 2**61, 7], dtype=np.int64)
    total = dist._group_sum(ids, huge, 3)
    assert [int(v) for v in total] == [1, 2**62, 2**62 + 7]
    assert [int(v) for v in dist._add(total, total)] == [2, 2**63, 2**63 + 14]


# ----------------------------------------------------------------------------- equality with FavMac


CASES = [
    # seed, patients, codes, decimals, integer weights?, universe, delta
    (0, 240, 6, 1, True, "ratio", None),
    (1, 240, 6, 2, False, "ratio", None),
    (2, 200, 5, 1, False, "prob", None),
    (3, 200, 5, 2, True, "value", None),
    (4, 240, 6, 1, True, "ratio", 0.1),
    (5, 240, 6, 2, False, "prob", 0.2),
    (6, 200, 5, 1, False, "value", 0.05),
    (7, 120, 4, 1, False, "full", None),
    (8, 120, 4, 2, True, "full", 0.1),
]


@pytest.mark.parametrize("seed,n,k,decimals,integer,universe,delta", CASES)
def test_parquet_parts_match_favmac(tmp_path, seed, n, k, decimals, integer, universe, delta):
    probs, labels = tied_data(seed, n, k, decimals)
    rng = np.random.default_rng(seed + 100)
    weights = rng.integers(0, 4, k).astype(float) if integer else np.round(rng.uniform(0.1, 2.5, k), 2)
    value, cost = AdditiveValue(np.round(rng.uniform(0, 3, k), 1)), AdditiveCost(weights)
    write_parts(tmp_path, probs, labels, split_sizes(rng, n))
    targets = targets_for(weights.sum())
    got = calibrate(str(tmp_path / "*.parquet"), value, cost, targets, delta=delta, universe=universe,
                    scheduler="synchronous")
    want = tree_thresholds(probs, labels, value, cost, targets, delta, universe, seed=seed)
    assert np.array_equal(got, want), (got, want)
    assert np.isinf(want).any() and np.isfinite(want).any()  # the edge rules are exercised


@pytest.mark.parametrize("delta", [None, 0.1])
def test_deep_refinement_and_default_scheduler(tmp_path, monkeypatch, delta):
    """With EXACT_LIMIT = 0 every crossing bucket is histogrammed once more before enumeration."""
    probs, labels = tied_data(11, 300, 7, 2)
    value, cost = AdditiveValue(), AdditiveCost()
    write_parts(tmp_path, probs, labels, [100, 0, 1, 150, 49])
    targets = [0.5, 1.1, 2.0, 3.5, 7.0]
    monkeypatch.setattr(dist, "EXACT_LIMIT", 0)
    got, details = calibrate(sorted(map(str, tmp_path.glob("*.parquet"))), value, cost, targets, delta=delta,
                             return_details=True)
    assert details["passes"] == 3 and details["n_patients"] == 300
    assert np.array_equal(got, tree_thresholds(probs, labels, value, cost, targets, delta))


def test_c_max_and_exact_ties(tmp_path):
    """c(N+1) - C_max hits F(b) exactly: F(b) = M is not "> M" (integer costs, c = k + 0.0)."""
    probs, labels = tied_data(21, 99, 5, 1)
    value, cost = AdditiveValue(), AdditiveCost()
    write_parts(tmp_path, probs, labels, [50, 49])
    targets = [round(0.05 * i, 2) for i in range(1, 60)]
    for c_max in (None, 7.5):
        got = calibrate(str(tmp_path), value, cost, targets, c_max=c_max, scheduler="synchronous")
        assert np.array_equal(got, tree_thresholds(probs, labels, value, cost, targets, c_max=c_max))


def test_csv_files_and_dask_frame_give_the_same_thresholds(tmp_path):
    probs, labels = tied_data(31, 150, 5, 1)
    weights = np.array([1.5, 0.25, 2.0, 1.0, 0.75])
    value, cost = AdditiveValue(weights), AdditiveCost(weights)
    targets = [0.5, 1.0, 2.25, 4.0]
    want = tree_thresholds(probs, labels, value, cost, targets)
    write_parts(tmp_path / "csv", probs, labels, [0, 1, 70, 79], fmt="csv")
    assert np.array_equal(calibrate(str(tmp_path / "csv" / "*.csv"), value, cost, targets, scheduler="sync"), want)
    frame = dd.from_pandas(wide_frame(probs, labels), npartitions=4)
    assert np.array_equal(calibrate(frame, value, cost, targets, scheduler="threads"), want)
    # codes in another column order in a later file: matched by name (the first file's order is the codes' order)
    shuffled = wide_frame(probs, labels)
    shuffled = shuffled[["patient_id"] + list(shuffled.columns[1:][::-1])]
    wide_frame(probs, labels).iloc[:60].to_parquet(tmp_path / "a.parquet", index=False)
    shuffled.iloc[60:].to_parquet(tmp_path / "b.parquet", index=False)
    got = calibrate([tmp_path / "a.parquet", tmp_path / "b.parquet"], value, cost, targets, scheduler="sync")
    assert np.array_equal(got, want)


def test_formula_value_matches_favmac_and_pickles():
    """A general (Monte Carlo) value: per-patient draws do not depend on the partitioning."""
    import pickle

    from favmac import FormulaValue

    value = FormulaValue("prod_hits((v + 5) / 10) + sum_hits((v - 5) ** 2)", weights=[1, 2, 3, 4])
    value = pickle.loads(pickle.dumps(value))  # what a worker process receives
    probs, labels = tied_data(91, 30, 4, 1)
    frame = dd.from_pandas(wide_frame(probs, labels), npartitions=3)
    targets = [0.5, 1.1, 2.0]
    for universe, delta in (("ratio", None), ("full", 0.1)):
        got = calibrate(frame, value, AdditiveCost(), targets, delta=delta, universe=universe, scheduler="synchronous")
        assert np.array_equal(got, tree_thresholds(probs, labels, value, AdditiveCost(), targets, delta, universe))


# ----------------------------------------------------------------------------- the price score


def price_oracle(probs, labels, v, w, targets, delta, universe):
    """Literal SPEC evaluation of the price score (independent of favmac)."""
    n_patients, n_codes = probs.shape
    per_patient = []  # (scores of S_0..S_K, exact costs of S_0..S_K)
    for p, y in zip(probs, labels):
        if universe == "prob":
            key = lambda k: (-p[k], k)
        elif universe == "value":
            key = lambda k: (-(p[k] * v[k]), k)
        else:
            def key(k):
                num, den = p[k] * v[k], (1 - p[k]) * w[k]
                r = (math.inf if num > 0 else -math.inf) if den == 0 else num / den
                return (-r, k)
        order = sorted(range(n_codes), key=key)
        score, cost = [-math.inf], [Fraction(0)]
        for k in order:
            dc, dv = (1.0 - p[k]) * w[k], p[k] * v[k]  # the step's increments, as the SPEC writes them
            price = math.inf if dv == 0 else (0.0 if dc == 0 else dc / dv)
            score.append(max(score[-1], price))
            cost.append(cost[-1] + (0 if y[k] else Fraction(repr(float(w[k])))))
        per_patient.append((score, cost))
    c_max = sum(Fraction(repr(float(x))) for x in w)
    out = []
    for c in targets:
        c = Fraction(repr(float(c)))
        keys = sorted({s for scores, _ in per_patient for s in scores})
        if delta is None:
            # F(b)/(N+1) with C_max: the mean bound just above key b; T = the smallest key where it exceeds c.
            def mean_above(b):
                return (c_max + sum(max(cc for s, cc in zip(scores, cost) if s <= b) for scores, cost in per_patient)) / (n_patients + 1)

            above = [b for b in keys if mean_above(b) > c]
            out.append(above[0] if above else math.inf)
        else:
            t_i = sorted(min([s for s, cc in zip(scores, cost) if cc > c], default=math.inf) for scores, cost in per_patient)
            k = math.ceil((1 - Fraction(repr(delta))) * (n_patients + 1))
            out.append(-math.inf if k > n_patients else (math.inf if k <= 0 else t_i[n_patients - k]))
    return np.array(out, dtype=float)


@pytest.mark.parametrize("universe,delta", [("ratio", None), ("prob", None), ("value", 0.1), ("ratio", 0.2)])
def test_price_score_matches_literal_oracle(tmp_path, universe, delta):
    probs, labels = tied_data(41, 60, 4, 1)
    v, w = np.array([1.0, 2.0, 0.5, 1.5]), np.array([1.0, 0.5, 2.0, 1.0])
    write_parts(tmp_path, probs, labels, [0, 1, 30, 29])
    targets = [0.0, 0.5, 1.0, 1.5, 2.5, 4.5]
    value, cost = AdditiveValue(v), AdditiveCost(w)
    got = calibrate(str(tmp_path), value, cost, targets, delta=delta, universe=universe, score="price",
                    scheduler="synchronous")
    assert np.array_equal(got, price_oracle(probs, labels, v, w, targets, delta, universe))
    assert np.array_equal(got, tree_thresholds(probs, labels, value, cost, targets, delta, universe, score="price"))


def test_price_score_needs_a_greedy_universe(tmp_path):
    probs, labels = tied_data(1, 5, 3, 1)
    write_parts(tmp_path, probs, labels, [5])
    with pytest.raises(ValueError, match="nested"):
        calibrate(str(tmp_path), AdditiveValue(), AdditiveCost(), [1.0], universe="full", score="price")
    with pytest.raises(ValueError, match="score"):
        calibrate(str(tmp_path), AdditiveValue(), AdditiveCost(), [1.0], score="odds")


# ----------------------------------------------------------------------------- bad input


def _one_bad_cell(tmp_path, column, value, fmt="parquet"):
    probs, labels = tied_data(51, 40, 3, 1)
    paths = write_parts(tmp_path, probs, labels, [20, 20], fmt=fmt)
    frame = pd.read_parquet(paths[1]) if fmt == "parquet" else pd.read_csv(paths[1], dtype={column: object})
    frame[column] = frame[column].astype(object)
    frame.loc[7, column] = value
    if fmt == "parquet":
        frame[column] = pd.to_numeric(frame[column], errors="coerce") if not isinstance(value, str) else frame[column].astype(str)
        frame.to_parquet(paths[1], index=False)
    else:
        frame.to_csv(paths[1], index=False)
    return paths[1]


@pytest.mark.parametrize("column,value,message", [
    ("prob_C1", np.nan, "empty"),
    ("prob_C0", 1.5, "outside \\[0, 1\\]"),
    ("label_C2", 2, "is not 0 or 1"),
    ("prob_C2", np.inf, "infinite"),
    ("prob_C1", "abc", "not a number"),
])
def test_bad_cells_name_file_row_and_column(tmp_path, column, value, message):
    bad = _one_bad_cell(tmp_path, column, value)
    with pytest.raises(DataError, match=message) as err:
        calibrate(str(tmp_path), AdditiveValue(), AdditiveCost(), [1.0], scheduler="synchronous")
    assert err.value.file == bad and err.value.row == 9 and err.value.column == column


def test_bad_csv_cell(tmp_path):
    bad = _one_bad_cell(tmp_path, "prob_C0", "x1", fmt="csv")
    with pytest.raises(DataError, match="not a number") as err:
        calibrate(str(tmp_path / "*.csv"), AdditiveValue(), AdditiveCost(), [1.0], scheduler="synchronous")
    assert (err.value.file, err.value.row, err.value.column) == (bad, 9, "prob_C0")


def test_missing_columns_and_mismatched_codes(tmp_path):
    probs, labels = tied_data(61, 20, 3, 1)
    paths = write_parts(tmp_path, probs, labels, [10, 10])
    frame = pd.read_parquet(paths[1])
    frame.drop(columns=["label_C1"]).to_parquet(paths[1], index=False)
    with pytest.raises(DataError, match="no matching label_C1") as err:
        calibrate(str(tmp_path), AdditiveValue(), AdditiveCost(), [1.0])
    assert err.value.file == paths[1] and err.value.row == 1
    frame.rename(columns={"prob_C1": "prob_X", "label_C1": "label_X"}).to_parquet(paths[1], index=False)
    with pytest.raises(DataError, match="codes differ") as err:
        calibrate(str(tmp_path), AdditiveValue(), AdditiveCost(), [1.0])
    assert err.value.file == paths[1]
    with pytest.raises(DataError, match="matches no file"):
        calibrate(str(tmp_path / "nothing*.parquet"), AdditiveValue(), AdditiveCost(), [1.0])


# ----------------------------------------------------------------------------- predict


def test_predict_writes_parquet_parts_equal_to_favmac(tmp_path):
    probs, labels = tied_data(71, 200, 5, 2)
    weights = np.array([1.0, 2.5, 0.5, 1.5, 1.0])
    value, cost = AdditiveValue(weights), AdditiveCost(weights)
    write_parts(tmp_path / "cal", probs, labels, [0, 1, 99, 100])
    threshold = float(calibrate(str(tmp_path / "cal"), value, cost, 2.5, score="cost", scheduler="synchronous"))
    fm = FavMac(value, cost, 2.5, score="cost")
    fm.update(probs, labels)
    assert threshold == fm.threshold
    new_probs, _ = tied_data(72, 120, 5, 2)
    new = pd.DataFrame(new_probs, columns=[f"C{k}" for k in range(5)])
    new.insert(0, "patient_id", [f"N{i}" for i in range(120)])
    os.makedirs(tmp_path / "new")
    new.iloc[:1].to_parquet(tmp_path / "new" / "a.parquet", index=False)
    new.iloc[1:].to_csv(tmp_path / "new" / "b.csv", index=False)
    with pytest.raises(DataError, match="mix Parquet and CSV"):
        predict(str(tmp_path / "new"), value, cost, threshold, tmp_path / "out")
    os.remove(tmp_path / "new" / "b.csv")
    new.iloc[1:].to_parquet(tmp_path / "new" / "b.parquet", index=False)
    n = predict(str(tmp_path / "new"), value, cost, threshold, tmp_path / "out", codes=[f"C{k}" for k in range(5)],
                target=2.5, score="cost", scheduler="synchronous")
    assert n == 120
    written = pd.read_parquet(tmp_path / "out")
    assert list(written.columns) == ["patient_id", "codes", "n_codes", "expected_value", "cost_proxy", "threshold",
                                     "method", "target", "delta", "universe", "score"]
    masks = fm.predict(new_probs)
    want = [";".join(f"C{k}" for k in np.flatnonzero(m)) for m in masks]
    assert written["patient_id"].tolist() == new["patient_id"].tolist()
    assert written["codes"].tolist() == want
    assert (written["threshold"] == threshold).all() and (written["target"] == 2.5).all()


def test_predict_writes_nothing_on_bad_input(tmp_path):
    new = pd.DataFrame({"patient_id": ["a", "b", "c"], "C0": [0.5, 0.2, 0.1], "C1": [0.3, 1.2, 0.0]})
    new.iloc[:1].to_parquet(tmp_path / "a.parquet", index=False)
    new.iloc[1:].to_parquet(tmp_path / "b.parquet", index=False)
    out = tmp_path / "out"
    with pytest.raises(DataError, match="outside \\[0, 1\\]") as err:
        predict(str(tmp_path / "*.parquet"), AdditiveValue(), AdditiveCost(), 1.0, out, scheduler="synchronous")
    assert err.value.row == 2 and err.value.file.endswith("b.parquet")
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


# ----------------------------------------------------------------------------- a real cluster


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


# ----------------------------------------------------------------------------- segments


@pytest.mark.parametrize("delta,score", [(None, "cost"), (0.2, "cost"), (None, "price")])
def test_segments_match_favmac_threshold_for(tmp_path, delta, score):
    """Every segment is calibrated on its own patients, as FavMac.threshold_for after update(..., group=)."""
    probs, labels = tied_data(111, 260, 5, 1)
    rng = np.random.default_rng(112)
    plans = rng.choice(np.array(["gold", "silver", "bronze", "tiny"], dtype=object), size=260, p=[0.5, 0.3, 0.19, 0.01])
    weights = np.array([1.0, 0.5, 2.0, 1.5, 1.0])
    value, cost = AdditiveValue(weights), AdditiveCost(weights)
    sizes, start = [0, 1, 120, 139], 0
    os.makedirs(tmp_path / "cal")
    for i, size in enumerate(sizes):
        frame = wide_frame(probs[start : start + size], labels[start : start + size], first_id=start)
        frame.insert(1, "plan", plans[start : start + size].astype(str))
        frame.to_parquet(tmp_path / "cal" / f"part-{i}.parquet", index=False)
        start += size
    targets = [0.5, 1.0, 2.5, 4.0]
    pooled, by_segment, details = calibrate(str(tmp_path / "cal"), value, cost, targets, delta=delta, score=score,
                                            segment="plan", scheduler="synchronous", return_details=True)
    assert details["segment_sizes"] == {p: int((plans == p).sum()) for p in sorted(set(plans))}
    trees = [FavMac(value, cost, c, delta=delta, score=score).update(probs, labels, group=plans) for c in targets]
    assert np.array_equal(pooled, [fm.threshold for fm in trees])
    assert sorted(by_segment) == sorted(set(plans))
    for plan, got in by_segment.items():
        assert np.array_equal(got, [fm.threshold_for(plan) for fm in trees]), plan
    assert np.isneginf(by_segment["tiny"]).any()  # a segment too small for the target gets the empty set

    new_probs, _ = tied_data(113, 40, 5, 1)
    new = pd.DataFrame(new_probs, columns=[f"C{k}" for k in range(5)])
    new.insert(0, "patient_id", [f"N{i}" for i in range(40)])
    new.insert(1, "plan", ["gold", "silver", "bronze", "platinum"] * 10)
    new.to_parquet(tmp_path / "new.parquet", index=False)
    segment_thresholds = {plan: float(values[1]) for plan, values in by_segment.items()}
    predict(str(tmp_path / "new.parquet"), value, cost, segment_thresholds, tmp_path / "out", score=score,
            segment="plan", scheduler="synchronous")
    written = pd.read_parquet(tmp_path / "out")
    masks = trees[1].predict(new_probs, group=new["plan"].to_numpy(dtype=object))
    assert written["codes"].tolist() == [";".join(f"C{k}" for k in np.flatnonzero(m)) for m in masks]
    assert written["segment"].tolist() == new["plan"].tolist()
    assert (written.loc[new["plan"] == "platinum", "codes"] == "").all()
    assert written.loc[new["plan"] == "platinum", "note"].str.contains("not in the calibration data").all()


def test_segment_column_missing_or_empty(tmp_path):
    probs, labels = tied_data(121, 20, 3, 1)
    frame = wide_frame(probs, labels)
    frame.to_parquet(tmp_path / "a.parquet", index=False)
    with pytest.raises(DataError, match="no segment column 'plan'"):
        calibrate(str(tmp_path / "a.parquet"), AdditiveValue(), AdditiveCost(), [1.0], segment="plan")
    frame.insert(1, "plan", ["x"] * 12 + [None] + ["y"] * 7)
    frame.to_parquet(tmp_path / "a.parquet", index=False)
    with pytest.raises(DataError, match="segment label is empty") as err:
        calibrate(str(tmp_path / "a.parquet"), AdditiveValue(), AdditiveCost(), [1.0], segment="plan",
                  scheduler="synchronous")
    assert (err.value.row, err.value.column) == (14, "plan")


# ----------------------------------------------------------------------------- command line


def test_cli_calibrate_writes_settings_that_predict_loads(tmp_path, capsys):
    from favmac.cli import main
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
    want = tree_thresholds(probs, labels, value, cost, [0.5, 1.1, 2.25])
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
    fm = FavMac(value, cost, 1.1, score="cost")  # the run's --score
    fm.update(probs, labels)
    chosen = pd.read_parquet(tmp_path / "chosen")
    assert chosen["codes"].tolist() == [";".join(f"C{k}" for k in np.flatnonzero(m)) for m in fm.predict(new.iloc[:, 1:].to_numpy())]
    status = main(["predict", "--settings", str(settings), "--target", "3", "--new", str(tmp_path / "new"),
                   "--out", str(tmp_path / "chosen3")])
    assert status == 2 and "calibrated for targets 0.5, 1.1, 2.25 only" in capsys.readouterr().err
    assert not (tmp_path / "chosen3").exists()


def test_cli_segments_round_trip(tmp_path, capsys):
    from favmac.cli import main

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


def test_csv_segment_labels_stay_text(tmp_path):
    probs, labels = tied_data(141, 30, 3, 1)
    frame = wide_frame(probs, labels)
    frame.insert(1, "plan", ["007", "010"] * 15)
    frame.to_csv(tmp_path / "a.csv", index=False)
    _, by_segment = calibrate(str(tmp_path / "a.csv"), AdditiveValue(), AdditiveCost(), [1.0], segment="plan",
                              score="cost", scheduler="synchronous")
    fm = FavMac(AdditiveValue(), AdditiveCost(), 1.0, score="cost").update(probs, labels, group=frame["plan"].to_numpy(dtype=object))
    assert {k: float(v[0]) for k, v in by_segment.items()} == {"007": fm.threshold_for("007"), "010": fm.threshold_for("010")}


# ----------------------------------------------------------------------------- CSV as favmac.io reads it


def _csv_text(frame):
    return frame.to_csv(index=False, lineterminator="\n")


def test_csv_bom_crlf_header_spaces_blank_rows_and_column_order(tmp_path):
    """SPEC "Input files": tolerated silently, and the thresholds equal FavMac's on the clean data."""
    probs, labels = tied_data(151, 60, 4, 1)
    frame = wide_frame(probs, labels)
    value, cost = AdditiveValue(), AdditiveCost()
    targets = [0.5, 1.1, 2.0]
    want = tree_thresholds(probs, labels, value, cost, targets)
    lines = _csv_text(frame.iloc[:30]).split("\n")
    header = ", ".join(f" {name} " for name in lines[0].split(",")) + ",,"  # spaces, two empty unnamed columns
    body = [line + ",," for line in lines[1:] if line]
    body.insert(5, "")  # a blank line and a line of commas: skipped
    body.insert(9, ",,,,,,,,,,")
    (tmp_path / "a.csv").write_bytes(b"\xef\xbb\xbf" + "\r\n".join([header] + body).encode() + b"\r\n\r\n")
    later = frame.iloc[30:][["label_C2", "patient_id", "prob_C3", "prob_C0", "label_C1", "label_C0", "prob_C1",
                             "prob_C2", "label_C3"]]
    (tmp_path / "b.csv").write_bytes(_csv_text(later).replace("\n", "\r").encode())  # old-Mac line endings
    got = calibrate(str(tmp_path / "*.csv"), value, cost, targets, scheduler="synchronous")
    assert np.array_equal(got, want)


def test_csv_rows_are_numbered_as_favmac_io_numbers_them(tmp_path, monkeypatch):
    """Blank lines count (header = row 1); batches continue the numbering."""
    from favmac.io import read_wide

    monkeypatch.setattr(dist, "BATCH_ROWS", 4)
    probs, labels = tied_data(152, 12, 3, 1)
    lines = _csv_text(wide_frame(probs, labels)).split("\n")
    lines[10] = lines[10].replace(lines[10].split(",")[3], "1.5", 1)  # prob_C1 of patient P9 (file row 11)
    lines.insert(3, "")
    lines.insert(6, "")  # P9 is now on row 13
    (tmp_path / "a.csv").write_text("\n".join(lines))
    with pytest.raises(DataError, match="outside \\[0, 1\\]") as err:
        calibrate(str(tmp_path / "a.csv"), AdditiveValue(), AdditiveCost(), [1.0], scheduler="synchronous")
    assert (err.value.file, err.value.row, err.value.column) == (str(tmp_path / "a.csv"), 13, "prob_C1")
    with pytest.raises(DataError) as in_memory:
        read_wide(tmp_path / "a.csv")
    assert (in_memory.value.row, in_memory.value.column) == (13, "prob_C1")


@pytest.mark.parametrize("column,cell,message", [
    ("prob_C1", "", "empty"),
    ("prob_C1", "nan", "empty"),
    ("prob_C2", "inf", "infinite"),
    ("prob_C0", "-0.1", "outside \\[0, 1\\]"),
    ("label_C2", "0.5", "is not 0 or 1"),
    ("label_C0", "TRUE", "not a number"),
])
def test_bad_csv_cells_after_blank_lines(tmp_path, column, cell, message):
    probs, labels = tied_data(153, 10, 3, 1)
    frame = wide_frame(probs, labels).astype(object)
    frame.loc[6, column] = cell  # file row 8, row 9 after the blank line below
    lines = _csv_text(frame).split("\n")
    lines.insert(2, "   ")
    (tmp_path / "a.csv").write_text("\n".join(lines))
    with pytest.raises(DataError, match=message) as err:
        calibrate(str(tmp_path / "a.csv"), AdditiveValue(), AdditiveCost(), [1.0], scheduler="synchronous")
    assert (err.value.row, err.value.column) == (9, column)


@pytest.mark.parametrize("content,message,row,column", [
    (b"", "the file is empty", None, None),
    (b"\xef\xbb\xbf\r\n\r\n", "the file is empty", None, None),
    (b"\npatient_id,prob_A,label_A\nx,0.5,1\n", "first row is empty", 1, None),
    (b"patient_id;prob_A;label_A\nx;0.5;1\n", "separated by semicolons", 1, None),
    (b"patient_id\tprob_A\tlabel_A\nx\t0.5\t1\n", "separated by tabs", 1, None),
    (b"patient_id,prob_A,prob_A,label_A\nx,0.5,0.5,1\n", "appears more than once", 1, None),
    (b"patient_id,prob_A,label_A\nx,0.5,1\n\ny,0.5,0,7\n", "has 4 cells but the header has 3", 4, None),
    (b"patient_id,prob_A,label_A,\nx,0.5,1,\ny,0.5,0,9\n", "values but no name", 3, "4"),
    (b"patient_id,prob_A,label_A\nx,0.5,1\n  ,0.5,0\n", "no patient id", 3, "patient_id"),
    (b"patient_id,prob_A,label_A,prob_B\nx,0.5,1,0.5\n", "no matching label_B", 1, "prob_B"),
    (b"patient_id,prob_A,label_A,age\nx,0.5,1,40\n", "neither patient_id", 1, "age"),
    (b"id,prob_A,label_A\nx,0.5,1\n", "no patient_id column", 1, None),
    (b"PAR1" + bytes(range(256)), "not a text CSV file", None, None),
])
def test_csv_faults_are_refused_like_favmac_io(tmp_path, content, message, row, column):
    (tmp_path / "a.csv").write_bytes(content)
    with pytest.raises(DataError, match=message) as err:
        calibrate(str(tmp_path / "a.csv"), AdditiveValue(), AdditiveCost(), [1.0], scheduler="synchronous")
    assert (err.value.file, err.value.row, err.value.column) == (str(tmp_path / "a.csv"), row, column)


def test_csv_codes_unknown_or_missing_in_a_later_file(tmp_path):
    probs, labels = tied_data(154, 20, 3, 1)
    wide_frame(probs[:10], labels[:10]).to_csv(tmp_path / "a.csv", index=False)
    later = wide_frame(probs[10:], labels[10:], codes=["C0", "C1", "C9"], first_id=10)
    later.to_csv(tmp_path / "b.csv", index=False)
    with pytest.raises(DataError, match="codes not in the first file: C9; missing codes: C2") as err:
        calibrate(str(tmp_path / "*.csv"), AdditiveValue(), AdditiveCost(), [1.0], scheduler="synchronous")
    assert (err.value.file, err.value.row) == (str(tmp_path / "b.csv"), 1)


def test_csv_in_windows_1252_and_utf16(tmp_path):
    probs, labels = tied_data(155, 20, 2, 1)
    frame = wide_frame(probs, labels)
    frame["patient_id"] = [f"Zoë{i}" for i in range(20)]
    (tmp_path / "a.csv").write_bytes(_csv_text(frame.iloc[:10]).encode("cp1252"))
    (tmp_path / "b.csv").write_bytes(_csv_text(frame.iloc[10:]).encode("utf-16"))
    got = calibrate(str(tmp_path / "*.csv"), AdditiveValue(), AdditiveCost(), [0.5, 1.0], scheduler="synchronous")
    assert np.array_equal(got, tree_thresholds(probs, labels, AdditiveValue(), AdditiveCost(), [0.5, 1.0]))


# ----------------------------------------------------------------------------- duplicate patient ids


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
    monkeypatch.setattr(dist, "BATCH_ROWS", 5)
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
    monkeypatch.setattr(dist, "_id_hashes", lambda ids: np.array([len(i) for i in ids], dtype=np.uint64))
    monkeypatch.setattr(dist, "ID_CHECK_BATCH", 1)
    original = dist._rows_with_ids
    monkeypatch.setattr(dist, "_rows_with_ids", lambda *args: calls.append(1) or original(*args))
    probs, labels = tied_data(164, 120, 4, 1)  # ids P0..P119: lengths 2, 3 and 4
    write_parts(tmp_path, probs, labels, [0, 50, 70])
    targets = [0.5, 1.5]
    got = calibrate(str(tmp_path), AdditiveValue(), AdditiveCost(), targets, scheduler="synchronous")
    assert np.array_equal(got, tree_thresholds(probs, labels, AdditiveValue(), AdditiveCost(), targets))
    assert len(calls) == 3 * 3  # three colliding hashes, one id-only pass (3 tasks) each


def test_every_piece_is_read_once_per_pass(tmp_path, monkeypatch):
    """The duplicate check shares the first pass's reading (no extra pass without repeated hashes)."""
    reads = []
    original = dist._batches
    monkeypatch.setattr(dist, "_batches", lambda piece, *args: reads.append(piece.file) or original(piece, *args))
    probs, labels = tied_data(165, 90, 4, 1)
    paths = write_parts(tmp_path, probs, labels, [30, 30, 30])
    _, details = calibrate(str(tmp_path), AdditiveValue(), AdditiveCost(), [1.0], scheduler="threads",
                           return_details=True)
    assert sorted(reads) == sorted(paths * details["passes"])


def test_predict_refuses_duplicate_ids_and_writes_nothing(tmp_path):
    new = pd.DataFrame({"patient_id": ["a", "b", "c", "a"], "C0": [0.5, 0.2, 0.1, 0.3], "C1": [0.3, 0.2, 0.0, 0.9]})
    new.iloc[:2].to_csv(tmp_path / "a.csv", index=False)
    new.iloc[2:].to_csv(tmp_path / "b.csv", index=False)
    out = tmp_path / "out"
    with pytest.raises(DataError, match="'a' \\(.*a.csv row 2, .*b.csv row 3\\)") as err:
        predict(str(tmp_path / "*.csv"), AdditiveValue(), AdditiveCost(), 1.0, out, scheduler="synchronous")
    assert (err.value.file, err.value.row, err.value.column) == (str(tmp_path / "b.csv"), 3, "patient_id")
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


# ----------------------------------------------------------------------------- predict: too-small segments


def test_predict_says_why_a_too_small_segment_gets_the_empty_set(tmp_path):
    from favmac.segments import too_small_reason

    probs, labels = tied_data(171, 60, 3, 1)
    plans = np.array(["big"] * 57 + ["tiny"] * 3, dtype=object)
    frame = wide_frame(probs, labels)
    frame.insert(1, "plan", plans)
    frame.to_parquet(tmp_path / "cal.parquet", index=False)
    _, by_segment, details = calibrate(str(tmp_path / "cal.parquet"), AdditiveValue(), AdditiveCost(), [0.5],
                                       segment="plan", scheduler="synchronous", return_details=True)
    assert by_segment["tiny"][0] == -np.inf and np.isfinite(by_segment["big"][0])
    new = pd.DataFrame(tied_data(172, 6, 3, 1)[0], columns=["C0", "C1", "C2"])
    new.insert(0, "patient_id", [f"N{i}" for i in range(6)])
    new.insert(1, "plan", ["big", "tiny", "gold"] * 2)
    new.to_csv(tmp_path / "new.csv", index=False)
    thresholds = {label: float(values[0]) for label, values in by_segment.items()}
    predict(str(tmp_path / "new.csv"), AdditiveValue(), AdditiveCost(), thresholds, tmp_path / "out", target=0.5,
            segment="plan", segment_sizes=details["segment_sizes"], scheduler="synchronous")
    written = pd.read_parquet(tmp_path / "out").set_index("patient_id")
    # C_max = 3 (three codes of weight 1): M = 0.5 (3 + 1) - 3 < 0 for the 3 'tiny' patients
    assert written.loc["N1", "note"] == "segment 'tiny': " + too_small_reason(3, 0.5, 3)
    assert "needs at least 5" in written.loc["N1", "note"] and written.loc["N1", "codes"] == ""
    assert written.loc["N0", "note"] == "" and "not in the calibration data" in written.loc["N2", "note"]
    predict(str(tmp_path / "new.csv"), AdditiveValue(), AdditiveCost(), thresholds, tmp_path / "out2",
            segment="plan", scheduler="synchronous")  # sizes unknown: still says why the set is empty
    assert "threshold is -inf" in pd.read_parquet(tmp_path / "out2").set_index("patient_id").loc["N4", "note"]


def test_cli_predict_notes_a_too_small_segment_from_the_settings(tmp_path, capsys):
    from favmac.cli import main
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



def test_glob_with_a_character_class_selects_those_files(tmp_path):
    """'part-00[01].parquet' is a glob too (fsspec alone expands only '*'): it reads parts 0 and 1."""
    probs, labels = tied_data(11, 60, 4, 2)
    write_parts(tmp_path, probs, labels, [20, 25, 15])
    value, cost = AdditiveValue(), AdditiveCost()
    got = calibrate(str(tmp_path / "part-00[01].parquet"), value, cost, [0.5, 1.1])
    want = tree_thresholds(probs[:45], labels[:45], value, cost, [0.5, 1.1])
    assert got.tolist() == want.tolist()
