"""Small hand-made inputs shared by the UI unit tests (no Streamlit)."""
from __future__ import annotations

import pandas as pd

from toy_results import toy_result  # noqa: F401  (tests/ is on sys.path)

CODES = ["A", "B", "C"]


def weights_frame(values=(1.0, 2.0, 3.0)):
    return pd.DataFrame({"weight": list(values), "description": ["alpha", "beta", "=gamma"]}, index=pd.Index(CODES, name="code"))


def sample_session(name: str):
    """A fresh ``Session`` (over a plain dict) with the bundled sample ``name`` loaded ("hcc", "digits", ...)."""
    from favmac.ui import actions
    from favmac.ui.session import Session

    ss = Session({})
    actions.init_state(ss)
    actions.load_sample(ss, name)
    return ss
