"""favmac.ui.recalibration_view (no Streamlit run): the calibration figures in words, the suggested
split, the before/after bins, the notes; and the Trade-offs row with recalibration."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from favmac.methods import run_method
from favmac.metrics import summarize
from favmac.recalibration import MIN_FOLD, calibration_error, fit_recalibration
from favmac import tradeoffs
from favmac import target_grid
from favmac.ui import data_views, recalibration_view as rv, settings_form as form, tradeoffs as tradeoffs_view


def stream(n=600, k=3, seed=0, temperature=0.3):
    """Over-confident probabilities: logit p = logit q / temperature."""
    rng = np.random.RandomState(seed)
    q = rng.uniform(0.02, 0.6, size=(n, k))
    labels = (rng.uniform(size=(n, k)) < q).astype(int)
    logit = np.log(q / (1 - q)) / temperature
    return 1 / (1 + np.exp(-logit)), labels


def test_suggested_split_is_a_fifth_within_bounds():
    assert rv.suggested_split(4000, 1000) == 800
    assert rv.suggested_split(100_000, 1000) == 1000
    assert rv.suggested_split(200, 0) == MIN_FOLD
    assert rv.suggested_split(300, 200) == 60
    assert rv.suggested_split(300, 240) == 59  # 300 - 1 - 240 patients left for the fold
    assert rv.suggested_split(100, 60) is None  # fewer than MIN_FOLD patients left


def test_calibration_display_is_calibration_error_in_words():
    probs, labels = stream()
    table = calibration_error(probs, labels, codes=["A", "B", "C"])
    shown = rv.calibration_display(table)
    assert shown["Code"].tolist() == table.sort_values("ece", ascending=False)["code"].tolist()
    for row in shown.itertuples(index=False):
        want = table.set_index("code").loc[row.Code]
        assert row.Patients == 600 and row.Confirmed == want["positives"]
        assert row[5] == pytest.approx(round(100 * want["ece"], 2))
        assert row[6] == f"predicted {100 * want['mean_prob']:.1f} %, confirmed {100 * want['rate']:.1f} % of 600 patients"


def test_looks_miscalibrated_uses_the_threshold_in_points():
    table = pd.DataFrame({"code": ["A", "B", "C"], "ece": [0.01, 0.05, 0.02]})
    assert rv.looks_miscalibrated(table) == ["B", "C"]
    probs, labels = stream(temperature=0.3)
    assert rv.looks_miscalibrated(calibration_error(probs, labels)) != []


def test_before_after_bins_are_reliability_bins_of_the_patients_after_the_fold():
    probs, labels = stream()
    maps = fit_recalibration(probs[:200], labels[:200])
    lines = rv.before_after_bins(probs, labels, maps, 200)
    pd.testing.assert_frame_equal(lines["Before recalibration"], data_views.reliability_bins(probs[200:], labels[200:]))
    pd.testing.assert_frame_equal(lines["After recalibration"], data_views.reliability_bins(maps.apply(probs[200:]), labels[200:]))
    one = rv.before_after_bins(probs, labels, maps, 200, code_index=1)
    pd.testing.assert_frame_equal(one["After recalibration"], data_views.reliability_bins(maps.apply(probs[200:])[:, [1]], labels[200:, [1]]))
    groups = np.array(["north", "south"] * 300, dtype=object)
    per = rv.before_after_bins(probs, labels, maps, 200, groups=groups)
    assert list(per) == ["north · before", "north · after", "south · before", "south · after"]
    rows = groups[200:] == "south"
    pd.testing.assert_frame_equal(per["south · after"], data_views.reliability_bins(maps.apply(probs[200:])[rows], labels[200:][rows]))
    # the maps bring the curve closer to the diagonal on these over-confident probabilities
    gap = {name: float(np.average(np.abs(b["mean_prob"] - b["observed"]), weights=b["count"])) for name, b in lines.items()}
    assert gap["After recalibration"] < gap["Before recalibration"]


def test_fold_maps_and_notes_follow_the_settings():
    class Data:
        codes = ["A", "B", "C"]

        def __init__(self, probs, labels):
            self.probs_, self.labels_ = probs, labels

        def prob_array(self):
            return self.probs_

        def label_array(self):
            return self.labels_

    probs, labels = stream()
    off = {"burn_in": 100, "recalibrate": None}
    assert rv.fold_maps(Data(probs, labels), off) is None
    assert rv.fold_note(off, "online") is None and rv.tradeoff_caption(None, off) is None
    on = {"burn_in": 100, "recalibrate": 200, "recalibration": "isotonic"}
    assert rv.fold_maps(Data(probs, labels), on) == fit_recalibration(probs[:200], labels[:200], "isotonic", codes=Data.codes)
    assert "patients 1–200 are the recalibration fold" in rv.fold_note(on, "online")
    assert "fitted on the first 200 patients" in rv.fold_note(on, "export")
    assert "after the first 300" in rv.tradeoff_caption(200, on)


def test_settings_round_trip_through_the_spec():
    s = {**form.default_settings(600, 3), "burn_in": 100, "recalibrate": 200, "recalibration": "isotonic"}
    spec = form.to_spec(s, np.ones(3))
    assert (spec.recalibrate, spec.recalibration) == (200, "isotonic")
    back = form.validate_settings(s, 3, 600)
    assert (back["recalibrate"], back["recalibration"]) == (200, "isotonic")
    assert "recalibrate" not in form.validate_settings({**s, "recalibrate": None}, 3, 600)
    assert ("Recalibration", "isotonic on the first 200 patients") in form.settings_summary(back, 3.0)
    with pytest.raises(form.SettingsError, match="recalibrate"):
        form.validate_settings({**s, "recalibrate": 20}, 3, 600)


def test_run_tradeoffs_adds_the_recalibrated_row_on_the_same_patients():
    probs, labels = stream()
    s = {**form.default_settings(600, 3), "burn_in": 100, "score": "price"}
    spec = form.to_spec(s, np.ones(3))
    targets = target_grid.tradeoff_targets(3, 10, 40, 2, True)
    codes, ids = ["A", "B", "C"], [f"p{i}" for i in range(600)]
    out = tradeoffs_view.run_tradeoffs(probs, labels, codes, ids, spec, targets, ["FavMac (price)", "CRC"], recalibrate=200)
    points = out["points"]
    assert list(dict.fromkeys(points["method"])) == ["FavMac (price)", "CRC", tradeoffs.RECALIBRATED_LABEL]
    assert set(points["n"]) == {600 - 200 - 100}
    grid = spec.replace(targets=tuple(targets))
    want = summarize(run_method(grid.replace(recalibrate=200), "FavMac (price)", probs, labels, codes=codes, patient_ids=ids))
    got = points[points["method"] == tradeoffs.RECALIBRATED_LABEL]
    np.testing.assert_allclose(got["mean_value"], want["mean_value"])
    np.testing.assert_allclose(got["mean_cost"], want["mean_cost"])
    plain = summarize(run_method(grid.replace(burn_in=300), "FavMac (price)", probs, labels, codes=codes, patient_ids=ids))
    np.testing.assert_allclose(points[points["method"] == "FavMac (price)"]["mean_value"], plain["mean_value"])
    without = tradeoffs_view.run_tradeoffs(probs, labels, codes, ids, spec, targets, ["FavMac (price)"])
    assert set(without["points"]["method"]) == {"FavMac (price)"} and set(without["points"]["n"]) == {500}
