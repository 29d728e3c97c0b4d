"""One default score (docs/method.md "Default score"): every entry point makes the decision of
``favmac.scores.default_score`` — FavMac, replay, predict_with_threshold, RunSpec, the
command line and the app's settings form."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from favmac import AdditiveCost, AdditiveValue, FavMac, RunSpec, predict_with_threshold, replay
from favmac.cli import build_parser, main
from favmac.replay import method_name
from favmac.scores import default_score

#: (control, delta, universe): expected-cost control, violation control, and the full universe under each.
CASES = [("expected", None, "ratio"), ("violation", 0.1, "ratio"), ("expected", None, "full"), ("violation", 0.2, "full")]
IDS = ["expected", "violation", "full-expected", "full-violation"]


def test_the_decision():
    assert [default_score(u, d) for _, d, u in CASES] == ["price", "cost", "cost", "cost"]
    assert default_score() == "price" and default_score(delta=0.5) == "cost"


def stream(n=120, k=5, seed=0):
    rng = np.random.RandomState(seed)
    probs = rng.beta(0.6, 1.5, size=(n, k)).round(3)
    return probs, (rng.rand(n, k) < probs)


@pytest.mark.parametrize("control, delta, universe", CASES, ids=IDS)
def test_library_entry_points(control, delta, universe):
    expected = default_score(universe, delta)
    probs, labels = stream()
    value, cost = AdditiveValue(np.arange(1, 6) / 2), AdditiveCost()
    fm = FavMac(value, cost, 1.1, delta=delta, universe=universe)
    assert fm.score == expected
    result = replay(probs, labels, value, cost, [1.1], delta=delta, universe=universe, burn_in=60)
    assert result.settings["score"] == expected and result.method == method_name(universe, expected)
    explicit = replay(probs, labels, value, cost, [1.1], delta=delta, universe=universe, burn_in=60, score=expected)
    assert np.array_equal(result.thresholds, explicit.thresholds)
    # FavMac's loop with no score gives replay's thresholds with no score
    fm.update(probs[:60], labels[:60])
    assert fm.threshold == result.thresholds[0, 0]
    threshold = float(result.final_thresholds[0])
    assert np.array_equal(predict_with_threshold(probs, value, cost, threshold, universe, delta=delta),
                          predict_with_threshold(probs, value, cost, threshold, universe, score=expected))


def test_predict_with_threshold_default_follows_the_control():
    """The same threshold on the two scores chooses different sets here, so the default matters."""
    probs, _ = stream()
    value, cost = AdditiveValue(np.arange(1, 6) / 2), AdditiveCost()
    expected_sets = predict_with_threshold(probs, value, cost, 0.5)
    violation_sets = predict_with_threshold(probs, value, cost, 0.5, delta=0.1)
    assert np.array_equal(expected_sets, predict_with_threshold(probs, value, cost, 0.5, score="price"))
    assert np.array_equal(violation_sets, predict_with_threshold(probs, value, cost, 0.5, score="cost"))
    assert not np.array_equal(expected_sets, violation_sets)


@pytest.mark.parametrize("control, delta, universe", CASES, ids=IDS)
def test_runspec(control, delta, universe):
    expected = default_score(universe, delta)
    spec = RunSpec(control=control, delta=delta or 0.1, universe=universe)
    assert spec.score == expected and spec.validate(4, 10).score == expected
    # a default score follows the control and universe through replace; a chosen one stays
    other = RunSpec().replace(control=control, delta=delta or 0.1, universe=universe)
    assert other.score == expected
    assert RunSpec(score="cost").replace(control="expected").score == "cost"
    assert RunSpec(control="violation", score="price").replace(universe="value").score == "price"
    assert RunSpec.from_json(spec.to_json()).score == expected


def _cli_options(delta, universe):
    return (["--delta", str(delta)] if delta is not None else []) + ["--universe", universe]


@pytest.mark.parametrize("control, delta, universe", CASES, ids=IDS)
def test_command_line(control, delta, universe, tmp_path, capsys):
    expected = default_score(universe, delta)
    probs, labels = stream()
    frame = pd.DataFrame({"patient_id": [f"P{i}" for i in range(len(probs))]})
    for k in range(probs.shape[1]):
        frame[f"prob_{k}"], frame[f"label_{k}"] = probs[:, k], labels[:, k].astype(int)
    data = tmp_path / "wide.csv"
    frame.to_csv(data, index=False)
    args = build_parser().parse_args(["replay", "--calibration", str(data), "--targets", "1.1",
                                      *_cli_options(delta, universe), "--out", "x.csv"])
    assert args.score is None  # the parser leaves it to RunSpec, i.e. to default_score
    out = tmp_path / "replay.csv"
    assert main(["replay", "--calibration", str(data), "--targets", "1.1", "--burn-in", "60",
                 *_cli_options(delta, universe), "--out", str(out)]) == 0
    assert set(pd.read_csv(out)["method"]) == {method_name(universe, expected)}
    assert capsys.readouterr().out.startswith(method_name(universe, expected) + ":")


def test_command_line_help_states_the_decision(capsys):
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    words = " ".join(capsys.readouterr().out.split())
    assert (f"default {default_score()} under expected-cost control, {default_score(delta=0.1)} with --delta (but "
            f"{default_score('ratio', 0.1, 0.5, [1.0])} when the target is below the cheapest code's false-flag cost) or "
            "--universe full") in words


@pytest.mark.parametrize("control, delta, universe", CASES, ids=IDS)
def test_settings_form(control, delta, universe):
    """The app's form: a new session's score is the default; a score left as shown follows the
    control and universe; a score the user picked stays."""
    from favmac.ui import settings_form as form

    start = form.default_settings(200, 5)
    # the target is 3 % of C_max = 0.15 false flags, below one flag: under violation control the default is price
    expected = default_score(universe, delta, start["target"], [1.0])
    assert start["score"] == default_score(start["universe"], None) == form.to_spec(start, np.ones(5)).score
    chosen = {**start, "control": control, "delta": delta or start["delta"], "universe": universe}
    saved = {**chosen, "score": form.score_for(start, chosen)}
    assert saved["score"] == expected == form.default_score_of(saved)
    assert form.to_spec(saved, np.ones(5)).score == expected
    assert dict(form.settings_summary(saved, 5.0))["Score"] == expected
    # the user picks the other score (where it exists): it stays when the control changes
    if universe != "full":
        other = "price" if expected == "cost" else "cost"
        picked = {**saved, "score": form.score_for(saved, {**saved, "score": other})}
        assert picked["score"] == other
        switched = {**picked, "control": "expected" if control == "violation" else "violation"}
        assert form.score_for(picked, switched) == other


# ---------------------------------------------------------------------- the tight-budget score (issue 33)
def test_the_decision_below_the_cheapest_flag():
    """Under violation control with c below the cheapest code's cost a violation is any false flag:
    "price" (docs/method.md "Default score"); at c = min w a flag of the cheapest code is no violation: "cost"."""
    w = [1.0, 0.5, 2.0]
    assert default_score("ratio", 0.1, 0.4, w) == "price"
    assert default_score("ratio", 0.1, 0.5, w) == "cost"
    assert default_score("ratio", None, 0.4, w) == "price" and default_score("ratio", None, 5.0, w) == "price"
    assert default_score("full", 0.1, 0.4, w) == "cost"
    assert default_score("ratio", 0.1, 0.4) == "cost"  # the costs unknown: the control's default
    assert default_score("ratio", 0.1, [0.2, 0.4], w) == "price"  # every target below the cheapest flag
    assert default_score("ratio", 0.1, [0.2, 0.6], w) == "cost"
    assert default_score("ratio", 0.1, 0.4, [0.0, 1.0]) == "cost"  # a free code: no target is below it


@pytest.mark.parametrize("target, expected", [(0.5, "price"), (1.1, "cost")])
def test_library_entry_points_at_tight_budgets(target, expected):
    probs, labels = stream()
    value, cost = AdditiveValue(np.arange(1, 6) / 2), AdditiveCost()
    assert FavMac(value, cost, target, delta=0.1).score == expected
    assert FavMac(value, AdditiveCost(np.full(5, 2.0)), 1.1, delta=0.1).score == "price"  # 1.1 < w = 2
    result = replay(probs, labels, value, cost, [target], delta=0.1, burn_in=60)
    assert result.settings["score"] == expected
    explicit = replay(probs, labels, value, cost, [target], delta=0.1, burn_in=60, score=expected)
    assert np.array_equal(result.thresholds, explicit.thresholds)
    threshold = float(result.final_thresholds[0])
    assert np.array_equal(predict_with_threshold(probs, value, cost, threshold, delta=0.1, target=target),
                          predict_with_threshold(probs, value, cost, threshold, score=expected))


def test_runspec_and_the_form_at_tight_budgets():
    from favmac.ui import settings_form as form

    assert RunSpec(control="violation", targets=(0.5,)).score == "price"
    assert RunSpec(control="violation", targets=(1.1,)).score == "cost"
    weighted = RunSpec(cost_kind="weighted_fp", weights=(0.3, 1.0, 2.0), control="violation", targets=(0.2,))
    assert weighted.score == "price" and weighted.replace(targets=(0.3,)).score == "cost"
    assert weighted.replace(control="expected").score == "price" and weighted.replace(universe="full").score == "cost"
    assert RunSpec.from_json(weighted.to_json()).score == "price"
    start = form.default_settings(200, 5)
    tight = {**start, "control": "violation", "target": 0.5}
    assert form.default_score_of(tight) == "price" == form.to_spec({**tight, "score": None}, np.ones(5)).score
    assert form.score_for(start, tight) == "price" and form.score_for(start, {**tight, "target": 1.1}) == "cost"
    weights = np.array([0.3, 1.0, 2.0, 1.0, 1.0])
    risk = {**tight, "cost_kind": "weighted_fp", "target": 0.4}
    assert form.default_score_of(risk, weights) == "cost" and form.default_score_of({**risk, "target": 0.2}, weights) == "price"


def test_command_line_at_a_tight_budget(tmp_path, capsys):
    probs, labels = stream()
    frame = pd.DataFrame({"patient_id": [f"P{i}" for i in range(len(probs))]})
    for k in range(probs.shape[1]):
        frame[f"prob_{k}"], frame[f"label_{k}"] = probs[:, k], labels[:, k].astype(int)
    data = tmp_path / "wide.csv"
    frame.to_csv(data, index=False)
    out = tmp_path / "replay.csv"
    assert main(["replay", "--calibration", str(data), "--targets", "0.5", "--burn-in", "60", "--delta", "0.1",
                 "--out", str(out)]) == 0
    assert set(pd.read_csv(out)["method"]) == {method_name("ratio", "price")}
