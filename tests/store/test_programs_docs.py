"""docs/programs.md's example (the one the README shows) runs and prints what the page says."""
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_programs_page_example_prints_what_it_says(tmp_path):
    text = (ROOT / "docs" / "programs.md").read_text()
    match = re.search(r"```python\n(.*?)```\n\nOutput:\n\n```\n(.*?)```", text, re.S)
    code, expected = match.group(1), match.group(2)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert [line.rstrip() for line in done.stdout.splitlines()] == [line.rstrip() for line in expected.splitlines()]
