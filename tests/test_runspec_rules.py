"""Rules decided once and shared by RunSpec.validate, replay and FavMac (favmac.validation, favmac.runspec)."""
import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, FavMac, RunSpec, replay
from favmac.runspec import SettingsError, read_settings_json
from favmac.validation import check_c_max


def _stream(n=120, k=4, seed=0):
    rng = np.random.RandomState(seed)
    y = rng.rand(n, k) < 0.3
    return np.clip(0.6 * y + 0.4 * rng.rand(n, k), 0, 1), y


@pytest.mark.parametrize("bad", [-2, 0, float("inf"), float("nan"), "3", True])
def test_c_max_is_refused_by_every_entry_point(bad):
    p, y = _stream()
    with pytest.raises(ValueError, match="c_max: expected None"):
        check_c_max(bad)
    with pytest.raises(ValueError, match="c_max: expected None"):
        replay(p, y, AdditiveValue(), AdditiveCost(), [1.0], c_max=bad)
    with pytest.raises(ValueError, match="c_max: expected None"):
        FavMac(AdditiveValue(), AdditiveCost(), 1.0, c_max=bad)
    with pytest.raises(SettingsError, match="largest_cost expected None"):
        RunSpec(largest_cost=bad).validate()


def test_largest_cost_is_c_max_and_travels_in_the_settings_file():
    spec = RunSpec(largest_cost=10.0, targets=(6.0,)).validate(n_codes=4)  # 6 > 4 codes, but C_max is 10
    assert spec.c_max(4) == 10.0
    back = read_settings_json(spec.to_json()).spec
    assert back.largest_cost == 10.0
    with pytest.raises(SettingsError, match="C_max = 4"):
        RunSpec(targets=(6.0,)).validate(n_codes=4)


def test_score_of_a_result_is_the_runs_or_the_one_default():
    from types import SimpleNamespace

    from favmac.scores import default_score, result_score

    assert result_score(SimpleNamespace(settings={"score": "cost"}, delta=None, targets=[1.0])) == "cost"
    for delta in (None, 0.1):
        baseline = SimpleNamespace(settings={"universe": "ratio"}, delta=delta, targets=np.array([2.0]))
        assert result_score(baseline, [1.0, 1.0]) == default_score("ratio", delta, np.array([2.0]), [1.0, 1.0])


# ---------------------------------------------------------------- RunSpec delegates each range to the library's check
# (field, RunSpec fields of a value, the library check of that value, validate's n_patients, values to try)
from favmac.adaptive import check_adaptive_rate  # noqa: E402
from favmac.arrivals import check_label_delay  # noqa: E402
from favmac.recalibration import check_recalibrate_by, check_recalibration  # noqa: E402
from favmac.runspec import library_problem  # noqa: E402
from favmac.scores import check_score  # noqa: E402
from favmac.universe import check_universe  # noqa: E402
from favmac.validation import check_burn_in, check_delta, check_window  # noqa: E402

DELEGATED = [
    ("delta", lambda v: {"control": "violation", "delta": v}, check_delta, None, [0.0, 1.0, -0.1, 1.5, 1e-9, 0.1, 0.999999]),
    ("window", lambda v: {"window": v}, check_window, None, [0, -1, -500, 1, 7, 10**6]),
    ("burn_in", lambda v: {"burn_in": v}, lambda v: check_burn_in(v, None), None, [-1, -10**6, 0, 5, 10**6]),
    ("label_delay", lambda v: {"label_delay": v}, lambda v: check_label_delay(v, 100), 100, [-1, -7, 0, 99, 100, 250]),
    ("label_delay", lambda v: {"label_delay": v}, lambda v: check_label_delay(v, None), None, [-1, 0, 10**6]),
    ("adaptive_rate", lambda v: {"adaptive_rate": v}, lambda v: check_adaptive_rate(v, None), None,
     [0.0, -0.5, -1e-300, 1e-9, 0.05, 1000.0]),
    ("adaptive_rate", lambda v: {"adaptive_rate": v, "control": "violation", "delta": 0.1},
     lambda v: check_adaptive_rate(v, 0.1), None, [0.05, 0.0]),
    ("universe", lambda v: {"universe": v, "score": "cost"}, lambda v: check_universe(v, 3), None,
     ["ratio", "prob", "value", "full", "everything", "", 3, ("ratio",)]),
    ("score", lambda v: {"score": v}, lambda v: check_score(v, "ratio"), None, ["cost", "price", "value", "", None, 1]),
    ("score", lambda v: {"score": v, "universe": "full"}, lambda v: check_score(v, "full"), None, ["cost", "price"]),
    ("recalibration", lambda v: {"recalibration": v}, check_recalibration, None, ["platt", "isotonic", "beta", 3]),
    ("recalibrate_by", lambda v: {"recalibrate_by": v}, check_recalibrate_by, None, ["code", "codes", None, 2]),
    ("largest_cost", lambda v: {"largest_cost": v}, check_c_max, None, [None, 35, 1.5, 0, -2]),
]


