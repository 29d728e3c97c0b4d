"""tests/conftest.py: -n auto adds one xdist worker per browser-test group, only when browser tests run.

tests/conftest.py: ``-n auto`` gives each browser-test group a worker of its own, only when the
browser tests run; the count agrees with the groups tests/browser/conftest.py forms."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

TESTS = Path(__file__).resolve().parents[1]


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


suite = load(TESTS / "conftest.py", "suite_conftest")
browser = load(TESTS / "browser" / "conftest.py", "browser_conftest")


def config(*args: str, where: Path = TESTS.parent, numprocesses: str = "auto"):
    return SimpleNamespace(args=list(args), invocation_params=SimpleNamespace(dir=where),
                           option=SimpleNamespace(numprocesses=numprocesses))


@pytest.mark.parametrize("args, where, expected", [
    ((), TESTS.parent, True),  # pytest.ini's testpaths
    (("tests",), TESTS.parent, True),
    (("tests/browser",), TESTS.parent, True),
    (("tests/browser/test_deep_link.py::test_deep_link_under_a_base_url_path",), TESTS.parent, True),
    (("browser/test_end_to_end.py",), TESTS, True),  # run from tests/
    (("tests/ui", "tests/app"), TESTS.parent, False),
    (("tests/test_cli.py",), TESTS.parent, False),
])
def test_browser_tests_are_recognised(args, where, expected):
    assert suite.runs_browser_tests(config(*args, where=where)) is expected


def test_auto_adds_one_worker_per_browser_group(monkeypatch):
    from xdist.plugin import pytest_xdist_auto_num_workers as cores

    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    assert suite.pytest_xdist_auto_num_workers(config("tests")) == cores(config("tests")) + len(browser.BROWSER_GROUPS)
    assert suite.pytest_xdist_auto_num_workers(config("tests/ui")) == cores(config("tests/ui"))
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "3")
    assert suite.pytest_xdist_auto_num_workers(config("tests")) is None  # pytest-xdist's hook reads the variable


def test_the_count_matches_the_groups_and_every_browser_file_has_one():
    assert suite.BROWSER_GROUP_COUNT == len(browser.BROWSER_GROUPS)
    listed = [name for files in browser.BROWSER_GROUPS.values() for name in files]
    assert len(listed) == len(set(listed))
    assert sorted(listed) == sorted(p.name for p in (TESTS / "browser").glob("test_*.py"))
    assert browser.browser_group("test_new_file.py") == "browser-1"
