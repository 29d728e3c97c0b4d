"""The Validity page with several groupings, a label delay and file arrivals (AppTest; issue 20)."""
from __future__ import annotations

import numpy as np
from app_helpers import assert_clean, go, settle_jobs
from test_arrivals_groupings_pages import arrivals_of, arrivals_session
from test_groupings_pages import groupings_session, tick_two

from favmac import replay
from favmac.ui import settings_form
from favmac.ui.formats import fixed
from favmac.ui.units import CHARTS
from favmac.ui.text import md
from favmac.validity import validity_check


def test_two_groupings_and_a_delay_give_one_table_per_grouping_equal_to_the_library():
    at = tick_two(groupings_session(), delay=100)
    at = go(at, "validity")
    assert_clean(at)
    assert not at.info or all("Press **Run the validity check**" in i.value for i in at.info)  # no refusal
    assert any("Labels arrive 100 patients after the prediction" in c.value for c in at.caption)
    at = settle_jobs(at.button(key="run_validity").click().run())
    assert_clean(at)
    verdict = [s.value for s in at.success] + [e.value for e in at.error]
    assert verdict and verdict[0].startswith(("PASS:", "FAIL:"))
    assert any(h.value == "Per segment, for each grouping" for h in at.subheader)
    assert [m.value for m in at.markdown if m.value in ("**plan**", "**age\\_band**")] == ["**plan**", "**age\\_band**"]
    tables = [t.value for t in at.table if "spread over orderings" in t.value.columns]
    assert len(tables) == 2

    ss = at.session_state
    data = ss["dataset"]
    spec = settings_form.to_spec(ss["settings"], None if ss["weights"] is None else ss["weights"]["weight"].to_numpy())
    spec = spec.validate(n_codes=data.n_codes, n_patients=data.n_patients)
    value, cost = spec.build(data.codes, data.members)
    report = validity_check(data.prob_array(), data.label_array(), value, cost, spec.target, burn_in=spec.burn_in,
                            universe=spec.universe, score=spec.score, label_delay=100, seed=0,
                            recalibrate=spec.recalibrate, recalibration=spec.recalibration, recalibrate_by=spec.recalibrate_by,
                            groups={"plan": data.segments("plan"), "age_band": data.segments("age_band")})
    for shown, (name, table) in zip(tables, report.groupings.items()):
        assert list(shown.index) == [md(g) for g in table["segment"]], name  # group labels are user text
        assert list(shown["mean cost"]) == fixed(CHARTS * table["mean"], 1)  # per 100 charts, as the tiles
        assert list(shown["verdict"]) == ["PASS" if ok else "FAIL" for ok in table["passed"]]


def test_file_arrivals_travel_with_their_patients_in_every_ordering():
    at = tick_two(arrivals_session(), arrival="column")
    at = go(at, "validity")
    assert_clean(at)
    assert any("Labels arrive as the column label\\_available\\_at says" in c.value for c in at.caption)
    at = settle_jobs(at.button(key="run_validity").click().run())
    assert_clean(at)
    report = at.session_state["validity"][1]
    data = at.session_state["dataset"]
    assert list(report.groupings) == ["plan", "age_band"]
    arrival = arrivals_of(data.n_patients)
    np.testing.assert_array_equal(data.label_available_at, arrival)
    weights = at.session_state["weights"]
    spec = settings_form.to_spec(at.session_state["settings"], None if weights is None else weights["weight"].to_numpy())
    spec = spec.validate(n_codes=data.n_codes, n_patients=data.n_patients)
    value, cost = spec.build(data.codes, data.members)
    groups = {"plan": data.segments("plan"), "age_band": data.segments("age_band")}
    order = np.random.RandomState(0).permutation(data.n_patients)  # the check's first ordering (seed 0)
    res = replay(data.prob_array()[order], data.label_array()[order], value, cost, [spec.target], burn_in=spec.burn_in,
                 score=spec.score, groups={name: g[order] for name, g in groups.items()},
                 label_available_at=np.arange(data.n_patients) + (arrival - np.arange(data.n_patients))[order])
    assert report.statistic[0] == res.cost[0].mean()
