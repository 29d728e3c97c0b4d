"""Pages: the unsupported-payment caption follows typed inputs; per-segment counts with separators; tiles in one row.

Issue 21's small page items: the unsupported-payment caption on Value & cost follows the inputs
as they are typed (it described the last saved run until a second rerun), the per-segment
tables draw patient counts with thousands separators, and the tiles of the Online session and
Patients sit in one row sized to their labels (tests/browser checks that no label is cut)."""
from __future__ import annotations

from app_helpers import assert_clean, go, open_page, shown
from streamlit import dataframe_util

from favmac.ui import payment_cost
from favmac.ui.session import Session
from favmac.ui.units import plain_number


def unsupported_caption(at) -> str:
    return next((shown(c.value) for c in at.caption if shown(c.value).startswith("Unsupported payment:")), "")


def c_max_in(at, **typed) -> float:
    ss = Session(at.session_state)
    return payment_cost.c_max_of(ss.spec().replace(cost_kind="cms_unsupported", **typed), ss.dataset)


def test_the_unsupported_payment_caption_follows_the_typed_base_rate_before_apply():
    at = open_page("value_cost")  # the HCC sample: the payment value in RAF is saved
    at.radio(key="cost_kind").set_value("cms_unsupported").run()
    assert_clean(at)
    assert "RAF of unsupported payment per chart" in unsupported_caption(at)
    assert f"(C_max) is {plain_number(c_max_in(at))}:" in unsupported_caption(at)
    at.text_input(key="pay_base_rate").input("11000").run()  # typed, not applied: the same run says dollars
    caption = unsupported_caption(at)
    assert "dollars of unsupported payment per chart" in caption, caption
    assert f"(C_max) is {plain_number(c_max_in(at, base_rate=11000.0))}:" in caption and "169,169" in caption
    assert at.number_input(key="target").label == "Target c (dollars of unsupported payment per chart)"
    assert at.session_state["settings"]["base_rate"] is None  # nothing saved yet
    at.number_input(key="pay_normalization").set_value(2.0).run()  # any payment input: the caption's C_max follows it
    assert f"(C_max) is {plain_number(c_max_in(at, base_rate=11000.0, normalization=2.0))}:" in unsupported_caption(at)
    at.selectbox(key="pay_cms_model").set_value("V24").run()  # a model that does not pay the data's codes: said, no traceback
    assert_clean(at)
    assert "no C_max with these payment inputs" in unsupported_caption(at) and "not payment HCCs of CMS-HCC V24" in unsupported_caption(at)
    at.selectbox(key="pay_cms_model").set_value("V28").run()
    at.button(key="apply_settings").click().run()
    assert_clean(at)
    assert (at.session_state["settings"]["base_rate"], at.session_state["settings"]["normalization"]) == (11000.0, 2.0)
    assert "dollars of unsupported payment per chart" in unsupported_caption(at)


def test_the_caption_shows_when_the_payment_value_is_chosen_but_not_yet_saved():
    at = open_page("value_cost")
    at.radio(key="value_kind").set_value("tp").run()
    at.button(key="apply_settings").click().run()
    assert at.session_state["settings"]["value_kind"] == "tp" and unsupported_caption(at) == ""
    at.radio(key="value_kind").set_value("cms_payment").run()
    at.radio(key="cost_kind").set_value("cms_unsupported").run()
    assert_clean(at)
    assert "RAF of unsupported payment per chart" in unsupported_caption(at)


def test_per_segment_counts_are_drawn_with_thousands_separators():
    at = open_page("data")
    at.radio(key="sample_choice").set_value("drift")
    at.button(key="load_sample").click().run()
    at = go(at, "value_cost")
    at.checkbox(key="use_segments").check().run()
    at.checkbox(key="use_recalibrate").uncheck()  # every patient in the table (no recalibration fold): one segment >= 1,000
    at.button(key="apply_settings").click().run()
    assert_clean(at)
    table = next(t for t in at.table if "status" in t.value.columns)
    data = table.value
    drawn = dataframe_util.convert_arrow_bytes_to_pandas_df(table.proto.arrow_data.styler.display_values)
    assert data["patients"].sum() == 3000 and data["patients"].max() >= 1000  # numbers, one segment above 1,000
    assert drawn["patients"].tolist() == [f"{n:,}" for n in data["patients"]]
    assert drawn["predicted"].tolist() == [f"{n:,}" for n in data["predicted"]]
    assert drawn["mean cost"].tolist() == data["mean cost"].tolist()  # text columns as they were


def test_online_session_and_patients_tiles_share_one_wrapping_row():
    at = open_page("online")
    at.button(key="to_end").click().run()
    assert_clean(at)
    for page, count in (("online", 5), ("patients", 5)):
        at = go(at, page) if page != "online" else at
        assert_clean(at)
        rows = [block for block in _blocks(at._tree) if _horizontal(block)
                and sum(1 for c in block.children.values() if c.type == "metric") >= 2]
        assert len(rows) == 1, page
        assert rows[0].proto.flex_container.wrap
        assert sum(1 for c in rows[0].children.values() if c.type == "metric") == count, page


def _horizontal(block) -> bool:
    """A ``st.container(horizontal=True)`` block (columns and the like have other protos)."""
    proto = block.proto
    return (proto is not None and "flex_container" in proto.DESCRIPTOR.fields_by_name and proto.HasField("flex_container")
            and proto.flex_container.direction == proto.flex_container.HORIZONTAL)


def _blocks(node):
    for child in getattr(node, "children", {}).values():
        if child.type == "block" or hasattr(child, "children"):
            yield child
            yield from _blocks(child)
