"""Re-take the screenshots of every FavMac Studio page in a real browser.

    python scripts/screenshots.py

Runs the page-loading browser tests (tests/browser), which start ``streamlit run app.py`` on a
free loopback port, open each page in Debian's chromium (/usr/bin/chromium) on the bundled
sample data and save full-page screenshots to artifacts/screenshots/<page>.png; the Home and
Online session pictures are also copied to docs/screenshots/ for the README.
Extra arguments are passed to pytest (e.g. ``-k online_session``).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    cmd = [sys.executable, "-m", "pytest", "tests/browser/test_end_to_end.py", "-q",
           "-k", "test_every_page_loads_on_sample_data", *argv]
    code = subprocess.call(cmd, cwd=ROOT)
    shots = sorted((ROOT / "artifacts" / "screenshots").glob("*.png"))
    for shot in shots:
        print(shot.relative_to(ROOT))
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
