"""Several groupings at once and labels that arrive later, in the app (AppTest; issue 20)."""
from __future__ import annotations

import json

from app_helpers import assert_clean, go, open_page

from favmac.methods import run_method
from favmac.segments import grouping_tables
from favmac.ui import actions, settings_form
from favmac.ui.jobs import segment_groups
from favmac.ui.session import Session
from favmac.ui.text import md


def groupings_session():
    at = open_page("data")
    at.radio(key="sample_choice").set_value("groupings")
    at.button(key="load_sample").click().run()
    assert_clean(at)
    assert at.session_state["dataset"].segment_columns() == ["plan", "age_band"]
    return at


def tick_two(at, delay=None, arrival=None):
    """Value & cost with plan AND age band ticked (and a label delay, or ``arrival``: "column")."""
    at = go(at, "value_cost")
    at.checkbox(key="use_segments").check().run()
    at.selectbox(key="segment_column").set_value("plan").run()
    at.multiselect(key="more_segment_columns").set_value(["age_band"])
    if delay is not None or arrival is not None:
        at.radio(key="label_arrival").set_value(arrival or "fixed_delay").run()
    if delay is not None:
        at.number_input(key="label_delay").set_value(delay)
    at.button(key="apply_settings").click().run()
    assert_clean(at)
    return at


def library_tables(at):
    """grouping_tables of the library's own replay of the session's data and settings."""
    ss = at.session_state
    spec = settings_form.to_spec(ss["settings"], None if ss["weights"] is None else ss["weights"]["weight"].to_numpy())
    ds = ss["dataset"]
    spec = spec.validate(n_codes=ds.n_codes, n_patients=ds.n_patients)
    result = run_method(spec.replace(targets=(spec.target,)), "favmac", ds.prob_array(), ds.label_array(), codes=ds.codes,
                        patient_ids=ds.patient_ids, groups=segment_groups(ds, spec))
    return grouping_tables(result)


def shown_tables(at):
    """The static tables that have a ``binds`` column, their index (segment) as a column."""
    return [t.value.reset_index() for t in at.table if "binds" in t.value.columns]


def test_two_columns_give_two_tables_equal_to_the_library():
    at = tick_two(groupings_session())
    assert at.session_state["settings"]["segment"] == ("plan", "age_band")
    tables, expected = shown_tables(at), library_tables(at)
    assert list(expected) == ["plan", "age_band"] and len(tables) == 2
    for table, (name, lib) in zip(tables, expected.items()):
        assert table["segment"].tolist() == [md(g) for g in lib["segment"]]  # group labels are user text, escaped
        assert table["patients"].astype(int).tolist() == lib["patients"].tolist()
        assert table["predicted"].astype(int).tolist() == lib["predicted"].tolist()
        assert table["mean cost"].tolist() == [f"{100 * v:.1f}" for v in lib["mean_cost"]]  # per 100 charts
        assert table["violation rate"].tolist() == [f"{100 * v:.1f} %" for v in lib["violation_rate"]]
        assert table["T (math)"].tolist() == [f"{t:.4g}" for t in lib["threshold"]]  # the rule leads, T after it (issue 21)
        assert table["binds"].tolist() == [f"{100 * b:.0f} % of its patients" for b in lib["binds"]]
    assert [m.value for m in at.markdown if m.value in (f"**{md(n)}**" for n in expected)] == [f"**{md(n)}**" for n in expected]


def test_delay_saved_restored_and_pending_shown():
    at = tick_two(groupings_session(), delay=300)
    assert at.session_state["settings"]["label_delay"] == 300
    doc = json.loads(settings_form.to_spec(at.session_state["settings"], None).to_json())["settings"]
    assert doc["label_delay"] == 300 and doc["segment"] == ["plan", "age_band"]
    # the settings survive a visit elsewhere: the form shows them again
    at = go(go(at, "data"), "value_cost")
    assert at.radio(key="label_arrival").value == "fixed_delay" and at.number_input(key="label_delay").value == 300
    assert at.multiselect(key="more_segment_columns").value == ["age_band"]
    at = go(at, "online")
    at.button(key="to_end").click().run()
    assert_clean(at)
    tiles = {m.label: m.value for m in at.metric}
    assert tiles["Labels pending (patients)"] == "300"  # at the end of the stream: the last 300 patients' labels
    n = at.session_state["dataset"].n_patients
    fold = at.session_state["settings"]["recalibrate"] or 0  # the recalibration fold never calibrates
    assert tiles["Calibration size (patients)"] == f"{n - fold - 1 - 300:,}"


def test_delay_restored_from_a_settings_file():
    at = groupings_session()
    spec = settings_form.to_spec({**at.session_state["settings"], "segment": ["plan", "age_band"], "label_delay": 50}, None)
    assert actions.apply_settings_json(Session(at.session_state), spec.to_json(), "s.json")
    assert at.session_state["settings"]["label_delay"] == 50
    assert at.session_state["settings"]["segment"] == ("plan", "age_band")


def test_adaptive_with_two_groupings_is_refused_and_nothing_is_lost():
    at = tick_two(groupings_session(), delay=100)
    before = dict(at.session_state["settings"])
    at.checkbox(key="use_adaptive").check().run()
    at.button(key="apply_settings").click().run()
    assert [e.value for e in at.error] == [md("adaptive_rate applies to one segment column at most; leave it unset with several")]
    assert at.session_state["settings"] == before
    assert at.multiselect(key="more_segment_columns").value == ["age_band"] and at.checkbox(key="use_adaptive").value
    # a delay as long as the stream: the library's message, and the saved settings stay
    n = at.session_state["dataset"].n_patients
    assert not actions.apply_settings(Session(at.session_state), {**before, "label_delay": n})
    assert at.session_state["messages"]["settings"] == ("error", f"label_delay {n} stream positions is longer than the stream of {n} patients, so no label would ever arrive; use a delay below {n}")
    assert at.session_state["settings"] == before


def test_export_says_what_it_cannot_do():
    at = tick_two(groupings_session())
    at = go(at, "export")
    assert_clean(at)
    assert any("Thresholds per grouping" in h.value for h in at.subheader)
    assert len([t for t in at.table if "calibration patients" in t.value.columns]) == 2
    assert any("No new patients loaded" in i.value for i in at.info)  # the sample has none
