"""Page display details: number formats, remembered layout choices, per-code charts capped with a note.

Display details from issue 11: formats, remembered choices, capped per-code charts."""
from __future__ import annotations

import json

import numpy as np
import pytest
from app_helpers import assert_clean, go, open_page

from favmac.ui.formats import INPUT_FORMAT, column_format


def test_number_formats_show_every_digit_and_share_a_column():
    assert INPUT_FORMAT % 0.3397 == "0.3397" and INPUT_FORMAT % 1.05 == "1.05" and INPUT_FORMAT % 19.59 == "19.59"
    assert column_format([1.5, 1.501]) == "%.3f"
    assert column_format([2.0, float("inf"), float("nan")]) == "%.0f"


def test_target_box_shows_0_3397():
    at = open_page("value_cost")
    at.number_input(key="target").set_value(0.3397)
    at.button(key="apply_settings").click().run()
    assert_clean(at)
    box = at.number_input(key="target")
    assert box.value == pytest.approx(0.3397) and box.proto.format == INPUT_FORMAT


def test_layout_choice_is_kept_on_return():
    at = open_page("data")
    at.radio(key="upload_mode").set_value("Probabilities + labels files").run()
    go(at, "home")
    go(at, "data")
    assert at.radio(key="upload_mode").value == "Probabilities + labels files"
    assert at.file_uploader(key="upload_probs") is not None


def test_thresholds_in_one_column_share_a_format():
    at = open_page("online")
    at.button(key="to_end").click().run()
    assert_clean(at)
    spec = [d for d in at.dataframe if "threshold" in d.value.columns][0]
    config = json.loads(spec.proto.columns)
    fmt = config["threshold"]["type_config"]["format"]
    assert fmt == column_format(spec.value["threshold"], at_most=4)  # one format for the column, at most 4 decimals


def wide_many_codes(n_codes: int, n_patients: int = 40) -> bytes:
    rng = np.random.RandomState(1)
    probs = rng.random_sample((n_patients, n_codes)).round(3)
    labels = (rng.random_sample((n_patients, n_codes)) < probs).astype(int)
    header = "patient_id," + ",".join(f"prob_K{k:04d},label_K{k:04d}" for k in range(n_codes))
    rows = [f"P{i:03d}," + ",".join(f"{probs[i, k]},{labels[i, k]}" for k in range(n_codes)) for i in range(n_patients)]
    return ("\n".join([header, *rows]) + "\n").encode()


@pytest.mark.slow
def test_five_thousand_codes_charts_are_capped_with_a_note():
    at = open_page("data")
    at.file_uploader(key="upload_wide").set_value(("many.csv", wide_many_codes(5000), "text/csv"))
    at.run()
    assert_clean(at)
    assert at.session_state["dataset"].n_codes == 5000
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert all(len(trace["y"]) <= 40 for trace in chart["data"])
    assert any("40 most prevalent of 5,000 codes" in c.value for c in at.caption)
    go(at, "patients")
    assert_clean(at)
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert sum(len(trace["x"]) for trace in chart["data"]) <= 120  # at most 3 x 40 bars, whatever the cut
    assert any("of 5,000 codes" in c.value for c in at.caption)


def test_reliability_markers_are_not_clipped():
    from favmac.ui import data_views, figures

    bins = data_views.reliability_bins(np.array([[0.99, 0.01]]), np.array([[1, 0]]))
    fig = figures.reliability_figure(bins)
    assert fig.data[1].cliponaxis is False
    assert fig.layout.yaxis.range[1] > 1 and fig.layout.yaxis.range[0] < 0


def test_target_above_c_max_in_the_form_is_refused_with_the_range():
    at = open_page("value_cost")
    before = dict(at.session_state["settings"])
    at.number_input(key="target").set_value(1e300)
    at.button(key="apply_settings").click().run()
    assert not at.exception
    assert any("C_max = 35" in e.value.replace("\\", "") and "1e+300" in e.value for e in at.error), [e.value for e in at.error]
    assert at.session_state["settings"] == before
