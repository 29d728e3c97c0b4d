"""favmac.ui.payment_view (no Streamlit) and the payment value's settings, units and actions."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from favmac.methods import run_method
from favmac.payment import CmsHccValue
from favmac.runspec import SettingsError
from favmac import tradeoffs
from favmac.ui import actions, payment_view as pv, settings_form as form, tradeoffs as tradeoffs_view, units
from favmac.ui.samples import NamedBytes, sample_dir
from favmac.ui.session import Session
from ui_fixtures import sample_session


@pytest.fixture(scope="module")
def hcc():
    return sample_session("hcc")


def test_payment_model_and_defaults():
    assert pv.payment_model_of(["HCC37", "38", "HCC226"]) == "V28"
    assert pv.payment_model_of(["HCC37", "E11.9"]) is None and pv.payment_model_of([]) is None
    assert pv.payment_model_of(["HCC999"]) is None  # an HCC number no model pays
    assert pv.payment_defaults(["A", "B"]) == {}
    d = pv.payment_defaults(["HCC37", "HCC38"])
    assert d["value_kind"] == "cms_payment" and d["cms_model"] == "V28" and d["base_rate"] is None


@pytest.mark.parametrize("text, expected", [("", None), ("  ", None), (None, None), ("0", 0.0), ("11,000", 11000.0),
                                            ("$9,500.50", 9500.5)])
def test_base_rate_parses(text, expected):
    assert pv.parse_base_rate(text) == expected


@pytest.mark.parametrize("text, words", [("abc", "must be a number of dollars"), ("-5", ">= 0"), ("nan", ">= 0"), ("inf", ">= 0")])
def test_bad_base_rate_names_the_field(text, words):
    with pytest.raises(SettingsError) as err:
        pv.parse_base_rate(text)
    assert "base_rate" in str(err.value) and words in str(err.value) and repr(text) in str(err.value)


def test_the_sample_defaults_to_the_payment_value(hcc):
    s = hcc.settings
    assert s["value_kind"] == "cms_payment" and s["cms_model"] == "V28"
    spec = hcc.spec().validate(n_codes=hcc.dataset.n_codes, n_patients=hcc.dataset.n_patients)
    assert spec.value_kind == "cms_payment" and spec.cms_segment == "CNA"
    again = form.from_spec(spec, s["grid"])
    assert {k: again[k] for k in pv.PAYMENT_KEYS} == {k: s[k] for k in pv.PAYMENT_KEYS}
    rows = dict(form.settings_summary({**s, "base_rate": 11000.0}, 35.0))
    assert "CMS-HCC payment" in rows["Value"] and "$11,000" in rows["Payment"]


def test_settings_refuse_an_unknown_cell_and_keep_the_old(hcc):
    ss = Session(dict(hcc.store))
    before = dict(ss.settings)
    assert not actions.apply_settings(ss, {**before, "cms_segment": "XYZ"})
    level, text = ss.messages["settings"]
    assert level == "error" and "cms_segment" in text and "CNA" in text
    assert ss.settings == before
    assert not actions.apply_settings(ss, {**before, "base_rate": -3.0})
    assert "base_rate" in ss.messages["settings"][1] and ss.settings == before


def test_other_data_falls_back_to_the_additive_value(hcc):
    ss = Session(dict(hcc.store))
    assert ss.settings["value_kind"] == "cms_payment"
    assert actions.apply_calibration_upload(ss, NamedBytes(b"patient_id,prob_A,label_A\nP1,0.5,1\nP2,0.2,0\nP3,0.4,1\n", "abc.csv"))
    assert ss.settings["value_kind"] == "weighted_tp"


def test_members_summary_counts_the_cells_and_known_codes(hcc):
    ds = hcc.dataset
    frame, facts = pv.members_summary(ds)
    cells, counts = np.unique(ds.members["cells"], return_counts=True)
    assert list(frame["Cell"]) == list(cells) and list(frame["Patients"]) == list(counts) and frame["Patients"].sum() == ds.n_patients
    assert all(frame["Meaning"].str.len() > 0)
    known = np.asarray(ds.members["known"], dtype=bool)
    assert facts == {"cells_read": True, "patients_with_known": int(known.any(axis=1).sum()), "known_codes": int(known.sum())}
    assert facts["patients_with_known"] > 0


def test_breakdown_rows_follow_the_value():
    codes = ["HCC36", "HCC37", "HCC38", "HCC226", "HCC17"]
    for base_rate, unit in ((None, "RAF"), (10000.0, "$")):
        value = CmsHccValue(codes, base_rate=base_rate)
        selected = np.array([0, 1, 1, 1, 0], bool)
        frame, totals = pv.breakdown_rows(value, selected)
        parts = value.breakdown(selected)
        assert list(frame["Code"]) == ["HCC37", "HCC38", "HCC226"]
        for row, part in zip(frame.itertuples(), parts["codes"]):
            assert row[3] == pv.money(part["marginal"], base_rate is not None) and unit in row[3]
        hcc38 = frame["Why"][1]
        assert hcc38.startswith("HCC38: +") and "HCC37 is flagged and ranks above it" in hcc38
        assert parts["codes"][1]["marginal"] == pytest.approx(0.0)
        assert totals["interactions"] == parts["interactions"] and totals["count"] == parts["count"]
        assert parts["interactions"] == ["DIABETES_HF_V28"]  # diabetes (HCC37) x heart failure (HCC226)
    known = CmsHccValue(codes, known=np.array([1, 0, 0, 0, 0], bool), base_rate=1.0)
    frame, _ = pv.breakdown_rows(known, np.array([0, 1, 0, 0, 0], bool))
    assert frame["Why"][0] == "HCC37: +$0, HCC36 is on record and ranks above it"


def test_realized_payment_and_the_additive_row(hcc):
    ds = hcc.dataset
    spec = hcc.spec().validate(n_codes=ds.n_codes, n_patients=ds.n_patients).replace(targets=(1.1, 2.1))
    value, _ = spec.build(ds.codes, ds.members)
    additive = spec.replace(value_kind="weighted_tp")
    result = run_method(additive, "FavMac (price)", ds.prob_array(), ds.label_array(), codes=ds.codes)
    paid = tradeoffs.realized_payment(result, value, ds.label_array())
    np.testing.assert_array_equal(paid.selected, result.selected)
    labels = ds.label_array().astype(bool)
    for t in range(2):
        for s in (0, 17, result.n_steps - 1):
            n = result.burn_in + s
            assert paid.value[t, s] == pytest.approx(float(value.take(n)(result.selected[t, s], labels[n])))
    out = tradeoffs.additive_summaries(spec, value, ds.prob_array(), ds.label_array(), ds.codes, ds.patient_ids, run_method)
    summary = out[tradeoffs.ADDITIVE_LABEL]
    assert list(summary["method"].unique()) == [tradeoffs.ADDITIVE_LABEL]
    assert summary["mean_value"].to_numpy() == pytest.approx(paid.value.mean(axis=1))


def test_the_value_universe_is_skipped_with_several_cells(hcc):
    ds = hcc.dataset
    value, _ = hcc.spec().build(ds.codes, ds.members)
    assert set(tradeoffs.weightless_skips(value, ["FavMac (value)", "FavMac (price)", "CRC", tradeoffs.RECALIBRATED_LABEL], ds.n_codes)) == {"FavMac (value)"}
    one_cell = CmsHccValue(ds.codes)
    assert tradeoffs.weightless_skips(one_cell, ["FavMac (value)"], ds.n_codes) == {}


def test_units_speak_dollars_with_a_base_rate():
    dollars = {"value_kind": "cms_payment", "base_rate": 11000.0, "cost_kind": "fp"}
    raf = {**dollars, "base_rate": None}
    assert units.value_unit(dollars) == "dollars of payment" and units.value_unit(raf) == "RAF (risk score)"
    assert units.value_per_100_label(dollars).endswith("($)")
    label, shown, why = units.value_tile(1234.4, dollars)
    assert (label, shown) == ("Payment captured per patient", "$1,234") and "$1,234,400 per 1,000 members" in why
    assert units.value_tile(0.25, raf)[1] == "0.25 RAF"
    columns = tradeoffs_view.comparison_columns(dollars)
    assert columns["mean_value"] == "Payment captured per patient ($)" and columns["per_1000"].endswith("($)")
    table = pd.DataFrame({"method": ["m"], "mean_value": [250.0], "mean_cost": [90.0], "excess_cost": [0.0], "violation_freq": [0.1]})
    shown = tradeoffs_view.comparison_display(table, 500.0, 0.1, dollars)
    assert shown["Payment captured per patient ($)"][0] == 2.5 and shown["Payment captured per 1,000 members ($)"][0] == 2500.0


def test_payment_vs_additive_names_the_targets_where_the_additive_choice_captures_more():
    import pandas as pd

    from favmac.ui import payment_view

    label = tradeoffs.ADDITIVE_LABEL
    points = pd.DataFrame({"method": ["FavMac (price)"] * 3 + [label] * 3 + ["CRC"],
                           "target": [0.5, 1.0, 2.0, 0.5, 1.0, 2.0, 0.5],
                           "mean_value": [3.0, 2.5, 4.0, 2.0, 2.5, 4.5, 9.0]})
    text = payment_view.payment_vs_additive(points, "false flags")
    # a tie is "the same", not "more"; each group names its targets and the relative difference
    assert text.startswith(f"FavMac (price) captures more payment than {label} at 1 of 3 targets (50 false flags per 100 charts, +50.0 %), "
                           "the same at 1 (100) and less at 1 (200, −11.1 %).")
    assert "independent" in text
    ahead = points.assign(mean_value=[3.0, 3.0, 4.5, 2.0, 2.5, 4.5, 9.0])
    assert payment_view.payment_vs_additive(ahead, "false flags") == (
        f"FavMac (price) captures more payment than {label} at 2 of 3 targets (50, 100 false flags per 100 charts, +20.0 % to +50.0 %) "
        "and the same at 1 (200).")
    behind = points.assign(mean_value=[1.0, 2.0, 3.0, 2.0, 2.5, 4.5, 9.0])
    assert payment_view.payment_vs_additive(behind, "false flags").startswith(
        f"FavMac (price) captures less payment than {label} at every one of the 3 targets (50, 100, 200 false flags per 100 charts, "
        "−50.0 % to −20.0 %). A known limit")
    assert payment_view.payment_vs_additive(points[points["method"] != label], "false flags") is None
    assert payment_view.payment_vs_additive(pd.DataFrame(), "false flags") is None
