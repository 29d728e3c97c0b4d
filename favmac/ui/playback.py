"""The Online session: the replay behind it, its running series and the playback state machine.

Nothing here imports Streamlit. :class:`Playback` is the small state object kept in
``st.session_state["session"]``; the plain functions :func:`play`, :func:`pause`,
:func:`step`, :func:`reset`, :func:`to_end`, :func:`set_speed`, :func:`tick` and
:func:`follow` are the only things that change it, so the page's buttons are one-line
callbacks and the state machine is unit-tested without a browser.

>>> pb = Playback(speed=20)
>>> play(pb, n_steps=10, now=0.0)
>>> tick(pb, n_steps=10, now=0.25), pb.position  # 20 patients per second for 0.25 s
(False, 5)
>>> to_end(pb, 10); pb.position, pb.playing
(10, False)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from favmac.methods import run_method
from favmac.result import join_codes
from favmac.runspec import RunSpec

SPEEDS = (1, 5, 20, 100, 500, 2000, 10000)


@dataclass
class Playback:
    """Where the online session is: ``position`` patients shown (0..n_steps), playing or not,
    ``speed`` in patients per second, ``key`` of the run the position belongs to, and the
    clock time of the last advance (``last_tick``)."""

    position: int = 0
    playing: bool = False
    speed: int = 100
    key: str | None = None
    last_tick: float | None = None


def play(pb: Playback, n_steps: int, now: float) -> None:
    """Start playing (from the beginning again when at the end)."""
    if pb.position >= n_steps:
        pb.position = 0
    pb.playing = True
    pb.last_tick = now


def pause(pb: Playback) -> None:
    pb.playing = False


def step(pb: Playback, n_steps: int) -> None:
    """Show one more patient (and stop playing)."""
    pb.playing = False
    pb.position = min(n_steps, pb.position + 1)


def reset(pb: Playback) -> None:
    pb.position, pb.playing = 0, False


def to_end(pb: Playback, n_steps: int) -> None:
    pb.position, pb.playing = n_steps, False


def set_speed(pb: Playback, speed) -> None:
    pb.speed = int(speed) if speed in SPEEDS else 100


def follow(pb: Playback, key: str) -> bool:
    """Start over when the run changed (new data or settings); True when it did."""
    if pb.key == key:
        return False
    pb.position, pb.playing, pb.key = 0, False, key
    return True


def tick(pb: Playback, n_steps: int, now: float) -> bool:
    """Advance by the time passed since the last tick; True when the end was reached (playing stops)."""
    if not pb.playing:
        return False
    last = now if pb.last_tick is None else pb.last_tick
    pb.position = advance_position(pb.position, n_steps, pb.speed, now - last)
    pb.last_tick = now
    if pb.position >= n_steps:
        pb.playing = False
        return True
    return False


def playback_interval(speed: float) -> float:
    """Seconds between chart updates while playing at ``speed`` patients per second.

    At most two updates per second; ``advance_position`` then moves by the time that passed.
    """
    return 1.0 / min(max(float(speed), 1.0), 2.0)


def advance_position(position: int, n_steps: int, speed: float, elapsed: float) -> int:
    """Stream position after ``elapsed`` seconds of playback at ``speed`` patients per second.

    Playback follows the wall clock, so slow redraws skip patients rather than slowing down;
    at least one patient per update, at most two seconds' worth (after a stall), never past the end.
    """
    elapsed = min(max(float(elapsed), 0.0), 2.0)
    return int(min(n_steps, position + max(1, round(float(speed) * elapsed))))


# --------------------------------------------------------------------------- the replay


def run_online(probs, labels, codes, patient_ids, spec: RunSpec, progress=None, groups=None, members=None,
               label_available_at=None):
    """The FavMac replay behind the online session: the spec's first target, control, universe, score and window
    (per segment with ``groups`` when ``spec.segment`` is set; adaptive with ``spec.adaptive_rate``; the labels
    arriving at ``label_available_at`` when ``spec.label_available_column`` is set)."""
    return run_method(spec.replace(targets=(spec.target,)), "favmac", probs, labels,
                      codes=list(codes), patient_ids=patient_ids, progress=progress, groups=groups, members=members,
                      label_available_at=label_available_at)


def estimate_replay_seconds(probs, labels, spec: RunSpec, n_sample: int = 12) -> float:
    """Rough time for ``run_online`` on the whole stream, from a replay of its first patients.

    Used to warn before a slow run (a custom formula's Monte Carlo proxy is costly per patient).
    """
    import time

    n_patients = len(probs)
    n = min(n_sample, n_patients)
    # the first n patients alone: per-patient settings (segments, label arrivals, a fold of R >= 50) are left out
    trial = spec.replace(burn_in=min(spec.burn_in, n // 2), window=None, segment=None, label_available_column=None,
                         recalibrate=None)
    start = time.perf_counter()
    run_online(probs[:n], labels[:n], [str(k) for k in range(probs.shape[1])], np.arange(n).astype(str), trial)
    return (time.perf_counter() - start) * n_patients / max(n, 1)


# --------------------------------------------------------------------------- what the page shows


def running_series(result, target_index: int = 0) -> pd.DataFrame:
    """Per-step series of one target of a replay, with running means.

    Columns: step, position, patient_id, threshold, cost, value, violation (the result's exact
    ``violations`` flag, so the page agrees with the metrics at exact ties), mean_cost,
    mean_value, violation_rate (running over steps 0..s), and segment (the patient's segment in the
    first grouping) with segment_threshold (that segment's own threshold) when the replay is per segment:
    with several groupings ``threshold`` is the smallest of the patient's groups' (the one that binds), which
    may be another grouping's.
    """
    cost = np.asarray(result.cost[target_index], dtype=float)
    value = np.asarray(result.value[target_index], dtype=float)
    n_steps = cost.shape[0]
    seen = np.arange(1, n_steps + 1)
    violation = np.asarray(result.violations[target_index], dtype=bool)
    ids = result.patient_ids if result.patient_ids is not None else np.arange(result.burn_in, result.burn_in + n_steps)
    segment = {}
    if result.groups is not None:
        own = result.groupings[0].thresholds[target_index] if result.groupings else result.thresholds[target_index]
        segment = {"segment": np.asarray(result.groups, dtype=object).astype(str),
                   "segment_threshold": np.asarray(own, dtype=float)}
    return pd.DataFrame(
        {
            "step": np.arange(n_steps),
            "position": np.arange(n_steps) + result.burn_in,
            "patient_id": np.asarray(ids, dtype=object),
            "threshold": np.asarray(result.thresholds[target_index], dtype=float),
            "cost": cost,
            "value": value,
            "violation": violation,
            "mean_cost": np.cumsum(cost) / seen,
            "mean_value": np.cumsum(value) / seen,
            "violation_rate": np.cumsum(violation) / seen,
            **segment,
        }
    )


def downsample_index(n: int, max_points: int = 2000) -> np.ndarray:
    """At most ``max_points`` evenly spread indices of 0..n-1, always keeping the first and last."""
    if n <= max_points:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, max_points).round().astype(np.int64))


def session_metrics(series: pd.DataFrame, position: int) -> dict:
    """Numbers for the metric tiles after ``position`` patients have been predicted."""
    if position <= 0:
        return {"segment": None, "seen": 0, "threshold": float("nan"), "segment_threshold": float("nan"), "mean_cost": float("nan"),
                "mean_value": float("nan"), "violation_rate": float("nan")}
    row = series.iloc[position - 1]
    return {
        "segment": row.get("segment"),
        "seen": int(position),
        "threshold": float(row["threshold"]),  # the one the patient's set used (the smallest over groupings)
        "segment_threshold": float(row.get("segment_threshold", row["threshold"])),  # its segment's own
        "mean_cost": float(row["mean_cost"]),
        "mean_value": float(row["mean_value"]),
        "violation_rate": float(row["violation_rate"]),
    }


def recent_patients(result, labels: np.ndarray, position: int, n: int = 10, target_index: int = 0) -> pd.DataFrame:
    """The last ``n`` patients predicted up to step ``position`` (exclusive), newest first.

    ``labels`` is the full (N, K) label matrix of the stream the result was replayed on.
    """
    columns = ["patient_id", "selected_codes", "true_codes", "value", "cost", "threshold"]
    codes = result.codes if result.codes is not None else [str(k) for k in range(result.selected.shape[2])]
    ids = result.patient_ids if result.patient_ids is not None else np.arange(result.burn_in, result.burn_in + result.n_steps)
    steps = np.arange(position - 1, max(position - n, 0) - 1, -1)
    if steps.size == 0:
        return pd.DataFrame(columns=columns)
    return pd.DataFrame(
        {
            "patient_id": [str(ids[s]) for s in steps],
            "selected_codes": join_codes(result.selected[target_index, steps], codes),
            "true_codes": join_codes(np.asarray(labels)[result.burn_in + steps].astype(bool), codes),
            "value": np.asarray(result.value[target_index, steps], dtype=float),
            "cost": np.asarray(result.cost[target_index, steps], dtype=float),
            "threshold": np.asarray(result.thresholds[target_index, steps], dtype=float),
        },
        columns=columns,
    )


def format_threshold(t: float) -> str:
    """A threshold for a tile: 3 significant digits, ±∞, or a dash for NaN."""
    if math.isnan(t):
        return "—"
    if math.isinf(t):
        return "+∞" if t > 0 else "−∞"
    return f"{t:.3g}"
