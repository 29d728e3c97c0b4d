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


def test_fold_notes_follow_the_settings():
    off = {"burn_in": 100, "recalibrate": None}
    assert rv.fold_note(off, "online") is None and rv.tradeoff_caption(None, off) is None
    on = {"burn_in": 100, "recalibrate": 200, "recalibration": "isotonic"}
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


# ---------------------------------------------------------------------- on by default, said and shown (issue 33)
def test_the_default_note_says_on_or_off_why_and_how_to_turn_it_off():
    on = rv.default_note(4000, 1000)
    assert "On by default" in on and "patients 1–1,000" in on and "Untick the box to turn it off" in on
    assert "no set and never calibrate" in on and "over- or under-confident" in on
    off = rv.default_note(2999, 900)
    assert "Off by default" in off and "2,999 labelled patients, fewer than the 3,000" in off
    assert "Off by default" in rv.default_note(3000, 2500)  # no room for the fold beside the burn-in


def test_new_sessions_recalibrate_from_3000_labelled_patients_and_follow_new_data():
    assert form.default_settings(4000, 3)["recalibrate"] == 1000
    assert form.default_settings(4000, 3)["recalibration"] == "platt_tested"
    assert form.default_settings(2999, 3).get("recalibrate") is None
    big = form.default_settings(4000, 3)
    small, notes = form.adapt_settings(big, 1200, 3, np.ones(3), old_n_patients=4000)
    assert small["recalibrate"] is None and any("Recalibration turned off" in n for n in notes)
    back, notes = form.adapt_settings(small, 5000, 3, np.ones(3), old_n_patients=1200)
    assert back["recalibrate"] == 1000 and any("Recalibration on the first 1,000 patients" in n for n in notes)
    chosen = {**big, "recalibrate": None}  # the user turned it off: it stays off on new data of any size
    assert form.adapt_settings(chosen, 6000, 3, np.ones(3), old_n_patients=4000)[0].get("recalibrate") is None
    picked = {**big, "recalibrate": 600}  # the user's own fold stays while it fits
    assert form.adapt_settings(picked, 6000, 3, np.ones(3), old_n_patients=4000)[0]["recalibrate"] == 600
    assert form.adapt_settings(picked, 800, 3, np.ones(3), old_n_patients=4000)[0]["recalibrate"] is None  # no room: off
    assert form.to_spec(big, np.ones(3)).validate(3, 4000).recalibrate == 1000  # what RunSpec's "auto" decides too
    assert form.to_spec({**big, "recalibrate": "auto"}, np.ones(3)).validate(3, 4000).recalibrate == 1000


def test_the_online_intro_names_the_fold_the_burn_in_and_the_predicted_patients():
    text = rv.stream_intro({"recalibrate": 1000, "burn_in": 1000}, 4000, 2000, 2000, False)
    assert "patients 1–1,000 are the recalibration fold" in text and "patients 1,001–2,000 only calibrate (burn-in)" in text
    assert "each of the last 2,000 (patients 2,001–4,000) gets a set" in text
    assert rv.stream_intro({"burn_in": 1000}, 4000, 1000, 3000, False).startswith(
        "4,000 patients: the first 1,000 only calibrate (burn-in); each of the next 3,000 gets a set")
    note = rv.fold_note({"recalibrate": 1000, "burn_in": 1000}, "online")
    assert "on by default" in note and "turns it off" in note


def test_evidence_advice_recommends_only_what_gains_on_every_held_out_half():
    settings = {**form.default_settings(4000, 3), "target": 1.05}
    row = pd.Series({"value_plain": 0.25, "value_mapped": 0.26, "gain": 0.01, "gain_percent": 4.0, "halves_gaining": 2,
                     "recommended": True})
    level, text = rv.evidence_advice(row, settings, 1000, "platt_tested")
    assert level == "success" and "on both halves" in text and "patients 1–500, then 501–1,000" in text and "+4.0 %" in text
    assert "c = 1.05 false flags per chart" in text
    assert rv.evidence_advice(row, {**settings, "recalibrate": None}, 1000, "platt_tested")[0] == "warning"
    loses = row.copy()
    loses[["value_mapped", "gain", "gain_percent", "halves_gaining", "recommended"]] = [0.24, -0.01, -4.0, 0, False]
    level, text = rv.evidence_advice(loses, settings, 1000, "platt_tested")
    assert level == "warning" and "Consider turning it off" in text
    level, text = rv.evidence_advice(loses, {**settings, "recalibrate": None}, 1000, "platt_tested")
    assert level == "info" and "Consider recalibrating" not in text
    same = row.copy()
    same[["value_mapped", "gain", "gain_percent", "halves_gaining", "recommended"]] = [0.25, 0.0, 0.0, 0, False]
    assert "No held-out evidence of a gain" in rv.evidence_advice(same, settings, 1000, "platt_tested")[1]
    assert rv.evidence_fold({"recalibrate": None, "burn_in": 1000}, 4000) == 1000
    assert rv.evidence_fold({"recalibrate": None, "burn_in": 100}, 1000) == 200  # the suggested split below 3,000


def test_a_default_fold_follows_the_form_and_a_chosen_one_stays():
    shown = form.default_settings(4000, 3)
    assert form.fold_for(shown, {"label_available_column": "arrived"}, 4000) is None  # the default: off with arrival times
    assert form.fold_for(shown, {"window": 500}, 4000) is None  # a window shorter than the default fold
    assert form.fold_for(shown, {"burn_in": 500}, 4000) == 1000
    assert form.fold_for(shown, {"recalibrate": 600, "label_available_column": "arrived"}, 4000) == 600  # the user's: kept
    assert form.fold_for(shown, {"recalibrate": None}, 4000) is None  # one click turns it off
