"""First-visit speed: a one-line Streamlit app vs Home vs every page by deep link, in fresh
browser contexts (``scripts/bench_first_visit.py``). Prints the figures; asserts only that
every page drew its controls (no timed assertion: the machine is shared)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import bench_first_visit  # noqa: E402
import numba_compile_lock  # noqa: E402  tests/ (tests/conftest.py puts it on sys.path)


def test_first_visit_figures(browser):
    latency = {}
    # the servers start as conftest.serve_app's do: after the run's numba warm-up, under the compile
    # lock, so on a fresh clone no kernel is compiled twice at once
    numba_compile_lock.wait_for_warm_up()
    figures = bench_first_visit.measure(repeat=1, browser=browser, latency=latency,
                                        streamlit=numba_compile_lock.python_module_command("streamlit"))
    print("\n" + bench_first_visit.table(figures) + "\n" + bench_first_visit.latency_lines(latency))
    assert {"one-line app", "Home"} <= set(figures)
    assert all(drawn > 0 for drawn, _ in figures.values())
    assert set(latency) == {"one-line app", bench_first_visit.REFERENCE_ROW, "FavMac Studio"}
