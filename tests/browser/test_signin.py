"""Sign-in mode in Chromium against a real OpenID Connect provider (issue 32, favmac.ui.auth/boundary).

``oidc-provider-mock`` (a real OIDC server: discovery, authorization code flow, signed ID tokens)
runs in a thread; a ``streamlit run app.py`` server of its own reads a secrets.toml written to a
temporary directory (``--secrets.files``) that turns sign-in on: docs/deploy.md's secrets example,
with only the redirect URI and the provider's address changed. Users of the provider:

* alice: team risk-east, auditor;  bob: team risk-west, viewer;
* noclaim: a token without the ``groups`` claim;  noteam: an empty ``groups`` claim.

Checked: a deep link without a session shows only the sign-in button, and signing in there comes
back to that page; signing in shows the name,
team and role in the sidebar; a download URL of alice's is served to her browser only (not to
bob's signed-in browser, not to a client without cookies, not after sign-out); sign-out ends
access; a token without teams and a user in no team get a clear page; a sign-in the provider
refuses is reported on the sign-in page; a provider that cannot be reached gets a clear page.

Team boundary (one program per team, made through the library in the server's store): each user's
Programs page lists their team's program only; bob's deep link to alice's program
(``/Programs?program=<name>``) shows nothing of it, says the same as for a name no program has, and the
store records the refusal with him; bob, a viewer, opens his team's program with every write control
disabled and the page saying why; alice's upload on Data is restored for her, not for bob.
"""
from __future__ import annotations

import os
import re
import socket
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import pytest

try:
    import oidc_provider_mock
except ImportError:  # pragma: no cover — the test extra installs it; CI must not pass without these tests
    if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        raise
    pytest.skip("oidc-provider-mock is not installed (pip install -e \".[test]\")", allow_module_level=True)

pytestmark = pytest.mark.timeout(300)

GROUP = "browser-signin"  # own pytest-xdist group: own worker, own server (see the decorators)

