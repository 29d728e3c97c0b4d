"""The session, the actions and the runs without a browser: an upload followed to the replay
(what the Online session charts) and to the CSV (what Export downloads), on a plain dict."""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from favmac.methods import run_method
from favmac.ui import actions, jobs, playback, samples
from favmac.ui.samples import NamedBytes
from favmac.ui.session import Session


def test_every_attribute_is_a_documented_key():
    keys = {name: attr.key for name, attr in vars(Session).items() if hasattr(attr, "key")}
    assert keys["playback"] == "session" and keys["dataset"] == "dataset" and keys["rest_pending"] == "_rest_pending"
    assert all(Session.__dict__[name].__doc__ for name in keys)
    store = {}
    ss = Session(store)
    ss.dataset_key = "k"
    assert store == {"dataset_key": "k"} and ss.weights is None


def test_messages_and_defaults():
    ss = Session({})
    ss.fill_defaults()
    assert ss.messages == {} and ss.results == {} and ss.tradeoffs is None and isinstance(ss.playback, playback.Playback)
    ss.set_message("settings", "warning", "adapted")
    assert ss.message_level("settings") == "warning" and ss.message_level("weights") is None
    ss.clear_message("settings")
    assert ss.messages == {}


@pytest.fixture(scope="module")
def digits():
    ss = Session({})
    actions.init_state(ss)
    actions.load_sample(ss, "digits")
    return ss


def test_an_upload_followed_to_the_replay_and_the_csv(digits):
    ss = Session(dict(digits.store))
    raw = (samples.sample_dir() / "digits_calibration.csv").read_bytes()
    head = b"\n".join(raw.splitlines()[:801]) + b"\n"  # 800 patients
    assert actions.apply_calibration_upload(ss, NamedBytes(head, "first800.csv"))
    assert ss.dataset.n_patients == 800 and ss.message_level("calibration") == "success"
    assert ss.dataset_key.startswith("upload:") and ss.settings["burn_in"] < 800

    spec = ss.spec()
    result = jobs.replay_online(ss.dataset, spec)
    direct = run_method(spec.replace(targets=(spec.target,)), "favmac", ss.dataset.prob_array(), ss.dataset.label_array())
    np.testing.assert_array_equal(result.thresholds, direct.thresholds)

    files = jobs.build_exports(ss.dataset, spec, result, ss.new_patients, [""] * ss.dataset.n_codes)
    table = pd.read_csv(io.BytesIO(files["calibration"]))
    assert len(table) == files["n_calibration"] == 800 - spec.burn_in
    assert table["threshold"].to_numpy() == pytest.approx(result.thresholds[0])
    assert files["threshold"] == float(result.final_thresholds[0])
    assert files["new"] is not None and files["n_new"] == len(ss.new_patients)


def test_a_refused_upload_keeps_the_data(digits):
    ss = Session(dict(digits.store))
    before = ss.dataset
    assert not actions.apply_calibration_upload(ss, NamedBytes(b"patient_id,prob_A\nP1,1.5\n", "bad.csv"))
    assert ss.dataset is before
    level, text = ss.messages["calibration"]
    assert level == "error" and "bad.csv" in text and "is unchanged" in text


def test_settings_are_validated_before_they_are_stored(digits):
    ss = Session(dict(digits.store))
    old = ss.settings
    assert not actions.apply_settings(ss, {**old, "target": -1.0})
    assert ss.settings is old and ss.message_level("settings") == "error"
    assert actions.apply_settings(ss, {**old, "target": 2.0})
    assert ss.settings["target"] == 2.0 and ss.spec().target == 2.0


def test_stale_warnings_and_errors_are_cleared_when_what_they_described_changes(digits):
    ss = Session({**digits.store, "messages": {}})
    ss.set_message("weights", "error", "bad weight in w.csv")
    ss.set_message("new_patients", "warning", "other codes")
    ss.set_message("calibration", "success", "Loaded.")
    actions.clear_stale(ss, "weights", "new_patients", "calibration", "settings")
    assert ss.messages == {"calibration": ("success", "Loaded.")}  # successes stay: they describe what is loaded

    ss.set_message("settings", "warning", "Target set to 2 (the weights changed).")
    table = ss.weights.copy()
    table.iloc[0, table.columns.get_loc("weight")] += 1.0
    assert actions.apply_edited_weights(ss, table)
    assert ss.message_level("settings") is None  # it was about the weights just replaced

    ss.set_message("weights", "error", "bad weight in w.csv")
    ss.set_message("settings_json", "error", "old.json: unknown key")
    actions.load_sample(ss, "digits")
    assert ss.message_level("settings_json") is None and ss.message_level("weights") != "error"
