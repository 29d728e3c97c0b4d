"""How the pages draw amounts: whole dollars, even decimals, plain headers, tile units (column configs).

What the pages draw for amounts (issue 21's polish): the Trade-offs summary in whole dollars
($2,284,064, not $2,284,064.00), tables whose columns read the same on every row (4,000 patients;
4.70 under 7.17), the Online session's recent patients in plain headers and units, and the
Validity tiles saying their unit. The drawn format is the table's column config (``proto.columns``)."""
from __future__ import annotations

import json

from app_helpers import assert_clean, go, open_page, settle_jobs


def formats(frame_element) -> dict:
    """column -> (label, format) of what the grid draws."""
    config = json.loads(frame_element.proto.columns or "{}")
    out = {}
    for key, column in config.items():
        name = key.removeprefix("col:") if key.startswith("col:") else key
        out[name] = (column.get("label"), (column.get("type_config") or {}).get("format"))
    return out


def dollars_session():
    """A session on the HCC sample with the payment in dollars (a base rate of $11,000 applied)."""
    at = open_page("value_cost")
    at.text_input(key="pay_base_rate").input("11000")
    at.button(key="apply_settings").click().run()
    return at


def decimals(printf: str) -> int:
    """The decimals of a "%,.Nf" format."""
    return int(printf.removeprefix("%,.").removesuffix("f"))


def drawn_in_dollars(page: str, column: str):
    """(the page, the table holding ``column``, its drawn formats) on ``page`` of a session in dollars."""
    at = settle_jobs(go(dollars_session(), page))
    assert_clean(at)
    table = table_with(at, column)
    return at, table, formats(table)


def table_with(at, column: str):
    return next(d for d in at.dataframe if column in d.value.columns)


def test_the_payment_summary_is_drawn_in_whole_dollars():
    at = dollars_session()
    at = go(at, "tradeoffs")
    at.button(key="run_tradeoffs").click().run()
    at = settle_jobs(at)
    assert_clean(at)
    drawn = formats(table_with(at, "Method"))
    assert drawn["Payment captured per 1,000 members ($)"][1] == "$%,.0f"
    assert drawn["Payment captured per patient ($)"][1] == "$%,.0f"
    assert all(not (f or "").startswith("$") for c, (_, f) in drawn.items() if not c.endswith("($)"))
    captions = " ".join(c.value for c in at.caption)
    assert "Payment captured per patient and per 1,000 members" in captions  # the caption names the table's columns


def test_online_session_recent_patients_read_plainly():
    at = settle_jobs(open_page("online"))
    at.button(key="to_end").click().run()
    assert_clean(at)
    drawn = formats(table_with(at, "selected_codes"))
    assert drawn["selected_codes"][0] == "selected codes" and drawn["true_codes"][0] == "true codes"
    assert drawn["value"][0] == "value (RAF)"  # the short unit: the table fits the page
    assert drawn["cost"][1] == "%.0f"  # false flags are counts: 1, not 1.000
    tile = next(m for m in at.metric if m.label.startswith("Value per false flag"))
    assert tile.value.endswith(" RAF")


def test_data_tables_draw_counts_with_separators_and_even_decimals():
    at = open_page("data")
    assert_clean(at)
    members = formats(table_with(at, "Patients"))
    assert members["Patients"][1] == "%,d"  # 2,290 members of a cell
    calibration = next(d for d in at.dataframe if "Calibration error (points)" in d.value.columns)
    drawn = formats(calibration)
    assert drawn["Patients"][1] == "%,d" and drawn["Calibration error (points)"][1] == "%,.2f"


def test_validity_tiles_say_their_unit(few_orderings):
    at = open_page("validity")
    at.button(key="run_validity").click().run()
    at = settle_jobs(at)
    assert_clean(at)
    labels = [m.label for m in at.metric]
    assert "Mean over orderings (false flags per 100 charts)" in labels and "Promised at most (false flags per 100 charts)" in labels
    assert at.number_input(key="validity_orderings").value == few_orderings


def test_patients_greedy_table_in_dollars_keeps_the_score_digits():
    at, greedy, drawn = drawn_in_dollars("patients", "score")
    assert drawn["prob"][0] == "probability" and drawn["value_weight"][1] == "$%,.0f" and drawn["vhat"][1] == "$%,.0f"
    smallest = greedy.value["score"][greedy.value["score"] > 0].min()
    assert round(smallest, decimals(drawn["score"][1])) > 0  # about 1e-4 in dollars: not drawn as 0.000
    values = [m.value for m in at.metric]
    assert any(v.startswith("$") for v in values)


def test_export_previews_in_dollars_draw_dollars_and_the_threshold_digits():
    _, preview, drawn = drawn_in_dollars("export", "expected_value")
    assert drawn["expected_value"][1] == "$%,.0f" and drawn["realized_value"][1] == "$%,.0f"
    thresholds = preview.value["threshold"].astype(float)
    assert round(float(thresholds.min()), decimals(drawn["threshold"][1])) > 0 and decimals(drawn["threshold"][1]) >= 5  # T is about 0.001 in dollars


def test_the_summary_headers_fit_the_page_with_the_full_label_one_hover_away():
    at = settle_jobs(open_page("tradeoffs"))
    at.button(key="run_tradeoffs").click().run()
    at = settle_jobs(at)
    assert_clean(at)
    table = table_with(at, "Method")
    config = json.loads(table.proto.columns)
    captured = config["Value captured (% of the true codes' value)"]
    assert captured["label"] == "Value captured (%)" and "true codes' value" in captured["help"]
    assert "Value (% of the largest possible, the paper's scale)" in table.value.columns  # the data keeps its names
