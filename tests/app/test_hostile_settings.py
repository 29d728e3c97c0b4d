"""Hostile settings files on the Export page: refused with a message, nothing loaded changes."""
from __future__ import annotations

import json

import pytest
from app_helpers import SAMPLES, assert_clean, go, open_page, shown

from favmac.ui.navigation import PAGES

HEAD = b'{"format": "favmac-studio-settings", "version": 1, "settings": '


def doc(settings: dict, weights=None) -> bytes:
    out = {"format": "favmac-studio-settings", "version": 1, "settings": settings}
    if weights is not None:
        out["weights"] = weights
    return json.dumps(out).encode()


HOSTILE = {
    "5001 digits": (HEAD + b'{"burn_in": ' + b"9" * 5001 + b"}}", "5,001 digits"),
    "deep nesting": (HEAD + b'{"grid": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}", "nested too deeply"),
    "grid abc": (doc({"grid": "abc"}), "grid must be an object"),
    "grid field": (doc({"grid": {"low_pct": "abc"}}), "grid.low_pct must be a number"),
    "value_kind list": (doc({"value_kind": ["tp"]}), "value_kind must be text"),
    "not UTF-8": (b"\xff\xfe\x00{\x81\x82", "not UTF-8"),
    "10 MB": (b"{" + b" " * (10 * 2**20) + b"}", "at most 2,000,000 bytes"),
    "NaN": (HEAD + b'{"target": NaN}}', "NaN is not a finite number"),
    "Infinity": (HEAD + b'{"delta": -Infinity}}', "-Infinity is not a finite number"),
    "target 1e300": (doc({"target": 1e300}), "target must be > 0 and <= C_max"),
    "weight 1e300": (doc({"cost_kind": "weighted_fp"}, {"A": 1e300}), "weights.A must be >= 0 and <= 1,000,000"),
}


@pytest.fixture(scope="module")
def digits_upload():
    return (SAMPLES / "digits_calibration.csv").read_bytes()


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_settings_file_is_refused_and_nothing_changes(name, digits_upload):
    payload, words = HOSTILE[name]
    at = open_page("data")
    at.file_uploader(key="upload_wide").set_value(("my_digits.csv", digits_upload, "text/csv"))
    at.run()
    assert at.session_state["dataset"].name == "my_digits.csv"
    codes = list(at.session_state["dataset"].codes)
    if name == "weight 1e300":  # a file that covers the loaded codes, one weight absurd
        payload = doc({"cost_kind": "weighted_fp"}, {c: (1e300 if i == 0 else 1.0) for i, c in enumerate(codes)})
        words = f"weights.{codes[0]} must be >= 0 and <= 1,000,000"
    go(at, "export")
    before = {k: at.session_state[k] for k in ("settings", "dataset_key", "weights_source")}
    weights_before = at.session_state["weights"].copy()
    at.file_uploader(key="upload_settings").set_value(("hostile.json", payload, "application/json"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(words in shown(e.value) and "hostile.json" in shown(e.value) for e in at.error), [e.value for e in at.error]
    assert {k: at.session_state[k] for k in before} == before
    assert at.session_state["weights"].equals(weights_before)
    assert at.session_state["dataset"].name == "my_digits.csv"
    assert len(at.sidebar.get("page_link")) == len(PAGES)  # the menu is still drawn


def test_unknown_keys_are_ignored_with_a_note():
    at = open_page("export")
    at.file_uploader(key="upload_settings").set_value(("extra.json", doc({"target": 2.1, "colour": "red"}), "application/json"))
    at.run()
    assert_clean(at)
    assert at.session_state["settings"]["target"] == pytest.approx(2.1)
    assert any("colour" in shown(s.value) for s in at.success)
