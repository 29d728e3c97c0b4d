"""Re-take the screenshots of every FavMac Studio page in a real browser.

    python scripts/screenshots.py

Runs the page-loading browser test (tests/browser/test_end_to_end.py), which starts
``streamlit run app.py`` on a free loopback port, opens each page in Debian's chromium
(/usr/bin/chromium) on the bundled sample data and saves full-page screenshots to
artifacts/screenshots/<page>.png (gitignored; the tests' ``screenshot_dir`` through
$FAVMAC_SCREENSHOT_DIR). When the test passes, the pictures the README and docs/guide.md show
(``DOC_SCREENSHOTS``) are copied to docs/screenshots/: this script is the only thing that writes
there, so a test run never changes tracked files. Extra arguments are passed to pytest (e.g. ``-k online_session``).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "artifacts" / "screenshots"
DOCS_SHOTS = ROOT / "docs" / "screenshots"
# the pictures the README (online_session) and docs/guide.md use; the other pages stay in artifacts/
DOC_SCREENSHOTS = ("home.png", "value_and_cost.png", "online_session.png", "trade_offs.png")


def main(argv: list[str]) -> int:
    cmd = [sys.executable, "-m", "pytest", "tests/browser/test_end_to_end.py", "-q",
           "-k", "test_every_page_loads_on_sample_data", *argv]
    SHOTS.mkdir(parents=True, exist_ok=True)
    started = {shot: shot.stat().st_mtime for shot in SHOTS.glob("*.png")}
    code = subprocess.call(cmd, cwd=ROOT, env={**os.environ, "FAVMAC_SCREENSHOT_DIR": str(SHOTS)})
    taken = [shot for shot in sorted(SHOTS.glob("*.png")) if started.get(shot) != shot.stat().st_mtime]
    for shot in taken:
        print(shot.relative_to(ROOT))
    if code != 0:
        print(f"pytest failed (exit {code}): docs/screenshots left as they were", file=sys.stderr)
        return code
    for shot in taken:
        if shot.name in DOC_SCREENSHOTS:
            DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(shot, DOCS_SHOTS / shot.name)
            print(f"copied to {(DOCS_SHOTS / shot.name).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
