"""Items noticed at earlier stops, in the app (AppTest): a one-patient group named by its file row and
value, tables whose toolbar download would skip the formula neutralizing, chart units."""
from __future__ import annotations

from app_helpers import assert_clean, go, open_page, shown
from test_arrivals_groupings_pages import calibration_frame, upload


def tick_two_groupings(at):
    at = go(at, "value_cost")
    at.checkbox(key="use_segments").check().run()
    at.selectbox(key="segment_column").set_value("plan").run()
    at.multiselect(key="more_segment_columns").set_value(["age_band"])
    return at.button(key="apply_settings").click().run()


def one_patient_group_csv(name="one.csv"):
    frame = calibration_frame()
    frame.loc[7, "age_band"] = "90+"  # the eighth patient: file row 9 (the header is row 1)
    return name, frame.to_csv(index=False).encode()


def test_a_one_patient_group_is_refused_on_apply_naming_its_row_and_value():
    at = upload(open_page("data"), "upload_wide", *one_patient_group_csv())
    at = tick_two_groupings(at)
    assert not at.exception, [e.message for e in at.exception]  # was a traceback on every page
    errors = [shown(e.value) for e in at.error]
    assert len(errors) == 1 and "group '90+' has a single patient (the patient at row 9)" in errors[0], errors
    assert "0-based" not in errors[0] and "one.csv" in errors[0]
    assert at.session_state["settings"].get("segment") is None  # nothing changed
    for page in ("online", "export", "patients"):
        assert_clean(go(at, page))


def test_loading_such_data_turns_two_groupings_off_and_says_where():
    at = upload(open_page("data"), "upload_wide", "fine.csv", calibration_frame().to_csv(index=False).encode())
    at = tick_two_groupings(at)
    assert_clean(at)
    assert at.session_state["settings"]["segment"] == ("plan", "age_band")
    at = upload(go(at, "data"), "upload_wide", *one_patient_group_csv("later.csv"))
    assert not at.exception
    notes = [shown(w.value) for w in at.warning if "Per-segment control turned off" in shown(w.value)]
    assert len(notes) == 1 and "later.csv" in notes[0] and "group '90+' has a single patient (the patient at row 9)" in notes[0]
    assert at.session_state["settings"].get("segment") is None
    assert_clean(go(at, "online"))
