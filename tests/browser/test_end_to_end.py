"""FavMac Studio in a real browser: chromium driven by Playwright against ``streamlit run``.

Every test opens its own browser context, i.e. its own Streamlit session, starting on the
bundled HCC sample. Deep links (``page.goto``) start a new session; to keep the session's
data across pages the tests click the sidebar links instead.

Screenshots of every page go to ``<screenshot_dir>/<page>.png`` (conftest.py: a pytest tmp dir,
never the checkout); ``scripts/screenshots.py`` re-takes them into artifacts/screenshots and copies
the README's (Home, Online session) to ``docs/screenshots/``.
Run: ``python -m pytest tests/browser -q`` (needs /usr/bin/chromium).
"""
from __future__ import annotations

import json
import math
import re
from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from favmac.recalibration import DEFAULT_FOLD

pytestmark = pytest.mark.timeout(300)

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_CALIBRATION = REPO_ROOT / "sample_data" / "hcc_calibration.csv"
# the bundled sample's 4,000 patients minus the default recalibration fold (on from 3,000 labelled patients)
# and the default burn-in of 1,000: the patients the Online session predicts
PREDICTED = 4000 - DEFAULT_FOLD - 1000
SAMPLE_NEW_PATIENTS = REPO_ROOT / "sample_data" / "hcc_new_patients.csv"

# screenshot name -> (URL path Streamlit derives from the page file, the page's title, sidebar link label)
PAGES = {
    "home": ("", "FavMac Studio", "Home"),
    "data": ("Data", "Data", "Data"),
    "value_and_cost": ("Value_and_cost", "Value & cost", "Value & cost"),
    "online_session": ("Online_session", "Online session", "Online session"),
    "trade_offs": ("Trade-offs", "Trade-offs", "Trade-offs"),
    "patients": ("Patients", "Patients", "Patients"),
    "export": ("Export", "Export", "Export"),
    "validity": ("Validity", "Validity", "Validity"),
    "programs": ("Programs", "Programs", "Programs"),
}
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")

VIEWPORT_PARK = (1392, 150)  # a point in the main area's right margin
APP = '[data-testid="stApp"]'
IDLE = f'{APP}[data-test-connection-state="CONNECTED"][data-test-script-state="notRunning"]'


# --------------------------------------------------------------------------- helpers


def wait_idle(page, timeout: float = 90_000, settle_ms: int = 300) -> None:
    """Wait until the Streamlit script has finished its run (``data-test-script-state``).

    ``settle_ms`` gives a rerun that a click or upload just requested time to start, so we do
    not mistake the state before it for the state after it.
    """
    page.wait_for_timeout(settle_ms)
    page.wait_for_selector(IDLE, timeout=timeout)
    page.wait_for_timeout(100)
    page.wait_for_selector(IDLE, timeout=timeout)
    # Widgets such as plotly charts and file uploaders are loaded lazily and show a
    # skeleton until their code arrives.
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stSkeleton\"]')", timeout=timeout)
    # a background job (replay, comparison, export files) shows its progress until it is done
    page.wait_for_function("() => !document.body.innerText.includes('the work goes on')", timeout=timeout)
    page.wait_for_selector(IDLE, timeout=timeout)


def open_page(page, app_url: str, name: str) -> None:
    """Deep link to a page (a new Streamlit session) and wait for its run to finish."""
    path, title, _ = PAGES[name]
    page.goto(f"{app_url}/{path}")
    page.wait_for_selector(APP)
    # a page's first run in a fresh server may start the first replay, which loads (or, on a fresh clone
    # under a loaded CI, compiles) the numba kernels: the CMS-HCC payment greedy alone compiles for about a minute
    wait_idle(page, timeout=300_000, settle_ms=500)
    heading = page.locator('[data-testid="stMain"] h1').first
    heading.wait_for()
    assert heading.inner_text().strip() == title, f"{name}: expected the page title {title!r}, got {heading.inner_text()!r}"


def goto_via_sidebar(page, name: str) -> None:
    """Switch page with the sidebar menu (keeps the session, unlike a deep link)."""
    path, title, label = PAGES[name]
    link = page.locator('[data-testid="stSidebar"] [data-testid="stPageLink-NavLink"]').filter(has_text=re.compile(rf"^\W*\w*\s*{re.escape(label)}\s*$"))
    link.first.click()
    page.wait_for_url(re.compile(rf"/{re.escape(path)}$" if path else r"/$"))
    wait_idle(page)
    page.locator('[data-testid="stMain"] h1').filter(has_text=title).first.wait_for()


