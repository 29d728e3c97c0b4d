"""The Programs page (issue 31, App): create a program from the session's data and settings, predict a
new-patients file, record labels, a new settings version, the timeline and the audit trail (filtered,
CSV and Parquet), a viewer's refusals and an unreachable store; every test on a store of its own."""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from app_helpers import PAGES, assert_clean, open_page
from test_workspace_restore import new_csv, wide_csv

import favmac
from favmac.access import Identity
from favmac.ui import auth
from favmac.ui.text import md
from favmac.ui.session import Session

CODES = ("A", "B", "C")


def labels_csv(ids, seed=2) -> bytes:
    rng = np.random.RandomState(seed)
    frame = pd.DataFrame({"patient_id": ids})
    for code in CODES:
        frame[code] = (rng.rand(len(ids)) < 0.4).astype(int)
    return frame.to_csv(index=False).encode()


def texts(at, kind) -> str:
    return " ".join(e.value for e in getattr(at, kind))


def programs_page_on_upload():
    """A session that uploaded a 300-patient cohort on Data and opened Programs."""
    at = open_page("data")
    at.file_uploader(key="upload_wide").set_value(("cohort.csv", wide_csv(), "text/csv")).run()
    at.switch_page(PAGES["programs"]).run()
    assert_clean(at)
    return at


def create(at, name="east-2026", *, clean=True):
    at.text_input(key="program_new_name").set_value(name)
    at.button(key="FormSubmitter:create_program-Create program").click().run()
    assert not at.exception
    if clean:
        assert_clean(at)
    return at


def test_create_predict_label_settings_and_the_trail(own_store, downloads):
    at = create(programs_page_on_upload())
    assert "Created program east-2026" in texts(at, "success")
    assert at.session_state["program_name"] == "east-2026"

    at.file_uploader(key="program_new_file").set_value(("march.csv", new_csv(), "text/csv")).run()
    at.button(key="program_predict").click().run()
    assert_clean(at)
    assert "Predicted 20 patients from march.csv" in texts(at, "success")
    sets = pd.read_csv(io.BytesIO(downloads["east-2026_sets.csv"]))
    assert sets["patient_id"].tolist() == [f"n{i:03d}" for i in range(20)]
    assert set(sets.columns) >= {"patient_id", "codes", "threshold", "version"}

    # the same batch again is refused by the store, naming it; nothing changes
    at.button(key="program_predict").click().run()
    assert not at.exception
    assert "march.csv" in texts(at, "error") and "predict batch" in texts(at, "error")

    ids = [f"n{i:03d}" for i in range(12)]
    at.file_uploader(key="program_labels_file").set_value(("april_reviews.csv", labels_csv(ids), "text/csv")).run()
    at.button(key="program_label").click().run()
    assert_clean(at)
    assert "Recorded the labels of 12 patients" in texts(at, "success")
    tiles = {m.label: m.value for m in at.metric}
    assert tiles["Patients predicted"] == "20 patients" and tiles["Labels pending"] == "8 patients"
    assert any(label.startswith("Realized false flags per chart") for label in tiles)  # the unit is in the label

    at.button(key="program_settings").click().run()
    assert_clean(at)
    assert "Settings version 2 recorded" in texts(at, "success")

    program = favmac.open_store(own_store).program("east-2026")  # the page's events are the store's
    assert program.version == 2 and program.status()["labelled"] == 12 and program.status()["pending"] == 8
    trail = pd.read_csv(io.BytesIO(downloads["east-2026_trail.csv"]))
    assert len(trail) == 20 and trail["confirmed_codes"].notna().sum() <= 12
    parquet = pd.read_parquet(io.BytesIO(downloads["east-2026_trail.parquet"]))
    assert parquet["patient_id"].tolist() == trail["patient_id"].astype(str).tolist()

    # filtering the trail: by patient id, and the downloads follow the filter
    at.text_input(key="trail_patient").set_value("n01").run()
    assert_clean(at)
    assert pd.read_csv(io.BytesIO(downloads["east-2026_trail.csv"]))["patient_id"].tolist() == [f"n01{i}" for i in range(10)]


