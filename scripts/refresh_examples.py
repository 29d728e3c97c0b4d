"""Rewrite the printed output of the README's and the docs' examples from a fresh run.

tests/test_readme.py runs every example block and compares what it prints with what the document
shows. When a change of behaviour changes that output on purpose (a new default, a new line), this
script runs the same blocks the same way (outside the clone, this checkout's ``favmac`` on PATH) and
writes what they print back into the documents, so the next test run passes. Read the diff before
committing it: the script makes the documents agree with the code, not the code right.

    python scripts/refresh_examples.py [--doc README.md] [--doc docs/cli.md] [--dry-run]

Blocks marked ``<!-- readme-test: skip ... -->`` are left as they are. A block that fails (a
non-zero exit of a python block, a command that does not finish) is reported and left unchanged.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import test_readme as examples  # noqa: E402 (tests/ on sys.path: the test's own parsing and environment)

MARKER = "@@refresh-examples-end@@"


def run_python(block, work: Path, env: dict) -> list[str] | None:
    script = work / "example.py"
    script.write_text(block.code + "\n")
    done = subprocess.run([sys.executable, str(script)], cwd=work, env=env, capture_output=True, text=True,
                          timeout=examples.TIMEOUT)
    if done.returncode != 0:
        print(f"{block.where}: the python block failed, left unchanged:\n{done.stderr[-2000:]}", file=sys.stderr)
        return None
    return [line.rstrip() for line in done.stdout.rstrip("\n").splitlines()]


def run_console(block, work: Path, env: dict) -> list[str] | None:
    steps = examples.transcript(block.code)
    script = "exec 2>&1\n" + "".join(f"{command}\n__status=$?; printf '\\n{MARKER}\\n'; (exit $__status)\n"
                                     for command, _ in steps)
    done = subprocess.run(["bash", "-c", script], cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=examples.TIMEOUT, stdin=subprocess.DEVNULL)
    parts = done.stdout.split(MARKER)
    if len(parts) != len(steps) + 1:
        print(f"{block.where}: not every command finished, left unchanged", file=sys.stderr)
        return None
    body = []
    for (command, _), got in zip(steps, parts):
        body.extend(f"$ {line}" if i == 0 else line for i, line in enumerate(command.splitlines()))
        body.extend(line.rstrip() for line in got.strip("\n").splitlines() if line.strip())
    return body


def refresh(doc: str, dry_run: bool) -> int:
    path = REPO / doc
    lines = path.read_text(encoding="utf-8").splitlines()
    changed = 0
    # later blocks first, so the line numbers of earlier ones stay valid while the text changes
    for block in reversed(examples.readme_blocks("\n".join(lines), doc)):
        if block.skip:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            env = examples.environment(Path(tmp))
            work = Path(tmp) / "work"
            work.mkdir()
            if block.kind == "python":
                printed = run_python(block, work, env)
                if printed is None:
                    continue
                start = block.line - 1  # the python fence; its Output block is the next fence
                i = start + 1
                while lines[i].strip() != "```":
                    i += 1
                i += 1
                while not lines[i].startswith("```"):
                    i += 1
                first, last = i + 1, i + 1
                while lines[last].strip() != "```":
                    last += 1
                new = printed
            else:
                new = run_console(block, work, env)
                if new is None:
                    continue
                first = last = block.line
                while lines[last].strip() != "```":
                    last += 1
        if lines[first:last] != new:
            lines[first:last] = new
            changed += 1
            print(f"{block.where}: output refreshed")
    if changed and not dry_run:
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--doc", action="append", help="a document to refresh (default: README.md and every "
                        "document tests/test_readme.py runs)")
    parser.add_argument("--dry-run", action="store_true", help="say which blocks would change; write nothing")
    args = parser.parse_args(argv)
    docs = args.doc or ["README.md", *examples.EXAMPLE_DOCS]
    total = sum(refresh(doc, args.dry_run) for doc in docs)
    print(f"{total} block(s) {'would change' if args.dry_run else 'refreshed'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
