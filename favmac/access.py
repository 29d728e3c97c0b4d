"""Who may do what: the acting user and the access rules, decided once (docs/method.md, "Access").

Every program belongs to one team. A user belongs to teams (an identity-token claim, usually
``groups``) and has one role:

* ``viewer`` reads: lists the team's programs, opens one, reads its status, timeline and audit trail;
* ``auditor`` also writes: creates programs, predicts, labels and changes settings.

A user's own workspace (uploads and settings) is theirs alone, whatever the role. The store
(:mod:`favmac.store`) calls :func:`authorize` before every read and write, so the app, the command
line and the library cannot disagree; this module knows nothing of databases or Streamlit.

Without sign-in, the app, the CLI and the library act as :data:`LOCAL_USER`.

>>> alice = Identity(user_id="alice@plan.org", name="Alice", teams=("risk-east",), role="auditor")
>>> authorize(alice, "predict", team="risk-east")
>>> authorize(alice.with_role("viewer"), "predict", team="risk-east")
Traceback (most recent call last):
...
favmac.access.AccessDenied: Alice (viewer) may not predict on a program of team 'risk-east': only the auditor role may.
"""
from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "ACTIONS",
    "READ_ACTIONS",
    "ROLES",
    "WRITE_ACTIONS",
    "AccessDenied",
    "ClaimsError",
    "Identity",
    "LOCAL_USER",
    "authorize",
    "identity_from_claims",
]

#: The roles, least privilege first.
ROLES = ("viewer", "auditor")
#: What a viewer may do on a program of one of their teams.
READ_ACTIONS = ("list", "open", "status", "decisions", "timeline", "export")
#: What only an auditor may do on a program of one of their teams.
WRITE_ACTIONS = ("create", "predict", "label", "settings")
ACTIONS = READ_ACTIONS + WRITE_ACTIONS
_ALLOWED = {"viewer": frozenset(READ_ACTIONS), "auditor": frozenset(ACTIONS)}

MAX_NAME = 200  # characters of a user id, a display name or a team name
MAX_TEAMS = 200


class AccessDenied(PermissionError):
    """An action the acting user may not take; the message names the user, the action and the team.

    Attributes
    ----------
    user_id, action, team : str
    """

    def __init__(self, message: str, *, user_id: str = "", action: str = "", team: str | None = None):
        super().__init__(message)
        self.user_id = user_id
        self.action = action
        self.team = team


class ClaimsError(ValueError):
    """An identity token that does not say who the user is or which team they are in."""


def _clean(text, what: str) -> str:
    """A name as shown: stripped, without control or invisible format characters (bidi overrides)."""
    if not isinstance(text, str):
        raise ValueError(f"{what}: must be text; got {type(text).__name__}")
    cleaned = "".join(ch for ch in text if unicodedata.category(ch) not in ("Cc", "Cf")).strip()
    if not cleaned:
        raise ValueError(f"{what}: must not be empty")
    if len(cleaned) > MAX_NAME:
        raise ValueError(f"{what}: at most {MAX_NAME} characters; got {len(cleaned)}")
    return cleaned


@dataclass(frozen=True)
class Identity:
    """The acting user.

    Attributes
    ----------
    user_id : str
        Stable and unique (an e-mail address, or the token's issuer and subject); owns the workspace.
    name : str
        Shown in the sidebar and recorded with every event.
    teams : tuple of str
        Teams whose programs the user may see.
    role : {"viewer", "auditor"}
    """

    user_id: str
    name: str
    teams: tuple = ()
    role: str = "viewer"

    def __post_init__(self):
        object.__setattr__(self, "user_id", _clean(self.user_id, "user_id"))
        object.__setattr__(self, "name", _clean(self.name, "name"))
        teams = (self.teams,) if isinstance(self.teams, str) else tuple(self.teams)
        if len(teams) > MAX_TEAMS:
            raise ValueError(f"teams: at most {MAX_TEAMS}; got {len(teams)}")
        object.__setattr__(self, "teams", tuple(dict.fromkeys(_clean(t, "team") for t in teams)))
        if self.role not in ROLES:
            raise ValueError(f"role: must be one of {', '.join(ROLES)}; got {self.role!r}")

    def with_role(self, role: str) -> "Identity":
        return dataclasses.replace(self, role=role)

    @property
    def label(self) -> str:
        """"Alice (auditor)": how refusals and the sidebar name the user."""
        return f"{self.name} ({self.role})"


