"""Fixtures for the real-browser tests: ``streamlit run`` on a free loopback port + chromium.

* ``app_url`` (session): starts ``python -m streamlit run app.py`` from the repository root
  on 127.0.0.1 port 0 (``serve_app``, also used directly for a server with other options): the
  server binds a port the OS picks and prints it, so servers started at the same moment (pytest-xdist
  workers, other checkouts) never race for one. Waits for ``/_stcore/health`` to answer ``ok`` and
  stops the server (and any children) at the end. The server log is kept under pytest's tmp dir
  (one per xdist worker) and its tail is shown when the server does not come up.
* ``browser`` (session): Debian's chromium (``/usr/bin/chromium``) through Playwright's sync
  API. Never ``playwright install``: when the executable (or python playwright) is missing the
  tests are skipped, and fail instead when ``CI=true`` (``.ci/run`` installs chromium with apt-get).
* They run in two pytest-xdist groups (``BROWSER_GROUPS``), each in one worker with its own server and
  chromium, one test at a time (``pytest_collection_modifyitems``).
* ``page`` (per test): a fresh browser context (own cookies, so its own Streamlit session),
  1400 x 1000 viewport, downloads accepted. Uncaught JavaScript errors are collected in
  ``page.js_errors``. When the test fails, a full-page screenshot of the page as it was goes to
  ``<screenshot_dir>/failed-<test>.png`` (its path is printed with the failure's teardown output).
* ``screenshot_dir`` (session): where the tests put their screenshots: a pytest tmp dir, so a test
  run never writes into the checkout; ``$FAVMAC_SCREENSHOT_DIR`` when set (``scripts/screenshots.py``
  sets it to ``artifacts/screenshots``, gitignored, and copies the README's pictures to
  ``docs/screenshots/`` itself).
"""
from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("FAVMAC_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"]
VIEWPORT = {"width": 1400, "height": 1000}
SERVER_START_TIMEOUT = 60.0  # seconds
SCREENSHOT_DIR_ENV = "FAVMAC_SCREENSHOT_DIR"
LISTENING = re.compile(r"URL: http://127\.0\.0\.1:(\d+)")


def _bound_port(log_path: Path) -> int | None:
    """The port a ``--server.port 0`` server bound, from the ``URL: http://127.0.0.1:<port>`` line it
    prints once listening (None before then)."""
    try:
        found = LISTENING.search(log_path.read_text(errors="replace"))
    except OSError:
        return None
    return int(found.group(1)) if found else None


def _log_tail(path: Path, n: int = 40) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(lines[-n:]) or "(empty log)"


