"""Docstring examples of the Streamlit-free helper modules of ``favmac.ui``."""
import doctest
import importlib

import pytest


@pytest.mark.parametrize("name", ["favmac.ui.text", "favmac.ui.formats", "favmac.ui.jobs", "favmac.ui.playback", "favmac.ui.patients",
                                  "favmac.ui.units", "favmac.ui.tradeoffs", "favmac.ui.tradeoff_grid", "favmac.ui.validity",
                                  "favmac.ui.figures"])
def test_docstring_examples(name):
    failures, _ = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert failures == 0
