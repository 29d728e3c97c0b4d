"""favmac.ui.groupings without Streamlit running: tables per grouping, the delay series."""
from __future__ import annotations

import doctest
from pathlib import Path

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, replay
from favmac.io import load_calibration
from favmac.segments import grouping_tables
from favmac.ui import groupings, jobs, settings_form
from favmac.ui.text import md_frame

GROUPINGS = Path(__file__).resolve().parents[2] / "sample_data" / "groupings_calibration.csv"
SETTINGS = {"control": "expected", "target": 1.0, "delta": 0.1, "cost_kind": "fp", "value_kind": "tp", "score": "cost"}


@pytest.fixture(scope="module")
def data():
    return load_calibration(GROUPINGS, segment_column=["plan", "age_band"])


def run(data, **kw):
    k = data.n_codes
    return replay(data.prob_array(), data.label_array(), AdditiveValue(np.ones(k)), AdditiveCost(np.ones(k)), [1.0],
                  burn_in=500, score="cost", **kw)


def test_docstring_examples():
    failures, _ = doctest.testmod(groupings, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert failures == 0


def test_one_table_per_grouping_with_the_library_numbers(data):
    result = run(data, groups=data.groupings)
    shown, lib = groupings.grouping_display(result, SETTINGS), grouping_tables(result)
    assert list(shown) == list(lib) and len(shown) == 2
    for name in lib:
        table, expected = shown[name], lib[name]
        assert table["segment"].tolist() == expected["segment"].tolist()
        assert table["predicted"].tolist() == expected["predicted"].tolist()
        assert table["binds"].tolist() == [f"{100 * b:.0f} % of its patients" for b in expected["binds"]]
        assert table["Expected false flags allowed"].str.len().gt(0).all() and table["T (math)"].str.len().gt(0).all()
    # every predicted patient's threshold comes from some grouping: per patient, at least one binds
    per_patient = np.zeros(result.n_steps, dtype=bool)
    for g in result.groupings:
        per_patient |= np.asarray(g.thresholds[0]) == np.asarray(result.thresholds[0])
    assert per_patient.all()


def test_escaped_group_labels(data):
    result = run(data, groups=data.groupings)
    table = groupings.grouping_display(result, SETTINGS)["age_band"]
    assert "\\<50" in md_frame(table.set_index("segment")).index  # "<50" is user text: escaped before Markdown


def test_grouping_thresholds_only_with_several(data):
    one = run(data, groups=data.groupings["plan"])
    assert groupings.grouping_thresholds(one, SETTINGS, "cost") is None
    two = run(data, groups=data.groupings)
    tables = groupings.grouping_thresholds(two, SETTINGS, "cost")
    assert list(tables) == ["plan", "age_band"]
    for g in two.groupings:
        assert tables[g.name]["threshold"].tolist() == [float(v[0]) for v in g.final_thresholds.values()]
        assert tables[g.name]["calibration patients"].sum() == data.n_patients


def test_delay_series_follows_the_result(data):
    assert groupings.delay_series(run(data)) is None
    result = run(data, label_delay=200)
    series = groupings.delay_series(result)
    assert series["position"].iloc[0] == 500 and len(series) == result.n_steps
    assert series["labels_pending"].tolist() == result.labels_pending.tolist()
    # calibration patients + pending = every earlier patient
    assert (series["calibration_size"] + series["labels_pending"] == series["position"]).all()
    fig = groupings.delay_figure(result, 10)
    assert [len(t.x) for t in fig.data] == [10, 10]


def test_segment_groups_and_settings_round_trip(data):
    spec = settings_form.to_spec({**settings_form.default_settings(data.n_patients, data.n_codes),
                                  "value_kind": "tp", "segment": ["plan", "age_band"], "label_delay": 5}, None)
    assert spec.segment == ("plan", "age_band") and spec.label_delay == 5
    groups = jobs.segment_groups(data, spec)
    assert list(groups) == ["plan", "age_band"] and groups["plan"].tolist() == data.groupings["plan"].tolist()
    assert jobs.segment_groups(data, spec.replace(segment="plan")).tolist() == data.groupings["plan"].tolist()
    assert jobs.segment_groups(data, spec.replace(segment=None)) is None
    back = settings_form.from_spec(spec.validate(n_codes=data.n_codes, n_patients=data.n_patients), {})
    assert back["segment"] == ("plan", "age_band") and back["label_delay"] == 5
    rows = dict(settings_form.settings_summary({**back, "grid": {}}, 8.0))
    assert rows["Segments"] == "per plan and per age_band" and rows["Label delay"] == "5 patients"


def test_threshold_chart_follows_the_chosen_grouping(data):
    """Several groupings: the threshold chart draws the chosen grouping's own group thresholds
    (steady per group), not each patient's smallest, which jumps between groupings."""
    from favmac.ui import figures, playback
    from favmac.ui.text import plain_html

    result = run(data, groups=data.groupings)
    series = playback.running_series(result)
    shown = series.iloc[playback.downsample_index(len(series), max_points=300)]
    for g, grouping in enumerate(result.groupings):
        rows = groupings.threshold_series(shown, result, g)
        steps = shown["step"].to_numpy()
        assert np.array_equal(rows["threshold"].to_numpy(), np.asarray(grouping.thresholds[0], dtype=float)[steps])
        assert list(rows["segment"]) == list(np.asarray(grouping.groups, dtype=object).astype(str)[steps])
        # each group's line is its own threshold, and the patient's used one is never above it
        assert np.all(np.asarray(result.thresholds[0])[steps] <= rows["threshold"].to_numpy())
        fig = groupings.threshold_title(figures.threshold_figure(rows, "false flags", "cost"), result, g)
        assert grouping.name in fig.layout.title.text
        assert {t.name for t in fig.data if t.x is not None and len(t.x)} == {plain_html(v) for v in rows["segment"]}  # escaped
    one = run(data, groups=next(iter(data.groupings.values())))
    assert groupings.threshold_series(shown, one, 0) is shown
