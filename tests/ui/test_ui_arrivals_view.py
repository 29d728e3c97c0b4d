"""favmac.ui.arrivals_view and the new-patient groupings of favmac.ui.groupings, without Streamlit running."""
from __future__ import annotations

import doctest
import io

import numpy as np
import pandas as pd
import pytest

from test_ui_groupings import GROUPINGS, SETTINGS, run

from favmac import io as fio
from favmac.export import grouping_thresholds
from favmac.runspec import SettingsError, check_against_data
from favmac.ui import arrivals_view, groupings, parsing, settings_form
from favmac.ui.samples import NamedBytes
from favmac.ui.text import plain_html

def frame() -> pd.DataFrame:
    return pd.read_csv(GROUPINGS, dtype={"patient_id": str, "plan": str, "age_band": str}, keep_default_na=False)


def arrivals(n: int) -> np.ndarray:
    out = np.arange(n) + np.random.RandomState(3).randint(0, 250, n)
    out[::50] = n + 1
    return out


@pytest.fixture(scope="module")
def wide_bytes() -> bytes:
    f = frame()
    f.insert(1, "label_available_at", arrivals(len(f)))
    return f.to_csv(index=False).encode()


@pytest.fixture(scope="module")
def data(wide_bytes):
    return parsing.parse_calibration(wide_bytes, "arrivals.csv")


