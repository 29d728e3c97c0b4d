"""Label arrivals from the file, new patients with several groupings, the Online session's grouping
choice and the recalibration fold, in the app (AppTest; issues 20 and 19)."""
from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
from app_helpers import SAMPLES, assert_clean, go, open_page
from test_groupings_pages import tick_two

from favmac import export, io as fio
from favmac.io import to_safe_csv
from favmac.methods import run_method
from favmac.ui import settings_form
from favmac.ui.jobs import segment_groups
from favmac.ui.samples import NamedBytes
from favmac.ui.text import md

GROUPINGS = SAMPLES / "groupings_calibration.csv"
ARRIVALS = "label_available_at"


def calibration_frame() -> pd.DataFrame:
    return pd.read_csv(GROUPINGS, dtype={"patient_id": str, "plan": str, "age_band": str}, keep_default_na=False)


def arrivals_of(n: int, seed: int = 0) -> np.ndarray:
    """Each patient's labels 0-399 positions after its prediction; every 97th never within the stream."""
    arrival = np.arange(n) + np.random.RandomState(seed).randint(0, 400, n)
    arrival[::97] = n + 5
    return arrival


def with_arrivals(arrival=None) -> bytes:
    frame = calibration_frame()
    frame.insert(3, ARRIVALS, arrivals_of(len(frame)) if arrival is None else arrival)
    return frame.to_csv(index=False).encode()


def upload(at, key, name, data):
    at.file_uploader(key=key).set_value((name, data, "text/csv"))
    return at.run()


def arrivals_session():
    at = upload(open_page("data"), "upload_wide", "arrivals.csv", with_arrivals())
    assert_clean(at)
    assert at.session_state["dataset"].label_available_column == ARRIVALS
    return at


def new_patients_csv(frame: pd.DataFrame, drop=(), unseen: bool = False) -> bytes:
    """Forty new patients: the first calibration rows' probabilities and groups under new ids."""
    rows = frame.head(40).copy()
    rows["patient_id"] = [f"N{i:03d}" for i in range(len(rows))]
    if unseen:
        rows.loc[rows.index[:3], "plan"] = "P9"
    keep = ["patient_id", "plan", "age_band"] + [c for c in rows.columns if c.startswith("prob_")]
    return rows[[c for c in keep if c not in drop]].to_csv(index=False).encode()


def library_result(at):
    """The library's own replay of the session's data and settings (no app code on the path)."""
    ss = at.session_state
    ds = ss["dataset"]
    spec = settings_form.to_spec(ss["settings"], ss["weights"]["weight"].to_numpy()).validate(n_codes=ds.n_codes,
                                                                                           n_patients=ds.n_patients)
    return spec, run_method(spec.replace(targets=(spec.target,)), "favmac", ds.prob_array(), ds.label_array(),
                            codes=ds.codes, patient_ids=ds.patient_ids, groups=segment_groups(ds, spec),
                            label_available_at=ds.label_available_at if spec.label_available_column else None)