def main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def sidebar_text(page) -> str:
    return page.locator('[data-testid="stSidebar"]').inner_text()


def keyed(page, key: str):
    """The element container of the widget created with ``key=`` (Streamlit adds class st-key-<key>)."""
    return page.locator(f".st-key-{key}")


def choose_option(page, key: str, option: str) -> None:
    """Pick ``option`` in the select box with the given key.

    The box is first scrolled to the middle of the view, as a user would. Clicked where
    Playwright scrolls it (just inside the bottom edge), the list opens below the view, the
    page scrolls to show it, and the select box closes its list on that scroll at once.
    """
    box = keyed(page, key)
    box.evaluate("el => el.scrollIntoView({block: 'center'})")
    box.click()
    page.get_by_role("option", name=option, exact=True).click()


def click_button(page, key: str) -> None:
    keyed(page, key).locator("button").first.click()  # .first: a button with help= renders a second, hidden copy
    wait_idle(page)


def upload(page, key: str, path: Path) -> None:
    """Send a file through the real ``st.file_uploader`` widget with the given key."""
    keyed(page, key).locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(path))
    wait_idle(page, settle_ms=800)


def metric_value(page, label: str) -> str:
    metric = page.locator('[data-testid="stMetric"]').filter(has=page.locator('[data-testid="stMetricLabel"]', has_text=label))
    assert metric.count() >= 1, f"no metric labelled {label!r}; metrics: {page.locator('[data-testid=stMetricLabel]').all_inner_texts()}"
    return metric.first.locator('[data-testid="stMetricValue"]').inner_text().strip()


def patients_seen(page) -> tuple[int, int]:
    """(seen, total) from the Online session's "Patients seen" tile.

    Accepts both layouts: label "Patients seen (of 3,000)" with value "12", or value "12 / 3,000".
    """
    metric = page.locator('[data-testid="stMetric"]').filter(has=page.locator('[data-testid="stMetricLabel"]', has_text="Patients seen")).first
    label = metric.locator('[data-testid="stMetricLabel"]').inner_text()
    value = metric.locator('[data-testid="stMetricValue"]').inner_text()
    numbers = [int(x.replace(",", "")) for x in re.findall(r"\d[\d,]*", value)]
    total = numbers[1] if len(numbers) > 1 else int(re.search(r"of ([\d,]+)", label).group(1).replace(",", ""))
    return numbers[0], total


def as_number(text: str) -> float:
    """The number a metric shows, without its unit ("0.243 RAF", "$1,234", "12.5")."""
    found = re.search(r"-?\d+(\.\d+)?", text.replace(",", "").replace("\u2212", "-"))
    assert found, f"no number in {text!r}"
    return float(found.group())


def alerts(page, kind: str) -> list[str]:
    """Texts of the st.error / st.warning / st.success / st.info boxes (kind: Error, Warning, Success, Info)."""
    return page.locator(f'[data-testid="stMain"] [data-testid="stAlertContent{kind}"]').all_inner_texts()


def assert_healthy(page, where: str) -> None:
    """No Python exception box, no error box and no uncaught JavaScript error on the page."""
    exceptions = page.locator('[data-testid="stException"]')
    assert exceptions.count() == 0, f"{where}: exception shown:\n" + "\n---\n".join(exceptions.all_inner_texts())
    errors = alerts(page, "Error")
    assert not errors, f"{where}: error box shown: {errors}"
    assert not page.js_errors, f"{where}: JavaScript errors: {page.js_errors}"


def plotly_trace_counts(page, expected: int | None = None) -> list[int]:
    """Number of drawn traces in each plotly chart on the page (0 = an empty chart).

    With ``expected``, first wait (up to 30 s) until that many charts have been drawn.
    """
    charts = page.locator('[data-testid="stPlotlyChart"]')
    if expected:
        page.wait_for_function(
            "n => document.querySelectorAll('[data-testid=\"stPlotlyChart\"] .main-svg g.trace').length > 0 && "
            "[...document.querySelectorAll('[data-testid=\"stPlotlyChart\"]')].filter(c => c.querySelector('g.trace')).length >= n",
            arg=expected, timeout=30_000)
    counts = []
    for i in range(charts.count()):
        chart = charts.nth(i)
        chart.locator(".main-svg").first.wait_for()
        counts.append(chart.locator("g.trace").count())
    return counts


