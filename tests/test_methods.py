"""favmac.methods: the one registry — labels, controls, dispatch equal to calling the engines directly."""
from __future__ import annotations

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, baselines
from favmac.baselines import BASELINE_CONTROLS
from favmac.methods import METHODS, applicability, get_method, method_keys, method_labels, run_method
from favmac.replay import replay
from favmac.runspec import RunSpec


def stream(seed=3, n=90, k=4):
    rng = np.random.RandomState(seed)
    probs = rng.uniform(size=(n, k))
    labels = (rng.uniform(size=(n, k)) < probs).astype(int)
    return probs, labels


def test_registry_lists_favmac_universes_and_every_baseline():
    assert method_keys() == ["favmac", "favmac_price", "favmac_ratio", "favmac_value", "favmac_prob", "favmac_full",
                             "classwise", "inner_set", "fpcp", "crc", "rcps"]
    assert method_labels(35) == ["FavMac (price)", "FavMac (ratio)", "FavMac (value)", "FavMac (prob)", "ClassWise",
                                 "InnerSet", "FPCP", "CRC", "RCPS"]
    assert "FavMac (full)" in method_labels(14)
    for key, controls in BASELINE_CONTROLS.items():
        assert METHODS[key].controls == tuple(controls) and METHODS[key].function is getattr(baselines, key)


def test_get_method_by_key_or_label():
    assert get_method("inner_set") is get_method("InnerSet")
    assert get_method("FavMac (prob)").universe == "prob"
    with pytest.raises(ValueError, match="unknown method 'magic'"):
        get_method("magic")


def test_applicability_reasons():
    assert applicability("CRC", "expected") is None
    assert applicability("CRC", "violation") == "CRC supports expected cost control only"
    assert applicability("rcps", "expected") == "RCPS supports violation probability control only"
    assert applicability("FavMac (full)", "expected", n_codes=35).startswith("FavMac (full) enumerates")
    assert applicability("FavMac (full)", "violation", n_codes=10) is None


@pytest.mark.parametrize("universe", ["ratio", "value", "prob"])
def test_favmac_dispatch_equals_replay(universe):
    probs, labels = stream()
    spec = RunSpec(value_kind="weighted_tp", weights=(1.0, 2.0, 3.0, 4.0), targets=(0.6, 1.1), burn_in=30, window=40,
                   control="violation", delta=0.2, universe="ratio", score="cost")
    value, cost = spec.build()
    direct = replay(probs, labels, value, cost, [0.6, 1.1], delta=0.2, universe=universe, burn_in=30, window=40)
    via = run_method(spec, f"FavMac ({universe})", probs, labels)
    np.testing.assert_array_equal(via.selected, direct.selected)
    np.testing.assert_array_equal(via.thresholds, direct.thresholds)
    assert via.method == f"FavMac ({universe})"
    generic = run_method(spec.replace(universe=universe), "favmac", probs, labels)  # the CLI's favmac: the spec's universe
    np.testing.assert_array_equal(generic.selected, direct.selected)
    assert generic.method == f"FavMac ({universe})"


@pytest.mark.parametrize("key", ["classwise", "inner_set", "fpcp", "crc"])
def test_baseline_dispatch_equals_the_function(key):
    probs, labels = stream(seed=5)
    spec = RunSpec(targets=(0.6,), burn_in=30)
    value, cost = spec.build()
    direct = getattr(baselines, key)(probs, labels, value, cost, [0.6], delta=None, burn_in=30)
    seen = []
    via = run_method(spec, key, probs, labels, codes=list("wxyz"), progress=seen.append)
    np.testing.assert_array_equal(via.selected, direct.selected)
    assert via.method == direct.method == METHODS[key].label
    assert via.codes == list("wxyz")
    assert seen and seen[-1] == 1.0


def test_burn_in_override_and_unsupported_options():
    probs, labels = stream()
    spec = RunSpec(targets=(0.6,), burn_in=10, score="cost")
    result = run_method(spec, "favmac", probs, labels, burn_in=len(probs))  # predict: calibrate on all, no steps
    value, cost = spec.build()
    direct = replay(probs, labels, value, cost, [0.6], burn_in=len(probs), score="cost")
    assert result.n_steps == 0 and result.final_thresholds.tolist() == direct.final_thresholds.tolist()
    # an option a baseline does not take is refused by name, never dropped silently
    assert not METHODS["crc"].accepts("adaptive_rate") and not METHODS["crc"].accepts("groups")
    with pytest.raises(ValueError, match="adaptive_rate is not supported by CRC; leave it unset"):
        run_method(spec.replace(adaptive_rate=0.05), "crc", probs, labels)
    with pytest.raises(ValueError, match="label_delay is not supported by RCPS; leave it unset"):
        run_method(spec.replace(label_delay=3), "rcps", probs, labels)
    with pytest.raises(ValueError, match="segment is not supported by ClassWise; leave it unset"):
        run_method(spec.replace(segment="site"), "classwise", probs, labels, groups=np.array(["a", "b"] * 45))
    # one it does take reaches the function: CRC over a window equals CRC called with that window
    assert METHODS["crc"].accepts("window")
    value, cost = spec.build()
    windowed = run_method(spec.replace(window=5), "crc", probs, labels)
    np.testing.assert_array_equal(windowed.selected, baselines.crc(probs, labels, value, cost, [0.6], delta=None,
                                                                   burn_in=10, window=5).selected)
    assert not np.array_equal(windowed.selected, run_method(spec, "crc", probs, labels).selected)


def test_score_routing():
    """FavMac (price) always runs the price score, FavMac (ratio) the cost score, the command line's
    favmac the spec's; baselines have no score."""
    probs, labels = stream()
    value, cost = AdditiveValue(), AdditiveCost()
    for spec_score in ("cost", "price"):
        spec = RunSpec(targets=(0.6,), burn_in=10, score=spec_score)
        for name, score, label in (("FavMac (price)", "price", "FavMac (price)"), ("favmac_ratio", "cost", "FavMac (ratio)"),
                                   ("favmac", spec_score, "FavMac (price)" if spec_score == "price" else "FavMac (ratio)")):
            result = run_method(spec, name, probs, labels)
            direct = replay(probs, labels, value, cost, [0.6], burn_in=10, score=score)
            assert result.settings["score"] == score and result.method == label
            assert np.array_equal(result.thresholds, direct.thresholds)
        assert "score" not in run_method(spec, "crc", probs, labels).settings
    assert get_method("favmac").display_label(RunSpec(universe="value", score="price")) == "FavMac (value, price)"


def test_declared_options_are_the_functions_keywords():
    """Methods declare what they take as data (Method.options); it must be what the function accepts."""
    import inspect

    from favmac.methods import BASELINE_OPTIONS, FAVMAC_OPTIONS

    always = {"probs", "labels", "value", "cost", "targets", "delta", "burn_in", "codes", "patient_ids"}
    for method in METHODS.values():
        keywords = set(inspect.signature(method.function).parameters)
        assert {name for name in FAVMAC_OPTIONS + BASELINE_OPTIONS if name in keywords} == set(method.options), method.key
        assert method.accepts("window") and method.accepts("score") == method.is_favmac
    # every keyword replay takes is declared: a new one must be added to FAVMAC_OPTIONS
    assert set(inspect.signature(replay).parameters) - always - {"universe", "method", "options"} == set(FAVMAC_OPTIONS)
