"""Long computations run in the background and survive navigation (issue 11, defect 8)."""
from __future__ import annotations

import threading

import pytest
from app_helpers import open_additive, assert_clean, go, open_page, settle_jobs

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


def test_online_session_draws_its_controls_while_the_replay_runs(slow_replay):
    gate, calls = slow_replay
    at = open_page("online")
    assert not at.exception
    assert [t.value for t in at.title] == ["Online session"]
    buttons = {key: at.button(key=key) for key in ("play", "step", "reset", "to_end")}
    assert all(b.disabled for b in buttons.values()), {k: b.disabled for k, b in buttons.items()}
    assert at.select_slider(key="speed") is not None
    assert any("Replaying" in t and "25 %" in t for t in progress_texts(at)), progress_texts(at)
    assert "controls turn on when the replay is ready" in at.caption[0].value
    assert not at.metric  # the tiles wait for the replay
    gate.set()
    at = settle_jobs(at)
    assert_clean(at)
    assert not any(at.button(key=key).disabled for key in ("play", "step", "reset", "to_end"))
    assert "burn-in" in at.caption[0].value and len(calls) == 1
    at.button(key="step").click().run()
    assert at.metric[0].value == "1"


@pytest.fixture
def slow_validity(monkeypatch):
    """``validity_check`` (as the Validity page calls it) that reports 40 % and waits for ``gate``."""
    gate, calls = threading.Event(), []
    real = jobs.validity_check

    def validity_check(*args, progress=None, **kwargs):
        calls.append(kwargs["n_orderings"])
        progress(0.4)
        assert gate.wait(60)
        return real(*args, progress=progress, **kwargs)

    monkeypatch.setattr(jobs, "validity_check", validity_check)
    monkeypatch.setattr(jobs, "FOREGROUND_SECONDS", 0.2)
    return gate, calls


def test_the_validity_check_runs_in_the_background_and_survives_navigation(slow_validity):
    gate, calls = slow_validity
    # the background behaviour, with the additive value and no recalibration fold (300 orderings of the payment value,
    # or maps refitted in every ordering, take minutes here: the number and the value are not the point)
    at = open_page("value_cost")
    at.radio(key="value_kind").set_value("weighted_tp")
    at.checkbox(key="use_recalibrate").uncheck()
    at.button(key="apply_settings").click().run()
    assert not at.session_state["settings"].get("recalibrate")
    at = go(at, "validity")
    assert_clean(at)
    at.number_input(key="validity_orderings").set_value(300).run()
    at.button(key="run_validity").click().run()
    assert_clean(at)
    assert any("300 random orderings" in t and "40 %" in t for t in progress_texts(at)), progress_texts(at)
    job = at.session_state["jobs"]["validity"]
    go(at, "data")
    assert_clean(at)
    go(at, "validity")  # back: the same check, still running, with the orderings it was started with
    assert at.number_input(key="validity_orderings").value == 300
    assert at.session_state["jobs"]["validity"] is job and calls == [300]
    assert any("300 random orderings" in t for t in progress_texts(at)), progress_texts(at)
    gate.set()
    at = settle_jobs(at)
    assert_clean(at)
    assert calls == [300] and "validity" not in at.session_state["jobs"]
    verdict = [s.value for s in at.success]
    assert verdict and verdict[0].startswith("PASS:") and "300 random orderings" in verdict[0], verdict
    assert not progress_texts(at)
    go(at, "data")
    go(at, "validity")  # the report is kept: shown again without running the check again
    assert [s.value for s in at.success] == verdict and calls == [300]


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
