"""What happens to settings and messages when new data arrives (issue 11, defects 3 and 4)."""
from __future__ import annotations

from app_helpers import SAMPLES, assert_clean, go, open_page


def upload(at, key, name, data):
    at.file_uploader(key=key).set_value((name, data, "text/csv"))
    return at.run()


def first_rows(path, n):
    lines = path.read_bytes().decode().splitlines()
    return ("\n".join(lines[: n + 1]) + "\n").encode()


def test_burn_in_is_rederived_for_a_shorter_stream():
    at = open_page("data")
    assert at.session_state["settings"]["burn_in"] == 1000  # the 4,000-patient sample
    upload(at, "upload_wide", "first_1200.csv", first_rows(SAMPLES / "hcc_calibration.csv", 1200))
    assert not at.exception
    assert at.session_state["dataset"].n_patients == 1200
    assert at.session_state["settings"]["burn_in"] == 400
    assert any("Burn-in set to 400" in w.value and "800 patients are predicted" in w.value for w in at.warning), [w.value for w in at.warning]
    go(at, "online")
    assert_clean(at)
    result = next(iter(at.session_state["results"].values()))
    assert result.n_steps == 800


def test_unit_weights_and_set_aside_warnings_go_once_both_files_are_loaded():
    at = open_page("data")
    upload(at, "upload_wide", "digits.csv", (SAMPLES / "digits_calibration.csv").read_bytes())
    warnings = " ".join(w.value for w in at.warning)
    assert "weighs 1" in warnings and "set aside" in warnings
    upload(at, "upload_new", "digits_new.csv", (SAMPLES / "digits_new_patients.csv").read_bytes())
    assert "set aside" not in " ".join(w.value for w in at.warning)
    upload(at, "upload_weights", "digits_weights.csv", (SAMPLES / "digits_weights.csv").read_bytes())
    assert_clean(at)
    warnings = " ".join(w.value for w in at.warning)
    assert "weighs 1" not in warnings and "set aside" not in warnings, warnings


def test_sidebar_summary_is_current_right_after_apply():
    at = open_page("value_cost")
    at.number_input(key="target").set_value(2.1)
    at.button(key="apply_settings").click().run()
    assert_clean(at)
    sidebar = " ".join(c.value for c in at.sidebar.caption)
    assert "Target c: 2.1 " in sidebar, sidebar
