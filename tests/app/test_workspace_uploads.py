"""Uploads a page change cut short (issue 31's race; favmac.ui.workspace_uploads): the reading an action
started is finished on the next page; a file no action read is never taken as read. The browser side
(the bytes held back until the page changed) is tests/browser/test_programs_browser.py."""
from __future__ import annotations

import pytest
from streamlit.runtime.scriptrunner_utils.exceptions import RerunException
from streamlit.runtime.uploaded_file_manager import UploadedFileRec
from test_workspace_restore import wide_csv

from favmac.ui import actions, parsing, workspace_uploads
from favmac.ui.session import Session


class Upload:
    def __init__(self, file_id, name, data):
        self.file_id, self.name, self._data = file_id, name, data

    def getvalue(self):
        return self._data


class Manager:
    def __init__(self, records):
        self.records = {r.file_id: r for r in records}

    def get_files(self, session_id, file_ids):
        return [self.records[i] for i in file_ids if i in self.records]


@pytest.fixture
def session():
    ss = Session({})
    actions.init_state(ss)  # the bundled sample
    return ss


def test_a_reading_cut_short_stays_unfinished(session, monkeypatch):
    def cut_short(*args, **kwargs):  # what Streamlit does at the spinner when the page changes meanwhile
        raise RerunException(None)

    monkeypatch.setattr(parsing, "parse_calibration", cut_short)
    with pytest.raises(RerunException):
        actions.apply_calibration_upload(session, Upload("f1", "late.csv", wide_csv()))
    assert session.uploads_reading == {"f1": ("calibration", ["f1"])}
    assert not session.uploads_read
    assert session.dataset_key.startswith("sample:")


def test_the_next_page_finishes_it_and_says_so(session, monkeypatch):
    data = wide_csv(n=320)
    monkeypatch.setattr(workspace_uploads, "get_instance",
                        lambda: type("R", (), {"uploaded_file_mgr": Manager([UploadedFileRec("f1", "late.csv", "text/csv", data)])}))
    session.uploads_reading = {"f1": ("calibration", ["f1"])}
    chosen = workspace_uploads.Chosen("f1", "late.csv", chosen_at=0.0, arrived_at=0.5, size=len(data))
    assert workspace_uploads._finish_reading(session, "session", [chosen])
    assert session.dataset.name == "late.csv" and session.dataset.n_patients == 320
    assert "f1" in session.uploads_read and not session.uploads_reading
    level, text = session.messages["upload_late"]
    assert level == "success" and "late.csv" in text


def test_a_refused_file_is_said_and_the_data_stays(session, monkeypatch):
    bad = b"patient_id,prob_A,label_A\np1,2.5,1\n"
    monkeypatch.setattr(workspace_uploads, "get_instance",
                        lambda: type("R", (), {"uploaded_file_mgr": Manager([UploadedFileRec("f2", "bad.csv", "text/csv", bad)])}))
    session.uploads_reading = {"f2": ("calibration", ["f2"])}
    chosen = workspace_uploads.Chosen("f2", "bad.csv", chosen_at=0.0, arrived_at=0.5, size=len(bad))
    assert workspace_uploads._finish_reading(session, "session", [chosen])
    level, text = session.messages["upload_late"]
    assert level == "error" and "bad.csv" in text and "refused" in text
    assert session.dataset_key.startswith("sample:") and "f2" in session.uploads_read


def test_nothing_to_finish_without_a_started_reading(session, monkeypatch):
    monkeypatch.setattr(workspace_uploads, "get_instance", lambda: pytest.fail("no reading to finish"))
    chosen = workspace_uploads.Chosen("f3", "x.csv", chosen_at=0.0, arrived_at=0.5)
    assert not workspace_uploads._finish_reading(session, "session", [chosen])
    assert not workspace_uploads._finish_reading(session, "session", [workspace_uploads.Chosen("f4", "y.csv", 0.0)])


def test_the_tracker_follows_choices_arrivals_and_removals():
    tracker = workspace_uploads._Tracker()
    info = type("I", (), {"file_id": "a"})
    tracker.chosen("s", [info], ["a.csv"])
    assert [(c.file_id, c.arrived_at) for c in tracker.of("s")] == [("a", None)]
    tracker.arrived("s", UploadedFileRec("a", "a.csv", "text/csv", b"123"))
    assert tracker.of("s")[0].size == 3 and tracker.of("s")[0].arrived_at is not None
    tracker.removed("s", "a")
    assert tracker.of("s") == []
    tracker.chosen("s", [info], ["a.csv"])
    tracker.removed("s")
    assert tracker.of("s") == [] and tracker.of("other") == []