def _health(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.read().decode(errors="replace").strip()
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _stop(proc: subprocess.Popen) -> None:
    """Terminate the server's process group (streamlit and anything it started)."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)


def in_ci() -> bool:
    """CI sets CI=true (GitHub Actions, GitLab, .ci/run's callers): there a missing browser is a failure."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def missing(reason: str):
    """Skip the browser tests for ``reason`` on a developer's machine; fail them in CI, where a skip
    would pass the build without a single browser test having run."""
    if in_ci():
        pytest.fail(f"{reason} (CI=true: the browser tests must run in CI, so this is a failure, not a skip)",
                    pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def chromium_path() -> Path:
    if not CHROMIUM.exists():
        missing(f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium) to run the browser tests")
    return CHROMIUM


@contextlib.contextmanager
def serve_app(log_dir: Path, *extra_args: str):
    """Run ``python -m streamlit run app.py [extra_args]`` from the repository root (in an xdist run: once
    the run's numba warm-up has ended, under ``numba_compile_lock``; tests/conftest.py) on a 127.0.0.1
    port the OS picks (port 0: no two servers can be handed the same one); yields the base URL (no
    trailing slash, ``/<baseUrlPath>`` included when given as ``--server.baseUrlPath``) once the
    server has said which port it bound and ``_stcore/health`` answers ``ok``; stops the server after."""
    log_path = log_dir / "streamlit.log"
    import numba_compile_lock  # tests/ (tests/conftest.py puts it on sys.path)

    # an xdist run: the server's first replay loads the kernels the run's warm-up compiled, and the
    # others it compiles share the workers' compiles (numba_compile_lock; plain ``python -m streamlit``
    # otherwise)
    numba_compile_lock.wait_for_warm_up()
    cmd = [
        *numba_compile_lock.python_module_command("streamlit"), "run", "app.py",
        "--server.headless", "true",
        "--server.port", "0",
        "--server.address", "127.0.0.1",
        "--browser.gatherUsageStats", "false",
        *extra_args,
    ]
    prefix = ""
    if "--server.baseUrlPath" in extra_args:
        prefix = "/" + extra_args[extra_args.index("--server.baseUrlPath") + 1].strip("/")
    # no server warm-up (favmac.ui.bootstrap): each server's niced child would compile the same kernels again, outside
    # the run's compile locks, beside the workers (tests/ui/test_warm_up.py tests the warm-up itself); the run's
    # shared warm-up has compiled the core kernels, and the rest compile once, under the locks, where a test needs them
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "FAVMAC_WARM_UP": os.environ.get("FAVMAC_WARM_UP", "off")}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    base = None
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited with code {proc.returncode} before answering; log {log_path}:\n{_log_tail(log_path)}")
            port = _bound_port(log_path)
            if port is not None:
                base = f"http://127.0.0.1:{port}{prefix}"
                if _health(f"{base}/_stcore/health") == "ok":
                    break
            if time.monotonic() > deadline:
                where = f"{base}/_stcore/health" if base else "its 'URL: http://127.0.0.1:<port>' line"
                pytest.fail(f"streamlit did not answer {where} within {SERVER_START_TIMEOUT:.0f} s; "
                            f"log {log_path}:\n{_log_tail(log_path)}")
            time.sleep(0.25)
        yield base
    finally:
        _stop(proc)


@pytest.fixture(scope="session")
def screenshot_dir(tmp_path_factory) -> Path:
    """Directory for the tests' screenshots: ``$FAVMAC_SCREENSHOT_DIR`` (created) when set, else a
    pytest tmp dir. Never the repository's tracked files (docs/screenshots is scripts/screenshots.py's)."""
    chosen = os.environ.get(SCREENSHOT_DIR_ENV, "").strip()
    if not chosen:
        return tmp_path_factory.mktemp("screenshots")
    path = Path(chosen)
    path = path if path.is_absolute() else REPO_ROOT / path
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def serving():
    """``serve_app`` and ``VIEWPORT`` for a test module: ``from conftest import ...`` finds whichever
    conftest was imported last (tests/app's when tests/app is collected after tests/browser)."""
    return SimpleNamespace(serve_app=serve_app, viewport=VIEWPORT)


@pytest.fixture(scope="session")
def app_url(tmp_path_factory) -> str:
    """Base URL (no trailing slash) of a ``streamlit run app.py`` server for this test session."""
    with serve_app(tmp_path_factory.mktemp("streamlit")) as base:
        yield base


@pytest.fixture(scope="session")
def browser(chromium_path):
    try:
        import playwright.sync_api as sync_api
    except ImportError:
        missing("python playwright is not installed (pip install -e \".[test]\")")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(chromium_path), args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


#: The browser tests' two pytest-xdist groups, by file, balanced by their measured durations (each
#: about half: 294 s and 276 s in a run with ``-n 2``); a file not listed joins the first group.
#: tests/conftest.py's ``BROWSER_GROUP_COUNT`` (one extra xdist worker per group) counts them.
BROWSER_GROUPS = {
    "browser-1": ("test_end_to_end.py", "test_deep_link.py"),
    "browser-2": ("test_browser_segments.py", "test_hostile_segments.py", "test_hostile_files.py", "test_browser_guarantees.py",
                  "test_browser_dollar_tiles.py", "test_programs_browser.py"),
    "browser-signin": ("test_signin.py",),  # its own server with a secrets file and an OIDC provider
}


def browser_group(filename: str) -> str:
    """The xdist group of a browser test file (:data:`BROWSER_GROUPS`; the first one for a new file)."""
    return next((group for group, files in BROWSER_GROUPS.items() if filename in files), next(iter(BROWSER_GROUPS)))


def pytest_collection_modifyitems(config, items):
    """The browser tests in two pytest-xdist groups (pytest.ini: ``--dist loadgroup``): each group
    runs in one worker, one test at a time, with that worker's own streamlit server and chromium
    (session fixtures are per worker), so two workers share the browser tests' time instead of one
    worker holding all of it (the longest path of the suite: about 7 min of mostly waiting on the
    browser); tests/conftest.py gives each group a worker of its own. In one process (``-n 0``)
    the groups mean nothing: one server, one test at a time."""
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.xdist_group(browser_group(item.path.name)))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test item, so ``page`` can tell that the test failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture
def page(browser, app_url, screenshot_dir, request):
    """A page in a fresh context (its own Streamlit session). ``browser`` comes first so a
    missing chromium skips the test before the server is started."""
    context = browser.new_context(accept_downloads=True, viewport=VIEWPORT)
    context.set_default_timeout(60_000)
    page = context.new_page()
    page.js_errors = []
    page.on("pageerror", lambda err: page.js_errors.append(str(err)))
    try:
        yield page
        report = getattr(request.node, "report_call", None)
        if report is not None and report.failed:
            shot = screenshot_dir / f"failed-{request.node.name}.png"
            page.screenshot(path=str(shot), full_page=True)
            print(f"screenshot of the failed page: {shot}")
    finally:
        context.close()
        clear_workspace()


def clear_workspace() -> None:
    """Empty the local user's workspace in the test process's store (``FAVMAC_STORE``, tests/conftest.py),
    which the servers share: each test starts on the bundled sample, as a first visit does."""
    import favmac

    store = favmac.open_store(os.environ["FAVMAC_STORE"])
    try:
        space = store.workspace()
        for name in space.names():
            space.delete(name)
    finally:
        store.close()
