"""favmac.distributed.calibration: thresholds on Dask equal FavMac fed every row, exactly."""
from __future__ import annotations

import math
import os
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

from dist_helpers import split_sizes, targets_for, tied_data, tree_thresholds, wide_frame, write_parts  # noqa: E402

from favmac import AdditiveCost, AdditiveValue, DataError, FavMac  # noqa: E402
from favmac.distributed import calibrate, histograms, predict  # noqa: E402


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
    monkeypatch.setattr(histograms, "EXACT_LIMIT", 0)
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

def price_oracle(probs, labels, v, w, targets, delta, universe):
    """Literal docs/method.md evaluation of the price score (independent of favmac)."""
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
            dc, dv = (1.0 - p[k]) * w[k], p[k] * v[k]  # the step's increments, as docs/method.md writes them
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
    with pytest.raises(DataError, match="no column named 'plan' to read the segments from"):
        calibrate(str(tmp_path / "a.parquet"), AdditiveValue(), AdditiveCost(), [1.0], segment="plan")
    frame.insert(1, "plan", ["x"] * 12 + [None] + ["y"] * 7)
    frame.to_parquet(tmp_path / "a.parquet", index=False)
    with pytest.raises(DataError, match="this patient has no segment label") as err:
        calibrate(str(tmp_path / "a.parquet"), AdditiveValue(), AdditiveCost(), [1.0], segment="plan",
                  scheduler="synchronous")
    assert (err.value.row, err.value.column) == (14, "plan")


# ----------------------------------------------------------------------------- the default score


@pytest.mark.parametrize("universe,delta,expected", [
    ("ratio", None, "price"),  # expected-cost control
    ("prob", None, "price"),
    ("ratio", 0.1, "cost"),  # violation control
    ("value", 0.2, "cost"),
    ("full", None, "cost"),  # the full universe has no price
    ("full", 0.1, "cost"),
])
def test_default_score_is_favmac_universe_default_score(tmp_path, universe, delta, expected):
    """No score given: calibrate uses favmac.scores.default_score(universe, delta) (docs/method.md "Default score")."""
    from favmac.scores import default_score

    assert default_score(universe, delta) == expected
    probs, labels = tied_data(201, 80, 4, 2)
    value, cost = AdditiveValue([1.0, 2.0, 0.5, 1.5]), AdditiveCost([1.0, 0.5, 2.0, 1.0])
    write_parts(tmp_path, probs, labels, [40, 40])
    targets = [0.3, 0.8, 1.6]
    got, details = calibrate(str(tmp_path), value, cost, targets, delta=delta, universe=universe,
                             scheduler="synchronous", return_details=True)
    assert details["score"] == expected
    explicit = calibrate(str(tmp_path), value, cost, targets, delta=delta, universe=universe, score=expected,
                         scheduler="synchronous")
    assert np.array_equal(got, explicit)
    assert np.array_equal(got, tree_thresholds(probs, labels, value, cost, targets, delta, universe, score=expected))
    if universe == "ratio":  # the other score gives other thresholds here, so the default really was applied
        other = {"price": "cost", "cost": "price"}[expected]
        assert not np.array_equal(got, calibrate(str(tmp_path), value, cost, targets, delta=delta, universe=universe,
                                                 score=other, scheduler="synchronous"))
