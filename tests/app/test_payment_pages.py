"""The CMS-HCC payment value across the pages (issue 18): the default on the HCC sample, dollars
with a base rate, marginal payments on Patients, payment-aware vs additive FavMac on Trade-offs,
the member context on Data, and refused base rates that lose nothing."""
from __future__ import annotations

import numpy as np
import pytest
from app_helpers import assert_clean, go, open_page, settle_jobs, shown

from favmac.tradeoffs import ADDITIVE_LABEL
from favmac.ui.payment_view import money


def with_base_rate(rate: str = "11000"):
    at = open_page("value_cost")
    at.text_input(key="pay_base_rate").input(rate)
    at.button(key="apply_settings").click().run()
    return at


def test_the_sample_opens_with_the_payment_value():
    at = open_page("value_cost")
    assert_clean(at)
    assert at.session_state["settings"]["value_kind"] == "cms_payment"
    assert at.radio(key="value_kind").value == "cms_payment"
    assert "CMS-HCC payment (hierarchies and interactions)" in at.radio(key="value_kind").options
    assert at.selectbox(key="pay_cms_model").value == "V28"
    summary = " ".join(shown(c.value) for c in at.sidebar.caption)
    assert "CMS-HCC payment (hierarchies and interactions)" in summary and "RAF units" in summary
    for page in ("home", "data", "online", "patients", "export", "validity", "tradeoffs"):
        at = settle_jobs(go(at, page))
        assert_clean(at)


def test_a_base_rate_turns_values_into_dollars():
    at = with_base_rate("11,000")
    assert_clean(at)
    assert at.session_state["settings"]["base_rate"] == 11000.0
    assert "$11,000 (dollars)" in " ".join(shown(c.value) for c in at.sidebar.caption)
    at = settle_jobs(go(at, "online"))
    assert_clean(at)
    at.button(key="to_end").click().run()
    tile = next(m for m in at.metric if m.label == "Payment captured per patient")
    assert tile.value.startswith("$") and "per 1,000 members" in shown(tile.help) and "dollars of payment" in tile.help


@pytest.mark.parametrize("typed, words", [("abc", "must be a number of dollars"), ("-250", ">= 0")])
def test_a_bad_base_rate_is_refused_and_nothing_is_lost(typed, words):
    at = with_base_rate("11000")
    before = dict(at.session_state["settings"])
    at.number_input(key="target").set_value(2.1)
    at.text_input(key="pay_base_rate").input(typed)
    at.button(key="apply_settings").click().run()
    errors = " ".join(shown(e.value) for e in at.error)
    assert "Annual base rate" in errors and words in errors and "not saved" in errors
    assert at.session_state["settings"] == before
    assert at.text_input(key="pay_base_rate").value == typed and at.number_input(key="target").value == pytest.approx(2.1)
    at.text_input(key="pay_base_rate").input("9000")
    at.button(key="apply_settings").click().run()
    assert not at.error and at.session_state["settings"]["base_rate"] == 9000.0 and at.session_state["settings"]["target"] == pytest.approx(2.1)


def test_a_model_that_does_not_pay_the_datas_codes_is_refused_on_apply():
    """V24 does not have most of the sample's V28 HCCs: Apply refuses it, naming the codes; nothing saved,
    and every page still works on the saved (V28) settings (it used to save and then show a traceback)."""
    at = open_page("value_cost")
    before = dict(at.session_state["settings"])
    at.selectbox(key="pay_cms_model").set_value("V24")
    at.button(key="apply_settings").click().run()
    errors = " ".join(shown(e.value) for e in at.error)
    assert "V24" in errors and "cannot price the loaded data" in errors and "not payment HCCs" in errors
    assert "Traceback" not in errors and not at.exception
    assert at.session_state["settings"] == before and at.selectbox(key="pay_cms_model").value == "V24"
    for page in ("online", "patients"):
        at = settle_jobs(go(at, page))
        assert_clean(at)


