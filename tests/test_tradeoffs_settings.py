"""Trade-offs under the session's settings (issue 33, "Trade-offs quietly ignores the session's groupings and
label delay"): every row runs under the session's segments, label delay or arrivals, window and fold.

* the comparison's FavMac rows equal direct replays under the same settings (groupings + delay + fold);
* a baseline under segments equals the method run on each group's own stream (one grouping), and the
  intersection of those sets (several groupings);
* a baseline with labels that arrive later equals the method calibrated, patient by patient, on exactly the
  patients whose labels arrived (brute force);
* a baseline after a fold equals the method on the mapped probabilities of the patients after the fold.
"""
import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue
from favmac.baselines import classwise, crc, inner_set, rcps
from favmac.baselines.grid import resolve_grid
from favmac.baselines.settings import run_baseline
from favmac.metrics import summarize
from favmac.recalibration import fit_recalibration
from favmac.replay import replay
from favmac.runspec import RunSpec
from favmac.tradeoffs import dropped_settings, method_run, run_comparison

N, K, BURN = 260, 5, 90
TARGETS = [0.4, 1.0, 2.2]
FUNCTIONS = {"crc": (crc, None), "inner_set": (inner_set, None), "classwise": (classwise, None), "rcps": (rcps, 0.1),
             "inner_set_violation": (inner_set, 0.1)}


def _data(seed=0, n=N):
    rng = np.random.default_rng(seed)
    q = rng.beta(0.6, 2.0, size=(n, K))
    labels = (rng.random((n, K)) < q).astype(int)
    probs = np.clip(q + rng.normal(0, 0.08, size=q.shape), 0.001, 0.999)
    return probs, labels, rng


def _direct(key, probs, labels, targets, delta, burn_in, **options):
    function = FUNCTIONS[key][0]
    if function is rcps:
        options.setdefault("grid", resolve_grid(probs, 201, None))
    return function(probs, labels, AdditiveValue(), AdditiveCost(), targets, delta=delta, burn_in=burn_in, **options)


def _key(name):
    return "inner_set" if name == "inner_set_violation" else name


def _per_group(name, probs, labels, group, burn_in, grid):
    """(T, S, K) sets: the method run on each group's own stream, its burn-in the group's first patients."""
    _, delta = FUNCTIONS[name]
    sets = np.zeros((len(TARGETS), len(probs) - burn_in, K), dtype=bool)
    for g in np.unique(group):
        rows = np.flatnonzero(group == g)
        own = int((rows < burn_in).sum())
        options = {"grid": grid} if FUNCTIONS[name][0] is rcps else {}
        run = _direct(name, probs[rows], labels[rows], TARGETS, delta, own, **options)
        sets[:, rows[own:] - burn_in] = run.selected
    return sets


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_a_baseline_under_one_grouping_is_the_method_on_each_groups_stream(name):
    probs, labels, rng = _data(1)
    group = rng.choice(["a", "b", "c"], size=N)
    _, delta = FUNCTIONS[name]
    result = run_baseline(_key(name), probs, labels, AdditiveValue(), AdditiveCost(), TARGETS, delta=delta, burn_in=BURN,
                          groups=group)
    expected = _per_group(name, probs, labels, group, BURN, resolve_grid(probs, 201, None))
    assert expected.any() and not expected.all()
    np.testing.assert_array_equal(result.selected, expected)
    weights = np.ones(K)
    np.testing.assert_allclose(result.cost, (expected & (labels[BURN:] == 0)[None]) @ weights)
    np.testing.assert_allclose(result.value, (expected & (labels[BURN:] == 1)[None]) @ weights)


