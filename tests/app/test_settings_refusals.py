"""A settings file that refers to data the session does not have is refused (issue 21).

Before: a settings JSON naming a segment column the loaded data lacks was "restored", and
Export, Value & cost, Online session and Patients then showed a traceback (a DataError from
``Dataset.segments``). Now the restore checks the file against the loaded data
(``favmac.runspec.check_against_data``): an error names the file and the column, and the data,
the settings and the weights stay as they were.
"""
from __future__ import annotations

import json

import pytest
from app_helpers import assert_clean, go, open_page, shown


def doc(settings: dict) -> bytes:
    return json.dumps({"format": "favmac-studio-settings", "version": 1, "settings": settings}).encode()


def drift_session():
    at = open_page("data")
    at.radio(key="sample_choice").set_value("drift")
    at.button(key="load_sample").click().run()
    assert_clean(at)
    return at


def restore(at, payload: bytes, name: str = "other_data.json"):
    go(at, "export")
    at.file_uploader(key="upload_settings").set_value((name, payload, "application/json"))
    return at.run()


def regions_session():
    """A wide upload with an extra text column ``region`` that misses the label of patient P40."""
    rows = ["patient_id,prob_A,label_A,prob_B,label_B,region"]
    rows += [f"P{i},{(i % 7) / 7:.3f},{i % 2},{(i % 3) / 3:.3f},{(i // 2) % 2},{'' if i == 40 else 'NS'[i % 2]}"
             for i in range(120)]
    at = open_page("data")
    at.file_uploader(key="upload_wide").set_value(("regions.csv", "\n".join(rows).encode(), "text/csv"))
    at.run()
    assert_clean(at)
    return at


REFUSED = {
    "missing segment column": ({"segment": "region", "target": 1.1}, "segment names the column 'region'"),
    "burn-in beyond the data": ({"burn_in": 3000}, "burn_in must be between 0 and 2999"),
    "target above C_max": ({"target": 13}, "target must be > 0 and <= C_max"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_a_setting_the_data_cannot_serve_is_refused_and_nothing_changes(name):
    settings, words = REFUSED[name]
    at = drift_session()
    before = {k: at.session_state[k] for k in ("settings", "dataset_key", "weights_source")}
    weights_before = at.session_state["weights"].copy()
    at = restore(at, doc(settings))
    assert not at.exception, [e.value for e in at.exception]
    errors = [shown(e.value) for e in at.error]
    assert any(words in e and "other_data.json" in e for e in errors), errors
    assert {k: at.session_state[k] for k in before} == before
    assert at.session_state["weights"].equals(weights_before)
    assert at.session_state["dataset"].name.startswith("Drift")
    # every page that reads the segments still works
    for page in ("value_cost", "online", "patients", "export", "validity"):
        go(at, page)
        assert not at.exception, (page, [e.value for e in at.exception])


def test_the_datas_own_segment_column_is_restored():
    at = restore(drift_session(), doc({"segment": "segment", "target": 1.1}), "drift.json")
    assert_clean(at)
    assert at.session_state["settings"]["segment"] == "segment"
    assert any("Restored the settings from drift.json" in shown(s.value) for s in at.success)
    for page in ("value_cost", "online", "patients"):
        go(at, page)
        assert_clean(at)


def test_a_segment_column_with_a_blank_label_is_refused():
    """A wide upload with an extra text column that misses one label: usable as data, not as segments."""
    at = regions_session()
    before = dict(at.session_state["settings"])
    at = restore(at, doc({"segment": "region"}), "regions.json")
    assert not at.exception, [e.value for e in at.exception]
    assert any("segment column 'region' cannot be used" in shown(e.value) and "P40" in shown(e.value) for e in at.error), \
        [e.value for e in at.error]
    assert at.session_state["settings"] == before


def test_the_settings_form_refuses_a_segment_column_with_a_blank_label_too():
    """The same check on Apply: the form lists every text column, and one missing a label was saved,
    after which Online session, Patients and Export showed the DataError as a traceback."""
    at = regions_session()
    go(at, "value_cost")
    before = dict(at.session_state["settings"])
    at.checkbox(key="use_segments").check().run()  # the column box turns on with the checkbox
    at.selectbox(key="segment_column").set_value("region")
    at.button(key="apply_settings").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("segment column 'region' cannot be used" in shown(e.value) for e in at.error), [e.value for e in at.error]
    assert at.session_state["settings"] == before
    for page in ("online", "patients", "export"):
        go(at, page)
        assert_clean(at)
