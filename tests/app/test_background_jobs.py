"""Long computations run in the background and survive navigation (issue 11, defect 8)."""
from __future__ import annotations

import threading

import pytest
from app_helpers import assert_clean, go, open_page

from favmac.ui import jobs, playback


@pytest.fixture
def slow_replay(monkeypatch):
    """``playback.run_online`` that reports 25 % and then waits for ``gate`` (counts its calls)."""
    gate, calls = threading.Event(), []
    real = playback.run_online

    def run_online(*args, progress=None, **kwargs):
        calls.append(1)
        progress(0.25)
        assert gate.wait(60)
        return real(*args, progress=progress, **kwargs)

    monkeypatch.setattr(playback, "run_online", run_online)
    monkeypatch.setattr(jobs, "FOREGROUND_SECONDS", 0.2)
    return gate, calls


def progress_texts(at) -> list[str]:
    return [str(p.proto.text) for p in at.get("progress")]


def test_leaving_the_online_session_during_a_replay_keeps_the_work(slow_replay):
    gate, calls = slow_replay
    at = open_page("online")
    assert not at.exception
    assert any("Replaying" in t and "25 %" in t for t in progress_texts(at)), progress_texts(at)
    job = at.session_state["jobs"]["online"]
    go(at, "data")
    assert_clean(at)
    go(at, "online")  # back: the same replay, still running — not started again
    assert at.session_state["jobs"]["online"] is job and len(calls) == 1
    assert any("Replaying" in t for t in progress_texts(at))
    gate.set()
    assert job.wait(120) and job.error is None
    go(at, "online")
    assert_clean(at)
    assert len(calls) == 1 and "online" not in at.session_state["jobs"]
    assert at.button(key="play") is not None and not any("Replaying" in t for t in progress_texts(at))
    assert next(iter(at.session_state["results"].values())) is job.result


def test_a_replay_for_old_settings_is_cancelled(slow_replay):
    gate, calls = slow_replay
    at = open_page("online")
    job = at.session_state["jobs"]["online"]
    go(at, "value_cost")
    at.number_input(key="target").set_value(2.1)
    at.button(key="apply_settings").click().run()
    go(at, "online")  # new settings: a new replay; the old one is told to stop
    assert job.cancelled and at.session_state["jobs"]["online"] is not job and len(calls) == 2
    gate.set()
    assert job.wait(120) and isinstance(job.error, jobs.JobCancelled)


def test_job_reports_progress_and_errors():
    job = jobs.Job("k", "Failing", lambda progress: (progress(0.5), 1 / 0)).start()
    assert job.wait(10) and job.fraction == 0.5 and isinstance(job.error, ZeroDivisionError)