#: The one user of local mode (no sign-in configured): an auditor of the team "local".
LOCAL_USER = Identity(user_id="local", name="Local user", teams=("local",), role="auditor")


def authorize(identity: Identity, action: str, team: str | None) -> None:
    """Raise :class:`AccessDenied` unless ``identity`` may take ``action`` on a program of ``team``.

    ``action`` is one of :data:`ACTIONS`; ``team`` is the program's team (for "create", the team
    the new program will belong to). O(number of the user's teams).

    >>> bob = Identity(user_id="bob", name="Bob", teams=("risk-west",), role="viewer")
    >>> authorize(bob, "decisions", team="risk-west")
    >>> authorize(bob, "open", team="risk-east")
    Traceback (most recent call last):
    ...
    favmac.access.AccessDenied: Bob (viewer) may not open a program of team 'risk-east': Bob is not in that team.
    """
    if not isinstance(identity, Identity):
        raise TypeError(f"identity: expected a favmac.access.Identity; got {type(identity).__name__}")
    if action not in ACTIONS:
        raise ValueError(f"action: must be one of {', '.join(ACTIONS)}; got {action!r}")
    if action == "settings":
        verb = "change the settings of a program of"
    elif action in ("predict", "label"):
        verb = f"{action} on a program of"
    else:
        verb = f"{action} a program of"
    if team not in identity.teams:
        raise AccessDenied(f"{identity.label} may not {verb} team {team!r}: {identity.name} is not in that team.",
                           user_id=identity.user_id, action=action, team=team)
    if action not in _ALLOWED[identity.role]:
        raise AccessDenied(f"{identity.label} may not {verb} team {team!r}: only the auditor role may.",
                           user_id=identity.user_id, action=action, team=team)


def _as_list(claim) -> list:
    if claim is None:
        return []
    if isinstance(claim, str):
        return [part for part in claim.replace(",", " ").split() if part]
    if isinstance(claim, Iterable) and not isinstance(claim, (bytes, Mapping)):
        return [str(part) for part in claim]
    return [str(claim)]


def identity_from_claims(claims: Mapping, *, groups_claim: str = "groups", role_claim: str = "favmac_role",
                         auditor_values: Iterable[str] = ("auditor",)) -> Identity:
    """The :class:`Identity` an OpenID Connect identity token describes.

    Teams are the ``groups_claim`` values (a list, or one space- or comma-separated string). The
    role is "auditor" when any value of ``role_claim`` is one of ``auditor_values`` (so a groups
    claim can double as the role claim, e.g. ``role_claim="groups", auditor_values=("coding-auditors",)``),
    else "viewer": least privilege when the claim is missing. The user id is ``email``, else
    ``iss`` + ``sub``; the name is ``name``, else the e-mail, else the subject.

    Raises :class:`ClaimsError` when the token has no subject or e-mail, no ``groups_claim`` at all, or
    an empty one (a user in no team).

    >>> identity_from_claims({"sub": "42", "iss": "https://id.plan.org", "name": "Dana",
    ...                       "groups": ["risk-east"], "favmac_role": "auditor"})
    Identity(user_id='https://id.plan.org#42', name='Dana', teams=('risk-east',), role='auditor')
    """
    email, sub = claims.get("email"), claims.get("sub")
    if not email and not sub:
        raise ClaimsError("The identity token names no user (no 'email' and no 'sub' claim); ask the identity "
                          "provider's administrator to include one.")
    user_id = str(email) if email else f"{claims.get('iss', '')}#{sub}"
    name = claims.get("name") or email or str(sub)
    if groups_claim not in claims:
        raise ClaimsError(f"The identity token has no {groups_claim!r} claim, so it does not say which team you are in. "
                          f"Ask the identity provider's administrator to add the {groups_claim!r} claim to the token "
                          f"(or set auth.groups_claim in FavMac Studio's settings to the claim your provider uses).")
    teams = _as_list(claims.get(groups_claim))
    if not teams:
        raise ClaimsError(f"You are in no team (the identity token's {groups_claim!r} claim is empty). Ask your "
                          f"administrator to add you to a team's group.")
    auditors = set(auditor_values)
    role = "auditor" if any(value in auditors for value in _as_list(claims.get(role_claim))) else "viewer"
    return Identity(user_id=user_id, name=str(name), teams=tuple(teams), role=role)
