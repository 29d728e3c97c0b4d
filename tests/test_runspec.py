"""favmac.runspec: one description of a run — validation, build, and the settings JSON."""
from __future__ import annotations

import json

import numpy as np
import pytest

from favmac.functions import AdditiveCost, AdditiveValue, FormulaError, FormulaValue
from favmac.runspec import SETTINGS_FORMAT, RunSpec, SettingsError, read_settings_json

W = (1.0, 2.0, 3.0)


def doc(settings, weights=None, **top):
    out = {"format": SETTINGS_FORMAT, "version": 1, "settings": settings, **top}
    if weights is not None:
        out["weights"] = weights
    return json.dumps(out).encode()


def test_defaults_are_valid_and_plain():
    spec = RunSpec().validate(n_codes=3, n_patients=10)
    assert spec == RunSpec(recalibrate=None)  # "auto" resolved: 10 labelled patients are too few for the default fold
    assert RunSpec().validate(n_codes=3) == RunSpec()  # the data's size unknown: "auto" stays
    assert spec.control_delta is None and spec.target == 1.0
    assert RunSpec(control="violation", delta=0.2).control_delta == 0.2


def test_validate_returns_plain_types():
    spec = RunSpec(targets=np.array([1.5, 2.0]), burn_in=np.int64(3), window=5.0, delta="0.2", weights=np.array(W),
                   cost_kind="weighted_fp").validate(3, 10)
    assert spec.targets == (1.5, 2.0) and type(spec.burn_in) is int and spec.window == 5 and spec.delta == 0.2
    assert spec.weights == W
    assert {spec: 1}[spec] == 1  # frozen, so usable as a dict key


@pytest.mark.parametrize(
    "change, field, words",
    [
        ({"value_kind": "dollars"}, "value_kind", "must be one of tp, weighted_tp, formula"),
        ({"cost_kind": 3}, "cost_kind", "must be one of fp, weighted_fp"),
        ({"control": "sometimes"}, "control", "must be one of expected, violation"),
        ({"value_kind": "weighted_tp", "weights": None}, "value_kind", "weighted_tp needs per-code weights"),
        ({"cost_kind": "weighted_fp", "weights": None}, "cost_kind", "weighted_fp needs per-code weights"),
        ({"weights": (1.0, -1.0, 2.0)}, "weights", ">= 0"),
        ({"weights": (1.0, 2.0)}, "weights", "one weight per code (3)"),
        ({"weights": (1.0, float("nan"), 2.0)}, "weights[1]", "finite"),
        ({"targets": (0.0,)}, "target", "must be > 0 and <= C_max, in (0, C_max = 3]"),
        ({"targets": (3.5,)}, "target", "(0, C_max = 3]"),
        ({"targets": (1.0, -2.0)}, "targets[1]", "> 0"),
        ({"targets": ()}, "targets", "at least one"),
        ({"targets": ("abc",)}, "target", "must be a number"),
        ({"delta": 1.0}, "delta", "between 0 and 1 (exclusive), e.g. 0.1, or None for expected-cost control; got 1.0"),
        ({"delta": True}, "delta", "must be a number"),
        ({"universe": "everything"}, "universe", "unknown universe 'everything'; choose one of ratio"),
        ({"burn_in": 10}, "burn_in", "between 0 and 9"),
        ({"burn_in": -1}, "burn_in", "expected an integer >= 0, got -1"),
        ({"burn_in": 2.5}, "burn_in", "whole number"),
        ({"window": 0}, "window", "positive number of patients"),
        ({"score": "value"}, "score", "cost, price"),
        ({"segment": "  "}, "segment", "column name"),
        ({"adaptive_rate": 0.0}, "adaptive_rate", "> 0"),
        ({"value_kind": "formula", "formula": ""}, "formula", "empty"),
    ],
)
def test_validate_names_the_field_and_the_range(change, field, words):
    spec = RunSpec(weights=W, **{k: v for k, v in change.items() if k != "weights"})
    if "weights" in change:
        spec = spec.replace(weights=change["weights"])
    with pytest.raises(SettingsError) as info:
        spec.validate(n_codes=3, n_patients=10)
    assert info.value.field == field
    assert words in str(info.value) and str(info.value).startswith(field)


