"""Suite-wide setup: ``tests/`` on sys.path (tests/oracle.py, instances.py, ...) and the number of
pytest-xdist workers that ``-n auto`` (pytest.ini) starts."""
import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import numba_compile_lock  # noqa: E402  (tests/ on sys.path)

TESTS = Path(__file__).resolve().parent
BROWSER_TESTS = TESTS / "browser"
#: How many xdist groups the browser tests form (``BROWSER_GROUPS`` in tests/browser/conftest.py).
BROWSER_GROUP_COUNT = 3


def runs_browser_tests(config) -> bool:
    """True when the run collects tests/browser: no path given (pytest.ini's testpaths, ``tests``),
    ``tests`` itself, or a path in tests/browser."""
    for arg in config.args or [str(TESTS)]:
        path = Path(config.invocation_params.dir, str(arg).split("::")[0]).resolve()
        if path == BROWSER_TESTS or BROWSER_TESTS in path.parents or path in BROWSER_TESTS.parents:
            return True
    return False


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker per core (pytest-xdist's own count), plus one per browser-test group
    when the browser tests run. A browser group spends its time waiting on chromium and its
    streamlit server (about a third of a core: 2.3 CPU-minutes in 7.5 minutes), so without its own
    worker it leaves a core mostly idle while the CPU-bound tests queue behind it.
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still sets the number outright."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # pytest-xdist's own hook reads it
    from xdist.plugin import pytest_xdist_auto_num_workers as cores

    return cores(config) + (BROWSER_GROUP_COUNT if runs_browser_tests(config) else 0)


def pytest_configure(config):
    """Every test process (the controller's workers included) shares numba compiles through
    :mod:`numba_compile_lock` when the controller has set its lock directory (an xdist run).
    Each test process has its own store (``FAVMAC_STORE``: a SQLite file in a temporary folder, removed
    at exit), inherited by the app servers it starts: a test never touches the user's data directory."""
    numba_compile_lock.install()
    folder = tempfile.mkdtemp(prefix="favmac-test-store-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    os.environ["FAVMAC_STORE"] = f"sqlite:///{Path(folder) / 'store.sqlite'}"


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """With xdist workers: one numba compile per kernel for the whole run (:mod:`numba_compile_lock`),
    and the replay kernels (bootstrap.warm_up: additive and CMS-HCC payment) compiled, or loaded from
    numba's cache on disk, by a background process that starts with the workers: on a fresh clone
    every worker would otherwise compile the same kernels at once (the CMS-HCC payment greedy alone
    takes about a minute), and a worker that reaches a kernel the warm-up is compiling waits for it
    and loads the saved code. The browser tests' servers start after the warm-up
    (``numba_compile_lock.wait_for_warm_up``), so their first replay loads the kernels too."""
    if hasattr(session.config, "workerinput") or session.config.getoption("collectonly", False):
        return  # an xdist worker: the controller started the warm-up
    if not getattr(session.config.option, "numprocesses", None):
        return  # one process (-n 0): it compiles what its tests need, once, when they need it
    session.config._favmac_warm_up = numba_compile_lock.start_warm_up(TESTS.parent)


def pytest_unconfigure(config):
    warm_up = getattr(config, "_favmac_warm_up", None)
    if warm_up is not None:
        warm_up.finish()