def test_a_reload_finds_the_program_and_the_uploaded_data(own_store):
    at = create(programs_page_on_upload(), "west")
    at.file_uploader(key="program_new_file").set_value(("may.csv", new_csv(seed=5), "text/csv")).run()
    at.button(key="program_predict").click().run()
    fresh = open_page("programs")
    assert_clean(fresh)
    assert fresh.session_state["dataset"].name == "cohort.csv"  # the workspace, not the sample
    assert fresh.selectbox(key="program_choice").value == "west"
    assert {m.label: m.value for m in fresh.metric}["Patients predicted"] == "20 patients"


def test_bad_files_are_one_clear_message_and_change_nothing(own_store):
    at = create(programs_page_on_upload())
    bad = new_csv().replace(b"n000,", b"n000,1.5,", 1)  # a probability outside [0, 1] (and a shifted row)
    at.file_uploader(key="program_new_file").set_value(("bad.csv", bad, "text/csv")).run()
    at.button(key="program_predict").click().run()
    assert not at.exception
    assert "bad.csv" in texts(at, "error")
    labels = labels_csv(["nobody"])
    at.file_uploader(key="program_labels_file").set_value(("late.csv", labels, "text/csv")).run()
    at.button(key="program_label").click().run()
    assert not at.exception
    assert "never predicted" in texts(at, "error") and "late.csv" in texts(at, "error")
    assert favmac.open_store(own_store).program("east-2026").status()["predicted"] == 0


def test_a_second_program_is_opened_and_a_name_already_taken_is_refused(own_store):
    at = create(create(programs_page_on_upload(), "one"), "two")
    assert at.selectbox(key="program_choice").value == "two" and at.session_state["program_name"] == "two"
    assert at.selectbox(key="program_choice").options == ["one · team local", "two · team local"]
    at = create(at, "two", clean=False)
    assert "already holds a program named 'two'" in texts(at, "error")
    assert at.selectbox(key="program_choice").value == "two"
    at.selectbox(key="program_choice").set_value("one").run()
    assert_clean(at)
    assert at.session_state["program_name"] == "one" and "one: new patients" in " ".join(h.value for h in at.header)


def test_a_viewer_reads_but_cannot_write(own_store, monkeypatch):
    at = create(programs_page_on_upload(), "shared")
    viewer = Identity(user_id="local", name="Local user", teams=("local",), role="viewer")
    monkeypatch.setattr(auth, "current_identity", lambda: viewer)
    at.run()
    assert_clean(at)
    assert "viewer role" in texts(at, "info")
    assert at.button(key="program_predict").disabled and at.button(key="program_settings").disabled
    # the store itself refuses, whatever the page shows
    with pytest.raises(favmac.access.AccessDenied):
        favmac.open_store(own_store).as_user(viewer).program("shared").update_settings(Session(at.session_state).spec())
    assert {m.label for m in at.metric} >= {"Patients predicted", "Labels pending"}


def test_the_store_is_named_by_its_kind_in_sign_in_mode_and_by_its_url_in_local_mode():
    from favmac.ui import programs

    secret = "postgresql+psycopg://favmac:s3cret@db.plan.org:5432/favmac"
    # local mode: the one local user's own machine, the URL (its password masked)
    assert programs.store_shown(secret, signed_in=False) == "postgresql+psycopg://favmac:***@db.plan.org:5432/favmac"
    assert programs.store_shown("sqlite:////home/ana/.local/share/favmac/store.sqlite", signed_in=False) \
        == "sqlite:////home/ana/.local/share/favmac/store.sqlite"
    # sign-in mode, whatever the role (viewer or auditor: there is no role that administers the server): the kind
    assert programs.store_shown(secret, signed_in=True) == "PostgreSQL"
    assert programs.store_shown(secret.replace("s3cret", "***"), signed_in=True) == "PostgreSQL"
    assert programs.store_shown("sqlite:////srv/favmac/store.sqlite", signed_in=True) == "SQLite file"
    assert programs.store_shown("sqlite://", signed_in=True) == "SQLite in memory"
    assert programs.store_shown("mysql+pymysql://u:p@h/db", signed_in=True) == "mysql"
    assert programs.store_shown("not a url", signed_in=True) == "unknown"


