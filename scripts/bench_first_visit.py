"""First-visit speed of FavMac Studio in a real browser, against a one-line Streamlit app.

    python scripts/bench_first_visit.py            # prints the table; --markdown for docs/first_visit.md
    python scripts/bench_first_visit.py --fresh-clone   # the app from a fresh git clone (no numba cache yet)

1. Starts ``streamlit run`` on a one-line app (``st.write("Hello")``) on a free loopback port and
   times, in a fresh chromium context, the navigation until "Hello" is on screen
   (the baseline: what any Streamlit app costs on this machine); also opened at ``/x``, to show
   what a deep link costs any Streamlit app (a row for reference, not a goal).
2. Starts a fresh ``streamlit run app.py`` (both servers stay up) and times, each in a fresh
   context (a new session, nothing cached in the browser), Home and every page opened by deep
   link (``/Data``,
   ...) until the page's title *and its first control* are drawn ("controls"), and until the
   script run has finished ("settled": no "Running..." status widget, and no "Loading the menu…"
   note: a session's first run draws the page and leaves the sidebar to a second run a moment
   later, ``favmac.ui.bootstrap.page_setup``).

Visits go in rounds: one-line app, its deep link, Home, every page; ``--repeat`` rounds (a
fresh context each visit), and the table shows each row's median. Interleaved, the baseline and
the pages meet the same machine load (on a shared 2-core machine a run of page visits after a
run of baseline visits drifted by 0.1-0.2 s). Each server's very first view is listed
separately (the app's also pays for the imports): a single visit, which moved between 0.9 and
1.35 s from run to run. The ratio column divides by the one-line app's median over the rounds,
visits made in the same condition as the pages' (a fresh browser context on a running server). Before every visit the script waits until
both servers are idle (under 5 % of a core for 0.3 s): a page's background work (its second
run, a replay) must not land on the next visit, least of all on the baseline's.

"Drawn" is checked in the page on every animation frame (``page.wait_for_function(...,
polling="raf")``), the same test for the one-line app and the pages. (Playwright's
``locator.wait_for`` retries after 0, 20, 50, 100, 100 ms and then only every 500 ms, so
anything drawn after about 0.3 s was reported up to half a second late: earlier versions of
this script measured that polling step as much as the app.)

A third server, for reference (a row, not the goal's baseline): the same one-line app served as an
``st.App`` the way FavMac Studio's ``app.py`` is: with its start-up hook, which turns Nagle's
algorithm off on the server's socket (``favmac.ui.server``). Its row shows how much of the
pages' time against the one-line app is that server change, and how much the pages' own design. Below the table the script prints,
for each server, the median time of a small response (``/_stcore/health``) on a reused
connection: about 40 ms where Nagle's algorithm holds the body back, about 1 ms where it is off.

Nothing is asserted: a benchmark, run by hand (not by the test suite).
Needs Debian's chromium (/usr/bin/chromium, or $FAVMAC_CHROMIUM) and python playwright.
"""
from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("FAVMAC_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"]
ONE_LINE_APP = 'import streamlit as st\nst.write("Hello")\n'
# The one-line app opened at /x, for reference: Streamlit's front end first looks for the server
# under the link's path (/x/_stcore/health: 404), waits 100 ms and tries again at the root, so
# every deep link (/Data, ...) starts its session about 0.1-0.2 s later than "/" does.
DEEP_LINK_ROW = "one-line app at /x (a deep link)"
# The one-line app as an st.App on FavMac Studio's server setup (its start-up hook: TCP_NODELAY)
REFERENCE_ROW = "one-line app on our server (reference)"
REFERENCE_APP = ('import streamlit as st\n\nfrom favmac.ui.server import lifespan\n\n'
                 'app = st.App("one_line.py", lifespan=lifespan)\n')
ONE_LINE_FIRST = "one-line app (first view of a fresh server)"  # a single visit, as is HOME_FIRST
HOME_FIRST = "Home (first view of a fresh server)"
sys.path.insert(0, str(ROOT))
from favmac.ui.bootstrap import MENU_NOTE  # noqa: E402  the note of a page whose sidebar is still to come

# (label, URL path, title text, CSS of the page's first control). The control is what a user
# needs to start working; charts and tables may still be computing.
PAGES = [
    ("Home", "", "FavMac Studio", "[data-testid='stPageLink']"),
    ("Data", "Data", "Data", "[data-testid='stRadio']"),  # the sample choice (a select box before)
    ("Value & cost", "Value_and_cost", "Value & cost", "[data-testid='stButton']"),  # Apply (not a form since issue 21)
    ("Online session", "Online_session", "Online session", "[data-testid='stButton']"),
    ("Trade-offs", "Trade-offs", "Trade-offs", "[data-testid='stFormSubmitButton']"),
    ("Patients", "Patients", "Patients", "[data-testid='stRadio'], [data-testid='stTextInput'], [data-testid='stSelectbox']"),
    ("Export", "Export", "Export", "[data-testid='stDownloadButton']"),  # the settings download
    ("Validity", "Validity", "Validity", "[data-testid='stButton']"),
]


