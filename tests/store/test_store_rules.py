"""The store's rules: bad input is refused naming the batch, row and column and changes nothing; access is
checked in one place (refusals recorded, every event records its user); workspaces are their user's only;
an older store is migrated; a store that cannot be used is one clear error."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import func, select

import favmac
from favmac.access import AccessDenied, Identity
from favmac.io import DataError
from favmac.runspec import RunSpec, SettingsError
from favmac.store import StoreError, schema
from favmac.store.database import masked
from program_oracle import cohort

ROOT = Path(__file__).resolve().parents[2]
CODES = [f"C{k}" for k in range(6)]
ALICE = Identity(user_id="alice@plan.org", name="Alice", teams=("east",), role="auditor")
VIEWER = Identity(user_id="vic@plan.org", name="Vic", teams=("east",), role="viewer")
BOB = Identity(user_id="bob@plan.org", name="Bob", teams=("west",), role="auditor")


@pytest.fixture
def program(store_url):
    data = cohort(2, 400, CODES)
    store = favmac.open_store(store_url).as_user(ALICE)
    created = store.create_program("east-1", RunSpec(targets=(1.1,), segment="plan"), data.ids[:200], data.probs[:200],
                                   data.labels[:200], codes=CODES, members={"plan": data.members["plan"][:200]})
    created.predict(data.ids[200:220], data.probs[200:220], members={"plan": data.members["plan"][200:220]})
    yield store, created, data
    store.close()


def _events(store) -> int:
    with store._engine.connect() as connection:
        return connection.execute(select(func.count()).select_from(schema.events)).scalar()


def _unchanged(store, program, action):
    before, status = _events(store), program.status()
    with pytest.raises((DataError, SettingsError)) as caught:
        action()
    assert _events(store) == before and program.status() == status
    assert store.program(program.name).status() == status
    return str(caught.value)


def test_bad_batches_are_refused_naming_batch_row_and_column(program):
    store, prog, data = program
    members = {"plan": data.members["plan"][220:230]}
    wrong = pd.DataFrame(data.probs[220:230], columns=CODES[:-1] + ["X9"])
    message = _unchanged(store, prog, lambda: prog.predict(data.ids[220:230], wrong, members=members))
    assert "predict batch 2" in message and "missing 'C5'" in message and "'X9'" in message
    probs = data.probs[220:230].copy()
    probs[3, 2] = 1.5
    message = _unchanged(store, prog, lambda: prog.predict(data.ids[220:230], probs, members=members))
    assert "predict batch 2, row 5, column C2: 1.5 is not a probability" in message
    probs[3, 2] = np.nan
    assert "row 5, column C2: nan" in _unchanged(store, prog, lambda: prog.predict(data.ids[220:230], probs, members=members))
    message = _unchanged(store, prog, lambda: prog.predict(data.ids[200:220], data.probs[200:220],
                                                           members={"plan": data.members["plan"][200:220]}))
    assert "this batch was sent before" in message and "predict batch 1" in message and "p2-00200" in message
    ids = data.ids[215:225]
    message = _unchanged(store, prog, lambda: prog.predict(ids, data.probs[215:225], members={"plan": data.members["plan"][215:225]}))
    assert "5 patient ids were given to the program before" in message and "row 2, column patient_id" in message
    message = _unchanged(store, prog, lambda: prog.predict(data.ids[220:230], data.probs[220:230], members={}))
    assert "column plan" in message and "no member column 'plan'" in message
    plans = data.members["plan"][220:230].copy()
    plans[4] = " "
    message = _unchanged(store, prog, lambda: prog.predict(data.ids[220:230], data.probs[220:230], members={"plan": plans}))
    assert "row 6, column plan" in message


def test_bad_labels_are_refused_and_the_same_labels_twice_are_a_no_op(program):
    store, prog, data = program
    message = _unchanged(store, prog, lambda: prog.label(["p2-00300", "p2-00201"], data.labels[[300, 201]]))
    assert "label batch 1, row 2, column patient_id" in message and "never predicted" in message and "p2-00300" in message
    message = _unchanged(store, prog, lambda: prog.label(["p2-00001"], data.labels[[1]]))
    assert "history" in message
    bad = data.labels[200:202].copy().astype(int)
    bad[1, 3] = 2
    assert "row 3, column C3: 2 is not a label" in _unchanged(store, prog, lambda: prog.label(data.ids[200:202], bad))
    assert prog.label(data.ids[200:205], data.labels[200:205]) == 5
    before = _events(store)
    assert prog.label(data.ids[200:205], data.labels[200:205]) == 0 and _events(store) == before  # the same: no-op
    other = data.labels[200:205].copy()
    other[2, 1] = 1 - other[2, 1]
    message = _unchanged(store, prog, lambda: prog.label(data.ids[200:205], other))
    assert "row 4, column C1" in message and "labelled before with other codes" in message


def test_settings_the_data_cannot_satisfy_are_refused(program):
    store, prog, data = program
    message = _unchanged(store, prog, lambda: prog.update_settings(RunSpec(targets=(1.1,), segment="region")))
    assert "history" in message and "no member column 'region'" in message
    message = _unchanged(store, prog, lambda: prog.update_settings(RunSpec(targets=(1.1,), recalibrate=500)))
    assert "recalibrate" in message and "history holds 200" in message
    assert "one target" in _unchanged(store, prog, lambda: prog.update_settings(RunSpec(targets=(1.1, 2.0))))
    assert prog.update_settings(RunSpec(targets=(1.3,))) == 2 and prog.version == 2


def test_access_is_checked_in_the_store_and_refusals_are_recorded(program):
    store, prog, data = program
    viewer = store.as_user(VIEWER)
    seen = viewer.program("east-1")
    assert seen.status()["predicted"] == 20 and len(seen.decisions()) == 20
    for action in (lambda: seen.predict(data.ids[230:232], data.probs[230:232], members={"plan": ["A", "B"]}),
                   lambda: seen.label(data.ids[200:201], data.labels[200:201]),
                   lambda: seen.update_settings(RunSpec(targets=(1.2,)))):
        with pytest.raises(AccessDenied, match="only the auditor role may"):
            action()
    bob = store.as_user(BOB)
    assert bob.programs().empty and store.programs()["name"].tolist() == ["east-1"]
    with pytest.raises(AccessDenied, match="Bob is not in that team"):
        bob.program("east-1")
    with pytest.raises(AccessDenied):
        bob.create_program("x", RunSpec(), data.ids[:60], data.probs[:60], data.labels[:60], codes=CODES, team="east")
    refusals = store.refusals()
    assert refusals["action"].tolist() == ["predict", "label", "settings", "open", "create"]
    assert refusals["user_id"].tolist()[-2:] == ["bob@plan.org"] * 2 and set(refusals["program"]) == {"east-1", "x"}
    trail = prog.decisions()
    assert set(trail["predicted_by"]) == {"Alice"}
    assert set(prog.timeline()["user"]) == {"Alice"}


def test_workspaces_are_their_users_only(store_url):
    store = favmac.open_store(store_url)
    alice, bob = store.as_user(ALICE).workspace(), store.as_user(BOB).workspace()
    alice.save("probabilities.csv", b"patient_id,C0\np1,0.5\n", {"file_name": "probabilities.csv"})
    alice.save("settings.json", b"{}")
    assert alice.names() == ["probabilities.csv", "settings.json"]
    data, meta = alice.load("probabilities.csv")
    assert data.startswith(b"patient_id") and meta["size"] == len(data) and len(meta["sha256"]) == 64
    assert bob.names() == []
    with pytest.raises(KeyError):
        bob.load("probabilities.csv")
    with pytest.raises(KeyError):
        bob.delete("probabilities.csv")
    bob.save("probabilities.csv", b"bob's")
    assert alice.load("probabilities.csv")[0] != b"bob's"
    alice.delete("settings.json")
    assert alice.names() == ["probabilities.csv"] and bob.names() == ["probabilities.csv"]
    store.close()


def test_an_older_store_is_migrated_with_its_data_intact(store_url):
    from alembic import command
    from alembic.config import Config

    from favmac.store.database import _MIGRATIONS, _engine, revision, writing
    from favmac.store.store import Store
    from sqlalchemy.engine import make_url

    engine = _engine(make_url(store_url), store_url)
    with writing(engine) as connection:  # a store made by the first version: revision 0001 only
        config = Config()
        config.set_main_option("script_location", str(_MIGRATIONS))
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
    assert revision(engine) == "0001"
    data = cohort(2, 260, CODES)
    old = Store(engine, store_url)
    made = old.create_program("old", RunSpec(targets=(1.1,)), data.ids[:200], data.probs[:200], data.labels[:200], codes=CODES)
    made.predict(data.ids[200:230], data.probs[200:230])
    status = made.status()
    engine.dispose()
    store = favmac.open_store(store_url)
    assert revision(store._engine) == "0002"
    assert store.program("old").status() == status
    store.workspace().save("x", b"1")  # the table revision 0002 added
    store.close()


def test_a_store_that_cannot_be_used_is_one_clear_error(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "s.sqlite").write_bytes(b"")
    os.chmod(folder / "s.sqlite", stat.S_IRUSR)
    with pytest.raises(StoreError, match="is read-only"):
        favmac.open_store(f"sqlite:///{folder / 's.sqlite'}")
    os.chmod(folder / "s.sqlite", stat.S_IRUSR | stat.S_IWUSR)
    os.chmod(folder, stat.S_IRUSR | stat.S_IXUSR)
    try:
        with pytest.raises(StoreError, match="folder .* is read-only"):
            favmac.open_store(f"sqlite:///{folder / 's.sqlite'}")
    finally:
        os.chmod(folder, stat.S_IRWXU)
    assert (folder / "s.sqlite").read_bytes() == b""  # nothing written
    with pytest.raises(StoreError, match=r"Cannot open the store postgresql\+psycopg://u:\*\*\*@127.0.0.1:1/x: .*refused"):
        favmac.open_store("postgresql+psycopg://u:secret@127.0.0.1:1/x")
    assert masked("postgresql://u:secret@h/db") == "postgresql://u:***@h/db"


def test_an_unknown_postgres_database_is_one_clear_error():
    from conftest import postgres_database

    url, drop = postgres_database()  # skips without a server
    drop()
    with pytest.raises(StoreError, match="does not exist"):
        favmac.open_store(url)
    # the CLI says it in one line, without a traceback
    done = subprocess.run([sys.executable, "-m", "favmac", "program", "status", "x", "--store", url.replace("psycopg://", "psycopg://u:pw@")],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and "Traceback" not in done.stderr and "u:***@" in done.stderr and "pw" not in done.stderr


def test_the_default_store_is_a_file_in_the_users_data_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("FAVMAC_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    store = favmac.open_store()
    assert store.url == f"sqlite:///{tmp_path / 'data' / 'favmac' / 'store.sqlite'}"
    assert (tmp_path / "data" / "favmac" / "store.sqlite").exists()
    monkeypatch.setenv("FAVMAC_STORE", f"sqlite:///{tmp_path / 'other.sqlite'}")
    assert favmac.open_store().url.endswith("other.sqlite")


@pytest.mark.parametrize("bad, found", [("C;1", "contains ';'"), ("", "no name"), ("  ", "no name"),
                                        ("C\u202e1", "U+202E")])
def test_code_names_the_readers_refuse_are_refused_at_creation(tmp_path, bad, found):
    # a code with ';' made the trail's ';'-joined codes ambiguous ("C;1;C2"); the file readers refuse it
    data = cohort(2, 60, CODES)
    store = favmac.open_store(f"sqlite:///{tmp_path / 's.sqlite'}")
    codes = [bad] + CODES[1:]
    with pytest.raises(DataError) as caught:
        store.create_program("p", RunSpec(targets=(1.1,)), data.ids, data.probs, data.labels, codes=codes)
    assert found in str(caught.value) and "codes" in str(caught.value)
    assert store.programs().empty


def test_patient_ids_with_a_direction_control_are_refused_like_the_readers_do(program):
    store, prog, data = program
    ids = list(data.ids[220:222])
    ids[1] = "p\u202e-evil"
    message = _unchanged(store, prog, lambda: prog.predict(ids, data.probs[220:222],
                                                           members={"plan": data.members["plan"][220:222]}))
    assert "row 3, column patient_id" in message and "U+202E" in message



def test_members_indexed_by_patient_id_are_matched_by_id_not_position(tmp_path):
    # a members DataFrame (or Series) indexed by the batch's ids in another order was read by position:
    # each patient silently got another patient's plan, threshold and set
    data = cohort(2, 400, CODES)
    plans = np.asarray(data.members["plan"], dtype=object)
    ids, probs = list(data.ids[200:208]), data.probs[200:208]
    thresholds = []
    for name, members in (
            ("in order", {"plan": plans[200:208]}),
            ("frame by id", pd.DataFrame({"plan": plans[200:208]}, index=ids).iloc[::-1]),
            ("series by id", {"plan": pd.Series(plans[200:208], index=ids).iloc[[3, 1, 0, 2, 7, 6, 5, 4]]})):
        store = favmac.open_store(f"sqlite:///{tmp_path / (name.replace(' ', '_') + '.sqlite')}")
        prog = store.create_program("p", RunSpec(targets=(1.1,), segment="plan"), data.ids[:200], data.probs[:200],
                                    data.labels[:200], codes=CODES, members={"plan": plans[:200]})
        assert len(set(plans[200:208])) > 1
        thresholds.append(prog.predict(ids, probs, members=members)["threshold"].tolist())
        store.close()
    assert thresholds[1] == thresholds[0] and thresholds[2] == thresholds[0]


def test_members_indexed_by_other_patients_are_refused(program):
    store, prog, data = program
    frame = pd.DataFrame({"plan": ["P0", "P1"]}, index=[data.ids[220], "someone-else"])
    message = _unchanged(store, prog, lambda: prog.predict(data.ids[220:222], data.probs[220:222], members=frame))
    assert "someone-else" in message and "member" in message


def test_probabilities_and_labels_frames_indexed_by_patient_id_are_matched_by_id(tmp_path):
    # program.predict(ids, frame) / program.label(ids, frame) with frames indexed by the ids in another order
    # took the rows by position: every patient got another patient's probabilities or labels
    data = cohort(2, 400, CODES)
    ids = list(data.ids[200:210])
    results = []
    for name, shuffle in (("in_order", False), ("shuffled", True)):
        store = favmac.open_store(f"sqlite:///{tmp_path / (name + '.sqlite')}")
        prog = store.create_program("p", RunSpec(targets=(1.1,)), data.ids[:200], data.probs[:200], data.labels[:200],
                                    codes=CODES)
        probs = pd.DataFrame(data.probs[200:210], index=ids, columns=CODES)
        labels = pd.DataFrame(data.labels[200:210].astype(int), index=ids, columns=CODES)
        if shuffle:
            probs, labels = probs.iloc[::-1], labels.sample(frac=1, random_state=0)
        sets = prog.predict(ids, probs)
        prog.label(ids, labels)
        results.append((sets["codes"].tolist(), prog.status()["realized"]))
        store.close()
    assert results[1] == results[0]


def test_settings_whose_value_cannot_price_the_codes_are_a_settings_error(program):
    # the payment value on codes that are no HCCs escaped as a bare ValueError from inside the state
    store, prog, data = program
    message = _unchanged(store, prog, lambda: prog.update_settings(RunSpec(targets=(1.1,), value_kind="cms_payment")))
    assert "cms_model" in message and "C0" in message


def test_a_url_whose_driver_is_not_installed_is_one_clear_error():
    # a dialect SQLAlchemy knows but whose driver is not installed (mysql -> MySQLdb) escaped as ModuleNotFoundError
    with pytest.raises(StoreError, match="no database driver") as caught:
        favmac.open_store("mysql://u:secret@localhost/db")
    assert "secret" not in str(caught.value) and "u:***@" in str(caught.value)


def test_the_audit_trail_is_written_as_csv_or_parquet_only(program, tmp_path):
    # Program.export("trail.xlsx") wrote CSV text into an .xlsx file that a spreadsheet program then refuses
    _, created, _ = program
    with pytest.raises(ValueError, match=r"ends in \.xlsx; the audit trail is written as CSV \(\.csv\) or Parquet"):
        created.export(tmp_path / "trail.xlsx")
    assert not (tmp_path / "trail.xlsx").exists()
    for name in ("trail.csv", "trail", "trail.parquet"):
        created.export(tmp_path / name)
    assert pd.read_csv(tmp_path / "trail.csv").shape == pd.read_csv(tmp_path / "trail").shape
    assert len(pd.read_parquet(tmp_path / "trail.parquet")) == len(pd.read_csv(tmp_path / "trail.csv"))
    created.export(tmp_path / "trail.xlsx.txt")  # a .txt is text: CSV
    created.export(tmp_path / "forced.xlsx", format="csv")  # the caller says so