def clipped_metric_values(page) -> list[str]:
    """Metrics whose value is cut off with an ellipsis (the text is wider than its tile)."""
    return page.evaluate(
        """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stMetricValue"]')]
                 .filter(v => [v, ...v.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth + 1))
                 .map(v => v.closest('[data-testid="stMetric"]').innerText.replace(/\\s+/g, ' ').trim())"""
    )


def clipped_metric_labels(page) -> list[str]:
    """Metric labels cut off with "…": any part of the label narrower than its text (no tolerance:
    a label 1 px too wide already ends in an ellipsis)."""
    return page.evaluate(
        """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stMetricLabel"]')]
                 .filter(v => [v, ...v.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth))
                 .map(v => v.innerText.replace(/\\s+/g, ' ').trim())"""
    )


def full_page_screenshot(page, path: Path) -> None:
    """Screenshot of the whole page: Streamlit scrolls inside stMain, so grow the viewport to fit."""
    path.parent.mkdir(parents=True, exist_ok=True)
    page.mouse.move(VIEWPORT_PARK[0], VIEWPORT_PARK[1])  # empty right margin: no tooltip or hover toolbar in the picture
    page.wait_for_timeout(300)
    original = page.viewport_size
    height = original["height"]
    for _ in range(3):  # growing the viewport can reflow the page; repeat until it fits
        needed = page.evaluate("Math.ceil(document.querySelector('[data-testid=\"stMain\"]').scrollHeight)")
        if needed <= height:
            break
        height = min(int(needed) + 20, 12_000)
        page.set_viewport_size({"width": original["width"], "height": height})
        page.wait_for_timeout(700)  # plotly and data grids redraw on resize
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(original)


def read_download(download) -> bytes:
    path = download.path()
    assert path is not None, f"download of {download.suggested_filename} failed: {download.failure()}"
    return Path(path).read_bytes()


def formula_like_cells(frame: pd.DataFrame) -> list[str]:
    """Header or cells a spreadsheet would run as formulas (plain numbers such as -0.5 are fine)."""
    bad = [f"header {c!r}" for c in frame.columns if str(c).startswith(FORMULA_START)]
    for column in frame.columns:
        for row, cell in enumerate(frame[column].astype(str)):
            if cell.startswith(FORMULA_START) and not NUMBER.match(cell):
                bad.append(f"row {row + 2}, column {column}: {cell!r}")
    return bad


def write_wide_csv(path: Path, n: int = 300, codes=("C1", "C2", "C3", "C4", "C5"), seed: int = 7, ids=None) -> pd.DataFrame:
    """A valid wide calibration file: patient_id, prob_<code>, label_<code> (labels drawn from the probs)."""
    rng = np.random.default_rng(seed)
    probs = rng.beta(0.6, 2.0, size=(n, len(codes))).round(4)
    labels = (rng.uniform(size=probs.shape) < probs).astype(int)
    frame = pd.DataFrame({"patient_id": ids if ids is not None else [f"U{i:04d}" for i in range(n)]})
    for k, code in enumerate(codes):
        frame[f"prob_{code}"] = probs[:, k]
        frame[f"label_{code}"] = labels[:, k]
    frame.to_csv(path, index=False)
    return frame


def settings_field(text: str, label: str) -> str:
    """A value from the settings line 'Value: … · Cost: … · Burn-in: 1000 patients · …'."""
    match = re.search(rf"{re.escape(label)}: ([^·\n]+)", text)
    assert match, f"no {label!r} in the settings line: {text[:500]!r}"
    return match.group(1).strip()


# --------------------------------------------------------------------------- tests


def test_sidebar_links_match_page_urls(page, app_url):
    """The URL paths used as deep links below are the ones the app's own menu points to."""
    open_page(page, app_url, "home")
    links = page.locator('[data-testid="stSidebar"] [data-testid="stPageLink-NavLink"]')
    hrefs = [h.rstrip("/").rsplit("/", 1)[-1] if h.rstrip("/") != app_url else "" for h in links.evaluate_all("els => els.map(e => e.href)")]
    assert hrefs == [path for path, _, _ in PAGES.values()]


