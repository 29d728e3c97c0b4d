"""favmac.ui.playback: the running series, the tiles' numbers and the playback state machine."""
from __future__ import annotations

import numpy as np
import pytest
from ui_fixtures import toy_result

from favmac.ui import playback, settings_form as form


def test_running_series_and_metrics():
    series = playback.running_series(toy_result(), target_index=1)
    assert series["position"].tolist() == [2, 3, 4, 5]
    assert series["mean_cost"].tolist() == pytest.approx([2.0, 1.0, 1.0, 1.5])
    assert series["violation_rate"].tolist() == pytest.approx([1.0, 0.5, 1 / 3, 0.5])
    m = playback.session_metrics(series, 2)
    assert m == {"segment": None, "seen": 2, "threshold": 2.0, "segment_threshold": 2.0, "mean_cost": 1.0, "mean_value": 1.0, "violation_rate": 0.5}
    assert playback.session_metrics(series, 0)["seen"] == 0


def test_downsample_index_keeps_ends_and_bounds_points():
    idx = playback.downsample_index(100_000, 2000)
    assert len(idx) <= 2000 and idx[0] == 0 and idx[-1] == 99_999
    assert np.all(np.diff(idx) > 0)
    assert playback.downsample_index(10, 2000).tolist() == list(range(10))


@pytest.mark.parametrize("speed, expected", [(1, 1.0), (5, 0.5), (10_000, 0.5)])
def test_playback_interval(speed, expected):
    assert playback.playback_interval(speed) == expected


def test_advance_position_follows_the_clock():
    assert playback.advance_position(10, 3000, 100, 0.5) == 60
    assert playback.advance_position(10, 3000, 100, 1.3) == 140  # slow redraw: skip, do not slow down
    assert playback.advance_position(10, 3000, 1, 0.1) == 11  # always at least one patient
    assert playback.advance_position(10, 3000, 100, 60.0) == 210  # at most two seconds after a stall
    assert playback.advance_position(2990, 3000, 10_000, 0.5) == 3000


def test_recent_patients_newest_first():
    labels = np.array([[1, 0, 0]] * 6)
    table = playback.recent_patients(toy_result(), labels, position=3, n=2)
    assert table["patient_id"].tolist() == ["p4", "p3"]
    assert table["selected_codes"].tolist() == ["A", "A"]
    assert table["true_codes"].tolist() == ["A", "A"]
    assert playback.recent_patients(toy_result(), labels, position=0).empty


def test_format_threshold():
    assert playback.format_threshold(float("inf")) == "+∞"
    assert playback.format_threshold(float("-inf")) == "−∞"
    assert playback.format_threshold(float("nan")) == "—"
    assert playback.format_threshold(1.23456) == "1.23"


# --------------------------------------------------------------------------- trade-offs


def test_estimate_replay_seconds_scales_with_stream_length(monkeypatch):
    """The trial's time times N / n_sample; a fake clock (each trial "takes" 1 s) keeps the test
    free of the machine's speed."""
    import time

    ticks = iter(range(100))
    monkeypatch.setattr(time, "perf_counter", lambda: float(next(ticks)))
    rng = np.random.RandomState(1)
    for n_patients in (200, 400):
        probs = rng.uniform(size=(n_patients, 3))
        labels = (rng.uniform(size=(n_patients, 3)) < probs).astype(int)
        s = {**form.default_settings(n_patients, 3), "burn_in": 50}
        seconds = playback.estimate_replay_seconds(probs, labels, form.to_spec(s, np.ones(3)), n_sample=10)
        assert seconds == n_patients / 10


@pytest.mark.parametrize("setting", [{"segment": "plan"}, {"recalibrate": 60}, {"label_available_column": "arrived"}])
def test_estimate_replay_seconds_times_the_first_patients_without_per_patient_settings(setting):
    """The trial replays the first patients only: segments, label arrivals and a recalibration fold
    (per-patient, or longer than the trial) are left out instead of failing."""
    rng = np.random.RandomState(2)
    probs = rng.uniform(size=(200, 3))
    labels = (rng.uniform(size=(200, 3)) < probs).astype(int)
    spec = form.to_spec({**form.default_settings(200, 3), "burn_in": 50}, np.ones(3)).replace(**setting)
    seconds = playback.estimate_replay_seconds(probs, labels, spec, n_sample=10)
    assert np.isfinite(seconds) and seconds > 0  # an estimate, not a failure (its size depends on the machine)


def test_running_series_uses_the_exact_violation_flags():
    # a float cost of 0.30000000000000004 against a target of 0.3: the exact flag says "no violation"
    result = toy_result()
    result.targets = np.array([1.0, 0.3])
    result.cost[1] = [0.1 + 0.2, 0.0, 1.0, 0.0]
    result.exceeds = np.array([[False] * 4, [False, False, True, False]])
    series = playback.running_series(result, target_index=1)
    assert series["violation"].tolist() == [False, False, True, False]
    assert series["violation_rate"].tolist() == pytest.approx([0.0, 0.0, 1 / 3, 0.25])


def test_play_pause_step_reset_end_speed():
    pb = playback.Playback()
    playback.step(pb, n_steps=3)
    playback.step(pb, n_steps=3)
    assert (pb.position, pb.playing) == (2, False)
    playback.play(pb, n_steps=3, now=10.0)
    assert pb.playing and pb.last_tick == 10.0
    playback.pause(pb)
    assert not pb.playing and pb.position == 2
    playback.to_end(pb, n_steps=3)
    assert (pb.position, pb.playing) == (3, False)
    playback.step(pb, n_steps=3)
    assert pb.position == 3  # never past the end
    playback.play(pb, n_steps=3, now=0.0)  # at the end, Play starts over
    assert pb.position == 0 and pb.playing
    playback.reset(pb)
    assert (pb.position, pb.playing) == (0, False)
    playback.set_speed(pb, 500)
    assert pb.speed == 500
    playback.set_speed(pb, 7)  # not an offered speed
    assert pb.speed == 100


def test_tick_follows_the_clock_and_stops_at_the_end():
    pb = playback.Playback(speed=100)
    assert not playback.tick(pb, n_steps=300, now=1.0)  # paused: nothing moves
    assert pb.position == 0
    playback.play(pb, n_steps=300, now=1.0)
    assert not playback.tick(pb, n_steps=300, now=1.5)
    assert pb.position == 50 and pb.last_tick == 1.5
    assert not playback.tick(pb, n_steps=300, now=4.0)  # a 2.5 s stall counts as two seconds
    assert pb.position == 250 and pb.playing
    assert playback.tick(pb, n_steps=300, now=5.0)  # reaches the end: stops
    assert pb.position == 300 and not pb.playing


def test_follow_starts_over_for_a_new_run():
    pb = playback.Playback(position=7, playing=True, key="a")
    assert not playback.follow(pb, "a") and pb.position == 7
    assert playback.follow(pb, "b")
    assert (pb.position, pb.playing, pb.key) == (0, False, "b")