def start_server(script: str, cwd: Path, log: Path, streamlit: list[str] | None = None,
                 root: Path = ROOT) -> tuple[subprocess.Popen, str]:
    """``streamlit run script`` in ``cwd`` on a loopback port the OS picks (port 0, read back from the
    ``URL:`` line the server prints, so parallel test workers never race for a port; the checkout
    ``root`` importable); (process, URL). ``streamlit``: the command that runs ``python -m streamlit``
    (default exactly that; the tests pass ``numba_compile_lock.python_module_command("streamlit")``)."""
    cmd = [*(streamlit or [sys.executable, "-m", "streamlit"]), "run", script, "--server.headless", "true", "--server.port", "0",
           "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1",
                                                             "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited early; see {log}")
        listening = re.search(r"URL: http://127\.0\.0\.1:(\d+)", log.read_text(errors="replace"))
        if listening is None:
            time.sleep(0.2)
            continue
        base = f"http://127.0.0.1:{listening.group(1)}"
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return proc, base
        except OSError:
            pass
        time.sleep(0.2)
    stop_server(proc)
    raise RuntimeError(f"streamlit did not start; see {log}")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


# True once the page shows what a visit waits for: Playwright's rules for `locator(css,
# has_text=...).first` being visible (the first match in document order; a non-empty box and
# not visibility:hidden; text matched case-insensitively with whitespace collapsed).
DRAWN_JS = """([title, control, text]) => {
  const norm = s => (s || "").replace(/\\s+/g, " ").trim().toLowerCase();
  const visible = el => {
    if (!el) return false;
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && getComputedStyle(el).visibility !== "hidden";
  };
  const withText = (css, t) => Array.from(document.querySelectorAll(css)).find(el => norm(el.textContent).includes(norm(t)));
  if (text !== null) return visible(withText("[data-testid='stMarkdownContainer']", text));
  return visible(withText("h1", title)) && visible(document.querySelector(control));
}"""


def cpu_seconds(pids) -> float:
    """CPU seconds used so far by the processes ``pids`` (Linux /proc; 0 where unreadable)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
        except (OSError, IndexError, ValueError):
            pass
    return total


def wait_until_idle(pids, quiet: float = 0.3, busy_share: float = 0.05, timeout: float = 60.0) -> None:
    """Wait until the servers ``pids`` used less than ``busy_share`` of a core for ``quiet``
    seconds (at most ``timeout``), so that no visit starts while the previous one's background
    work (a page's second run, a replay, a warm-up, the app's start-up preparation: seconds on a fresh
    clone of a loaded machine) still holds the CPU. The warm-up's niced child process (numba's disk
    cache, ``favmac.ui.bootstrap``) is not one of ``pids``: it yields to the visits by design."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        before = cpu_seconds(pids)
        time.sleep(quiet)
        if cpu_seconds(pids) - before < busy_share * quiet:
            return


def reused_connection_ms(base: str, n: int = 21) -> float:
    """Median milliseconds of ``GET /_stcore/health`` (a 2-byte answer) on one kept-alive connection."""
    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    times = []
    try:
        for _ in range(n + 1):
            t0 = time.perf_counter()
            conn.request("GET", "/_stcore/health")
            conn.getresponse().read()
            times.append(time.perf_counter() - t0)
    finally:
        conn.close()
    return 1000 * statistics.median(times[1:])  # the first request also opens the connection


