"""Restoring settings files the library and CLI accept (favmac calibrate's, every option at once) into the app.

Third hostile-input audit of the app: settings the library and the command line accept (a
``favmac calibrate --delta 0.0005`` file, ``--adaptive-rate 50``) restored into the app, and every
option of a run combined in one settings file (tests/app/test_restore_payment_fields.py holds the second round)."""
from __future__ import annotations

import json

import pytest
from app_helpers import SAMPLES, assert_clean, go, open_page, shown


def doc(settings: dict) -> bytes:
    return json.dumps({"format": "favmac-studio-settings", "version": 1, "settings": settings}).encode()


def drift_session():
    at = open_page("data")
    at.file_uploader(key="upload_wide").set_value(("drift.csv", (SAMPLES / "drift_calibration.csv").read_bytes(), "text/csv"))
    at.run()
    assert at.session_state["dataset"].name == "drift.csv"
    return go(at, "export")


def restore(at, raw: bytes, name: str = "s.json"):
    at.file_uploader(key="upload_settings").set_value((name, raw, "application/json"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(f"Restored the settings from {name}" in shown(s.value) for s in at.success), [e.value for e in at.error]
    return at


@pytest.mark.parametrize("fields, key", [
    ({"control": "violation", "delta": 0.0005}, "delta"),
    ({"control": "violation", "delta": 0.9995}, "delta"),
    ({"segment": "segment", "adaptive_rate": 0.0001}, "adaptive_rate"),
    ({"segment": "segment", "adaptive_rate": 50.0}, "adaptive_rate"),
])
def test_a_restored_delta_or_rate_the_library_accepts_is_shown_and_kept(fields, key):
    """Before: Value & cost died drawing its number input (StreamlitValueBelowMinError: 0.0005 is less
    than the min_value 0.001; 50.0 above the rate's max 10), though RunSpec, the CLI and the settings
    file accept both; the inputs now take RunSpec's range, and Apply keeps the value."""
    at = restore(drift_session(), doc(fields))
    assert at.session_state["settings"][key] == pytest.approx(fields[key])
    at = go(at, "value_cost")
    assert_clean(at)
    assert at.number_input(key=key).value == pytest.approx(fields[key])
    at.button(key="apply_settings").click().run()
    assert_clean(at)
    assert at.session_state["settings"][key] == pytest.approx(fields[key])


def test_a_delta_of_zero_typed_in_the_wider_input_is_refused_on_apply():
    at = open_page("value_cost")
    at.radio(key="control").set_value("violation").run()
    before = dict(at.session_state["settings"])
    at.number_input(key="delta").set_value(0.0).run()
    at.button(key="apply_settings").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("delta expected a violation level between 0 and 1 (exclusive), e.g. 0.1, or None for expected-cost control; got 0.0" in shown(e.value) for e in at.error), [e.value for e in at.error]
    assert at.session_state["settings"] == before


def test_every_option_at_once_from_a_bom_crlf_settings_file_reaches_every_page():
    """Segments, a label delay, a recalibration fold, the adaptive target and a window smaller than
    the burn-in in one settings file saved by a Windows editor (BOM, CRLF): restored, every page clean."""
    fields = {"segment": "segment", "adaptive_rate": 0.01, "label_delay": 50, "recalibrate": 200, "burn_in": 500,
              "window": 300, "target": 1.1}
    raw = b"\xef\xbb\xbf" + json.dumps({"format": "favmac-studio-settings", "version": 1, "settings": fields},
                                       indent=2).encode().replace(b"\n", b"\r\n")
    at = restore(drift_session(), raw, "windows.json")
    for key, value in fields.items():
        assert at.session_state["settings"][key] == value
    for page in ("value_cost", "online", "patients", "export", "validity"):
        at = go(at, page)
        assert_clean(at)


def test_a_settings_file_from_favmac_calibrate_says_what_the_app_uses(tmp_path):
    """Before: 'Ignored unknown field(s): calibration.' for the block 'favmac calibrate' writes, and its
    three targets became the first alone without a word (the README: the app loads that file)."""
    from favmac.cli import main

    out = tmp_path / "calibrated.json"
    assert main(["calibrate", "--data", str(SAMPLES / "drift_calibration.csv"), "--target-percents", "5,10,20",
                 "--segment-column", "segment", "--scheduler", "synchronous", "--settings-out", str(out)]) == 0
    at = restore(drift_session(), out.read_bytes(), "calibrated.json")
    said = " ".join(shown(s.value) for s in at.success)
    assert "Ignored unknown" not in said
    assert "The thresholds 'favmac calibrate' stored in the file" in said
    assert "The file holds 3 targets (0.6, 1.2, 2.4); the app uses the first, 0.6" in said
    assert at.session_state["settings"]["target"] == pytest.approx(0.6)
    assert at.session_state["settings"]["segment"] == "segment"


def test_a_tables_own_csv_download_gets_formula_cells_as_text():
    """Before: every st.dataframe showed '=HYPERLINK(...)' ids and segment values verbatim, and Streamlit's
    table toolbar ("Download as CSV") wrote them so: a spreadsheet ran them, though the Export page's CSV
    neutralizes the same cells. The tables now show them as the export writes them."""
    hostile = '=HYPERLINK("http://evil","x")'
    lines = ["patient_id,plan,prob_A,label_A,prob_B,label_B"]
    quoted = hostile.replace('"', '""')
    lines += [f'"{quoted if i == 0 else f"+{i}"}","{quoted if i % 2 else "@plan"}",0.{i % 9 + 1},{i % 2},0.5,{(i + 1) % 2}'
              for i in range(60)]
    at = open_page("data")
    at.file_uploader(key="upload_wide").set_value(("evil.csv", "\n".join(lines).encode(), "text/csv"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    cells = []
    for page in ("data", "patients"):
        at = go(at, page)
        for table in at.dataframe:
            frame = table.value
            cells += [v for c in frame.columns if frame[c].dtype == object for v in frame[c] if isinstance(v, str)]
            cells += [v for v in frame.index if isinstance(v, str)]
    assert any(v == "'" + hostile for v in cells), cells[:20]
    assert not [v for v in cells if v.startswith(("=", "+", "@"))], [v for v in cells if v.startswith(("=", "+", "@"))][:5]
