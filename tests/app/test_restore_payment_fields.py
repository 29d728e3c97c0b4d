"""Restoring a settings file in the app: payment model/cell names in another case, adjustments outside the inputs' range.

Second hostile-input audit of the app: settings files whose payment fields the library accepts
but the page's widgets could not show (tests/app/test_hostile_settings.py holds the first round)."""
from __future__ import annotations

import json

import pytest
from app_helpers import assert_clean, go, open_page, shown


def doc(settings: dict) -> bytes:
    return json.dumps({"format": "favmac-studio-settings", "version": 1, "settings": settings}).encode()


@pytest.mark.parametrize("fields, stored", [
    ({"cms_model": "v28", "cms_segment": " cna "}, {"cms_model": "V28", "cms_segment": "CNA"}),
    ({"cms_segment": "ins"}, {"cms_segment": "INS"}),
])
def test_a_restored_model_or_cell_in_another_case_is_stored_as_the_model_names_it(fields, stored):
    """Before: 'v28' / 'cna' were restored as typed, and Value & cost died in its selectbox
    (ValueError: 'v28' is not in list)."""
    at = open_page("export")
    at.file_uploader(key="upload_settings").set_value(("case.json", doc({"value_kind": "cms_payment", **fields}),
                                                       "application/json"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    for key, value in stored.items():
        assert at.session_state["settings"][key] == value
    at = go(at, "value_cost")
    assert_clean(at)


@pytest.mark.parametrize("fields, words", [
    ({"normalization": 1e-300}, "normalization"),
    ({"coding_intensity": 0.9999}, "coding_intensity"),
])
def test_a_restored_adjustment_outside_the_inputs_range_is_refused(fields, words):
    """Before: a normalization below the input's 0.001 (or a coding intensity above its 0.999) was
    restored, and Value & cost died drawing the number input (StreamlitValueBelowMinError)."""
    at = open_page("export")
    before = dict(at.session_state["settings"])
    at.file_uploader(key="upload_settings").set_value(("range.json", doc({"value_kind": "cms_payment", **fields}),
                                                       "application/json"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(words in shown(e.value) and "range.json" in shown(e.value) for e in at.error), [e.value for e in at.error]
    assert at.session_state["settings"] == before
    at = go(at, "value_cost")
    assert_clean(at)