def test_full_universe_only_for_few_codes():
    RunSpec(universe="full").validate(n_codes=14)
    with pytest.raises(SettingsError, match="at most 14 codes"):
        RunSpec(universe="full").validate(n_codes=15)


def test_new_options_accept_their_ranges():
    spec = RunSpec(score="price", segment="region", adaptive_rate=0.05).validate(3, 10)
    assert (spec.score, spec.segment, spec.adaptive_rate) == ("price", "region", 0.05)


def test_formula_is_compiled_by_validate():
    with pytest.raises(FormulaError):
        RunSpec(value_kind="formula", formula="sum_hits(v) +").validate(3)
    assert RunSpec(value_kind="formula", formula="sum_hits(v)").validate(3).formula == "sum_hits(v)"


def test_build_value_and_cost():
    value, cost = RunSpec().build()
    assert isinstance(value, AdditiveValue) and value.weights is None and isinstance(cost, AdditiveCost) and cost.weights is None
    value, cost = RunSpec(value_kind="weighted_tp", cost_kind="weighted_fp", weights=W).build()
    assert value.weights.tolist() == list(W) and cost.weights.tolist() == list(W)
    selected, labels = np.array([True, True, False]), np.array([True, False, True])
    assert float(value(selected, labels)) == 1.0 and float(cost(selected, labels)) == 2.0
    formula, _ = RunSpec(value_kind="formula", formula="sum_hits(v) * 2", weights=W).build()
    assert isinstance(formula, FormulaValue) and float(formula(selected, labels)) == 2.0


def test_c_max_and_cost_weights():
    assert RunSpec().c_max(35) == 35.0
    assert RunSpec(cost_kind="weighted_fp", weights=(0.1, 0.2, 0.7)).c_max(3) == 1.0  # correctly rounded sum


def test_json_round_trip_with_extras_and_weights():
    spec = RunSpec(value_kind="formula", formula="sum_hits(v)", cost_kind="weighted_fp", weights=W, control="expected",
                   targets=(1.7,), delta=0.05, universe="prob", burn_in=4, window=3, score="price", segment="region",
                   adaptive_rate=0.5)
    raw = spec.to_json(["A", "B", "C"], dataset="toy", extras={"grid": {"n_targets": 4}})
    parsed = json.loads(raw)
    assert parsed["weights"] == {"A": 1.0, "B": 2.0, "C": 3.0} and parsed["settings"]["target"] == 1.7
    assert parsed["settings"]["recalibrate"] == "auto"  # the default fold is the data's decision, kept in the file
    back = read_settings_json(raw, codes=["A", "B", "C"], n_patients=10)
    assert back.spec == spec.replace(recalibrate=None)  # resolved for 10 patients: no fold
    assert back.extras == {"grid": {"n_targets": 4}} and back.notes == () and back.weights_restored
    assert RunSpec.from_json(raw, codes=["A", "B", "C"]) == spec
    several = RunSpec(targets=(1.0, 2.0))
    assert RunSpec.from_json(several.to_json()) == several


def test_reads_the_app_version_1_file():
    # written by FavMac Studio before RunSpec existed: no score/segment/adaptive_rate, a grid
    raw = doc({"value_kind": "weighted_tp", "formula": "x", "cost_kind": "fp", "control": "expected", "target": 1.1,
               "delta": 0.1, "universe": "ratio", "burn_in": 5, "window": None,
               "grid": {"low_pct": 5.0, "high_pct": 50.0, "n_targets": 10, "methods": ["CRC"]}},
              {"A": 1.0, "B": 2.0, "C": 3.0}, dataset="HCC cohort")
    back = read_settings_json(raw, codes=["A", "B", "C"], n_patients=10)
    assert back.spec == RunSpec(value_kind="weighted_tp", formula="x", weights=W, targets=(1.1,), burn_in=5, recalibrate=None)
    assert back.extras["grid"]["methods"] == ["CRC"]


