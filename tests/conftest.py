"""Suite-wide setup: ``tests/`` on sys.path (tests/oracle.py, instances.py, ...) and the number of
pytest-xdist workers that ``-n auto`` (pytest.ini) starts."""
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

TESTS = Path(__file__).resolve().parent
BROWSER_TESTS = TESTS / "browser"
#: How many xdist groups the browser tests form (``BROWSER_GROUPS`` in tests/browser/conftest.py).
BROWSER_GROUP_COUNT = 2


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


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """Compile (or load from numba's cache on disk) the replay kernels once, in the controlling process,
    before pytest-xdist starts its workers: on a fresh clone every worker would otherwise compile the same
    kernels at once (the CMS-HCC payment greedy alone takes about a minute), and an app test's first page
    run would wait for that behind the others (app_helpers.TIMEOUT)."""
    if hasattr(session.config, "workerinput") or session.config.getoption("collectonly", False):
        return  # an xdist worker: the controller compiled them
    if not getattr(session.config.option, "numprocesses", None):
        return  # one process (-n 0): it compiles what its tests need, once, when they need it
    from favmac.ui.bootstrap import warm_up

    warm_up(0)
