"""favmac.access: every role against every action, team boundaries, and identities from token claims."""
import pytest

from favmac.access import (ACTIONS, READ_ACTIONS, ROLES, WRITE_ACTIONS, AccessDenied, ClaimsError, Identity, LOCAL_USER,
                           authorize, identity_from_claims)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("action", ACTIONS)
def test_every_role_and_action_on_own_team(role, action):
    user = Identity(user_id="u", name="U", teams=("east",), role=role)
    if role == "viewer" and action in WRITE_ACTIONS:
        with pytest.raises(AccessDenied, match="only the auditor role may") as err:
            authorize(user, action, team="east")
        assert (err.value.user_id, err.value.action, err.value.team) == ("u", action, "east")
    else:
        assert authorize(user, action, team="east") is None


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("action", ACTIONS)
def test_no_action_on_another_team(role, action):
    user = Identity(user_id="u", name="U", teams=("east",), role=role)
    with pytest.raises(AccessDenied, match="not in that team"):
        authorize(user, action, team="west")
    with pytest.raises(AccessDenied):
        authorize(user, action, team=None)


def test_read_and_write_actions_partition_the_actions():
    assert set(READ_ACTIONS) | set(WRITE_ACTIONS) == set(ACTIONS)
    assert not set(READ_ACTIONS) & set(WRITE_ACTIONS)


def test_unknown_action_and_bad_identity_are_refused():
    with pytest.raises(ValueError, match="action: must be one of"):
        authorize(LOCAL_USER, "delete", team="local")
    with pytest.raises(TypeError, match="Identity"):
        authorize(("local", "auditor"), "open", team="local")
    with pytest.raises(ValueError, match="role"):
        Identity(user_id="u", name="U", teams=("t",), role="admin")
    with pytest.raises(ValueError, match="user_id: must not be empty"):
        Identity(user_id=" \u202e ", name="U")


def test_names_lose_bidi_and_control_characters():
    user = Identity(user_id="u", name="Ev\u202eil\x07", teams=("a\u200bb", "a\u200bb"))
    assert user.name == "Evil" and user.teams == ("ab",)


def test_local_user_is_an_auditor_of_its_own_team():
    authorize(LOCAL_USER, "create", team="local")


def test_claims_give_teams_and_role():
    claims = {"sub": "7", "iss": "https://idp", "email": "dana@plan.org", "groups": "east west", "favmac_role": ["auditor"]}
    user = identity_from_claims(claims)
    assert (user.user_id, user.name, user.teams, user.role) == ("dana@plan.org", "dana@plan.org", ("east", "west"), "auditor")
    assert identity_from_claims({**claims, "favmac_role": "viewer"}).role == "viewer"
    assert identity_from_claims({k: v for k, v in claims.items() if k != "favmac_role"}).role == "viewer"
    # a configurable claim: the groups claim doubles as the role claim
    user = identity_from_claims({**claims, "roles": ["coders"], "groups": ["east", "coding-auditors"]},
                                role_claim="groups", auditor_values=("coding-auditors",))
    assert user.role == "auditor"


def test_claims_without_teams_or_user_are_refused_clearly():
    with pytest.raises(ClaimsError, match="no 'groups' claim"):
        identity_from_claims({"sub": "1", "name": "N"})
    with pytest.raises(ClaimsError, match="in no team"):
        identity_from_claims({"sub": "1", "groups": []})
    with pytest.raises(ClaimsError, match="names no user"):
        identity_from_claims({"groups": ["a"]})
    with pytest.raises(ClaimsError, match="'teams' claim"):
        identity_from_claims({"sub": "1", "groups": ["a"]}, groups_claim="teams")
