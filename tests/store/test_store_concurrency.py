"""Two writers on one program are serialized by the database (nothing lost, nothing doubled, the state after
equals a replay of the log), a writer killed mid-batch leaves the whole batch or none of it, and the CLI runs
a program end to end; on SQLite and PostgreSQL."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from sqlalchemy import func, select

import favmac
from favmac.runspec import RunSpec
from favmac.store import schema
from favmac.store.state import check_program_spec
from program_oracle import Event, cohort, replay_decisions

ROOT = Path(__file__).resolve().parents[2]
TESTS = Path(__file__).resolve().parent
CODES = [f"C{k}" for k in range(6)]
docs/method.md = RunSpec(targets=(1.1,), segment="plan")

_WRITER = """
import sys
sys.path.insert(0, {tests!r})
import numpy as np, favmac
from program_oracle import cohort
data = cohort(5, {n}, [f"C{{k}}" for k in range(6)])
program = favmac.open_store({url!r}).program("shared")
rows = np.arange({start}, {stop})
for chunk in np.array_split(rows, {batches}):
    ids = data.ids[chunk]
    program.predict(ids, data.probs[chunk], members={{"plan": data.members["plan"][chunk]}})
    program.label(ids[: len(ids) // 2], data.labels[chunk][: len(ids) // 2])
print("done", flush=True)
"""


def _log_events(store, name):
    """The program's events read back from the store, as the oracle's events (in sequence order)."""
    from favmac.store.payload import unpack

    program = store.program(name)
    out = []
    with store._engine.connect() as connection:
        rows = connection.execute(select(schema.events).where(schema.events.c.program_id == program._id)
                                  .order_by(schema.events.c.seq)).all()
    for row in rows:
        if row.kind in ("history", "predict", "label"):
            out.append(Event(row.kind, unpack(row.payload)[1]["ids"]))
    return program, out


def _count(store, table):
    with store._engine.connect() as connection:
        return connection.execute(select(func.count()).select_from(table)).scalar()


def _create(url, n):
    data = cohort(5, n, CODES)
    store = favmac.open_store(url)
    store.create_program("shared", docs/method.md, data.ids[:150], data.probs[:150], data.labels[:150], codes=CODES,
                         members={"plan": data.members["plan"][:150]})
    return store, data


def test_two_concurrent_writers_lose_and_double_nothing(store_url):
    n = 750
    store, data = _create(store_url, n)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER.format(tests=str(TESTS), n=n, url=store_url, start=start,
                                                                      stop=start + 300, batches=12)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
               for start in (150, 450)]
    for writer in writers:
        out, err = writer.communicate(timeout=900)
        assert writer.returncode == 0 and "done" in out, err[-2000:]
    assert _count(store, schema.patients) == n and _count(store, schema.labels) == 2 * 12 * (25 // 2)
    program, events = _log_events(store, "shared")
    with store._engine.connect() as connection:
        seqs = [r.seq for r in connection.execute(select(schema.events.c.seq).order_by(schema.events.c.seq))]
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) == 2 + 24 + 24
    predicted = [p for e in events if e.kind == "predict" for p in e.ids]
    assert sorted(predicted) == sorted(data.ids[150:].tolist())  # each patient recorded exactly once
    reference = replay_decisions(check_program_spec(docs/method.md, CODES, 150), data, events)
    trail = program.decisions().set_index("patient_id")
    for patient, (threshold, chosen, _) in reference.items():
        assert trail.loc[patient, "threshold"] == threshold
        assert trail.loc[patient, "codes_flagged"] == ";".join(np.array(CODES)[chosen])
    store.close()


_KILLED = """
import sys
sys.path.insert(0, {tests!r})
import numpy as np, favmac
from program_oracle import cohort
data = cohort(5, {n}, [f"C{{k}}" for k in range(6)])
program = favmac.open_store({url!r}).program("shared")
print("ready", flush=True)
for chunk in np.array_split(np.arange(150, {n}), {batches}):
    program.predict(data.ids[chunk], data.probs[chunk], members={{"plan": data.members["plan"][chunk]}})
"""


def test_a_writer_killed_mid_batch_leaves_the_whole_batch_or_none(store_url):
    n = 60_150
    store, data = _create(store_url, n)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    batches_sent = 30  # small batches, so the writer is still writing when it is killed (a batch takes well under 1 s)
    writer = subprocess.Popen([sys.executable, "-c", _KILLED.format(tests=str(TESTS), n=n, url=store_url,
                                                                    batches=batches_sent)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert writer.stdout.readline().strip() == "ready"
    deadline = time.time() + 600
    while _count(store, schema.events) < 3 and time.time() < deadline:  # the first batch is in
        time.sleep(0.05)
    time.sleep(0.2 * np.random.RandomState(0).rand())  # then somewhere in the next ones
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    store.close()
    store = favmac.open_store(store_url)
    program, events = _log_events(store, "shared")
    batches = [e for e in events if e.kind == "predict"]
    assert 1 <= len(batches) < batches_sent
    assert _count(store, schema.patients) == 150 + sum(len(e.ids) for e in batches)  # no patient of a partial batch
    assert all(len(e.ids) == (n - 150) // batches_sent for e in batches)
    assert program.status()["predicted"] == sum(len(e.ids) for e in batches)
    more = np.arange(n - 5, n)  # the program goes on where the log ends
    if not any(data.ids[n - 1] in e.ids for e in batches):
        program.predict(data.ids[more], data.probs[more], members={"plan": data.members["plan"][more]})
    store.close()


def test_the_command_line_runs_a_program(tmp_path):
    from favmac.cli import main

    sample = ROOT / "sample_data"
    settings = tmp_path / "settings.json"
    settings.write_bytes(RunSpec(targets=(1.1,), segment="cms_cell").to_json())
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    assert main(["program", "create", "hcc", "--calibration", str(sample / "hcc_calibration.csv"), "--settings",
                 str(settings), "--store", url]) == 0
    out = tmp_path / "sets.csv"
    assert main(["program", "predict", "hcc", "--new", str(sample / "hcc_new_patients.csv"), "--out", str(out),
                 "--store", url]) == 0
    import pandas as pd

    sets = pd.read_csv(out)
    labels = pd.DataFrame(np.random.RandomState(0).rand(50, 35) < 0.2,
                          columns=favmac.open_store(url).program("hcc").codes).astype(int)
    labels.insert(0, "patient_id", sets["patient_id"][:50])
    labels.to_csv(tmp_path / "labels.csv", index=False)
    assert main(["program", "label", "hcc", "--labels", str(tmp_path / "labels.csv"), "--store", url]) == 0
    assert main(["program", "export", "hcc", "--out", str(tmp_path / "trail.parquet"), "--store", url]) == 0
    trail = pd.read_parquet(tmp_path / "trail.parquet")
    assert len(trail) == len(sets) and trail["confirmed_codes"].notna().sum() == 50
    assert main(["program", "predict", "hcc", "--new", str(sample / "hcc_new_patients.csv"), "--out", str(out),
                 "--store", url]) == 2  # the same batch twice
    assert main(["program", "status", "hcc", "--store", url, "--user", "bob", "--team", "west"]) == 2