@pytest.mark.parametrize("name", list(PAGES))
def test_every_page_loads_on_sample_data(page, app_url, screenshot_dir, name):
    open_page(page, app_url, name)
    assert_healthy(page, name)
    assert "4,000 patients × 35 codes" in sidebar_text(page), "the bundled HCC sample should be loaded in a new session"
    if name == "online_session":  # show the stream with its charts (the README screenshot)
        click_button(page, "to_end")
        assert patients_seen(page) == (PREDICTED, PREDICTED)
        assert_healthy(page, f"{name} after End")
    if name == "trade_offs":  # computed on demand
        click_button(page, "run_tradeoffs")
        assert_healthy(page, f"{name} after Run comparison")
    expected_charts = {"data": 3, "online_session": 3, "trade_offs": 2, "patients": 1}.get(name, 0)
    try:
        counts = plotly_trace_counts(page, expected_charts)
    except Exception:  # report what is there rather than a bare timeout
        counts = plotly_trace_counts(page)
    assert len(counts) == expected_charts, f"{name}: expected {expected_charts} plotly charts, found {len(counts)}"
    assert all(c > 0 for c in counts), f"{name}: an empty plotly chart (traces per chart: {counts})"
    shot = screenshot_dir / f"{name}.png"
    full_page_screenshot(page, shot)
    assert shot.stat().st_size > 10_000
    clipped = clipped_metric_values(page)
    assert not clipped, f"{name}: metric values cut off with '…' at a {page.viewport_size['width']} px wide window: {clipped} (see {shot})"
    clipped = clipped_metric_labels(page)
    assert not clipped, f"{name}: metric labels cut off with '…' at a {page.viewport_size['width']} px wide window: {clipped} (see {shot})"


def test_upload_good_then_bad_files_keeps_loaded_data(page, app_url, tmp_path):
    good = tmp_path / "my_cohort.csv"
    frame = write_wide_csv(good)
    weights = tmp_path / "my_weights.csv"
    pd.DataFrame({"code": ["C1", "C2", "C3", "C4", "C5"], "weight": [0.5, 1.0, 1.5, 2.0, 2.5],
                  "description": ["first", "second", "third", "fourth", "fifth"]}).to_csv(weights, index=False)

    open_page(page, app_url, "data")
    upload(page, "upload_wide", good)
    page.get_by_text("300 patients × 5 codes").first.wait_for()
    success = " ".join(alerts(page, "Success"))
    assert "300 patients × 5 codes" in success, f"no success message for the upload: {success!r}"
    assert "300 patients × 5 codes" in sidebar_text(page)
    assert "4,000" not in sidebar_text(page)
    assert "my_cohort.csv: 300 patients × 5 codes" in main_text(page), "the preview should describe the uploaded file"
    assert_healthy(page, "data after a good upload")

    upload(page, "upload_weights", weights)
    page.get_by_text("Loaded weights for 5 codes from my_weights.csv").wait_for()
    assert "upload my_weights.csv" in main_text(page)

    # A probability of 1.7 in data row 5 = spreadsheet row 6 (the header is row 1).
    bad = tmp_path / "bad_probability.csv"
    broken = frame.copy()
    broken.loc[4, "prob_C2"] = 1.7
    broken.to_csv(bad, index=False)
    upload(page, "upload_wide", bad)
    page.locator('[data-testid="stAlertContentError"]').first.wait_for()
    error = " ".join(alerts(page, "Error"))
    for part in ("bad_probability.csv", "row 6", "prob_C2", "1.7", "outside [0, 1]"):
        assert part in error, f"the error should mention {part!r}: {error!r}"
    assert page.locator('[data-testid="stException"]').count() == 0
    assert "300 patients × 5 codes" in sidebar_text(page), "a bad upload must not replace the loaded data"
    assert "my_cohort.csv: 300 patients × 5 codes" in main_text(page), "the preview should still show the good file"

    semicolons = tmp_path / "semicolons.csv"
    frame.to_csv(semicolons, index=False, sep=";")
    upload(page, "upload_wide", semicolons)
    page.get_by_text("separated by semicolons").first.wait_for()
    error = " ".join(alerts(page, "Error"))
    assert "semicolons.csv" in error and "comma" in error.lower(), error
    assert "300 patients × 5 codes" in sidebar_text(page)

    # The uploaded data (not the sample) survives a page switch in the same session.
    goto_via_sidebar(page, "home")
    assert metric_value(page, "Calibration patients") == "300"
    assert metric_value(page, "Codes") == "5"
    assert page.locator('[data-testid="stException"]').count() == 0


