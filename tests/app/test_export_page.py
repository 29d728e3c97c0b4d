"""Export page: the downloads equal what the library computes; settings JSON round-trips."""
from __future__ import annotations

import io
import json

import numpy as np
from favmac.recalibration import recalibration_of
import pandas as pd
import pytest
from app_helpers import open_additive, SAMPLES, assert_clean, go, open_page

from favmac import io as fio
from favmac.functions import AdditiveCost, AdditiveValue
from favmac.replay import predict_with_threshold, replay


def read_csv(data: bytes) -> pd.DataFrame:
    return pd.read_csv(io.BytesIO(data), dtype={"patient_id": str, "codes": str}, keep_default_na=False)


def library_run(target, burn_in, universe="ratio", score="price", recalibrate=None):
    """The same computation straight from the library, without any app code (the app's default score: price;
    the app's default recalibration fold, when the settings have one, given as ``recalibrate``)."""
    ds = fio.load_calibration(SAMPLES / "hcc_calibration.csv")
    weights = fio.read_weights(SAMPLES / "hcc_weights.csv", ds.codes)["weight"].to_numpy(float)
    value, cost = AdditiveValue(weights), AdditiveCost(None)
    result = replay(ds.prob_array(), ds.label_array(), value, cost, [target], burn_in=burn_in, universe=universe,
                    codes=ds.codes, patient_ids=ds.patient_ids, score=score, recalibrate=recalibrate)
    return ds, value, cost, result


def test_calibration_and_new_patient_exports_equal_the_library(downloads):
    at = open_additive("value_cost")
    at.number_input(key="target").set_value(2.6)
    at.number_input(key="burn_in").set_value(800)
    at.button(key="apply_settings").click().run()
    go(at, "export")
    assert_clean(at)
    fold = at.session_state["settings"]["recalibrate"] or 0  # on by default: the sample has 4,000 patients
    assert fold == 1000
    ds, value, cost, result = library_run(2.6, 800, recalibrate=fold)
    first = fold + 800

    sets = read_csv(downloads["favmac_calibration_sets.csv"])
    assert list(sets.columns) == ["patient_id", "codes", "n_codes", "expected_value", "cost_proxy", "threshold", "method",
                                  "target", "delta", "universe", "score", "descriptions", "realized_value",
                                  "realized_cost"]
    assert sets["patient_id"].tolist() == [str(i) for i in ds.patient_ids[first:]]
    selected = result.selected[0]
    assert sets["codes"].tolist() == [";".join(np.asarray(ds.codes)[row]) for row in selected]
    np.testing.assert_allclose(sets["threshold"], result.thresholds[0])
    probs = recalibration_of(result).apply(ds.prob_array()[first:])  # the run's own maps
    # the file prints 12 significant digits (recalibrated probabilities have more)
    np.testing.assert_allclose(sets["expected_value"], value.proxy(selected, probs), rtol=1e-11)
    np.testing.assert_allclose(sets["cost_proxy"], cost.proxy(selected, probs), rtol=1e-11)
    np.testing.assert_allclose(sets["realized_cost"], result.cost[0])
    assert set(sets["method"]) == {"FavMac (price)"} and set(sets["score"]) == {"price"}
    assert set(sets["target"]) == {2.6} and set(sets["universe"]) == {"ratio"} and sets["delta"].eq("").all()

    new = fio.load_new_patients(SAMPLES / "hcc_new_patients.csv", ds.codes)
    new_probs = recalibration_of(result).apply(new.to_numpy(float))  # new patients get the run's maps too
    new_sel = predict_with_threshold(new_probs, value, cost, result.final_thresholds[0], universe="ratio",
                                     score="price")
    new_sets = read_csv(downloads["favmac_new_patient_sets.csv"])
    assert list(new_sets.columns) == list(sets.columns[:-2])  # the same table, without realized value and cost
    assert new_sets["patient_id"].tolist() == [str(i) for i in new.index]
    assert new_sets["codes"].tolist() == [";".join(np.asarray(ds.codes)[row]) for row in new_sel]
    np.testing.assert_allclose(new_sets["threshold"], result.final_thresholds[0])
    np.testing.assert_allclose(new_sets["cost_proxy"], cost.proxy(new_sel, new_probs), rtol=1e-11)


def test_export_neutralizes_formula_like_cells(downloads):
    weights = "code,weight,description\n" + "".join(
        f"{c},1,=HYPERLINK(\"x\")\n" for c in fio.load_calibration(SAMPLES / "hcc_calibration.csv").codes
    )
    at = open_page("data")
    at.file_uploader(key="upload_weights").set_value(("evil.csv", weights.encode(), "text/csv"))
    at.run()
    go(at, "export")
    assert_clean(at)
    text = downloads["favmac_calibration_sets.csv"].decode()
    assert ",=HYPERLINK" not in text
    # descriptions: one JSON list per row, a cell starting with "[" that a spreadsheet never runs
    cells = [c for c in read_csv(downloads["favmac_calibration_sets.csv"])["descriptions"] if c != "[]"]
    assert cells and all(c.startswith("[") and set(json.loads(c)) == {'=HYPERLINK("x")'} for c in cells)


def test_settings_json_round_trip(downloads):
    at = open_page("value_cost")
    at.number_input(key="target").set_value(4.1)
    at.radio(key="control").set_value("violation")
    at.button(key="apply_settings").click().run()
    go(at, "export")
    saved = downloads["favmac_settings.json"]
    doc = json.loads(saved)
    assert doc["settings"]["target"] == pytest.approx(4.1) and doc["settings"]["control"] == "violation"

    # change the settings, then restore them from the file
    go(at, "value_cost")
    at.number_input(key="target").set_value(1.1)
    at.radio(key="control").set_value("expected")
    at.button(key="apply_settings").click().run()
    go(at, "export")
    at.file_uploader(key="upload_settings").set_value(("favmac_settings.json", saved, "application/json"))
    at.run()
    assert_clean(at)
    s = at.session_state["settings"]
    assert s["target"] == pytest.approx(4.1) and s["control"] == "violation"
    assert any("Restored" in m.value for m in at.success)


@pytest.mark.parametrize(
    "payload, words",
    [
        (b"{not json", "not valid JSON"),
        (b'{"format": "something-else"}', "not a FavMac Studio settings file"),
        (b'{"format": "favmac-studio-settings", "version": 1, "settings": {"target": -3}}', "target must be > 0"),
        (b'{"format": "favmac-studio-settings", "version": 1, "settings": {"universe": "full"}}', "at most 14 codes"),
    ],
)
def test_bad_settings_json_is_reported_and_ignored(payload, words):
    at = open_page("export")
    before = dict(at.session_state["settings"])
    at.file_uploader(key="upload_settings").set_value(("s.json", payload, "application/json"))
    at.run()
    assert not at.exception
    assert any(words in e.value and "s.json" in e.value for e in at.error), [e.value for e in at.error]
    assert at.session_state["settings"] == before
