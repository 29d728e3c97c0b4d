"""FavMac (the online estimator) against the literal docs/method.md oracle, and its API."""
import math

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, FavMac

import oracle
from instances import UNIVERSES, random_instance, targets_for


#: Fixed integer seeds per (universe, integer_weights): reproducible in every process.
SEEDS = {(u, integer): 100 * i + 10 * integer for i, u in enumerate(UNIVERSES) for integer in (False, True)}


@pytest.mark.parametrize("integer_weights", [True, False])
@pytest.mark.parametrize("universe", UNIVERSES)
def test_expected_threshold_matches_oracle(universe, integer_weights):
    rng = np.random.RandomState(SEEDS[universe, integer_weights])
    for _ in range(30):
        probs, labels, v, w = random_instance(rng, integer_weights)
        N = len(probs) - 3
        for c in targets_for(rng, w, integer_weights):
            fm = FavMac(AdditiveValue(v), AdditiveCost(w), c, universe=universe, n_codes=len(v), score="cost")
            for n in range(N + 1):
                cal = list(zip(probs[:n], labels[:n]))
                expect = oracle.expected_threshold(cal, v, w, c, universe)
                assert fm.threshold == expect, (n, c, universe)
                got_set = np.flatnonzero(fm.predict(probs[n])).tolist()
                assert sorted(got_set) == sorted(oracle.predict(probs[n], v, w, expect, universe))
                fm.update(probs[n], labels[n])


@pytest.mark.parametrize("integer_weights", [True, False])
@pytest.mark.parametrize("universe", UNIVERSES)
def test_violation_threshold_matches_oracle(universe, integer_weights):
    rng = np.random.RandomState(1 + SEEDS[universe, integer_weights])
    for _ in range(25):
        probs, labels, v, w = random_instance(rng, integer_weights)
        N = len(probs) - 3
        delta = float(rng.choice([0.1, 0.2, 0.3, 0.5]))
        for c in targets_for(rng, w, integer_weights):
            fm = FavMac(AdditiveValue(v), AdditiveCost(w), c, delta=delta, universe=universe, score="cost")  # the oracle's score
            for n in range(N + 1):
                cal = list(zip(probs[:n], labels[:n]))
                assert fm.threshold == oracle.violation_threshold(cal, v, w, c, delta, universe), (n, c, delta)
                fm.update(probs[n], labels[n])


def test_exact_ties_integer_costs():
    """c = 4.1 and N + 1 = 10: c(N+1) = 41 exactly, so F(b) = M is a tie and is not "> M"."""
    K = 10
    probs = np.full((9, K), 0.5)
    probs[:, 0] = 0.9  # code 0 first in every order
    labels = np.zeros((9, K), bool)
    # each patient: one point per code; F(b) counts false positives with Chat <= b
    fm = FavMac(AdditiveValue(), AdditiveCost(), 4.1, universe="prob", score="cost")
    fm.update(probs, labels)
    cal = list(zip(probs, labels))
    assert fm.threshold == oracle.expected_threshold(cal, np.ones(K), np.ones(K), 4.1, "prob")
    # M = 41 - 10 = 31 = 9 patients * 3 points + 4: the tie sits exactly at a key boundary
    assert fm.threshold == pytest.approx(0.1 + 0.5 * 3)


def test_empty_calibration_and_infinities():
    value, cost = AdditiveValue(), AdditiveCost()
    assert FavMac(value, cost, 3.0, c_max=3.0).threshold == math.inf  # C_max / 1 <= c
    assert FavMac(value, cost, 2.9, c_max=3.0).threshold == -math.inf
    fm = FavMac(value, cost, 1.0)
    assert fm.predict([0.9, 0.8, 0.1]).tolist() == [False, False, False]  # K=3 > c: -inf
    fm = FavMac(value, cost, 3.0)
    assert fm.predict([0.9, 0.8, 0.1]).tolist() == [True, True, True]  # +inf allows every set
    fm = FavMac(value, cost, 1.0, delta=0.1)
    assert fm.threshold == -math.inf  # k = 1 > N = 0


