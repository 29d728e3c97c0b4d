"""App actions: a restored settings file's formula cannot reach the server; upload messages count in the singular.

The app's actions with hostile input (audit): a settings file's formula cannot reach the server,
and what an upload says counts in the singular too."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from favmac.ui import actions
from favmac.ui.session import Session


def upload(name: str, data: bytes):
    return SimpleNamespace(name=name, getvalue=lambda: data)


@pytest.fixture
def session():
    ss = Session({})
    actions.init_state(ss)
    return ss


def settings_file(formula: str) -> bytes:
    return json.dumps({"format": "favmac-studio-settings", "version": 1,
                       "settings": {"value_kind": "formula", "formula": formula}}).encode()


@pytest.mark.parametrize("formula", ["v.dump({path!r})", "sum_hits(v) + 0 * v.tofile({path!r})",
                                     "sum_hits(minimum(v, 0, out=v)) + 1"])
def test_a_restored_formula_cannot_write_files_or_weights(session, tmp_path, formula):
    target = tmp_path / "written"
    before_settings, before_weights = dict(session.settings), session.weights.copy()
    restored = actions.apply_settings_json(session, settings_file(formula.format(path=str(target))), "evil.json")
    assert not restored
    level, text = session.messages["settings_json"]
    assert level == "error" and text.startswith("evil.json: ") and "Traceback" not in text
    assert not target.exists()
    assert session.settings == before_settings and session.weights.equals(before_weights)


def test_upload_messages_count_in_the_singular(session):
    assert actions.apply_calibration_upload(session, upload("one.csv", b"patient_id,prob_A,label_A\np1,0.2,1\n"))
    assert session.messages["calibration"][1] == "Loaded one.csv: 1 patient × 1 code."
    assert actions.apply_weights_upload(session, upload("w.csv", b"code,weight\nA,2\n"))
    assert session.messages["weights"][1] == "Loaded weights for 1 code from w.csv."
    assert actions.apply_new_patients_upload(session, upload("n.csv", b"patient_id,A\nn1,0.5\n"))
    assert session.messages["new_patients"][1] == "Loaded 1 new patient from n.csv."
