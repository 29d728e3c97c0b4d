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


# --------------------------------------------------------------------------- st.dataframe's own toolbar download

FORMULA_ID = '=HYPERLINK("http://x.test/")'
FORMULA_CODE = "@SUM(1+1)"
HOSTILE = (
    f"patient_id,prob_{FORMULA_CODE},label_{FORMULA_CODE},prob_B,label_B\n".encode()
    + b"".join(f"{FORMULA_ID if i == 50 else f'P{i:03d}'},{(i % 10) / 10},{i % 2},{(i % 7) / 7:.4f},{(i // 2) % 2}\n".encode()
               for i in range(80))
)


def every_cell(frame) -> list:
    """Every text a table's "Download as CSV" or a copy would carry: cells, index labels, headers."""
    cells = [v for column in frame.columns for v in frame[column].tolist()]
    return cells + list(frame.index) + list(frame.index.names) + list(frame.columns)


def test_tables_show_formula_cells_as_the_exports_write_them():
    """st.dataframe's toolbar offers "Download as CSV" of what it shows (Streamlit 1.67 has no per-table
    switch; client.disableDataExport is app-wide): widgets.table shows formula-like cells neutralized."""
    at = open_page("data")
    at.file_uploader(key="upload_wide").set_value(("hostile.csv", HOSTILE, "text/csv"))
    at.run()
    assert_clean(at)
    seen = []
    for page in ("data", "online", "patients", "export"):
        go(at, page)
        if page == "patients":
            at.selectbox(key="patient_select").set_value(FORMULA_ID).run()
        assert not at.exception, (page, [e.message for e in at.exception])
        for element in at.dataframe:
            cells = [v for v in every_cell(element.value) if isinstance(v, str)]  # numbers stay numbers (-inf too)
            assert not any(c.startswith(("=", "+", "-", "@")) for c in cells), (page, [c for c in cells if c.startswith(("=", "+", "-", "@"))])
            seen += cells
    assert "'" + FORMULA_ID in seen and "'" + FORMULA_CODE in seen  # shown, as the CSV exports write them


def test_the_weights_editor_shows_codes_neutralized_and_an_untouched_table_is_no_edit():
    at = open_page("data")
    at.file_uploader(key="upload_wide").set_value(("hostile.csv", HOSTILE, "text/csv"))
    at.run()
    editor = next(e for e in at.dataframe if "weights_editor" in e.proto.id)
    assert "'" + FORMULA_CODE in list(editor.value.index)
    at.run()  # the editor hands back what it shows: neutralized labels must not read as an edit
    assert_clean(at)
    assert FORMULA_CODE in at.session_state["weights"].index
    assert not at.session_state["weights_source"].endswith("(edited)"), at.session_state["weights_source"]
