"""Programs in a store equal replay (docs/method.md "Programs"), on SQLite and PostgreSQL: random interleavings of
predict and label batches with random label orders and settings changes, under both controls, segments
and several groupings, a window, recalibration, the adaptive target, the CMS payment value and a formula
value; a fresh process continues bit for bit."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import favmac
from favmac.runspec import RunSpec
from program_oracle import V28_CODES, cohort, random_events, replay_decisions

ROOT = Path(__file__).resolve().parents[2]
CODES = [f"C{k}" for k in range(6)]

CASES = {
    "expected": (RunSpec(targets=(1.1,)), []),
    "violation": (RunSpec(targets=(1.1,), control="violation", delta=0.2), []),
    "float-weights": (RunSpec(value_kind="weighted_tp", cost_kind="weighted_fp", targets=(1.7,),
                              weights=tuple(np.random.RandomState(5).rand(6) * 2 + 0.1)), []),
    "groupings-window": (RunSpec(targets=(1.1,), segment=("plan", "band"), window=60), []),
    "adaptive-segments": (RunSpec(targets=(1.1,), adaptive_rate=0.05, segment="plan"), []),
    "violation-window-adaptive": (RunSpec(targets=(1.1,), control="violation", delta=0.2, window=40, segment="band"),
                                  [RunSpec(targets=(1.2,), adaptive_rate=0.05, window=30, segment="plan")]),
    "recalibration": (RunSpec(targets=(1.1,), recalibrate=60, recalibration="platt"), []),
    "formula": (RunSpec(value_kind="formula", formula="prod_hits((v + 5) / 10) + sum_hits((v - 5) ** 2)",
                        weights=(1, 2, 3, 4, 5, 6), targets=(1.1,)), []),
    "settings-changes": (RunSpec(targets=(1.1,), window=50),
                         [RunSpec(targets=(0.9,), control="violation", delta=0.15, segment="band"),
                          RunSpec(targets=(1.3,), adaptive_rate=0.1, recalibrate=60, recalibration="isotonic")]),
}


def run_events(program, data, events, recorded):
    """Apply ``events[1:]`` to a program; record {id: (threshold, chosen, per grouping, version)} of each prediction."""
    for event in events[1:]:
        if event.kind == "predict":
            rows = data.rows(event.ids)
            frame = program.predict(event.ids, data.probs[rows], members=data.members_of(event.ids))
            for _, row in frame.iterrows():
                chosen = np.isin(program.codes, row["codes"])
                per = {c[len("threshold_"):]: float(row[c]) for c in frame.columns if c.startswith("threshold_")}
                recorded[row["patient_id"]] = (float(row["threshold"]), chosen, per, int(row["version"]))
        elif event.kind == "label":
            program.label(event.ids, data.labels[data.rows(event.ids)])
        elif event.kind == "settings":
            program.update_settings(event.spec)


def check_against_replay(data, events, recorded, specs):
    """Every recorded decision equals the replay under its version's settings over the events up to its batch."""
    by_version = {}
    for patient, (_, _, _, version) in recorded.items():
        by_version.setdefault(version, []).append(patient)
    checked = 0
    for version, patients in by_version.items():
        wanted = set(patients)
        last = max(i for i, e in enumerate(events) if e.kind == "predict" and wanted & set(e.ids))
        reference = replay_decisions(specs[version], data, events, upto=last + 1)
        for patient in patients:
            threshold, chosen, per, _ = recorded[patient]
            ref_threshold, ref_chosen, ref_per = reference[patient]
            assert threshold == ref_threshold, (patient, version, threshold, ref_threshold)
            assert np.array_equal(chosen, ref_chosen), (patient, version)
            assert per == ref_per, (patient, version, per, ref_per)
            checked += 1
    return checked


def create(store, data, events, spec, name="p"):
    rows = data.rows(events[0].ids)
    return store.create_program(name, spec, events[0].ids, data.probs[rows], data.labels[rows], codes=data.codes,
                                members=data.members_of(events[0].ids))


def specs_of(spec, events, history_size):
    from favmac.store.state import check_program_spec

    out = {1: check_program_spec(spec, CODES, history_size)}
    for event in events:
        if event.kind == "settings":
            out[len(out) + 1] = check_program_spec(event.spec, CODES, history_size)
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_program_equals_replay_on_random_interleavings(store_url, case):
    spec, changes = CASES[case]
    data = cohort(11, 520, CODES)
    events = random_events(data, sorted(CASES).index(case), history=200, batches=10, batch_size=25, specs=changes)
    store = favmac.open_store(store_url)
    program = create(store, data, events, spec)
    recorded = {}
    run_events(program, data, events, recorded)
    assert check_against_replay(data, events, recorded, specs_of(spec, events, 200)) == len(recorded) > 50
    reopened = store.program("p")  # rebuilt from the log: the same state, part by part
    assert reopened.state.current_thresholds() == program.state.current_thresholds()
    assert reopened.status() == program.status()
    store.close()


