"""tests/browser/test_first_visit.py starts its own servers (scripts/bench_first_visit.py): in a test
run they start as tests/browser/conftest.py's do, under the numba compile lock
(tests/numba_compile_lock.py) once the run's warm-up has ended, so a fresh clone never compiles
the same kernel in two processes at once. Checked without a browser: the command the servers get."""
from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import numba_compile_lock

BROWSER_TESTS = Path(__file__).resolve().parent / "browser"


def first_visit_module():
    sys.path.insert(0, str(BROWSER_TESTS))
    try:
        return importlib.import_module("test_first_visit")
    finally:
        sys.path.remove(str(BROWSER_TESTS))


def test_the_first_visit_test_starts_its_servers_under_the_compile_lock_after_the_warm_up(monkeypatch, tmp_path):
    monkeypatch.setenv(numba_compile_lock.ENV, str(tmp_path))
    module = first_visit_module()
    bench = module.bench_first_visit
    order = []
    monkeypatch.setattr(numba_compile_lock, "wait_for_warm_up", lambda *a, **k: order.append("warm-up waited"))

    def fake_measure(repeat=3, browser=None, latency=None, streamlit=None):
        order.append(streamlit)
        latency.update({"one-line app": 1.0, bench.REFERENCE_ROW: 1.0, "FavMac Studio": 1.0})
        return {"one-line app": (0.1, 0.1), "Home": (0.2, 0.2)}

    monkeypatch.setattr(bench, "measure", fake_measure)
    module.test_first_visit_figures(browser=None)
    locked = numba_compile_lock.python_module_command("streamlit")
    assert order == ["warm-up waited", locked]
    assert "numba_compile_lock.install()" in locked[-1] and "runpy.run_module('streamlit'" in locked[-1]


def test_the_bench_server_runs_the_command_it_is_given(monkeypatch, tmp_path):
    module = first_visit_module()
    bench = module.bench_first_visit
    started = []

    class Stop(Exception):
        pass

    def fake_popen(cmd, **kwargs):
        started.append(cmd)
        raise Stop

    monkeypatch.setattr(subprocess, "Popen", fake_popen)
    with pytest.raises(Stop):
        bench.start_server("app.py", tmp_path, tmp_path / "log", ["python-locked", "-c", "lock; streamlit"])
    with pytest.raises(Stop):
        bench.start_server("app.py", tmp_path, tmp_path / "log")
    assert started[0][:4] == ["python-locked", "-c", "lock; streamlit", "run"]
    assert started[1][:4] == [sys.executable, "-m", "streamlit", "run"]  # the script alone: plain python -m streamlit
