"""The per-segment tables as shown (Value & cost, Validity): fixed decimals as text, and a
``predicted`` column beside ``patients`` (issue 21: "0.4320" from 3-decimal rounding printed
with 4, and a patients count that included the burn-in while the mean was over predicted ones)."""
from __future__ import annotations

import re

import numpy as np

from favmac import AdditiveCost, AdditiveValue, replay
from favmac.ui.guarantees import segment_display
from favmac.ui.validity import segment_frame
from favmac.validity import validity_check


def segmented_run(adaptive_rate=None, delta=None, n=900, burn_in=150):
    rng = np.random.RandomState(5)
    probs = rng.beta(1.2, 2.0, size=(n, 4)).round(3)
    labels = rng.rand(n, 4) < probs
    groups = np.array(["North", "South", "East"], dtype=object)[rng.randint(0, 3, n)]
    value, cost = AdditiveValue(None), AdditiveCost(None)
    result = replay(probs, labels, value, cost, [0.6], burn_in=burn_in, groups=groups, delta=delta,
                    adaptive_rate=adaptive_rate, score="price")
    return result, probs, labels, groups, value, cost


def test_value_and_cost_table_counts_predicted_patients_and_prints_fixed_decimals():
    result, _, _, groups, _, _ = segmented_run(adaptive_rate=0.05)
    shown = segment_display(result, {"control": "expected"})
    assert list(shown.columns[:3]) == ["segment", "patients", "predicted"]
    for _, row in shown.iterrows():
        assert row["patients"] == int((groups == row["segment"]).sum())  # burn-in included
        assert row["predicted"] == int((result.groups == row["segment"]).sum())  # after the burn-in
    assert shown["patients"].sum() == 900 and shown["predicted"].sum() == 900 - 150
    assert all(re.fullmatch(r"\d+\.\d", v) for v in shown["mean cost"])  # per 100 charts, as the tiles
    assert all(re.fullmatch(r"\d+\.\d", v) for v in shown["bound (adaptive)"])
    assert set(shown["target"]) == {"60"}  # c = 0.6 per chart
    assert all(re.fullmatch(r"\d+\.\d %", v) for v in shown["violation rate"])
    table = result.cost[0]
    for _, row in shown.iterrows():
        assert row["mean cost"] == f"{100 * table[result.groups == row['segment']].mean():.1f}"


def test_violation_control_shows_delta_as_written():
    result, *_ = segmented_run(delta=0.1)
    shown = segment_display(result, {"control": "violation"})
    assert set(shown["δ"]) == {"0.1"} and set(shown["target c"]) == {"0.6"}


def test_validity_table_counts_predicted_patients_and_prints_fixed_decimals():
    _, probs, labels, groups, value, cost = segmented_run()
    report = validity_check(probs, labels, value, cost, 0.6, burn_in=150, groups=groups, n_orderings=200, seed=1,
                            score="price")
    shown = segment_frame(report)
    assert list(shown.columns[:3]) == ["segment", "patients", "predicted"]
    assert shown["patients"].sum() == 900
    assert all(re.fullmatch(r"\d+\.\d", v) for v in shown["mean cost"])  # per 100 charts, as the page's tiles
    assert set(shown["promised"]) == {"60"}
