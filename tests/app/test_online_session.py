"""Online session page: playback controls over the replay computed once up front."""
from __future__ import annotations

import numpy as np
from favmac.ui.units import per_100_charts
from app_helpers import assert_clean, go, open_page, n_predicted


def metric(at, label):
    return next(m.value for m in at.metric if m.label.startswith(label))


def test_step_reset_end_and_play():
    at = open_page("online")
    assert_clean(at)
    n_steps = n_predicted(at, 4000)
    assert metric(at, f"Patients seen (of {n_steps:,})") == "0"
    at.button(key="step").click().run()
    at.button(key="step").click().run()
    assert at.session_state["session"].position == 2
    assert metric(at, "Patients seen") == "2"
    recent = at.dataframe[0].value
    assert len(recent) == 2 and list(recent.columns[:3]) == ["patient_id", "selected_codes", "true_codes"]
    at.button(key="to_end").click().run()
    assert at.session_state["session"].position == n_steps
    result = next(iter(at.session_state["results"].values()))
    assert metric(at, "False flags per 100 charts") == per_100_charts(result.cost[0].mean())
    at.button(key="reset").click().run()
    assert at.session_state["session"].position == 0

    at.button(key="play").click().run()  # AppTest does not tick run_every; one run advances once
    session = at.session_state["session"]
    assert session.playing and session.position > 0
    at.button(key="pause").click().run()
    assert not at.session_state["session"].playing


def test_replay_runs_once_per_settings_and_position_survives_navigation():
    at = open_page("online")
    at.button(key="step").click().run()
    go(at, "data")
    go(at, "online")
    assert at.session_state["session"].position == 1
    assert len(at.session_state["results"]) == 1
    # new settings: a new replay and the stream starts over
    go(at, "value_cost")
    at.number_input(key="target").set_value(2.1)
    at.button(key="apply_settings").click().run()
    go(at, "online")
    assert_clean(at)
    assert at.session_state["session"].position == 0
    assert len(at.session_state["results"]) == 2


def test_violation_control_shows_violation_rate_chart():
    at = open_page("value_cost")
    at.radio(key="control").set_value("violation")
    at.button(key="apply_settings").click().run()
    go(at, "online")
    at.button(key="to_end").click().run()
    assert_clean(at)
    result = next(iter(at.session_state["results"].values()))
    assert result.delta == 0.1
    rate = np.mean(result.violations[0])  # the exact flags, as the metrics use
    assert metric(at, "Charts over the target") == f"{rate:.1%}"
    charts = at.get("plotly_chart")
    assert len(charts) == 3


def test_playing_to_the_end_stops():
    at = open_page("online")
    n_steps = n_predicted(at, 4000)
    at.session_state["session"].position = n_steps - 1
    at.button(key="play").click().run()
    assert_clean(at)
    assert at.session_state["session"].position == n_steps
    assert not at.session_state["session"].playing
    assert at.button(key="play")  # the Play button is back