def test_patients_shows_the_marginal_payments_of_the_breakdown():
    at = settle_jobs(go(with_base_rate(), "patients"))
    assert_clean(at)
    ss_settings = at.session_state["settings"]
    ds = at.session_state["dataset"]
    result = list(at.session_state["results"].values())[-1]
    pick = at.selectbox(key="patient_select").value
    step = [str(i) for i in result.patient_ids].index(pick)
    position = result.burn_in + step
    from favmac.ui.settings_form import to_spec

    spec = to_spec(ss_settings, None)
    value, _ = spec.build(ds.codes, ds.members)
    parts = value.take(position).breakdown(result.selected[0, step])
    assert parts["codes"], "the first informative patient has flagged codes"
    table = next(d.value for d in at.dataframe if "Marginal given the others" in d.value.columns)
    assert list(table["Marginal given the others"]) == [money(p["marginal"], True) for p in parts["codes"]]
    assert list(table["Alone"]) == [money(p["alone"], True) for p in parts["codes"]]
    lines = [shown(m.value) for m in at.markdown if shown(m.value).startswith("- HCC")]
    assert len(lines) == len(parts["codes"])
    text = " ".join(shown(c.value) for c in at.caption)
    assert f"pays {money(parts['value'], True)}" in text
    assert ("Interactions triggered: none" in text) if not parts["interactions"] else all(i in text for i in parts["interactions"])


def test_tradeoffs_compares_payment_aware_and_additive_favmac():
    at = go(with_base_rate(), "tradeoffs")
    at.button(key="run_tradeoffs").click().run()
    at = settle_jobs(at)
    assert_clean(at)
    table = next(d.value for d in at.dataframe if "Method" in d.value.columns)
    methods = list(table["Method"])
    assert "FavMac (price)" in methods and ADDITIVE_LABEL in methods and "CRC" in methods and "ClassWise" in methods
    assert "Payment captured per patient ($)" in table.columns and "Payment captured per 1,000 members ($)" in table.columns
    per_patient = table.set_index("Method")["Payment captured per patient ($)"]
    per_1000 = table.set_index("Method")["Payment captured per 1,000 members ($)"]
    assert np.allclose(per_1000, 1000 * per_patient) and (per_patient > 0).all()
    assert any("FavMac (value) not shown" in c.value for c in at.caption)  # several cells: no per-code weights
    # one sentence says, target by target, where the payment-aware choice captures more than the additive one
    points = at.session_state["tradeoffs"]["points"]
    aware = points[points["method"] == "FavMac (price)"].set_index("target")["mean_value"]
    additive = points[points["method"] == ADDITIVE_LABEL].set_index("target")["mean_value"]
    ahead = int((aware > additive.reindex(aware.index)).sum())
    versus = [c.value for c in at.caption if "captures" in c.value and "additive" in c.value]
    assert len(versus) == 1, [c.value for c in at.caption]
    if ahead == len(aware):
        assert f"more payment than {ADDITIVE_LABEL} at every one of the {len(aware)} targets" in versus[0]
    elif ahead == 0:
        assert f"captures the same" in versus[0] or f"less payment than {ADDITIVE_LABEL} at every one of" in versus[0]
    else:
        assert f"more payment than {ADDITIVE_LABEL} at {ahead} of {len(aware)} targets" in versus[0]
    # the default grid is decided from the data: on the bundled sample the payment value's gain shows at the tight budgets
    assert 0 < ahead < len(aware) and aware.index.min() < 0.1 and aware.index.max() < 5


def test_data_shows_the_cells_and_known_codes():
    at = open_page("data")
    assert_clean(at)
    ds = at.session_state["dataset"]
    table = next(d.value for d in at.dataframe if "Cell" in d.value.columns)
    cells, counts = np.unique(ds.members["cells"], return_counts=True)
    assert list(table["Cell"]) == list(cells) and list(table["Patients"]) == list(counts)
    known = np.asarray(ds.members["known"], dtype=bool)
    assert any(f"{int(known.any(axis=1).sum()):,} of {ds.n_patients:,} patients have known codes" in c.value for c in at.caption)