def charts(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


# --------------------------------------------------------------------------- 1: label arrivals from the file


def test_data_page_says_what_it_read_from_the_arrival_column():
    at = arrivals_session()
    n = at.session_state["dataset"].n_patients
    arrival = arrivals_of(n)
    delays = (arrival - np.arange(n))[arrival < n]
    info = [i.value for i in at.info if "Label arrivals read" in i.value]
    assert len(info) == 1
    assert f"for {n:,} patients" in info[0]
    assert (f"min {delays.min():,} patients, median {np.median(delays):,.1f} patients, max {delays.max():,} patients"
            in info[0])
    assert f"{int(np.sum(arrival >= n)):,} patients' labels arrive only after the stream ends" in info[0]
    assert at.session_state["dataset"].segment_columns() == ["plan", "age_band"]  # the arrival column is no segment


def test_an_arrival_before_the_patients_own_position_is_refused_naming_file_row_and_column():
    at = open_page("data")
    before = at.session_state["dataset"].name
    n = len(calibration_frame())
    arrival = arrivals_of(n)
    arrival[10] = 9
    at = upload(at, "upload_wide", "early.csv", with_arrivals(arrival))
    assert not at.exception
    errors = [e.value for e in at.error]
    assert errors and errors[0].startswith(md("early.csv, row 12, column label_available_at: the labels arrive at position 9, "
                                              "before the patient's own position 10."))
    assert at.session_state["dataset"].name == before  # the loaded data is unchanged


def test_value_cost_offers_the_column_and_the_online_session_calibrates_on_arrived_labels():
    at = arrivals_session()
    at = go(at, "value_cost")
    assert at.radio(key="label_arrival").options == ["All at once: each patient's confirmed codes are known right after its prediction",
                                                     "After a fixed delay of d patients", "From the file's label_available_at column"]
    at = tick_two(at, arrival="column")
    assert at.session_state["settings"]["label_available_column"] == ARRIVALS
    assert at.session_state["settings"].get("label_delay") is None
    at = go(at, "online")
    at.button(key="to_end").click().run()
    assert_clean(at)
    assert any("Labels arrive as the file's label\\_available\\_at column says: a patient's codes join" in c.value for c in at.caption)
    shown = next(iter(at.session_state["results"].values()))
    _, expected = library_result(at)
    np.testing.assert_array_equal(shown.thresholds, expected.thresholds)  # each patient's threshold follows the arrivals
    tiles = {m.label: m.value for m in at.metric}
    assert tiles["Labels pending (patients)"] == f"{int(expected.labels_pending[-1]):,}"
    assert tiles["Calibration size (patients)"] == f"{int(expected.calibration_sizes[-1]):,}"
    delay = [c for c in charts(at) if c["layout"]["title"]["text"].startswith("Labels that arrive later")]
    assert len(delay) == 1
    assert "patients" in delay[0]["layout"]["xaxis"]["title"]["text"] and delay[0]["layout"]["yaxis"]["title"]["text"] == "Patients"


def test_settings_file_carries_the_arrival_choice_and_groupings_and_other_data_refuses_it():
    at = tick_two(arrivals_session(), arrival="column")
    ss = at.session_state
    raw = settings_form.settings_to_json(ss["settings"], ss["weights"], ss["dataset"].name)
    doc = json.loads(raw)["settings"]
    assert doc["label_available_column"] == ARRIVALS and doc["segment"] == ["plan", "age_band"]
    at = go(at, "export")
    at.file_uploader(key="upload_settings").set_value(("s.json", raw, "application/json")).run()
    assert_clean(at)
    ss = at.session_state
    assert ss["messages"]["settings_json"][0] == "success"  # the same data: restored
    assert ss["settings"]["label_available_column"] == ARRIVALS and ss["settings"]["segment"] == ("plan", "age_band")
    # data without the column: the arrival choice is turned off with a note (as segments are), and the file refused
    at = go(at, "data")
    at.radio(key="sample_choice").set_value("groupings")
    at.button(key="load_sample").click().run()
    ss = at.session_state
    assert ss["dataset"].label_available_at is None and ss["settings"].get("label_available_column") is None
    assert "no label-arrival column 'label_available_at'" in ss["messages"]["settings"][1]
    at = go(at, "export")
    at.file_uploader(key="upload_settings").set_value(("s2.json", raw, "application/json")).run()
    level, text = at.session_state["messages"]["settings_json"]
    assert level == "error" and text.startswith("s2.json: label_available_column names the column 'label_available_at', "
                                                "but the loaded data")
    assert "has no label-arrival column" in text and any(e.value == md(text) for e in at.error)
    assert at.session_state["settings"].get("label_available_column") is None


# --------------------------------------------------------------------------- 2: new patients with several groupings


def test_new_patient_export_with_two_groupings_equals_the_library_row_for_row(downloads):
    frame = calibration_frame()
    at = upload(arrivals_session(), "upload_new", "new.csv", new_patients_csv(frame, unseen=True))
    assert_clean(at)
    assert any("Groups read for the new patients" in c.value for c in at.caption)
    at = tick_two(at, arrival="column")
    at = go(at, "export")
    assert_clean(at)
    files = at.session_state["exports"]
    assert not files.get("new_refused")
    spec, result = library_result(at)
    ds = at.session_state["dataset"]
    new, groups = fio.load_new_patients_segmented(NamedBytes(new_patients_csv(frame, unseen=True), "new.csv"), ds.codes,
                                                  segment_column=["plan", "age_band"])
    value, cost = spec.build(ds.codes)
    expected = export.new_patient_sets(new, result, value, cost, universe=spec.universe,
                                       descriptions=list(at.session_state["weights"]["description"]), groups=groups)
    got = pd.read_csv(io.BytesIO(downloads["favmac_new_patient_sets.csv"]), dtype=str, keep_default_na=False)
    want = pd.read_csv(io.BytesIO(to_safe_csv(expected)), dtype=str, keep_default_na=False)
    pd.testing.assert_frame_equal(got, want)
    assert (got["codes"].iloc[:3] == "").all() and got["note"].iloc[0].startswith("plan 'P9' is not in the calibration data")
    assert any("plan 'P9' is not in the calibration data: its 3 new patients get no codes" in w.value for w in at.warning)
    table = [t.value for t in at.dataframe if "new patients" in t.value.columns]
    assert len(table) == 1  # the new patients' thresholds per group of each grouping
    counts = table[0].set_index("segment")["new patients"]
    assert counts["plan=P9"] == 3 and counts[[s for s in counts.index if s.startswith("age_band=")]].sum() == 40
    finals = {f"{g.name}={label}": float(t[0]) for g in result.groupings for label, t in g.final_thresholds.items()}
    assert table[0].set_index("segment")["threshold"].drop("plan=P9").to_dict() == finals
    # the Patients page gives a new patient the same threshold as the export row
    at = go(at, "patients")
    at.radio(key="patient_source").set_value("New patients").run()
    at.selectbox(key="patient_select_new").set_value("N005").run()
    assert_clean(at)
    assert any("binding grouping" in c.value and "plan=" in c.value for c in at.caption)


def test_a_grouping_column_missing_from_the_new_patients_is_refused_clearly():
    frame = calibration_frame()
    at = upload(arrivals_session(), "upload_new", "no_band.csv", new_patients_csv(frame, drop=("age_band",)))
    assert_clean(at)
    at = go(tick_two(at), "export")
    assert_clean(at)
    refused = at.session_state["exports"]["new_refused"]
    assert refused.startswith("no_band.csv, row 1, column age_band: there is no column named 'age_band'")
    assert any(w.value == md(refused) for w in at.warning)
    at = go(at, "patients")
    at.radio(key="patient_source").set_value("New patients").run()
    assert [e.value for e in at.error] == [md(refused)]


# --------------------------------------------------------------------------- 3: which grouping the curves split by


def test_online_session_splits_the_curves_by_the_chosen_grouping_and_says_which_binds():
    at = go(tick_two(arrivals_session()), "online")
    at.button(key="to_end").click().run()
    assert_clean(at)
    result = next(iter(at.session_state["results"].values()))
    assert any(c.value.startswith("Several groupings: each patient uses the smallest of its groups' thresholds (one per plan, "
                                  "age\\_band).") for c in at.caption)
    assert at.selectbox(key="split_grouping").options == ["plan", "age_band"]
    at.selectbox(key="split_grouping").set_value("age_band").run()
    assert_clean(at)
    split = [c for c in charts(at) if "per segment" in c["layout"]["title"]["text"]]
    assert len(split) == 1 and split[0]["layout"]["title"]["text"].endswith("by age_band")
    band = result.groupings[1]
    names = [t["name"] for t in split[0]["data"]]
    for label in sorted(set(band.groups)):
        mine = np.asarray(band.groups) == label
        share = np.mean(band.thresholds[0][mine] == result.thresholds[0][mine])
        assert any(n.endswith(f"(binds {100 * share:.0f} % of its patients)") for n in names), (label, names)
    recent = [t.value for t in at.dataframe if "groups (binding)" in t.value.columns]
    assert len(recent) == 1
    last = result.n_steps - 1
    binds = [g.name for g in result.groupings if g.thresholds[0][last] == result.thresholds[0][last]]
    assert recent[0]["groups (binding)"].iloc[0] == (f"plan={result.groupings[0].groups[last]}; "
                                                      f"age_band={band.groups[last]} (binds: {', '.join(binds)})")


# --------------------------------------------------------------------------- 4: the recalibration fold on the charts


def test_the_recalibration_fold_is_shaded_on_the_charts_and_said_in_the_caption():
    at = open_page("value_cost")
    at.checkbox(key="use_recalibrate").check().run()
    at.number_input(key="recalibrate").set_value(300)
    at.button(key="apply_settings").click().run()
    assert_clean(at)
    at = go(at, "online")
    at.button(key="step").click().run()
    assert_clean(at)
    assert any("Shaded on each chart: the recalibration fold, stream positions 0–299 (300 patients)" in c.value for c in at.caption)
    stream_charts = [c for c in charts(at) if c["layout"]["xaxis"]["title"]["text"].startswith("Stream position")]
    assert len(stream_charts) >= 3
    for chart in stream_charts[:3]:
        shapes = [s for s in chart["layout"]["shapes"] if s.get("type") == "rect"]
        assert len(shapes) == 1 and (shapes[0]["x0"], shapes[0]["x1"]) == (0, 300)
        assert any(a["text"] == "Recalibration fold<br>300 patients,<br>no prediction" for a in chart["layout"]["annotations"])
        assert chart["layout"]["xaxis"]["rangemode"] == "tozero"
