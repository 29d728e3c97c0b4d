"""Every role and every action, through the store (issue 32): ``favmac.access.authorize`` decides
(tests/test_access.py checks the rule itself); here each action is taken through the store's and
the program's own methods, by a viewer and an auditor, on a program of their team and of another
team. Allowed actions succeed; refused ones raise AccessDenied naming the user and are recorded with
the user in the store's refusals; a program of another team is neither listed nor opened.
(The specs say ``recalibrate=None``: on this branch ``create_program`` with the default "auto" fold
raises a TypeError, a store matter of its own.)"""
from __future__ import annotations

import itertools

import pytest

import favmac
from favmac.access import ACTIONS, READ_ACTIONS, ROLES, AccessDenied, Identity
from favmac.runspec import RunSpec
from program_oracle import cohort

CODES = [f"C{k}" for k in range(4)]
OWNER = Identity(user_id="owner@plan.org", name="Owner", teams=("east",), role="auditor")
DATA = cohort(7, 400, CODES)
_fresh = itertools.count()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    store = favmac.open_store(f"sqlite:///{tmp_path_factory.mktemp('matrix') / 'store.sqlite'}")
    program = store.as_user(OWNER).create_program("east-1", RunSpec(targets=(1.1,), recalibrate=None), DATA.ids[:150], DATA.probs[:150],
                                                  DATA.labels[:150], codes=CODES)
    program.predict(DATA.ids[150:200], DATA.probs[150:200])
    yield store
    store.close()


def take(store, action: str, team: str, tmp_path):
    """``action`` through the store's API, by ``store``'s user, on the program of ``team``'s (or a new one)."""
    if action == "list":
        return store.programs()
    if action == "create":
        n = next(_fresh)
        return store.create_program(f"{team}-new-{n}", RunSpec(targets=(1.1,), recalibrate=None), DATA.ids[:80], DATA.probs[:80],
                                    DATA.labels[:80], codes=CODES, team=team)
    program = store.program("east-1")  # "open"; every other action needs the program open
    if action == "open":
        return program
    if action in ("status", "decisions", "timeline"):
        return getattr(program, action)()
    if action == "export":
        return program.export(tmp_path / "east-1.csv")
    n = next(_fresh)
    if action == "predict":
        return program.predict(DATA.ids[200 + n:201 + n], DATA.probs[200 + n:201 + n])
    if action == "label":
        return program.label(DATA.ids[150 + n % 50:151 + n % 50], DATA.labels[150 + n % 50:151 + n % 50])
    assert action == "settings"
    return program.update_settings(RunSpec(targets=(1.1 + n / 100,), recalibrate=None))


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("action", ACTIONS)
def test_own_team(store, tmp_path, role, action):
    user = Identity(user_id=f"{role}-east@plan.org", name=f"East {role}", teams=("east",), role=role)
    acting = store.as_user(user)
    before = len(store.refusals())
    if role == "auditor" or action in READ_ACTIONS:
        result = take(acting, action, "east", tmp_path)
        if action == "list":
            assert "east-1" in result["name"].tolist()
        if action == "export":
            assert (tmp_path / "east-1.csv").read_bytes().startswith(b"patient_id")
        assert len(store.refusals()) == before
    else:
        with pytest.raises(AccessDenied, match=f"East viewer \\(viewer\\) may not .*only the auditor role may"):
            take(acting, action, "east", tmp_path)
        refusal = store.refusals().iloc[-1]
        assert (refusal["user_id"], refusal["action"], refusal["team"]) == (user.user_id, action, "east")


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("action", ACTIONS)
def test_another_team(store, tmp_path, role, action):
    user = Identity(user_id=f"{role}-west@plan.org", name=f"West {role}", teams=("west",), role=role)
    acting = store.as_user(user)
    if action == "list":
        assert "east-1" not in acting.programs()["name"].tolist()
        return
    with pytest.raises(AccessDenied, match="is not in that team"):
        take(acting, action, "east", tmp_path)
    refusal = store.refusals().iloc[-1]
    expected = "create" if action == "create" else "open"  # the program never opens for another team
    assert (refusal["user_id"], refusal["action"], refusal["team"]) == (user.user_id, expected, "east")
