"""An auditor's per-cell guarantees (issue 21): the HCC sample's ``cms_cell`` column is offered as
a segment column, and choosing it keeps it each member's cell for the CMS-HCC payment value."""
from __future__ import annotations

import numpy as np
from app_helpers import assert_clean, go, open_page, settle_jobs

from favmac.payment_tables import CELL_NAMES
from favmac.ui import jobs
from favmac.ui.session import Session


def cell_session():
    at = open_page("value_cost")
    assert_clean(at)
    assert "cms_cell" in at.selectbox(key="segment_column").options
    at.checkbox(key="use_segments").check().run()
    at.selectbox(key="segment_column").set_value("cms_cell").run()
    at.button(key="apply_settings").click().run()
    assert_clean(at)
    return at


def test_cms_cell_is_a_segment_column_and_stays_each_members_cell():
    at = cell_session()
    settings, dataset = at.session_state["settings"], at.session_state["dataset"]
    assert settings["segment"] == "cms_cell" and settings["value_kind"] == "cms_payment"
    cells = dataset.segments("cms_cell")
    assert set(cells) <= set(CELL_NAMES) and len(set(cells)) > 1
    assert np.array_equal(cells.astype(str), dataset.members["cells"].astype(str))  # the payment value's cells too
    at = settle_jobs(go(at, "online"))
    assert_clean(at)
    result = jobs.online(Session(at.session_state))
    assert set(result.groups) == set(cells)  # one guarantee per cell
    for page in ("value_cost", "patients", "export", "validity"):
        at = settle_jobs(go(at, page))
        assert_clean(at)
    new = at.session_state["new_patients"]
    assert new.attrs["groupings"]["cms_cell"] == list(new.attrs["members"]["cells"])