USERS = (
    oidc_provider_mock.User(sub="alice", claims={"email": "alice@plan.org", "name": "Alice Auditor",
                                                 "groups": ["risk-east"], "favmac_role": "auditor"}),
    oidc_provider_mock.User(sub="bob", claims={"email": "bob@plan.org", "name": "Bob Viewer",
                                               "groups": ["risk-west"], "favmac_role": "viewer"}),
    oidc_provider_mock.User(sub="noclaim", claims={"email": "noclaim@plan.org", "name": "No Claim"}),
    oidc_provider_mock.User(sub="noteam", claims={"email": "noteam@plan.org", "name": "No Team", "groups": []}),
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


DEPLOY_DOC = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"
EXAMPLE = re.compile(r"<!-- deploy-test: secrets-example -->\s*```toml\n(.*?)```", re.S)


def secrets_toml(port: int, metadata_url: str) -> str:
    """docs/deploy.md's secrets example, verbatim but for the redirect URI (this test server's) and the
    provider's address (the test provider's)."""
    example = EXAMPLE.search(DEPLOY_DOC.read_text(encoding="utf-8")).group(1)
    text, n_redirect = re.subn(r'(?m)^redirect_uri = ".*"$', f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"',
                               example)
    text, n_metadata = re.subn(r'(?m)^server_metadata_url = ".*"$', f'server_metadata_url = "{metadata_url}"', text)
    assert n_redirect == n_metadata == 1, "docs/deploy.md's secrets example lost its redirect_uri or server_metadata_url"
    return text


@pytest.mark.xdist_group(GROUP)
def test_the_deploy_docs_secrets_example_is_a_complete_configuration():
    from favmac.ui.auth import read_auth_settings

    example = EXAMPLE.search(DEPLOY_DOC.read_text(encoding="utf-8")).group(1)
    settings = read_auth_settings(tomllib.loads(example))
    assert settings.enabled and settings.problem == "" and list(settings.providers) == ["default"]
    assert (settings.groups_claim, settings.role_claim, settings.auditor_values) == ("groups", "favmac_role", ("auditor",))
    assert tomllib.loads(example)["auth"]["redirect_uri"].endswith("/oauth2callback")


@pytest.fixture(scope="module")
def provider():
    with oidc_provider_mock.run_server_in_thread(user_claims=USERS) as server:
        yield f"http://localhost:{server.server_port}"


@pytest.fixture(scope="module")
def signin_url(provider, serving, tmp_path_factory):
    """A sign-in mode server (its own port: the redirect URI names it)."""
    tmp = tmp_path_factory.mktemp("signin")
    port = free_port()
    secrets = tmp / "secrets.toml"
    secrets.write_text(secrets_toml(port, f"{provider}/.well-known/openid-configuration"))
    with serving.serve_app(tmp, "--server.port", str(port), "--secrets.files", str(secrets)) as base:
        yield base


def new_page(browser, serving):
    context = browser.new_context(accept_downloads=True, viewport=serving.viewport)
    context.set_default_timeout(60_000)
    return context, context.new_page()


def sign_in_button(page):
    return page.get_by_role("button", name="Sign in")


def sign_in(page, url: str, user: str) -> None:
    page.goto(url)
    sign_in_button(page).click()
    page.get_by_role("button", name=user, exact=True).click()  # the provider's "predefined users" form


def sidebar(page):
    return page.locator("[data-testid='stSidebar']")


def fetch(url: str, cookie: str = "") -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""


@pytest.mark.xdist_group(GROUP)
def test_deep_link_without_sign_in_shows_only_the_button(browser, serving, signin_url):
    context, page = new_page(browser, serving)
    try:
        page.goto(f"{signin_url}/Export")
        sign_in_button(page).wait_for()
        main = page.locator("[data-testid='stMain']").inner_text()
        assert "Download" not in main and "patients" not in main, main
        assert page.locator("[data-testid='stPageLink']").count() == 0
        assert page.locator("[data-testid='stDownloadButton']").count() == 0
    finally:
        context.close()


@pytest.mark.xdist_group(GROUP)
def test_sign_in_download_boundary_and_sign_out(browser, serving, signin_url):
    alice_context, alice = new_page(browser, serving)
    bob_context, bob = new_page(browser, serving)
    try:
        sign_in(alice, f"{signin_url}/Export", "alice")
        sidebar(alice).get_by_text("Alice Auditor").wait_for()
        who = sidebar(alice).inner_text()
        assert "risk-east" in who and "auditor" in who, who
        alice.get_by_role("heading", name="Export").first.wait_for()  # back on the page the sign-in started on
        with alice.expect_download() as info:
            alice.locator(".st-key-download_settings button").first.click()
        download_url = info.value.url
        assert "/media/" in download_url, download_url
        assert alice_context.request.get(download_url).status == 200  # her own browser: served

        # a copied URL: no cookies at all, or another signed-in user's browser: nothing
        assert fetch(download_url) == (404, b"")
        sign_in(bob, signin_url, "bob")
        sidebar(bob).get_by_text("Bob Viewer").wait_for()
        assert "risk-west" in sidebar(bob).inner_text() and "viewer" in sidebar(bob).inner_text()
        response = bob_context.request.get(download_url)
        assert response.status == 404 and b"settings" not in response.body()

        # sign-out ends access: the sign-in button again, and the download is gone for her browser too
        sidebar(alice).get_by_role("button", name="Sign out").click()
        alice.get_by_role("button", name="End session").click()  # the provider's end-session form
        sign_in_button(alice).wait_for()  # back at the app (its redirect URI), signed out
        alice.goto(f"{signin_url}/Export")
        sign_in_button(alice).wait_for()
        assert alice.locator("[data-testid='stDownloadButton']").count() == 0
        assert alice_context.request.get(download_url).status == 404
        assert not any(c["name"] == "_streamlit_user" for c in alice_context.cookies())
    finally:
        alice_context.close()
        bob_context.close()


@pytest.mark.xdist_group(GROUP)
@pytest.mark.parametrize("user, says", [("noclaim", "has no 'groups' claim"), ("noteam", "You are in no team")])
def test_a_token_without_a_team_gets_a_clear_page(browser, serving, signin_url, user, says):
    context, page = new_page(browser, serving)
    try:
        sign_in(page, signin_url, user)
        page.get_by_text(says).first.wait_for()
        main = page.locator("[data-testid='stMain']").inner_text()
        assert "Traceback" not in main and "signed in as" in main, main
        assert page.locator("[data-testid='stPageLink']").count() == 0
        page.get_by_role("button", name="Sign out").wait_for()
    finally:
        context.close()


@pytest.mark.xdist_group(GROUP)
def test_a_refused_sign_in_says_so(browser, serving, signin_url):
    context, page = new_page(browser, serving)
    try:
        page.goto(signin_url)
        sign_in_button(page).click()
        page.get_by_role("button", name="Deny").click()  # the provider answers error=access_denied
        page.get_by_text("The last sign-in did not complete").wait_for()
        sign_in_button(page).wait_for()
        assert page.locator("[data-testid='stPageLink']").count() == 0
    finally:
        context.close()


@pytest.mark.xdist_group(GROUP)
def test_an_unreachable_provider_gets_a_clear_page(browser, serving, tmp_path):
    port = free_port()
    secrets = tmp_path / "secrets.toml"
    # nothing listens on the provider's port (a wrong issuer URL)
    secrets.write_text(secrets_toml(port, f"http://127.0.0.1:{free_port()}/.well-known/openid-configuration"))
    with serving.serve_app(tmp_path, "--server.port", str(port), "--secrets.files", str(secrets)) as base:
        context, page = new_page(browser, serving)
        try:
            page.goto(f"{base}/Data")
            page.get_by_text("Sign-in is not working on this server").wait_for()
            main = page.locator("[data-testid='stMain']").inner_text()
            assert "cannot be reached" in main and "Traceback" not in main, main
            assert sign_in_button(page).count() == 0
        finally:
            context.close()


# --------------------------------------------------------------------------- team boundary in the app (issue 32)
CODES = ("C1", "C2", "C3", "C4")
PROGRAM_NAMES = {"risk-east": "harbor", "risk-west": "summit"}


@pytest.fixture(scope="module")
def team_programs(signin_url):
    """One program per team, created through the library in the server's store (``FAVMAC_STORE``, which the
    server inherited) by an auditor of that team: {team: program name}."""
    import numpy as np

    import favmac
    from favmac.access import Identity
    from favmac.runspec import RunSpec

    rng = np.random.default_rng(5)
    n = 120
    ids = [f"p{i:04d}" for i in range(n)]
    probs = rng.beta(0.6, 2.0, size=(n, len(CODES))).round(4)
    labels = (rng.uniform(size=probs.shape) < probs).astype(int)
    store = favmac.open_store(os.environ["FAVMAC_STORE"])
    made = {}
    try:
        for team in ("risk-east", "risk-west"):
            founder = store.as_user(Identity(user_id=f"founder-{team}", name=f"Founder {team}", teams=(team,),
                                             role="auditor"))
            name = f"{PROGRAM_NAMES[team]}-{os.getpid()}"  # names that do not say the team
            founder.create_program(name, RunSpec(targets=(1.1,), recalibrate=None), ids, probs, labels, codes=list(CODES))
            made[team] = name
    finally:
        store.close()
    return made


def wait_idle(page, settle_ms: int = 300) -> None:
    from test_end_to_end import wait_idle as idle

    idle(page, timeout=120_000, settle_ms=settle_ms)


def main_text(page) -> str:
    return page.locator("[data-testid='stMain']").inner_text()


def open_programs(page, url: str) -> str:
    page.goto(url)
    page.get_by_role("heading", name="Programs").first.wait_for()
    wait_idle(page, settle_ms=500)
    return main_text(page)


@pytest.mark.xdist_group(GROUP)
def test_team_boundary_programs_deep_link_viewer_and_workspace(browser, serving, signin_url, team_programs, tmp_path,
                                                               screenshot_dir):
    import favmac
    from test_end_to_end import keyed, upload, write_wide_csv

    east, west = team_programs["risk-east"], team_programs["risk-west"]
    alice_context, alice = new_page(browser, serving)
    bob_context, bob = new_page(browser, serving)
    try:
        # 1. each signed-in user sees their team's program and not the other team's
        sign_in(alice, f"{signin_url}/Programs", "alice")
        sidebar(alice).get_by_text("Alice Auditor").wait_for()
        text = open_programs(alice, f"{signin_url}/Programs")
        assert east in text and west not in text, text
        sign_in(bob, f"{signin_url}/Programs", "bob")
        sidebar(bob).get_by_text("Bob Viewer").wait_for()
        text = open_programs(bob, f"{signin_url}/Programs")
        assert west in text and east not in text, text
        bob.screenshot(path=str(screenshot_dir / "signin-bob-programs.png"), full_page=True)

        # 3. a viewer opens his team's program, but every write control is disabled and the page says why
        assert "You have the viewer role" in text and "not create programs, predict, label or change settings" in text
        assert alice.get_by_role("button", name="Create program").is_enabled()
        assert bob.get_by_role("button", name="Create program").is_disabled()
        batch = tmp_path / "june.csv"
        frame = {"patient_id": ["n1", "n2"], **{code: [0.5, 0.2] for code in CODES}}
        import pandas as pd

        pd.DataFrame(frame).to_csv(batch, index=False)
        upload(bob, "program_new_file", batch)
        upload(bob, "program_labels_file", batch)  # a file in both uploaders: the buttons still refuse
        for key in ("program_predict", "program_label", "program_settings"):
            assert keyed(bob, key).locator("button").is_disabled(), key
        assert west in main_text(bob)  # still open (read access): its status and audit trail
        bob.get_by_role("heading", name="Audit trail").first.wait_for()

        # 2. alice's program by deep link as bob: nothing of it, refused, and the refusal recorded with him
        store = favmac.open_store(os.environ["FAVMAC_STORE"])
        try:
            before = len(store.refusals())
            text = open_programs(bob, f"{signin_url}/Programs?program={east}")
            assert f"No program named '{east}' among your teams' programs" in text, text
            assert "risk-east" not in text and "team risk-east" not in text, text  # not even its team
            assert "Audit trail" in text and west in text  # his own program is what opens
            bob.screenshot(path=str(screenshot_dir / "signin-bob-refused-deep-link.png"))
            refusals = store.refusals().iloc[before:]
            assert len(refusals) == 1, refusals
            row = refusals.iloc[0]
            assert (row["user_name"], row["action"], row["program"], row["team"]) == ("Bob Viewer", "open", east,
                                                                                      "risk-east"), row.to_dict()
            assert "bob" in row["user_id"], row.to_dict()
            # a reload of the page does not ask again (one refusal per attempt) ...
            wait_idle(bob, settle_ms=500)
            assert len(store.refusals()) == before + 1
            # a name no program has gets the same words (the message does not tell that harbor exists); nothing to record
            text = open_programs(bob, f"{signin_url}/Programs?program=no-such-program")
            assert "No program named 'no-such-program' among your teams' programs (teams: risk-west)" in text, text
            assert len(store.refusals()) == before + 1
            # ... and alice's own deep link opens her program
            text = open_programs(alice, f"{signin_url}/Programs?program={east}")
            assert "No program named" not in text and f"2 · {east}" in text, text
        finally:
            store.close()

        # 4. alice's upload on Data is her workspace's, not bob's
        cohort = tmp_path / "alice_private_cohort.csv"
        write_wide_csv(cohort, n=120)
        alice.goto(f"{signin_url}/Data")
        alice.get_by_role("heading", name="Data").first.wait_for()
        wait_idle(alice, settle_ms=500)
        upload(alice, "upload_wide", cohort)
        assert "alice_private_cohort.csv" in main_text(alice)
        alice.reload()  # her own reload restores it (the store has it)
        alice.get_by_role("heading", name="Data").first.wait_for()
        wait_idle(alice, settle_ms=800)
        assert "alice_private_cohort.csv" in main_text(alice) + sidebar(alice).inner_text()
        for page_name in ("Data", "Online_session"):
            bob.goto(f"{signin_url}/{page_name}")
            bob.locator("[data-testid='stMain'] h1").first.wait_for()
            wait_idle(bob, settle_ms=800)
            seen = main_text(bob) + sidebar(bob).inner_text()
            assert "alice_private_cohort" not in seen, seen
            assert "HCC cohort (synthetic, 35 codes)" in sidebar(bob).inner_text()  # he uploaded nothing: the sample
    finally:
        alice_context.close()
        bob_context.close()