def test_threshold_is_right_before_any_update_with_n_codes():
    value, cost = AdditiveValue(), AdditiveCost()
    assert FavMac(value, cost, 3.0, n_codes=3).threshold == math.inf  # C_max = 3 <= c * 1
    assert FavMac(value, cost, 2.9, n_codes=3).threshold == -math.inf
    fm = FavMac(value, cost, 1.0, n_codes=3)
    assert fm.n_codes == 3 and fm.c_max_exact == 3
    assert FavMac(value, cost, 1.0).n_codes is None


def test_update_returns_self_and_reset_clears_calibration():
    rng = np.random.RandomState(3)
    probs, labels = rng.rand(20, 4).round(2), rng.rand(20, 4) < 0.3
    fm = FavMac(AdditiveValue(), AdditiveCost(), 1.5)
    assert fm.update(probs, labels) is fm
    assert fm.n_calibration == 20 and fm.n_codes == 4
    before = fm.threshold
    assert fm.reset() is fm
    assert fm.n_calibration == 0 and fm.n_codes is None and fm.threshold == -math.inf
    assert fm.update(probs, labels).threshold == before
    kept = FavMac(AdditiveValue(), AdditiveCost(), 1.5, n_codes=4).update(probs, labels).reset()
    assert kept.n_codes == 4 and kept.n_calibration == 0


def test_argument_names_match_replay_and_baselines():
    rng = np.random.RandomState(4)
    probs, labels = rng.rand(10, 3).round(2), rng.rand(10, 3) < 0.3
    by_name = FavMac(AdditiveValue(), AdditiveCost(), 1.0).update(probs=probs, labels=labels)
    by_position = FavMac(AdditiveValue(), AdditiveCost(), 1.0).update(probs, labels)
    assert by_name.threshold == by_position.threshold
    assert by_name.predict(probs=probs[0]).tolist() == by_position.predict(probs[0]).tolist()
    table = by_name.explain(probs=probs[0], codes=["A", "B", "C"])
    assert list(table["code"]) and set(table["code"]) == {"A", "B", "C"}


def test_bad_inputs_name_the_argument():
    value, cost = AdditiveValue(), AdditiveCost()
    with pytest.raises(ValueError, match="delta: expected a violation level between 0 and 1 \\(exclusive\\)"):
        FavMac(value, cost, 1.0, delta=1.0)
    with pytest.raises(ValueError, match="target: expected a finite"):
        FavMac(value, cost, math.inf)
    with pytest.raises(ValueError, match="window: expected None or a positive"):
        FavMac(value, cost, 1.0, window=0)
    with pytest.raises(ValueError, match="n_codes"):
        FavMac(value, cost, 1.0, n_codes=0)
    fm = FavMac(value, cost, 1.0, n_codes=3)
    with pytest.raises(ValueError, match="probs: expected 3 codes per patient, got 2"):
        fm.predict([0.1, 0.2])
    with pytest.raises(ValueError, match="labels: every label must be 0 or 1"):
        fm.update([0.1, 0.2, 0.3], [0, 2, 1])
    with pytest.raises(ValueError, match="probs: every probability"):
        fm.update([0.1, 1.2, 0.3], [0, 1, 1])
    fm.update([0.1, 0.2, 0.3], [0, 1, 1])
    with pytest.raises(ValueError, match="codes: expected 3 code names, one per code, got 2"):
        fm.explain([0.1, 0.2, 0.3], codes=["A", "B"])  # was an IndexError from inside the table


def test_constructor_only_stores_and_checks_the_settings():
    """Estimator habit: no calibration state until reset() or the first use; bad settings named at once."""
    value, cost = AdditiveValue(), AdditiveCost()
    fm = FavMac(value, cost, 1.5, n_codes=3, window=5)
    assert set(vars(fm)) == {"value", "cost", "target", "delta", "universe", "score", "c_max", "window",
                             "adaptive_rate", "recalibrate", "recalibration", "recalibrate_by", "_n_codes_arg"}
    assert fm.threshold == -math.inf and fm.n_codes == 3  # the state is built on first use
    assert "_tree" in vars(fm)
    assert FavMac(value, cost, 1.5).reset().n_calibration == 0
    with pytest.raises(ValueError, match="unknown universe 'ratios'"):
        FavMac(value, cost, 1.0, universe="ratios")
    with pytest.raises(ValueError, match="the 'full' universe .* at most 14 codes"):
        FavMac(value, cost, 1.0, universe="full", n_codes=20)
    with pytest.raises(ValueError, match="score: expected one of cost, price"):
        FavMac(value, cost, 1.0, score="prices")
    with pytest.raises(ValueError, match="score: the price score is defined on nested sequences"):
        FavMac(value, cost, 1.0, universe="full", score="price")
    with pytest.raises(ValueError, match="c_max: expected None .* finite cost > 0"):
        FavMac(value, cost, 1.0, c_max=-2)
    with pytest.raises(ValueError, match="adaptive_rate"):
        FavMac(value, cost, 1.0, delta=0.1, adaptive_rate=0.1)
    with pytest.raises(AttributeError, match="no attribute 'thresholds'"):
        fm.thresholds  # noqa: B018  (a typo is still an AttributeError)