@pytest.mark.parametrize("role", ["viewer", "auditor"])
def test_a_signed_in_user_sees_the_kind_of_store_not_its_url(own_store, monkeypatch, role):
    at = create(programs_page_on_upload(), "shared")
    assert f"store: {md(own_store)}" in texts(at, "caption")  # local mode: the user's own store file
    user = Identity(user_id="ana@plan.org", name="Ana", teams=("local",), role=role)
    monkeypatch.setattr(auth, "auth_settings", lambda: auth.AuthSettings(enabled=True, providers={"default": "x"}))
    monkeypatch.setattr(auth, "_signed_in", lambda: True)
    monkeypatch.setattr(auth, "current_identity", lambda: user)
    at.run()
    assert_clean(at)
    assert "Ana (" + role + ")" in texts(at, "caption") and "store: SQLite file" in texts(at, "caption")
    shown = " ".join(texts(at, kind) for kind in ("caption", "markdown", "info", "error", "warning", "success"))
    path = own_store.removeprefix("sqlite:///")
    assert not any(part in shown for part in (path, md(path), "sqlite:", "store.sqlite", "pytest-of"))


def test_an_unreachable_store_is_a_message_naming_the_url(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("FAVMAC_STORE", f"sqlite:///{blocker / 'store.sqlite'}")
    at = open_page("programs")
    assert not at.exception
    assert "Cannot" in texts(at, "error") and "file" in texts(at, "error")


def test_trail_files_neutralize_formulas_and_keep_parquet_exact():
    from favmac.ui import programs

    trail = pd.DataFrame({"patient_id": ["p1", "p2", "q3"], "batch": ["=HYPERLINK(\"x\").csv", "b\u202e.csv", "b.csv"],
                          "version": [1, 2, 2], "threshold": [0.5, 0.25, 0.25]})
    csv = programs.trail_bytes(trail, "csv").decode("utf-8-sig")
    assert "'=HYPERLINK" in csv and "\u202e" not in csv
    assert pd.read_parquet(io.BytesIO(programs.trail_bytes(trail, "parquet"))).equals(trail)
    assert programs.filter_trail(trail, "P", None, None)["patient_id"].tolist() == ["p1", "p2"]  # case-insensitive
    assert programs.filter_trail(trail, "", [2], ["b.csv"])["patient_id"].tolist() == ["q3"]
    assert programs.filter_trail(trail, ".*", None, None).empty  # plain text, not a pattern
    with pytest.raises(ValueError):
        programs.trail_bytes(trail, "xlsx")


# --------------------------------------------------------------------------- the store in messages (sign-in mode)
SECRET_STORE = "postgresql+psycopg://favmac:s3cret@db.plan.org:5432/favmac"
#: What a signed-in user must never read about the store: host, port, user, password (or its mask), path, scheme.
SERVER_DETAILS = ("db.plan.org", "5432", "favmac:", "s3cret", "***", "postgresql+psycopg", "10.0.0.5", "/srv/favmac",
                  "store.sqlite", "sqlite:")


def unreachable(url: str):
    from favmac.store import StoreError
    from favmac.store.database import masked

    return StoreError(f"Cannot open the store {masked(url)}: connection to server at \"db.plan.org\" (10.0.0.5), port "
                      "5432 failed: Connection refused. Check the URL, that the server is running and reachable, and "
                      "the user name and password.")


@pytest.mark.parametrize("url,kind", [(SECRET_STORE, "PostgreSQL"), ("sqlite:////srv/favmac/store.sqlite", "SQLite file")])
def test_store_problem_names_only_the_kind_of_store_in_sign_in_mode(url, kind):
    from favmac.ui import store as store_ui

    text = store_ui.store_problem(unreachable(url), url, signed_in=True)
    assert kind in text and "ask the person who runs favmac studio" in text.lower() and "keep working" in text
    assert not [part for part in SERVER_DETAILS if part in text], text
    # and with no URL given (the server's configured one)
    assert not [part for part in SERVER_DETAILS if part in store_ui.store_problem(unreachable(url), signed_in=True)]


def test_store_problem_names_the_masked_url_in_local_mode():
    from favmac.ui import store as store_ui

    text = store_ui.store_problem(unreachable(SECRET_STORE), SECRET_STORE, signed_in=False)
    assert "postgresql+psycopg://favmac:***@db.plan.org:5432/favmac" in text and "s3cret" not in text
    assert "keep working" in text


def test_store_problem_follows_the_server_mode(monkeypatch):
    from favmac.ui import store as store_ui

    monkeypatch.setattr(auth, "auth_settings", lambda: auth.AuthSettings(enabled=True, providers={"default": "x"}))
    assert "db.plan.org" not in store_ui.store_problem(unreachable(SECRET_STORE), SECRET_STORE)
    monkeypatch.setattr(auth, "auth_settings", lambda: auth.AuthSettings(enabled=False))
    assert "db.plan.org" in store_ui.store_problem(unreachable(SECRET_STORE), SECRET_STORE)


def test_program_messages_name_only_the_kind_of_store_in_sign_in_mode(monkeypatch):
    from favmac.store import ProgramNotFound
    from favmac.store.database import masked
    from favmac.ui import programs

    monkeypatch.setenv("FAVMAC_STORE", SECRET_STORE)
    gone = ProgramNotFound(f"no program named 'east-2026' in the store {masked(SECRET_STORE)}")
    text = programs.explain(gone, signed_in=True)
    assert "east-2026" in text and "PostgreSQL" in text and not [p for p in SERVER_DETAILS if p in text], text
    assert masked(SECRET_STORE) in programs.explain(gone, signed_in=False)  # local mode: the URL, masked
    failed = programs.explain(unreachable(SECRET_STORE), signed_in=True)
    assert "PostgreSQL" in failed and not [p for p in SERVER_DETAILS if p in failed], failed
    assert "db.plan.org" in programs.explain(unreachable(SECRET_STORE), signed_in=False)


def test_a_signed_in_user_is_told_the_store_is_down_without_its_url(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    path = blocker / "store.sqlite"
    monkeypatch.setenv("FAVMAC_STORE", f"sqlite:///{path}")
    user = Identity(user_id="ana@plan.org", name="Ana", teams=("local",), role="auditor")
    monkeypatch.setattr(auth, "auth_settings", lambda: auth.AuthSettings(enabled=True, providers={"default": "x"}))
    monkeypatch.setattr(auth, "_signed_in", lambda: True)
    monkeypatch.setattr(auth, "current_identity", lambda: user)
    at = open_page("programs")
    assert not at.exception
    shown = " ".join(texts(at, kind) for kind in ("caption", "markdown", "info", "error", "warning", "success"))
    assert "SQLite file" in texts(at, "error") and "person who runs FavMac Studio" in texts(at, "error")
    assert not any(part in shown for part in (str(path), md(str(path)), "sqlite:", "store.sqlite", "pytest-of", "not a folder"))


def test_a_workspace_the_store_fails_to_save_or_read_names_no_server_detail_in_sign_in_mode(monkeypatch):
    from favmac.ui import workspace, workspace_restore

    class Broken:
        def load(self, name):
            raise unreachable(SECRET_STORE)

    monkeypatch.setenv("FAVMAC_STORE", SECRET_STORE)
    for signed_in in (True, False):
        monkeypatch.setattr(auth, "auth_settings", lambda: auth.AuthSettings(enabled=signed_in, providers={"default": "x"}))
        ss = Session({})
        workspace.note_failure(ss, unreachable(SECRET_STORE))
        saved = ss.messages["workspace"][1]
        ss = Session({})
        ss.workspace = Broken()
        workspace_restore.restore(ss)
        read = ss.messages["workspace"][1]
        for text in (saved, read):
            if signed_in:
                assert "PostgreSQL" in text and "person who runs FavMac Studio" in text
                assert not [part for part in SERVER_DETAILS if part in text], text
            else:
                assert "db.plan.org" in text