def _verdict(call):
    try:
        call()
    except ValueError as err:
        return err
    return None


@pytest.mark.parametrize("field, fields, check, n_patients, values", DELEGATED,
                         ids=[f"{row[0]}-{i}" for i, row in enumerate(DELEGATED)])
def test_runspec_gives_the_library_checks_verdict_and_words(field, fields, check, n_patients, values):
    for value in values:
        library = _verdict(lambda: check(value))
        spec = RunSpec(targets=(1.0,), **fields(value))
        if field == "score" and value is None:  # None is the default score, chosen for the universe: not refused
            assert spec.validate(n_codes=3, n_patients=n_patients).score in ("cost", "price")
            continue
        ours = _verdict(lambda: spec.validate(n_codes=3, n_patients=n_patients))
        assert (ours is None) == (library is None), (field, value, library, ours)
        if library is not None:
            assert isinstance(ours, SettingsError) and ours.field == field, (value, ours)
            name = "c_max" if field == "largest_cost" else field
            assert str(ours).startswith(field) and library_problem(library, name) in str(ours), (value, library, ours)


def test_full_universe_over_too_many_codes_is_the_librarys_refusal():
    library = _verdict(lambda: check_universe("full", 20))
    ours = _verdict(lambda: RunSpec(universe="full", score="cost").validate(n_codes=20))
    assert library is not None and ours.field == "universe" and library_problem(library, "universe") in str(ours)


@pytest.mark.parametrize("n_patients", [1, 10, 4000])
def test_burn_in_leaves_a_patient_to_predict(n_patients):
    """RunSpec's own rule beside the library's (replay accepts burn_in = N: no predictions; a run must predict one)."""
    for burn_in in (-1, 0, n_patients - 1, n_patients, n_patients + 1):
        ours = _verdict(lambda: RunSpec(burn_in=burn_in).validate(n_codes=3, n_patients=n_patients))
        assert (ours is None) == (_verdict(lambda: check_burn_in(burn_in, n_patients - 1)) is None), burn_in
        if burn_in >= n_patients:
            assert ours.field == "burn_in" and f"between 0 and {n_patients - 1}" in str(ours) and str(burn_in) in str(ours)
        elif burn_in < 0:
            assert library_problem(_verdict(lambda: check_burn_in(burn_in, None)), "burn_in") in str(ours)


@pytest.mark.parametrize("field, fields", [
    ("delta", lambda v: {"control": "violation", "delta": v}),
    ("window", lambda v: {"window": v}),
    ("burn_in", lambda v: {"burn_in": v}),
    ("label_delay", lambda v: {"label_delay": v}),
    ("adaptive_rate", lambda v: {"adaptive_rate": v}),
])
def test_values_refused_before_the_range_is_checked_stay_refused(field, fields):
    """RunSpec parses first (a settings file may hold text numbers): booleans, NaN, infinities, text that is not a
    number and fractions of a count are refused naming the field, whatever the library's check would make of them."""
    bad = [True, False, float("nan"), float("inf"), -float("inf"), "abc", "1e999", [1], {"a": 1}]
    if field in ("window", "burn_in", "label_delay"):
        bad += [2.5, "2.5", 10**13]
    for value in bad:
        with pytest.raises(SettingsError) as err:
            RunSpec(targets=(1.0,), **fields(value)).validate(n_codes=3, n_patients=100)
        assert err.value.field == field, (value, err.value)
    good = {"delta": "0.25", "window": "7", "burn_in": "5", "label_delay": "3", "adaptive_rate": "0.05"}[field]
    spec = RunSpec(targets=(1.0,), **fields(good)).validate(n_codes=3, n_patients=100)
    assert getattr(spec, field) == float(good)


def test_a_universe_refusal_names_the_value_once_and_keeps_long_text_short():
    for universe, shown in (("x", "unknown universe 'x';"), ("y" * 500, "unknown universe 'yyyy")):
        with pytest.raises(SettingsError) as err:
            RunSpec(universe=universe).validate(20)
        text = str(err.value)
        assert text.startswith("universe unknown universe") and shown in text and text.count("universe") == 2
        assert len(text) < 200