def test_online_session_step_play_pause(page, app_url):
    open_page(page, app_url, "online_session")
    assert patients_seen(page) == (0, PREDICTED)
    assert metric_value(page, "False flags per 100 charts") == "—"

    for _ in range(3):
        click_button(page, "step")
    assert patients_seen(page) == (3, PREDICTED)
    mean_cost = as_number(metric_value(page, "False flags per 100 charts"))
    assert math.isfinite(mean_cost) and 0 <= mean_cost <= 3500, mean_cost
    assert len(plotly_trace_counts(page, 3)) == 3
    assert "Most recent patients" in main_text(page)
    assert page.locator('[data-testid="stMain"] [data-testid="stDataFrame"]').count() == 1, "the table of recent patients should show"

    keyed(page, "play").locator("button").first.click()
    keyed(page, "pause").wait_for(timeout=30_000)
    page.wait_for_function(
        """() => { const m = [...document.querySelectorAll('[data-testid="stMetric"]')]
                     .find(e => e.innerText.includes('Patients seen'));
                   return m && parseInt(m.querySelector('[data-testid="stMetricValue"]').innerText.replace(/,/g, '')) > 10; }""",
        timeout=30_000,
    )
    keyed(page, "pause").locator("button").first.click()
    keyed(page, "play").wait_for(timeout=30_000)
    wait_idle(page)
    seen, total = patients_seen(page)
    assert 10 < seen <= total == PREDICTED, (seen, total)
    page.wait_for_timeout(1500)
    assert patients_seen(page) == (seen, total), "the stream kept moving after Pause"

    mean_cost = as_number(metric_value(page, "False flags per 100 charts"))
    mean_value = as_number(metric_value(page, "Payment captured per patient"))  # the sample opens on the CMS-HCC payment value
    assert math.isfinite(mean_cost) and 0 <= mean_cost <= 3500, mean_cost
    assert math.isfinite(mean_value) and mean_value >= 0, mean_value
    assert re.fullmatch(r"\d+(\.\d+)?%", metric_value(page, "Charts over the target"))
    assert all(c > 0 for c in plotly_trace_counts(page, 3))
    assert_healthy(page, "online session after play/pause")

    click_button(page, "reset")
    assert patients_seen(page) == (0, PREDICTED)