def test_missing_fields_keep_the_base_and_notes_explain():
    base = RunSpec(weights=W, targets=(2.5,), burn_in=3)
    back = read_settings_json(doc({"target": 2.0, "colour": "red"}, {"A": 1}), codes=["A", "B", "C"], base=base)
    assert back.spec == base.replace(targets=(2.0,)) and not back.weights_restored
    assert any("colour" in n for n in back.notes) and any("do not cover" in n for n in back.notes)


@pytest.mark.parametrize(
    "raw, words",
    [
        (b"\xff\xfe", "not UTF-8"),
        (b"[1, 2", "not valid JSON"),
        (b"[]", "not a FavMac Studio settings file"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (doc({"target": 1.0})[:-1] + b', "x": NaN}', "not allowed"),
        (doc({}).replace(b'"settings": {}', b'"settings": {"burn_in": ' + b"9" * 5000 + b"}"), "not allowed"),
        (doc({"burn_in": 10**30}), "burn_in must be at most"),
        (doc({"target": 1.0}).replace(b'"target": 1.0', b'"target": 1e400'), "target must be finite"),
        (doc({"targets": {"a": 1}}), "targets must be a list of numbers"),
        (doc({"targets": [1] * 20_000}), "targets may hold at most"),
        (doc({"value_kind": ["tp"]}), "value_kind must be text"),
        (doc({"segment": 5}), "segment must be text"),
        (doc({"grid": [1, 2]}), "grid must be an object"),
        (doc({}, {"A": "heavy", "B": 1, "C": 1}), "weights.A must be a number"),
        (doc({}, [1, 2, 3]), "weights must map each code"),
        (b'{"format": "favmac-studio-settings", "version": 9, "settings": {}}', "version 9 is not supported"),
        (b'{"format": "favmac-studio-settings", "version": true, "settings": {}}', "version"),
        (b'{"format": "favmac-studio-settings", "version": 1}', 'no "settings"'),
        (b"{}" + b" " * 3_000_000, "at most"),
    ],
)
def test_from_json_refuses_malformed_files_without_crashing(raw, words):
    with pytest.raises(SettingsError, match=words.replace("(", r"\(").replace(")", r"\)")):
        read_settings_json(raw, codes=["A", "B", "C"], n_patients=10)


def test_price_score_needs_a_greedy_universe():
    with pytest.raises(SettingsError, match="score 'price' cannot be used with the 'full' universe"):
        RunSpec(score="price", universe="full").validate(3, 10)
    assert RunSpec(score="price", universe="prob").validate(3, 10).score == "price"


def test_default_score_is_price_except_on_the_full_universe():
    assert RunSpec().score == "price"
    assert RunSpec(universe="full").validate(3, 10).score == "cost"
    assert RunSpec(score="cost").score == "cost"
    assert RunSpec.from_json(RunSpec(score="cost").to_json()).score == "cost"


def test_target_from_percent_is_exact_on_the_decimals_as_written():
    from favmac.runspec import target_from_percent

    assert 2 / 100 * 35 != 0.7 and target_from_percent(2, 35) == 0.7  # the float product is 0.7000000000000001
    assert target_from_percent(5, 19.59) == 0.9795 and target_from_percent(3, 35, decimals=2) == 1.05
    assert target_from_percent(100, 35) == 35.0 and target_from_percent(100, 19.59) == 19.59
    assert target_from_percent(1, 1 / 3) == 0.00333333333333  # 12 significant digits
    assert target_from_percent(33.3333, 1, decimals=6) == 0.333333


def test_target_from_percent_rounds_to_nearest_ties_to_even():
    from favmac.runspec import target_from_percent

    # off-tie values round to the nearest, as round(float) did: 12.5 % of 35.3 = 4.4125 -> 4.41
    assert target_from_percent(12.5, 35.3, decimals=2) == 4.41 == round(35.3 * 12.5 / 100, 2)
    assert target_from_percent(13, 35.3, decimals=2) == 4.59 == round(35.3 * 13 / 100, 2)  # 4.589
    # exact decimal ties go to the even neighbour (the float product broke them by binary noise)
    assert target_from_percent(10.9, 5, decimals=2) == 0.54  # 0.545 exactly; round(float) gave 0.55
    assert target_from_percent(2.5, 111, decimals=2) == 2.78  # 2.775 exactly; round(float) gave 2.77
    assert target_from_percent(7.5, 35, decimals=2) == 2.62  # 2.625 exactly, as round(float) gave


def test_target_from_percent_integer_costs_and_small_targets():
    from favmac.runspec import target_from_percent

    assert target_from_percent(10, 10, decimals=2, integer_cost=True) == 1.1  # the paper's c = k + 0.1
    assert target_from_percent(10, 10, decimals=2) == 1.0
    assert target_from_percent(100, 10, decimals=2, integer_cost=True) == 10.0  # never past C_max
    assert target_from_percent(0.01, 10, decimals=2) == 0.01  # 0.001 rounds to 0: the smallest step
    assert target_from_percent(0.01, 10, decimals=2, integer_cost=True) == 0.1  # 0 is whole: 0 + 0.1
    for bad in (0, -1, 100.5, float("nan"), "x"):
        with pytest.raises(SettingsError, match="percent"):
            target_from_percent(bad, 35)
    with pytest.raises(SettingsError, match="c_max must be >= 0"):
        target_from_percent(5, -1)


def test_target_from_percent_matches_the_old_rules_off_ties():
    """The three rules it replaces (the CLI's, the app's default target, the trade-off grid) on
    random inputs: equal except on exact decimal ties."""
    from fractions import Fraction

    from favmac.runspec import target_from_percent
    from favmac.thresholds import exact

    rng = np.random.RandomState(7)
    for _ in range(3000):
        cmax = float(rng.choice([rng.randint(1, 200), round(rng.uniform(0.1, 300), rng.randint(0, 5))]))
        pct = float(rng.choice([rng.randint(1, 101), round(rng.uniform(0.01, 100), rng.randint(0, 4))]))
        if pct <= 0:
            continue
        assert target_from_percent(pct, cmax) == float(f"{pct * cmax / 100.0:.12g}")  # the CLI's
        for decimals, old in ((2, round(cmax * pct / 100.0, 2)), (6, float(np.round(pct / 100.0 * cmax, 6)))):
            scaled = exact(pct) * exact(cmax) / 100 * 10**decimals
            if scaled - scaled.numerator // scaled.denominator != Fraction(1, 2):
                assert target_from_percent(pct, cmax, decimals=decimals) == max(old, 10.0**-decimals), (pct, cmax)


# --------------------------------------------------------------------------- settings against the data (issue 21)

def wide_dataset(region_cells=None, n=12):
    """A 3-code wide dataset with a ``segment`` column and a text column ``region``."""
    import io

    from favmac.io import load_calibration
    region_cells = region_cells or [("N" if i % 2 else "S") for i in range(n)]
    rows = [f"P{i},{(i % 5) / 5},{i % 2},0.5,1,0.25,0,{'ab'[i % 2]},{region_cells[i]}" for i in range(n)]
    text = "patient_id,prob_A,label_A,prob_B,label_B,prob_C,label_C,segment,region\n" + "\n".join(rows) + "\n"
    return load_calibration(io.BytesIO(text.encode()), name="wide.csv", keep_columns=True)


def test_check_against_data_accepts_the_datas_segment_columns():
    from favmac.runspec import check_against_data
    ds = wide_dataset()
    assert ds.segment_columns() == ["segment", "region"]
    for column in (None, "segment", "region"):
        assert check_against_data(RunSpec(segment=column), ds).segment == column


def test_a_segment_column_the_data_lacks_is_refused_naming_the_columns():
    from favmac.runspec import check_against_data
    ds = wide_dataset()
    with pytest.raises(SettingsError, match=r"segment names the column 'plan', which the loaded data \(wide.csv\) does not "
                                            r"have; its segment columns are 'segment', 'region'"):
        check_against_data(RunSpec(segment="plan"), ds)
    # read_settings_json with the dataset: refused before anything is restored
    with pytest.raises(SettingsError, match="'plan'"):
        read_settings_json(doc({"segment": "plan", "target": 1}), dataset=ds)
    # without a dataset the name alone cannot be checked (the command line checks it when it reads the file)
    assert read_settings_json(doc({"segment": "plan"}), codes=ds.codes, n_patients=ds.n_patients).spec.segment == "plan"


def test_a_segment_column_with_a_blank_label_or_no_text_column_is_refused():
    import io

    from favmac.io import load_calibration
    from favmac.runspec import check_against_data
    blank = wide_dataset(["N"] * 5 + [" "] + ["S"] * 6)
    with pytest.raises(SettingsError, match=r"segment column 'region' cannot be used: wide.csv, row 7, column region: patient 'P5' has no label"):
        check_against_data(RunSpec(segment="region"), blank)
    plain = load_calibration(io.BytesIO(b"patient_id,prob_A,label_A\nP1,0.5,1\nP2,0.25,0\n"), name="plain.csv")
    with pytest.raises(SettingsError, match="it has no text column to read segments from"):
        check_against_data(RunSpec(segment="segment"), plain)


@pytest.mark.parametrize("settings, weights, field", [
    ({"universe": "full", "score": "cost"}, None, "universe"),    # fine for 3 codes: checked below with 20
    ({"burn_in": 12}, None, "burn_in"),                           # N = 12 leaves no patient to predict
    ({"target": 3.5}, None, "target"),                            # C_max = 3 false positives
    ({"cost_kind": "weighted_fp", "target": 10}, {"A": 1, "B": 2, "C": 3}, "target"),  # C_max = 6 with the file's weights
    ({"value_kind": "formula", "formula": "sum_hits(w)"}, None, "formula"),
])
def test_every_setting_that_refers_to_the_data_is_checked_against_it(settings, weights, field):
    ds = wide_dataset()
    if field == "universe":
        assert read_settings_json(doc(settings), dataset=ds).spec.universe == "full"
        ds = wide_dataset()
        ds.probs = ds.probs.reindex(columns=[f"K{i}" for i in range(20)], fill_value=0.5)
        with pytest.raises(SettingsError, match="universe"):
            read_settings_json(doc(settings), dataset=ds)
        return
    with pytest.raises((SettingsError, FormulaError), match=field if field != "formula" else "w"):
        read_settings_json(doc(settings, weights), dataset=ds)


def test_a_payment_model_that_does_not_pay_the_datas_codes_is_refused():
    import io

    from favmac.io import load_calibration
    from favmac.runspec import check_against_data
    text = "patient_id,prob_HCC37,label_HCC37,prob_HCC38,label_HCC38\nP1,0.5,1,0.2,0\nP2,0.25,0,0.9,1\n"
    ds = load_calibration(io.BytesIO(text.encode()), name="v28.csv")
    ok = RunSpec(value_kind="cms_payment", cms_model="V28", cms_year=2026, targets=(0.1,))
    assert check_against_data(ok, ds).cms_model == "V28"
    with pytest.raises(SettingsError, match=r"cms_model V24 \(2026 tables\) cannot price the loaded data \(v28.csv\): "
                                            r"codes: 2 code\(s\) are not payment HCCs of CMS-HCC V24 \(2026 tables\): HCC37, HCC38"):
        check_against_data(ok.replace(cms_model="V24"), ds)
