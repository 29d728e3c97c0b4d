"""Trade-offs page: FavMac and the applicable baselines over a grid of targets."""
from __future__ import annotations

import numpy as np
import pytest
from app_helpers import open_additive, assert_clean, go, open_page


def test_default_comparison_runs_on_demand_and_matches_metrics():
    at = open_additive("tradeoffs")
    assert_clean(at)
    assert at.session_state["tradeoffs"] is None  # computed on demand, not on the first visit
    assert any("Run comparison" in i.value for i in at.info)
    assert "RCPS" not in at.pills(key="grid_methods").options  # expected-cost control: not offered
    at.button(key="run_tradeoffs").click().run()
    assert_clean(at)
    out = at.session_state["tradeoffs"]
    points = out["points"]
    assert len(out["targets"]) == 11  # the 10 grid targets and the configured one
    assert at.session_state["settings"]["target"] in out["targets"]
    assert set(points["method"]) == {"FavMac (price)", "FavMac (ratio)", "FavMac (value)", "FavMac (prob)", "ClassWise",
                                     "InnerSet", "CRC"}
    go(at, "home")
    go(at, "tradeoffs")  # the result is kept across navigation
    assert at.session_state["tradeoffs"] is out and len(at.get("plotly_chart")) == 2
    assert len(at.get("plotly_chart")) == 2
    table = at.dataframe[0].value
    assert list(table["Method"]) == list(dict.fromkeys(points["method"]))
    # the table leads with value captured and false flags, per 100 charts, averaged over the targets
    assert list(table.columns[1:4]) == ["Risk-weighted value captured per 100 charts", "Value captured (% of the true codes' value)",
                                        "False flags per 100 charts"]
    price = points[points["method"] == "FavMac (price)"]
    assert table.loc[0, "False flags per 100 charts"] == pytest.approx(price["mean_cost"].mean() * 100)
    assert table.loc[0, "Risk-weighted value captured per 100 charts"] == pytest.approx(price["mean_value"].mean() * 100)
    # the expander's every method x target table: the same units (it showed the means per chart)
    every = next(d.value for d in at.dataframe if "Target (per 100 charts)" in d.value.columns)
    assert len(every) == len(points)
    np.testing.assert_allclose(every["Target (per 100 charts)"], 100 * points["target"])
    np.testing.assert_allclose(every["False flags per 100 charts"], 100 * points["mean_cost"])
    np.testing.assert_allclose(every["Risk-weighted value captured per 100 charts"], 100 * points["mean_value"])
    np.testing.assert_allclose(every["Charts over the target (%)"], 100 * points["violation_freq"])


def test_grid_form_changes_targets_and_methods():
    at = open_additive("tradeoffs")
    assert at.number_input(key="grid_low").value is None  # empty: decided from the data
    at.number_input(key="grid_low").set_value(10.0)  # false flags per 100 charts
    at.number_input(key="grid_high").set_value(30.0)
    at.number_input(key="grid_n").set_value(3)
    at.pills(key="grid_methods").set_value(["FavMac (ratio)", "InnerSet"])
    at.button(key="run_tradeoffs").click().run()
    assert_clean(at)
    out = at.session_state["tradeoffs"]
    np.testing.assert_allclose(out["targets"], [0.1, 0.17, 0.3, 1.05])  # log-spaced per chart; 1.05 is the configured target
    assert set(out["points"]["method"]) == {"FavMac (ratio)", "InnerSet"}
    grid = at.session_state["settings"]["grid"]
    assert (grid["n_targets"], grid["low"], grid["high"], grid["unit"]) == (3, 0.1, 0.3, "fp")
    assert at.number_input(key="grid_low").value == 10.0 and at.number_input(key="grid_high").value == 30.0


def test_violation_control_offers_rcps_not_crc():
    at = open_additive("value_cost")
    at.radio(key="control").set_value("violation")
    at.button(key="apply_settings").click().run()
    at.session_state["settings"]["grid"]["methods"] = ["FavMac (ratio)", "RCPS", "CRC", "ClassWise"]
    go(at, "tradeoffs")
    assert_clean(at)
    options = at.pills(key="grid_methods").options
    assert "RCPS" in options and "CRC" not in options and "ClassWise" not in options  # options follow applicability
    at.button(key="run_tradeoffs").click().run()
    out = at.session_state["tradeoffs"]
    assert set(out["points"]["method"]) == {"FavMac (ratio)", "RCPS"}


def test_both_scores_side_by_side():
    """FavMac (price) runs the price score and FavMac (ratio) the cost score, whatever the form's score."""
    from favmac import io as fio
    from favmac.functions import AdditiveCost, AdditiveValue
    from favmac.replay import replay
    from app_helpers import SAMPLES

    at = open_additive("value_cost")
    at.radio(key="score").set_value("cost")
    at.button(key="apply_settings").click().run()
    at.session_state["settings"]["grid"].update(n_targets=2, low_pct=5.0, high_pct=10.0,
                                                methods=["FavMac (price)", "FavMac (ratio)"])
    go(at, "tradeoffs")
    assert_clean(at)
    at.button(key="run_tradeoffs").click().run()  # computed on demand
    out = at.session_state["tradeoffs"]
    points = out["points"].set_index(["method", "target"])
    ds = fio.load_calibration(SAMPLES / "hcc_calibration.csv")
    weights = fio.read_weights(SAMPLES / "hcc_weights.csv", ds.codes)["weight"].to_numpy(float)
    burn_in = at.session_state["settings"]["burn_in"]
    for label, score in (("FavMac (price)", "price"), ("FavMac (ratio)", "cost")):
        res = replay(ds.prob_array(), ds.label_array(), AdditiveValue(weights), AdditiveCost(), list(out["targets"]),
                     burn_in=burn_in, score=score, recalibrate=at.session_state["settings"]["recalibrate"])  # the session's fold
        for t, target in enumerate(out["targets"]):
            assert points.loc[(label, target), "mean_value"] == pytest.approx(res.value[t].mean())
    values = out["points"].groupby("method")["mean_value"].mean()
    assert values["FavMac (price)"] > values["FavMac (ratio)"]  # the measured gain holds on the HCC sample