@pytest.mark.parametrize("name", ["crc", "classwise", "rcps"])
def test_a_baseline_under_several_groupings_gets_the_intersection_of_each_groupings_sets(name):
    probs, labels, rng = _data(2)
    plan, band = rng.choice(["p", "q"], size=N), rng.choice(["young", "mid", "old"], size=N)
    _, delta = FUNCTIONS[name]
    result = run_baseline(_key(name), probs, labels, AdditiveValue(), AdditiveCost(), TARGETS, delta=delta, burn_in=BURN,
                          groups={"plan": plan, "band": band})
    grid = resolve_grid(probs, 201, None)
    expected = _per_group(name, probs, labels, plan, BURN, grid) & _per_group(name, probs, labels, band, BURN, grid)
    assert expected.any()
    np.testing.assert_array_equal(result.selected, expected)
    # each grouping's set alone chooses more somewhere: the intersection is not one grouping's
    assert (_per_group(name, probs, labels, plan, BURN, grid) != expected).any()


@pytest.mark.parametrize("name", ["crc", "inner_set", "classwise", "rcps"])
@pytest.mark.parametrize("window", [None, 40])
def test_a_baseline_with_late_labels_is_calibrated_on_exactly_the_arrived_patients(name, window):
    n, burn = 150, 50
    probs, labels, rng = _data(3, n)
    arrival = np.arange(n) + rng.integers(0, 30, size=n)  # per-patient arrivals, not in stream order
    _, delta = FUNCTIONS[name]
    grid = resolve_grid(probs, 201, None)
    result = run_baseline(_key(name), probs, labels, AdditiveValue(), AdditiveCost(), TARGETS, delta=delta, burn_in=burn,
                          window=window, label_available_at=arrival)
    joined = np.where(np.arange(n) < burn, burn - 1, arrival)  # burn-in patients are labelled from the start
    order = np.lexsort((np.arange(n), joined))
    for patient in range(burn, n):
        arrived = [i for i in order if joined[i] < patient]  # in the order their labels join
        if window:
            arrived = arrived[-window:]
        rows = np.array(arrived + [patient])
        options = {"grid": grid} if FUNCTIONS[name][0] is rcps else {}
        alone = _direct(name, probs[rows], labels[rows], TARGETS, delta, len(rows) - 1, **options)
        np.testing.assert_array_equal(result.selected[:, patient - burn], alone.selected[:, 0], err_msg=f"patient {patient}")


def test_a_fixed_label_delay_with_segments_matches_brute_force():
    n, burn, delay = 140, 40, 12
    probs, labels, rng = _data(4, n)
    group = rng.choice(["x", "y"], size=n)
    result = run_baseline("crc", probs, labels, AdditiveValue(), AdditiveCost(), TARGETS, burn_in=burn, groups=group,
                          label_delay=delay)
    for patient in range(burn, n):
        arrived = [i for i in range(n) if group[i] == group[patient] and (i < burn or i < patient - delay)]
        rows = np.array(arrived + [patient])
        alone = _direct("crc", probs[rows], labels[rows], TARGETS, None, len(arrived))
        np.testing.assert_array_equal(result.selected[:, patient - burn], alone.selected[:, 0])


@pytest.mark.parametrize("name", ["crc", "classwise", "inner_set"])
def test_a_baseline_after_the_fold_runs_on_the_mapped_patients_after_it(name):
    probs, labels, _ = _data(5, 400)
    probs = np.clip(probs * 1.6, 0.001, 0.999)  # over-confident: the fold's maps move p
    fold = 150
    maps = fit_recalibration(probs[:fold], labels[:fold], "platt")
    result = run_baseline(_key(name), probs, labels, AdditiveValue(), AdditiveCost(), TARGETS, burn_in=60, recalibrate=fold,
                          recalibration="platt")
    alone = _direct(name, maps.apply(probs[fold:]), labels[fold:], TARGETS, None, 60)
    assert result.burn_in == fold + 60 and result.settings["recalibrate"] == fold
    np.testing.assert_array_equal(result.selected, alone.selected)
    np.testing.assert_allclose(result.cost, alone.cost)


def test_without_segments_or_delays_a_baseline_runs_as_itself():
    probs, labels, _ = _data(6)
    for name in ("crc", "classwise"):
        result = run_baseline(name, probs, labels, AdditiveValue(), AdditiveCost(), TARGETS, burn_in=BURN, window=70)
        alone = _direct(name, probs, labels, TARGETS, None, BURN, window=70)
        np.testing.assert_array_equal(result.selected, alone.selected)


