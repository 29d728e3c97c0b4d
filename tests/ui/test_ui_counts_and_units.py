"""Display rules: counts with separators, RAF capitals in labels, the unsupported-payment caption from typed inputs.

Small display rules (issue 21's polish): patient counts with thousands separators in the
per-segment tables, "RAF" keeping its capitals in a label, and the unsupported-payment caption
describing the payment inputs as typed."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from favmac.runspec import RunSpec
from favmac.ui import payment_cost
from favmac.ui.units import COUNT_COLUMNS, cost_per_100_label, counts_styled, plain_number
from ui_fixtures import sample_session


def drawn(styler) -> pd.DataFrame:
    """The cells as a Styler draws them (what st.table sends as display values)."""
    rows = styler._translate(False, False)["body"]
    return pd.DataFrame([[cell["display_value"] for cell in row[1:]] for row in rows], columns=styler.data.columns)


def test_counts_are_drawn_with_separators_and_stay_numbers():
    frame = pd.DataFrame({"segment": ["East", "North"], "patients": [731, 1208], "predicted": [498.0, 1234.5],
                          "calibration patients": [100_000, 0], "mean cost": ["0.432", "1.000"]})
    styled = counts_styled(frame)
    shown = drawn(styled)
    assert shown["patients"].tolist() == ["731", "1,208"]
    assert shown["predicted"].tolist() == ["498", plain_number(1234.5)]
    assert shown["calibration patients"].tolist() == ["100,000", "0"]
    assert shown["mean cost"].tolist() == ["0.432", "1.000"] and shown["segment"].tolist() == ["East", "North"]
    assert styled.data["patients"].tolist() == [731, 1208]  # the cells AppTest and a download read are unchanged


def test_a_missing_count_is_a_dash_and_absent_columns_are_skipped():
    shown = drawn(counts_styled(pd.DataFrame({"predicted": [float("nan"), 2500.0]}), ["predicted", "patients"]))
    assert shown["predicted"].tolist() == ["—", "2,500"]


def test_every_count_column_of_the_tables_is_named():
    assert set(COUNT_COLUMNS) == {"patients", "predicted", "calibration patients", "new patients"}


def test_raf_keeps_its_capitals_in_the_cost_label():
    assert cost_per_100_label({"cost_kind": "cms_unsupported", "base_rate": None}) == "Unsupported RAF per 100 charts"
    assert cost_per_100_label({"cost_kind": "cms_unsupported", "base_rate": 11000.0}) == "Unsupported $ per 100 charts"
    assert cost_per_100_label({"cost_kind": "weighted_fp"}) == "Risk weight of false flags per 100 charts"


@pytest.fixture(scope="module")
def hcc():
    return sample_session("hcc")


def test_the_caption_describes_the_typed_payment_inputs(hcc):
    saved = hcc.spec().replace(base_rate=None)
    typed = payment_cost.typed_spec(saved, {"cms_model": saved.cms_model, "cms_year": saved.cms_year, "base_rate": "11,000"}, 11000.0)
    assert (typed.value_kind, typed.cost_kind, typed.base_rate) == ("cms_payment", "cms_unsupported", 11000.0)
    raf, dollars = payment_cost.c_max_of(saved, hcc.dataset), payment_cost.c_max_of(typed, hcc.dataset)
    assert dollars == pytest.approx(raf * 11000.0, rel=1e-9)
    caption = payment_cost.c_max_caption(typed, hcc.dataset)
    assert "dollars of unsupported payment per chart" in caption and f"(C_max) is {plain_number(dollars)}" in caption
    halved = payment_cost.typed_spec(saved, {"normalization": 2.0}, None)  # every input counts, not only the rate
    assert math.isclose(payment_cost.c_max_of(halved, hcc.dataset), raf / 2.0, rel_tol=1e-9)


def test_typed_spec_keeps_the_rest_of_the_saved_run():
    saved = RunSpec(targets=(0.5,), burn_in=123, control="violation", delta=0.2)
    typed = payment_cost.typed_spec(saved, {"cms_year": 2025}, None)
    assert (typed.targets, typed.burn_in, typed.control, typed.delta, typed.cms_year) == ((0.5,), 123, "violation", 0.2, 2025)