def test_oracle_imports_nothing_from_favmac():
    """The oracle is the independent slow reference: it must not share code with the package."""
    import ast
    from pathlib import Path

    tree = ast.parse((Path(__file__).parent / "oracle.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0] if node.level == 0 else ".")
    assert imported <= {"__future__", "math", "fractions", "itertools", "numpy", "functools"}, imported


def test_tests_never_seed_from_hash():
    """hash() is salted per process: a seed derived from it cannot reproduce a failure."""
    import re
    from pathlib import Path

    here = Path(__file__).resolve()
    pattern = re.compile(r"\bhash\(")
    offenders = [str(p) for p in here.parent.rglob("*.py") if p.resolve() != here and pattern.search(p.read_text())]
    assert offenders == [], offenders


def test_frames_are_matched_by_code_name_between_update_and_predict():
    # update(frame with codes A, B, C) then predict(frame with C, A, B) used the columns by position: each
    # code's probability was read as another code's
    import pandas as pd

    rng = np.random.RandomState(7)
    probs = pd.DataFrame(rng.rand(200, 3).round(2), columns=["A", "B", "C"])
    labels = pd.DataFrame((rng.rand(200, 3) < probs.to_numpy()).astype(int), columns=["A", "B", "C"])
    value, cost = AdditiveValue([1.0, 2.0, 3.0]), AdditiveCost([1.0, 2.0, 3.0])
    fm = FavMac(value, cost, 1.0).update(probs[:150], labels[:150])
    new = probs[150:]
    want = fm.predict(new.to_numpy())
    assert np.array_equal(fm.predict(new[["C", "A", "B"]]), want)
    assert np.array_equal(fm.predict(new.iloc[0][["B", "C", "A"]]), want[0])
    same = FavMac(value, cost, 1.0).update(probs[:100], labels[:100]).update(probs[100:150][["C", "B", "A"]],
                                                                              labels[100:150][["C", "B", "A"]])
    assert same.threshold == fm.threshold
    with pytest.raises(ValueError, match="probs: .*'D'"):
        fm.predict(new.rename(columns={"C": "D"}))


@pytest.mark.parametrize("delta", [None, 0.1])
@pytest.mark.parametrize("score", ["cost", "price"])
def test_a_first_batch_gives_the_thresholds_of_one_patient_at_a_time(delta, score):
    # FavMac's first update of a batch builds its calibration tree in one sorted build; the thresholds (and the
    # next batches') equal feeding the patients one at a time, with float weights, ties and infinite scores
    from favmac import AdditiveCost, AdditiveValue, FavMac

    rng = np.random.RandomState(11)
    probs = np.round(rng.rand(300, 6), 1)  # coarse: many exact ties
    probs[:10, 0] = 0.0  # a zero probability: an infinite price
    labels = rng.rand(300, 6) < probs
    value, cost = AdditiveValue(rng.uniform(0.1, 3, 6)), AdditiveCost(rng.uniform(0.1, 2, 6))
    for target in (0.3, 1.7, 5.0):
        batch = FavMac(value, cost, target, delta=delta, score=score).update(probs[:200], labels[:200])
        single = FavMac(value, cost, target, delta=delta, score=score)
        for i in range(200):
            single.update(probs[i:i + 1], labels[i:i + 1])
        assert batch.threshold == single.threshold and batch.n_calibration == single.n_calibration == 200
        batch.update(probs[200:], labels[200:])
        single.update(probs[200:], labels[200:])
        assert batch.threshold == single.threshold
        assert np.array_equal(batch.predict(probs[:50]), single.predict(probs[:50]))