def test_a_baseline_refuses_a_control_it_does_not_support_under_settings():
    probs, labels, rng = _data(7)
    with pytest.raises(ValueError, match="ClassWise"):
        run_baseline("classwise", probs, labels, AdditiveValue(), AdditiveCost(), TARGETS, delta=0.1, burn_in=BURN,
                     groups=rng.choice(["a", "b"], size=N))


# ---------------------------------------------------------------------- the comparison's rows
def _session(n=3200, seed=8):
    """A stream long enough for the default fold (3,000 labelled patients), with two groupings."""
    rng = np.random.default_rng(seed)
    q = rng.beta(0.5, 3.0, size=(n, 4))
    labels = (rng.random(q.shape) < q).astype(int)
    probs = np.clip(1 / (1 + np.exp(-1.4 * np.log(q / (1 - q)))), 1e-4, 1 - 1e-4)  # over-confident
    groups = {"plan": rng.choice(["A", "B"], size=n), "band": rng.choice(["u", "v", "w"], size=n)}
    return probs, labels, groups, [f"C{k}" for k in range(4)], np.arange(n).astype(str)


def test_the_comparisons_favmac_rows_are_the_replays_under_the_sessions_settings():
    probs, labels, groups, codes, ids = _session()
    spec = RunSpec(value_kind="tp", cost_kind="fp", burn_in=300, segment=("plan", "band"), label_delay=25).validate(4, len(probs))
    assert spec.recalibrate == 1000  # the default fold, resolved for 3,200 patients
    targets = [0.3, 0.8]
    out = run_comparison(probs, labels, codes, ids, spec, targets, ["FavMac (price)", "FavMac (ratio)", "CRC"], groups=groups)
    for method, universe, score in (("FavMac (price)", "ratio", "price"), ("FavMac (ratio)", "ratio", "cost")):
        direct = replay(probs, labels, AdditiveValue(), AdditiveCost(), targets, universe=universe, score=score, burn_in=300,
                        groups=groups, label_delay=25, recalibrate=1000, codes=codes, patient_ids=ids, method=method)
        assert direct.burn_in == 1300
        row = out["summaries"][method]
        expected = summarize(direct)
        np.testing.assert_allclose(row["mean_value"], expected["mean_value"])
        np.testing.assert_allclose(row["mean_cost"], expected["mean_cost"])
        np.testing.assert_allclose(row["violation_freq"], expected["violation_freq"])
    # the baseline row under the same settings: its direct computation (fold, then both groupings, then the delay)
    crc_row = out["summaries"]["CRC"]
    direct = run_baseline("crc", probs, labels, AdditiveValue(), AdditiveCost(), targets, burn_in=300, groups=groups,
                          label_delay=25, recalibrate=1000)
    np.testing.assert_allclose(crc_row["mean_cost"], summarize(direct)["mean_cost"])
    np.testing.assert_allclose(crc_row["mean_value"], summarize(direct)["mean_value"])
    assert (crc_row["n"] == len(probs) - 1300).all() and (out["summaries"]["FavMac (price)"]["n"] == len(probs) - 1300).all()
    assert out["dropped"] == {}
    assert any("segments plan, band" in s for s in out["settings"]) and any("1,000" in s for s in out["settings"])


