"""Benchmark: several users at once in Chromium, each with a different cohort (issue 32).

    nice -n 10 python scripts/bench_users.py [--users 1,4,8] [--patients 100000] [--after 60] [--repo DIR]

One ``streamlit run app.py`` server (this checkout, local mode, its own port). For each number of
users, that many browsers (Chromium, one thread and one Playwright each) start together; each user

1. opens the Data page (a deep link: a new session),
2. uploads its own wide CSV (``bench_payment_app.cohort_csv`` at ``--patients`` members, a
   different seed per user: no two files alike, so no cache is shared),
3. opens the Online session page from the menu and waits for its replay,

and the wall seconds of each step are recorded, with any error. The server's resident memory
(``/proc/<pid>/status`` VmRSS, the server and its children) is sampled every 0.25 s: fresh (after
its warm-up), peak while the users work, and ``--after`` seconds after the browsers closed (the
session reaper of favmac/ui/server.py and the 30 s reconnect window of .streamlit/config.toml).
Printed: per step the median over users and its ratio to one user alone, errors, and the memory
figures. docs/deploy.md quotes a run.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
CHROMIUM = os.environ.get("FAVMAC_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"]
IDLE = '[data-testid="stApp"][data-test-connection-state="CONNECTED"][data-test-script-state="notRunning"]'
STEPS = ("open Data", "upload", "Online session")


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its descendants, in MB (10^6 bytes)."""
    total = 0
    pids = [pid]
    while pids:
        current = pids.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            total += int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) * 1024
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except (OSError, AttributeError):
            continue
        pids.extend(int(c) for c in children)
    return total / 1e6


class Sampler(threading.Thread):
    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.peak, self.running = pid, 0.0, True

    def run(self):
        while self.running:
            self.peak = max(self.peak, rss_mb(self.pid))
            time.sleep(0.25)


def start_server(log_path: Path, repo: Path = REPO):
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", "0", "--server.headless", "true",
           "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
    log = open(log_path, "wb")
    proc = subprocess.Popen(cmd, cwd=repo, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(repo)}, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = re.search(r"URL: http://127\.0\.0\.1:(\d+)", log_path.read_text(errors="replace"))
        if found:
            url = f"http://127.0.0.1:{found.group(1)}"
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    return proc, url
            except OSError:
                pass
        time.sleep(0.25)
    raise SystemExit(f"the server did not start; log {log_path}")


def wait_idle(page, timeout=600_000):
    page.wait_for_timeout(500)
    page.wait_for_selector(IDLE, timeout=timeout)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stSkeleton\"]')", timeout=timeout)
    page.wait_for_function("() => !document.body.innerText.includes('the work goes on')", timeout=timeout)
    page.wait_for_selector(IDLE, timeout=timeout)


def one_user(url: str, csv_path: Path, n_patients: int, out: dict) -> None:
    from playwright.sync_api import sync_playwright

    times = out.setdefault("times", {})
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            started = time.perf_counter()
            page.goto(f"{url}/Data")
            wait_idle(page)
            times["open Data"] = time.perf_counter() - started
            started = time.perf_counter()
            page.locator('.st-key-upload_wide [data-testid="stFileUploader"] input[type="file"]').set_input_files(str(csv_path))
            # done when the sidebar names this file's cohort (the bundled sample's 4,000 patients before)
            page.wait_for_function("n => document.body.innerText.includes(n + ' patients ×')", arg=f"{n_patients:,}",
                                   timeout=600_000)
            wait_idle(page)
            times["upload"] = time.perf_counter() - started
            started = time.perf_counter()
            page.locator('[data-testid="stSidebar"] [data-testid="stPageLink-NavLink"]', has_text="Online session").first.click()
            page.wait_for_url(re.compile(r"/Online_session$"), timeout=600_000)
            wait_idle(page)
            times["Online session"] = time.perf_counter() - started
            browser.close()
    except Exception as exc:  # noqa: BLE001 — a benchmark reports errors, it does not stop on them
        out["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", default="1,4,8")
    parser.add_argument("--patients", type=int, default=100_000)
    parser.add_argument("--after", type=float, default=60.0, help="seconds to wait after the users leave")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout whose app is served (e.g. main, to compare)")
    args = parser.parse_args()
    counts = [int(n) for n in args.users.split(",")]
    from bench_payment_app import cohort_csv

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        files = []
        for i in range(max(counts)):
            path = tmp / f"cohort_{i}.csv"
            path.write_bytes(cohort_csv(args.patients, seed=2023 + i))
            files.append(path)
        print(f"{len(files)} files of {args.patients:,} patients, {files[0].stat().st_size / 1e6:.1f} MB each")
        proc, url = start_server(tmp / "server.log", args.repo)
        try:
            print(f"server before any user: {rss_mb(proc.pid):.0f} MB")
            warm = {}
            one_user(url, files[0], args.patients, warm)  # kernels compiled or loaded from numba's cache, the warm-up thread done
            time.sleep(args.after)
            fresh = rss_mb(proc.pid)
            print(f"server fresh (after one warm-up user and {args.after:.0f} s): {fresh:.0f} MB")
            alone = None
            for n in counts:
                sampler = Sampler(proc.pid)
                sampler.start()
                results = [{} for _ in range(n)]
                threads = [threading.Thread(target=one_user, args=(url, files[i], args.patients, results[i])) for i in range(n)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                sampler.running = False
                sampler.join()
                time.sleep(args.after)
                after = rss_mb(proc.pid)
                medians = {s: statistics.median(r["times"][s] for r in results if s in r.get("times", {}))
                           for s in STEPS if any(s in r.get("times", {}) for r in results)}
                if alone is None:
                    alone = medians
                errors = [r["error"] for r in results if "error" in r]
                steps = ", ".join(f"{s} {medians[s]:.1f} s ({medians[s] / alone[s]:.1f}x)" for s in medians)
                print(f"{n} user(s): {steps}; errors {len(errors)}; peak {sampler.peak:.0f} MB; "
                      f"{args.after:.0f} s after they left {after:.0f} MB ({after / fresh:.2f}x fresh)")
                for error in errors:
                    print(f"   error: {error}")
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