def visit(browser, url: str, title: str | None, control: str | None, text: str | None = None) -> tuple[float, float]:
    """Seconds from navigation start until the page's title and control show, and until the run settles."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        t0 = time.perf_counter()
        page.goto(url, wait_until="commit")
        page.wait_for_function(DRAWN_JS, arg=[title, control, text], polling="raf", timeout=120_000)
        drawn = time.perf_counter() - t0
        # settled: the app's status widget ("Running...") and the note of a sidebar still to come
        # (MENU_NOTE) are gone for half a second
        quiet_since = None
        while time.perf_counter() - t0 < 180:
            running = (page.locator("[data-testid='stStatusWidget']").count() > 0 or page.get_by_text(MENU_NOTE).count() > 0)
            now = time.perf_counter()
            if running:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = now
            elif now - quiet_since >= 0.5:
                break
            time.sleep(0.05)
        settled = (quiet_since or time.perf_counter()) - t0
        return drawn, max(settled, drawn)
    finally:
        context.close()


def measure(repeat: int = 3, browser=None, latency: dict | None = None, streamlit: list[str] | None = None,
            fresh_clone: bool = False) -> dict:
    """{visit: (seconds until controls drawn, seconds until the run settled)}. ``browser``: a
    Playwright chromium browser to use (e.g. the test suite's); launched here when None.
    ``latency``: a dict to fill with {server: :func:`reused_connection_ms`}. ``streamlit``: the
    servers' ``python -m streamlit`` command (:func:`start_server`). ``fresh_clone``: serve FavMac
    Studio from a ``git clone`` of this checkout's HEAD in a temporary directory, as a new user
    would: no numba cache on disk (the server's warm-up compiles every kernel) and no ``.pyc``."""
    if browser is None:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            own = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                return measure(repeat, own, latency, streamlit, fresh_clone)
            finally:
                own.close()
    runs: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as servers:
        tmp = Path(tmp)
        (tmp / "one_line.py").write_text(ONE_LINE_APP)
        (tmp / "one_line_app.py").write_text(REFERENCE_APP)
        procs = []
        bases = {}
        app_root = ROOT
        if fresh_clone:
            app_root = tmp / "clone"
            subprocess.run(["git", "clone", "--quiet", "--shared", str(ROOT), str(app_root)], check=True)
        for name, script, cwd, root in [("one-line app", "one_line.py", tmp, ROOT),
                                        (REFERENCE_ROW, "one_line_app.py", tmp, ROOT),
                                        ("FavMac Studio", "app.py", app_root, app_root)]:
            proc, bases[name] = start_server(script, cwd, tmp / f"{script}.log", streamlit, root)
            servers.callback(stop_server, proc)
            procs.append(proc)
        pids = [proc.pid for proc in procs]
        one_base, reference_base, base = bases.values()
        label, path, title, control = PAGES[0]
        # each server's very first view (the app's also pays for the imports), then rounds:
        # the one-line app, its deep link, the reference and every page, one visit each per
        # round, so a change in the machine's load meets the baseline and the pages alike
        firsts = [(ONE_LINE_FIRST, one_base + "/", None, None, "Hello"),
                  (HOME_FIRST, f"{base}/{path}", title, control, None)]
        rounds = [("one-line app", one_base + "/", None, None, "Hello"),
                  (DEEP_LINK_ROW, one_base + "/x", None, None, "Hello"),
                  (REFERENCE_ROW, reference_base + "/", None, None, "Hello")]
        rounds += [(label, f"{base}/{path}", title, control, None) for label, path, title, control in PAGES]
        for label, url, title, control, text in firsts + rounds * repeat:
            wait_until_idle(pids)
            runs.setdefault(label, []).append(visit(browser, url, title, control, text=text))
        if latency is not None:
            wait_until_idle(pids)
            latency.update({name: reused_connection_ms(url) for name, url in bases.items()})
    order = [ONE_LINE_FIRST, "one-line app", DEEP_LINK_ROW, REFERENCE_ROW, HOME_FIRST] + [label for label, *_ in PAGES]
    return {label: _median(runs[label]) for label in order}


def _median(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    return tuple(statistics.median(x) for x in zip(*pairs))


def table(figures: dict, markdown: bool = False) -> str:
    base = figures["one-line app"][0]
    rows = [(name, drawn, settled, drawn / base) for name, (drawn, settled) in figures.items()]
    if markdown:
        out = ["| visit (fresh browser context) | controls drawn (s) | run settled (s) | controls / one-line app |",
               "|---|---:|---:|---:|"]
        out += [f"| {n} | {d:.2f} | {s:.2f} | {r:.2f}x |" for n, d, s, r in rows]
    else:
        out = [f"{'visit (fresh browser context)':45s} {'controls':>9s} {'settled':>9s} {'ratio':>7s}"]
        out += [f"{n:45s} {d:8.2f}s {s:8.2f}s {r:6.2f}x" for n, d, s, r in rows]
    return "\n".join(out)


def first_view_line(figures: dict) -> str:
    """The goal's figure: Home's first view of a fresh server against the one-line app's, both ways."""
    home = figures[HOME_FIRST][0]
    return (f"Home's first view of a fresh server: {home:.2f} s = {home / figures[ONE_LINE_FIRST][0]:.2f}x the one-line "
            f"app's first view, {home / figures['one-line app'][0]:.2f}x its median view (goal: at most 1.5x)")


def latency_lines(latency: dict) -> str:
    return "\n".join(f"small response on a reused connection, {name}: {ms:.1f} ms" for name, ms in latency.items())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="visits per page (median shown); default 3")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--fresh-clone", action="store_true",
                        help="serve the app from a fresh git clone of HEAD (no numba cache, no .pyc), as a new user would")
    args = parser.parse_args(argv)
    latency: dict = {}
    figures = measure(args.repeat, latency=latency, fresh_clone=args.fresh_clone)
    print(table(figures, markdown=args.markdown))
    print()
    print(first_view_line(figures))
    print()
    print(latency_lines(latency))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
