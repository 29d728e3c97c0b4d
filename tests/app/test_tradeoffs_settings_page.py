"""The Trade-offs page under the session's own settings (issue 33): with two groupings, a label delay and the
default recalibration fold, its rows equal the library's runs under those settings (AppTest)."""
from __future__ import annotations

import numpy as np
import pytest
from app_helpers import assert_clean, go
from test_groupings_pages import groupings_session, tick_two

from favmac.baselines.settings import run_baseline
from favmac.metrics import summarize
from favmac.methods import run_method
from favmac.ui import settings_form
from favmac.ui.jobs import segment_groups
from favmac.ui.tradeoffs import DROPPED_COLUMN


def test_the_tables_rows_are_the_sessions_runs_with_groupings_delay_and_fold():
    at = tick_two(groupings_session(), delay=150)
    at = go(at, "tradeoffs")
    at.number_input(key="grid_low").set_value(20.0)
    at.number_input(key="grid_high").set_value(60.0)
    at.number_input(key="grid_n").set_value(2)
    at.pills(key="grid_methods").set_value(["FavMac (price)", "CRC"])
    at.button(key="run_tradeoffs").click().run()
    assert_clean(at)
    ss = at.session_state
    out = ss["tradeoffs"]
    ds = ss["dataset"]
    spec = settings_form.to_spec(ss["settings"], None if ss["weights"] is None else ss["weights"]["weight"].to_numpy())
    spec = spec.validate(n_codes=ds.n_codes, n_patients=ds.n_patients)
    assert spec.recalibrate == 1000 and spec.label_delay == 150 and spec.segment == ("plan", "age_band")
    targets = tuple(float(t) for t in out["targets"])
    groups = segment_groups(ds, spec)
    favmac = run_method(spec.replace(targets=targets), "FavMac (price)", ds.prob_array(), ds.label_array(), codes=ds.codes,
                        patient_ids=ds.patient_ids, groups=groups)
    value, cost = spec.build(ds.codes, ds.members)
    crc = run_baseline("crc", ds.prob_array(), ds.label_array(), value, cost, list(targets), burn_in=spec.burn_in, groups=groups,
                       label_delay=150, recalibrate=1000, recalibration=spec.recalibration)
    points = out["points"]
    for method, result in (("FavMac (price)", favmac), ("CRC", crc)):
        mine = points[points["method"] == method]
        expected = summarize(result)
        np.testing.assert_allclose(mine["mean_cost"], expected["mean_cost"])
        np.testing.assert_allclose(mine["mean_value"], expected["mean_value"])
        assert (mine["n"] == ds.n_patients - 1000 - spec.burn_in).all()  # the fold's patients are in no row
    table = at.dataframe[0].value
    assert table.loc[list(table["Method"]).index("CRC"), "False flags per 100 charts"] == pytest.approx(
        100 * summarize(crc)["mean_cost"].mean())
    assert DROPPED_COLUMN not in table.columns  # every row honours every setting here
    captions = " ".join(c.value for c in at.caption)
    assert "segments plan, age\\_band" in captions and "labels 150 positions late" in captions
    assert "recalibration on the first 1,000 patients" in captions
    assert "every method uses all earlier patients" not in captions


def test_a_baseline_row_names_the_setting_it_drops():
    from favmac.runspec import RunSpec
    from favmac.ui.tradeoffs import run_tradeoffs

    rng = np.random.default_rng(3)
    q = rng.beta(0.5, 3.0, size=(800, 4))
    probs, labels = q, (rng.random(q.shape) < q).astype(int)
    spec = RunSpec(value_kind="tp", cost_kind="fp", burn_in=200, adaptive_rate=0.05).validate(4, 800)
    out = run_tradeoffs(probs, labels, list("ABCD"), [str(i) for i in range(800)], spec, [0.3, 0.9], ["FavMac (price)", "CRC"])
    table = out["table"].set_index("Method")
    assert table.loc["CRC", DROPPED_COLUMN] == "the adaptive target"
    assert table.loc["FavMac (price)", DROPPED_COLUMN] == "none"
    assert any("adaptive target" in s and "FavMac's rows only" in s for s in out["settings"])