def test_docstring_examples():
    failures, _ = doctest.testmod(arrivals_view, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert failures == 0


def test_the_app_reads_the_arrival_column_from_a_wide_file_and_from_a_probabilities_file(data):
    n = data.n_patients
    np.testing.assert_array_equal(data.label_available_at, arrivals(n))
    assert data.label_available_column == "label_available_at" and data.segment_columns() == ["plan", "age_band"]
    f = frame()
    probs = f[["patient_id"] + [c for c in f.columns if c.startswith("prob_")]].rename(columns=lambda c: c.removeprefix("prob_"))
    probs.insert(1, "label_available_at", arrivals(n))
    labels = f[["patient_id"] + [c for c in f.columns if c.startswith("label_")]].rename(columns=lambda c: c.removeprefix("label_"))
    pair = parsing.parse_calibration(probs.to_csv(index=False).encode(), "p.csv", labels.to_csv(index=False).encode(), "l.csv")
    np.testing.assert_array_equal(pair.label_available_at, arrivals(n))
    plain = parsing.parse_calibration(GROUPINGS.read_bytes(), "g.csv")
    assert plain.label_available_at is None and plain.label_available_column is None


def test_column_names_reads_the_header_only_of_csv_and_parquet():
    f = frame().head(5)
    assert fio.column_names(NamedBytes(f.to_csv(index=False).encode(), "a.csv")) == list(f.columns)
    buffer = io.BytesIO()
    f.to_parquet(buffer)
    assert fio.column_names(NamedBytes(buffer.getvalue(), "a.parquet")) == list(f.columns)
    with pytest.raises(fio.DataError, match="separated by semicolons"):
        fio.column_names(NamedBytes(b"patient_id;A\n1;0.5\n", "s.csv"))


def test_arrival_summary_equals_a_direct_count(data):
    s = arrivals_view.arrival_summary(data)
    n = data.n_patients
    arrival = arrivals(n)
    delays = (arrival - np.arange(n))[arrival < n]
    assert (s["patients"], s["delay_min"], s["delay_max"], s["never"]) == (n, delays.min(), delays.max(), int(np.sum(arrival >= n)))
    assert s["delay_median"] == float(np.median(delays)) and s["immediate"] == int(np.sum(arrival == np.arange(n)))
    text = arrivals_view.arrival_text(s)
    assert f"max {delays.max():,} patients" in text and "label\\_available\\_at" in text  # the column name is escaped
    assert arrivals_view.arrival_summary(fio.load_calibration(GROUPINGS, keep_columns=True)) is None


def test_the_arrival_choice_round_trips_through_the_spec_and_other_data_refuses_it(data):
    # a fold cannot be used with an arrival column (issue 33: on by default for 3,000 patients, so off here; the form's
    # settings_form.fold_for turns a default fold off when the column is chosen)
    settings = {**settings_form.default_settings(data.n_patients, data.n_codes), "label_available_column": "label_available_at",
                "segment": ["plan", "age_band"], "recalibrate": None}
    cleaned = settings_form.validate_settings(settings, data.n_codes, data.n_patients, dataset=data)
    assert cleaned["label_available_column"] == "label_available_at" and cleaned["segment"] == ("plan", "age_band")
    assert arrivals_view.arrival_choice(cleaned) == "column"
    restored, _, _ = settings_form.settings_from_json(settings_form.to_spec(cleaned, np.ones(data.n_codes)).to_json(), cleaned,
                                                      data.codes, data.n_patients, dataset=data)
    assert restored["label_available_column"] == "label_available_at" and restored["segment"] == ("plan", "age_band")
    other = fio.load_calibration(GROUPINGS, keep_columns=True)
    with pytest.raises(SettingsError, match="label_available_column names the column 'label_available_at', but the loaded data "
                                            r"\(groupings_calibration\) has no label-arrival column"):
        check_against_data(settings_form.to_spec(cleaned, np.ones(data.n_codes)), other)
    with pytest.raises(SettingsError, match="cannot be used with recalibrate"):
        settings_form.validate_settings({**cleaned, "segment": None, "recalibrate": 200}, data.n_codes, data.n_patients)


def test_mark_fold_and_its_caption():
    import plotly.graph_objects as go

    fig = arrivals_view.mark_fold(go.Figure(go.Scatter(x=[500, 600], y=[1, 2])), {"recalibrate": 400})
    (rect,) = fig.layout.shapes
    assert (rect.x0, rect.x1, rect.type) == (0, 400, "rect") and fig.layout.xaxis.rangemode == "tozero"
    assert fig.layout.annotations[0].text == "Recalibration fold<br>400 patients,<br>no prediction"
    assert "stream positions 0–399 (400 patients)" in arrivals_view.fold_caption({"recalibrate": 400})
    assert arrivals_view.fold_caption({}) is None


# --------------------------------------------------------------------------- new patients with several groupings


def new_frame(columns=("plan", "age_band"), unseen=False):
    f = frame().head(30).copy()
    f["patient_id"] = [f"N{i}" for i in range(len(f))]
    if unseen:
        f.loc[f.index[:2], "age_band"] = "90+"
    keep = ["patient_id", *columns] + [c for c in f.columns if c.startswith("prob_")]
    return f[keep].to_csv(index=False).encode()


def test_new_patients_carry_every_calibration_grouping_column_and_the_settings_pick_theirs(data):
    new = parsing.parse_new_patients(new_frame(), "new.csv", tuple(data.codes), tuple(data.segment_columns()))
    assert list(new.attrs["groupings"]) == ["plan", "age_band"]
    one = groupings.new_patients_for(new, "age_band")
    assert one.attrs["groups"] == new.attrs["groupings"]["age_band"] and list(one.attrs["groupings"]) == ["age_band"]
    assert groupings.new_patients_for(new, None) is new
    only_plan = parsing.parse_new_patients(new_frame(("plan",)), "plan.csv", tuple(data.codes), tuple(data.segment_columns()))
    assert list(only_plan.attrs["groupings"]) == ["plan"]
    with pytest.raises(fio.DataError, match=r"plan.csv, row 1, column age_band: there is no column named 'age_band'"):
        groupings.new_patients_for(only_plan, ("plan", "age_band"))


def test_new_patient_thresholds_and_unseen_groups_follow_the_library(data):
    result = run(data, groups={"plan": data.segments("plan"), "age_band": data.segments("age_band")})
    new = groupings.new_patients_for(parsing.parse_new_patients(new_frame(unseen=True), "new.csv", tuple(data.codes),
                                                                tuple(data.segment_columns())), ("plan", "age_band"))
    assert groupings.unseen_groups(result, new) == ["age_band '90+' is not in the calibration data: its 2 new patients get no "
                                                    "codes (0 calibration patients, so no threshold can be trusted)."]
    expected, segments, notes = grouping_thresholds(result, new.attrs["groupings"], len(new))
    for i in (0, 5, 17):
        threshold, where = groupings.new_patient_threshold(result, new, new.index[i], data.n_patients, ("plan", "age_band"))
        assert threshold == expected[i] and where.endswith(f"({segments[i]}): {notes[i]}")
    table = groupings.new_patient_thresholds(result, new, {**SETTINGS, "segment": ("plan", "age_band")}, "cost").set_index("segment")
    assert table.loc["age_band=90+", "threshold"] == -np.inf and table.loc["age_band=90+", "new patients"] == 2
    assert table["new patients"].sum() == 2 * len(new)


def test_the_split_by_a_chosen_grouping_and_who_binds(data):
    result = run(data, groups={"plan": data.segments("plan"), "age_band": data.segments("age_band")})
    position = result.n_steps
    fig = groupings.grouping_cost_figure(result, position, SETTINGS, 1)
    band = result.groupings[1]
    assert fig.layout.title.text.endswith("by age_band")
    for trace in fig.data:
        if trace.name.startswith(("Target: ", "δ = ")):  # the dashed line's legend entry
            continue
        label = next(g for g in set(band.groups) if trace.name.startswith(plain_html(g) + " (binds"))
        mine = np.asarray(band.groups) == label
        assert trace.name.endswith(f"(binds {100 * np.mean(band.thresholds[0][mine] == result.thresholds[0][mine]):.0f} % of its patients)")
    text = groupings.binding_groupings(result, [0, 7])
    for step, line in zip([0, 7], text):
        used = result.thresholds[0][step]
        binds = [g.name for g in result.groupings if g.thresholds[0][step] == used]
        assert binds and line.endswith(f"(binds: {', '.join(binds)})")


def test_arrivals_reach_the_replay_and_the_patient_text(data):
    result = run(data, label_available_at=data.label_available_at)
    where = groupings.stream_patient_where(result, 10, result.burn_in + 10)
    assert f"labels had arrived for {int(result.calibration_sizes[10]):,} patients" in where
    assert f"{int(result.labels_pending[10]):,} predicted patients' labels were still pending" in where


def test_the_fold_is_marked_on_the_per_segment_and_delay_charts_too(data):
    result = run(data, groups=data.segments("plan"), label_delay=100)
    fig = groupings.grouping_cost_figure(result, result.n_steps, {**SETTINGS, "recalibrate": 250}, 0)
    assert [(s.x0, s.x1) for s in fig.layout.shapes if s.type == "rect"] == [(0, 250)]
    plain = groupings.grouping_cost_figure(result, result.n_steps, SETTINGS, 0)
    assert not [s for s in plain.layout.shapes if s.type == "rect"]