def test_cms_payment_program_equals_replay(store_url):
    data = cohort(3, 460, V28_CODES, cells=True)
    events = random_events(data, 9, history=200, batches=8, batch_size=25)
    spec = RunSpec(value_kind="cms_payment", cost_kind="fp", targets=(1.1,), segment="plan")
    store = favmac.open_store(store_url)
    program = create(store, data, events, spec)
    recorded = {}
    run_events(program, data, events, recorded)
    from favmac.store.state import check_program_spec

    assert check_against_replay(data, events, recorded, {1: check_program_spec(spec, V28_CODES, 200)}) == len(recorded)
    status = program.status()
    assert status["value_captured"] > 0 and status["predicted"] == len(recorded)
    store.close()


_CONTINUE = """
import json, sys
sys.path.insert(0, {tests!r})
import numpy as np, favmac
from program_oracle import cohort, random_events
from favmac.runspec import RunSpec
data = cohort(11, 520, [f"C{{k}}" for k in range(6)])
events = random_events(data, 4, history=200, batches=10, batch_size=25, specs=[])
program = favmac.open_store({url!r}).program("p")
out = {{}}
for event in events[{start}:]:
    if event.kind == "predict":
        frame = program.predict(event.ids, data.probs[data.rows(event.ids)], members=data.members_of(event.ids))
        for _, row in frame.iterrows():
            out[row["patient_id"]] = [repr(float(row["threshold"])), list(row["codes"]), int(row["version"])]
    elif event.kind == "label":
        program.label(event.ids, data.labels[data.rows(event.ids)])
print(json.dumps(out))
"""


def test_a_fresh_process_continues_bit_for_bit(store_url):
    spec = RunSpec(targets=(1.1,), segment="plan", adaptive_rate=0.05)
    data = cohort(11, 520, CODES)
    events = random_events(data, 4, history=200, batches=10, batch_size=25)
    half = len(events) // 2
    store = favmac.open_store(store_url)
    program = create(store, data, events, spec)
    recorded = {}
    run_events(program, data, events[:half], recorded)
    store.close()
    script = _CONTINUE.format(tests=str(Path(__file__).parent), url=store_url, start=half)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    for patient, (threshold, codes, version) in json.loads(done.stdout).items():
        recorded[patient] = (float(threshold), np.isin(CODES, codes), {}, version)
    from favmac.store.state import check_program_spec

    reference = replay_decisions(check_program_spec(spec, CODES, 200), data, events)
    for patient, (threshold, chosen, _, _) in recorded.items():
        assert threshold == reference[patient][0] and np.array_equal(chosen, reference[patient][1]), patient
    assert len(recorded) == len(reference)


def test_default_recalibration_is_decided_by_the_history():
    """RunSpec's default recalibrate="auto" (docs/method.md "Recalibration on a split", Default): a program whose
    history holds >= 3,000 labelled patients takes its first R = 1,000 as the fold, the rest burn-in;
    below that no fold. The resolved fold is the one stored, so it never changes as the program grows."""
    from favmac.store.state import check_program_spec

    big = check_program_spec(RunSpec(targets=(1.1,)), CODES, 3000)
    assert (big.recalibrate, big.burn_in) == (1000, 2000)
    small = check_program_spec(RunSpec(targets=(1.1,)), CODES, 2999)
    assert (small.recalibrate, small.burn_in) == (None, 2999)
    windowed = check_program_spec(RunSpec(targets=(1.1,), window=500), CODES, 5000)
    assert windowed.recalibrate is None  # a window shorter than the fold: no default fold


def test_program_with_the_default_fold_equals_replay(tmp_path):
    data = cohort(7, 3300, CODES)
    events = random_events(data, 2, history=3000, batches=6, batch_size=25)
    spec = RunSpec(targets=(1.1,))  # recalibrate="auto": the history's first 1,000 are the fold
    store = favmac.open_store(f"sqlite:///{tmp_path / 'store.sqlite'}")
    program = create(store, data, events, spec)
    assert program.spec.recalibrate == 1000 and program.spec.burn_in == 2000
    recorded = {}
    run_events(program, data, events, recorded)
    assert check_against_replay(data, events, recorded, specs_of(spec, events, 3000)) == len(recorded) > 20
    assert store.program("p").spec.recalibrate == 1000
    store.close()


@pytest.mark.parametrize("case", ["adaptive-segments", "violation-window-adaptive", "float-weights"])
def test_points_computed_in_small_chunks_equal_replay(tmp_path, monkeypatch, case):
    """The state computes calibration points a chunk of patients at a time (state.JOIN_CHUNK); chunks that
    cut through every batch change nothing (windows slide chunk by chunk, adaptive targets step in order)."""
    import favmac.store.state as state_module

    monkeypatch.setattr(state_module, "JOIN_CHUNK", 7)
    spec, changes = CASES[case]
    data = cohort(11, 520, CODES)
    events = random_events(data, 3, history=200, batches=10, batch_size=25, specs=changes)
    store = favmac.open_store(f"sqlite:///{tmp_path / 'store.sqlite'}")
    program = create(store, data, events, spec)
    recorded = {}
    run_events(program, data, events, recorded)
    assert check_against_replay(data, events, recorded, specs_of(spec, events, 200)) == len(recorded) > 50
    store.close()
