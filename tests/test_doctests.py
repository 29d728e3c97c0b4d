"""Run the examples in the library's docstrings (the core never imports streamlit)."""
import doctest
import importlib
import pkgutil

import pytest

import favmac

MODULES = sorted(
    name for _, name, _ in pkgutil.walk_packages(favmac.__path__, "favmac.") if not name.startswith("favmac.ui") and name != "favmac.__main__"
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert failures == 0


def test_library_core_does_not_import_streamlit_or_plotly():
    import sys
    import subprocess

    code = "import sys, favmac, favmac.io, favmac.baselines, favmac.metrics, favmac.cli; print(sorted(m for m in sys.modules if m.split('.')[0] in ('streamlit', 'plotly')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