def test_export_downloads_match_the_stream(page, app_url):
    open_page(page, app_url, "export")
    assert_healthy(page, "export")
    settings_line = page.locator('[data-testid="stMain"] [data-testid="stCaptionContainer"]').filter(has_text="Burn-in:").first.inner_text()
    burn_in = int(settings_field(settings_line, "Burn-in").split()[0].replace(",", ""))
    target = float(settings_field(settings_line, "Target c").split()[0])
    n_patients = int(re.search(r"([\d,]+) patients × \d+ codes", sidebar_text(page)).group(1).replace(",", ""))
    sample = pd.read_csv(SAMPLE_CALIBRATION, dtype={"patient_id": str})
    assert n_patients == len(sample)
    codes = [c[len("prob_"):] for c in sample.columns if c.startswith("prob_")]

    with page.expect_download() as info:
        keyed(page, "download_sets_csv").locator("button").first.click()
    download = info.value
    assert download.suggested_filename == "favmac_calibration_sets.csv"
    raw = read_download(download).decode("utf-8")
    sets = pd.read_csv(StringIO(raw), dtype=str, keep_default_na=False)

    assert len(sets) == n_patients - DEFAULT_FOLD - burn_in, f"{len(sets)} rows, expected {n_patients} - {DEFAULT_FOLD} - {burn_in}"
    for column in ("patient_id", "codes", "n_codes", "expected_value", "cost_proxy", "threshold", "method", "target", "delta",
                   "universe", "score", "descriptions"):
        assert column in sets.columns, f"missing column {column}; got {list(sets.columns)}"
    assert np.allclose(pd.to_numeric(sets["target"]), target), "every row records the run's target"
    assert list(sets["patient_id"]) == list(sample["patient_id"].iloc[DEFAULT_FOLD + burn_in:]), "rows must follow the stream after the fold and the burn-in"
    chosen = [c for cell in sets["codes"] if cell for c in cell.split(";")]
    assert chosen and set(chosen) <= set(codes), "the codes column lists codes of the data"
    for column in ("expected_value", "cost_proxy", "threshold"):
        values = pd.to_numeric(sets[column], errors="raise")
        assert not values.isna().any(), column
    assert (pd.to_numeric(sets["cost_proxy"]) >= 0).all()
    assert formula_like_cells(sets) == []
    if "realized_cost" in sets.columns:  # expected-cost control on 3,000 patients: close to or below c
        realized = pd.to_numeric(sets["realized_cost"])
        assert realized.mean() <= target + 3 * realized.std() / math.sqrt(len(realized)), (realized.mean(), target)
    assert f"{n_patients - DEFAULT_FOLD - burn_in:,} patients after the recalibration fold and the burn-in" in main_text(page)

    # New (unlabelled) patients: one row each, in file order, all with the final threshold.
    new_ids = pd.read_csv(SAMPLE_NEW_PATIENTS, dtype={"patient_id": str}, usecols=["patient_id"])["patient_id"]
    with page.expect_download() as info:
        keyed(page, "download_new_csv").locator("button").first.click()
    assert info.value.suggested_filename == "favmac_new_patient_sets.csv"
    new_sets = pd.read_csv(StringIO(read_download(info.value).decode("utf-8")), dtype=str, keep_default_na=False)
    assert list(new_sets["patient_id"]) == list(new_ids)
    assert list(new_sets.columns) == [c for c in sets.columns if not c.startswith("realized_")], \
        "both exports are the same table (new patients have no realized value or cost)"
    assert new_sets["threshold"].nunique() == 1, "new patients all use the threshold calibrated on the whole stream"
    assert formula_like_cells(new_sets) == []

    with page.expect_download() as info:
        keyed(page, "download_settings").locator("button").first.click()
    doc = json.loads(read_download(info.value))
    assert info.value.suggested_filename.endswith(".json")
    assert doc["settings"]["target"] == pytest.approx(target)
    assert doc["settings"]["burn_in"] == burn_in
    assert set(doc["weights"]) == set(codes)


def test_export_neutralizes_formula_cells_from_uploads(page, app_url, tmp_path):
    """Patient ids and descriptions that a spreadsheet would run come out as text."""
    n = 300
    ids = [f"P{i:04d}" for i in range(n)]
    nasty_ids = {150: "=1+2", 151: "+SUM(1,2)", 152: "-3+3", 153: "@cmd", 154: "=HYPERLINK(\"http://example.invalid\")"}
    for i, text in nasty_ids.items():
        ids[i] = text
    calibration = tmp_path / "formulas.csv"
    write_wide_csv(calibration, n=n, codes=("A1", "B2"), seed=3, ids=ids)
    weights = tmp_path / "formula_weights.csv"
    pd.DataFrame({"code": ["A1", "B2"], "weight": [1.0, 1.0], "description": ["=cmd|' /C calc'!A0", "@SUM(9)"]}).to_csv(weights, index=False)

    open_page(page, app_url, "data")
    upload(page, "upload_wide", calibration)
    page.get_by_text("300 patients × 2 codes").first.wait_for()
    upload(page, "upload_weights", weights)
    page.get_by_text("Loaded weights for 2 codes").wait_for()
    goto_via_sidebar(page, "export")
    assert_healthy(page, "export after formula-like upload")

    with page.expect_download() as info:
        keyed(page, "download_sets_csv").locator("button").first.click()
    raw = read_download(info.value).decode("utf-8")
    sets = pd.read_csv(StringIO(raw), dtype=str, keep_default_na=False)
    assert formula_like_cells(sets) == []
    exported_ids = set(sets["patient_id"])
    for text in nasty_ids.values():
        assert "'" + text in exported_ids, f"{text!r} should be exported as '{text}"
    descriptions = [d for cell in sets["descriptions"] for d in json.loads(cell)]  # one JSON list per row
    assert descriptions, "some sets should contain codes (the descriptions column is empty)"
    assert set(descriptions) <= {"=cmd|' /C calc'!A0", "@SUM(9)"}
    assert all(not cell.startswith(FORMULA_START) for cell in sets["descriptions"])