def test_a_baseline_row_under_groupings_equals_its_direct_computation():
    probs, labels, groups, codes, ids = _session(1500, seed=9)
    spec = RunSpec(value_kind="tp", cost_kind="fp", burn_in=400, segment="plan", window=600).validate(4, len(probs))
    assert spec.recalibrate is None  # 1,500 labelled patients: no default fold
    targets = [0.25, 0.6, 1.1]
    out = run_comparison(probs, labels, codes, ids, spec, targets, ["ClassWise", "InnerSet"], groups=groups["plan"])
    plan = groups["plan"]
    for method, function in (("ClassWise", classwise), ("InnerSet", inner_set)):
        sets = np.zeros((len(targets), len(probs) - 400, 4), dtype=bool)
        for g in ("A", "B"):
            rows = np.flatnonzero(plan == g)
            own = int((rows < 400).sum())
            sets[:, rows[own:] - 400] = function(probs[rows], labels[rows], AdditiveValue(), AdditiveCost(), targets,
                                                 burn_in=own, window=600).selected
        cost = (sets & (labels[400:] == 0)[None]).sum(axis=2)
        np.testing.assert_allclose(out["summaries"][method]["mean_cost"], cost.mean(axis=1))
        np.testing.assert_allclose(out["summaries"][method]["mean_value"], (sets & (labels[400:] == 1)[None]).sum(axis=2).mean(axis=1))


def test_a_row_that_drops_a_setting_says_which():
    probs, labels, groups, codes, ids = _session(900, seed=10)
    spec = RunSpec(value_kind="tp", cost_kind="fp", burn_in=300, adaptive_rate=0.05).validate(4, len(probs))
    out = run_comparison(probs, labels, codes, ids, spec, [0.4, 0.9], ["FavMac (price)", "CRC"])
    assert out["dropped"] == {"CRC": ["the adaptive target"]}
    assert dropped_settings(spec, "FavMac (price)") == []
    direct = replay(probs, labels, AdditiveValue(), AdditiveCost(), [0.4, 0.9], universe="ratio", score="price", burn_in=300,
                    adaptive_rate=0.05)
    np.testing.assert_allclose(out["summaries"]["FavMac (price)"]["mean_cost"], summarize(direct)["mean_cost"])


def test_the_comparison_asks_for_the_segments_the_session_names():
    probs, labels, groups, codes, ids = _session(600, seed=11)
    spec = RunSpec(value_kind="tp", cost_kind="fp", burn_in=200, segment="plan").validate(4, len(probs))
    with pytest.raises(ValueError, match="segment"):
        run_comparison(probs, labels, codes, ids, spec, [0.5], ["CRC"])


def test_method_run_passes_the_fold_to_fpcp():
    probs, labels, groups, codes, ids = _session(3100, seed=12)
    spec = RunSpec(value_kind="tp", cost_kind="fp", burn_in=200, targets=(0.5,), segment="plan").validate(4, len(probs))
    result = method_run(spec, "FPCP", probs, labels, codes, ids, groups=groups["plan"])
    direct = replay(probs, labels, AdditiveValue(), AdditiveCost(), [0.5], universe="prob", score="cost", burn_in=200,
                    groups=groups["plan"], recalibrate=1000)
    assert result.burn_in == 1200
    np.testing.assert_array_equal(result.selected, direct.selected)


def test_the_additive_payment_row_runs_under_the_fold_and_delay_too():
    from favmac import io as fio
    from favmac.methods import run_method
    from favmac.tradeoffs import ADDITIVE_LABEL, realized_payment

    ds = fio.load_calibration("sample_data/hcc_calibration.csv")
    probs, labels = ds.prob_array()[:3000], ds.label_array()[:3000]
    codes, ids = ds.codes, ds.patient_ids[:3000]
    spec = RunSpec(value_kind="cms_payment", cost_kind="fp", burn_in=500, label_delay=100).validate(ds.n_codes, 3000)
    assert spec.recalibrate == 1000
    out = run_comparison(probs, labels, codes, ids, spec, [1.0], ["FavMac (price)"])
    value, _ = spec.build(codes)
    additive = spec.replace(targets=(1.0,), value_kind="weighted_tp", weights=tuple(value.weights_for(len(codes))))
    direct = realized_payment(run_method(additive, "FavMac (price)", probs, labels, codes=codes, patient_ids=ids), value, labels)
    assert direct.burn_in == 1500
    row = out["summaries"][ADDITIVE_LABEL]
    np.testing.assert_allclose(row["mean_value"], summarize(direct)["mean_value"])
    np.testing.assert_allclose(row["mean_cost"], summarize(direct)["mean_cost"])
