"""The README's and the docs' examples are run and their output compared, so they cannot go stale.

Every example block of README.md and of the documents in ``EXAMPLE_DOCS`` (docs/cli.md,
docs/library.md, ...) in one of these two forms is found and run; a new block in the same form is
picked up without changing this file.

1. **Python example**: a fenced ``python`` block, then a line ``Output:``, then a fenced block
   holding exactly what the code prints::

       ```python
       print(1 + 1)
       ```

       Output:

       ```
       2
       ```

   The code runs in a fresh process (``sys.executable``) in an empty temporary directory outside
   the clone, so it can rely on nothing but the installed package (the quick start's
   ``pip install -e``); the sample files are ``favmac.samples.samples_dir()``.

2. **Command transcript**: a fenced block with no language (or ``console``) whose first line
   starts with ``$ ``. Each ``$ `` line, with its continuation lines (a line ending in ``\\``),
   is one command; the lines after it, up to the next ``$ `` line, are what it prints (stdout
   and stderr together). Blank lines between commands are ignored. All commands of a block
   run in one bash session (``$?`` is the previous command's status) in an empty temporary
   directory outside the clone, as a newcomer's shell would: the sample files are
   ``"$(favmac samples path)"``, not ``sample_data/``; ``favmac`` on ``PATH`` is this checkout's
   command.

After every block the clone holds exactly the files it held before (tracked or not; caches such
as ``__pycache__`` aside): no example writes into the repository.

Comparison is exact, line by line, after removing trailing spaces, with one normalisation:
timing lines, ``(<seconds> s wall, <kilobytes> KB peak)``, match any numbers.

In both forms the code runs this checkout (``PYTHONPATH`` is the repository), whichever copy
of favmac is installed; ``test_the_quick_start_install_provides_the_command_and_extras``
checks what the quick start installs. A block that cannot run here (it needs a 1,000,000-patient
data set or a running Dask cluster) is preceded by an HTML comment
``<!-- readme-test: skip <reason> -->``; the reason is required, and skipped blocks are reported.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
#: The documents whose examples run besides the README's (each block's name says its file).
EXAMPLE_DOCS = ("docs/cli.md", "docs/library.md", "docs/payment.md", "docs/distributed.md")
#: Folders of the clone that caches and test runs write to: not counted as files an example left.
NOT_EXAMPLE_OUTPUT = {".git", "__pycache__", ".pytest_cache", "artifacts", ".ipynb_checkpoints"}
SKIP = re.compile(r"<!--\s*readme-test:\s*skip\b(.*?)-->", re.S)
TIMING = re.compile(r"^\(\d+(\.\d+)? s wall, \d+ KB peak\)$")
FENCE = re.compile(r"^```(\w*)\s*$")
TIMEOUT = 120  # seconds per block


@dataclass
class Block:
    kind: str  # "python" or "console"
    line: int  # 1-based line of the opening fence
    code: str
    output: str = ""
    skip: str | None = None  # the reason, when marked skip
    doc: str = "README.md"  # the file, relative to the clone

    @property
    def name(self) -> str:
        prefix = "" if self.doc == "README.md" else f"{Path(self.doc).stem}-"
        return f"{prefix}{self.kind}@L{self.line}"

    @property
    def where(self) -> str:
        return f"{self.doc} line {self.line}"


def fenced_blocks(text: str) -> list[tuple[str, int, str, str]]:
    """(language, opening line, body, text before the block since the previous block) of each fence."""
    lines = text.splitlines()
    out, i, last_end = [], 0, 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        out.append((m.group(1), i + 1, "\n".join(lines[i + 1:j]), "\n".join(lines[last_end:i])))
        last_end = i = j + 1
    return out


def readme_blocks(text: str, doc: str = "README.md") -> list[Block]:
    """The example blocks of ``text`` (the contents of ``doc``: README.md or a document), in order."""
    fences = fenced_blocks(text)
    blocks = []
    for n, (lang, line, body, before) in enumerate(fences):
        marks = SKIP.findall(before)
        skip = marks[-1].strip() if marks else None
        if lang == "python" and n + 1 < len(fences) and fences[n + 1][3].strip() == "Output:":
            blocks.append(Block("python", line, body, fences[n + 1][2], skip, doc))
        elif lang in ("", "console") and body.startswith("$ "):
            blocks.append(Block("console", line, body, "", skip, doc))
    return blocks


def transcript(body: str) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) of each ``$ `` command of a console block."""
    steps: list[tuple[str, list[str]]] = []
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            if lines[i].strip():
                steps[-1][1].append(lines[i])
            i += 1
            continue
        command = [lines[i][2:]]
        while command[-1].endswith("\\") and i + 1 < len(lines):
            i += 1
            command.append(lines[i])
        steps.append(("\n".join(command), []))
        i += 1
    return steps


def normalise(lines) -> list[str]:
    out = []
    for line in lines:
        line = line.rstrip()
        if not line:
            continue
        out.append("(timing line)" if TIMING.match(line.strip()) else line)
    return out


def environment(tmp_path: Path) -> dict:
    """This checkout on PYTHONPATH, and a ``favmac`` command for it first on PATH."""
    bin_dir = tmp_path / "_bin"
    bin_dir.mkdir()
    shim = bin_dir / "favmac"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m favmac "$@"\n')
    shim.chmod(0o755)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    env["COLUMNS"] = "200"
    env.pop("CI", None)
    return env


def clone_files() -> set[str]:
    """Every file of the clone (tracked, untracked or ignored), caches and test artifacts aside."""
    found = set()
    for folder, subfolders, files in os.walk(REPO):
        subfolders[:] = [name for name in subfolders if name not in NOT_EXAMPLE_OUTPUT]
        found.update(os.path.relpath(os.path.join(folder, name), REPO) for name in files)
    return found


README_BLOCKS = readme_blocks(README.read_text(encoding="utf-8"))
BLOCKS = README_BLOCKS + [block for doc in EXAMPLE_DOCS
                          for block in readme_blocks((REPO / doc).read_text(encoding="utf-8"), doc)]


def test_the_readme_has_examples_of_both_kinds_and_every_skip_says_why():
    kinds = {b.kind for b in README_BLOCKS if not b.skip}
    assert kinds == {"python", "console"}, [b.name for b in README_BLOCKS]
    for block in BLOCKS:
        assert block.skip is None or len(block.skip) > 10, f"{block.where}: a skipped example block must say why"
    ran = [b for b in README_BLOCKS if not b.skip]
    assert len(ran) >= 3, [b.name for b in README_BLOCKS]


def test_examples_read_the_sample_files_from_anywhere():
    """No example reads ``sample_data/`` relative to the working directory: from another directory
    that path does not exist; ``"$(favmac samples path)"`` and ``samples_dir()`` work from any."""
    for block in BLOCKS:
        for line in block.code.splitlines():
            assert not re.search(r"(^|[\s'\"=(])sample_data/", line), \
                f"{block.where}: {line.strip()!r} reads sample_data/ from the working directory"


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_readme_example(block: Block, tmp_path: Path):
    if block.skip:
        pytest.skip(f"{block.where}: {block.skip}")
    before = clone_files()
    try:
        _run_example(block, tmp_path)
    finally:
        left = sorted(clone_files() - before)
    assert not left, (f"{block.where}: the example left files in the clone: {left} (or another process wrote them "
                      "while it ran: rerun it alone)")


def _run_example(block: Block, tmp_path: Path) -> None:
    env = environment(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    assert REPO not in work.resolve().parents, "examples must run outside the clone"
    if block.kind == "python":
        script = work / "example.py"
        script.write_text(block.code + "\n")
        done = subprocess.run([sys.executable, str(script)], cwd=work, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT)
        assert done.returncode == 0, f"{block.where}: the python block failed:\n{done.stderr[-3000:]}"
        assert normalise(done.stdout.splitlines()) == normalise(block.output.splitlines()), \
            f"{block.where}: the python block's output differs from its Output: block:\n{done.stdout}"
        return
    steps = transcript(block.code)
    marker = "@@readme-test-end@@"
    script = "exec 2>&1\n" + "".join(f"{command}\n__status=$?; printf '\\n{marker}\\n'; (exit $__status)\n"
                                     for command, _ in steps)
    done = subprocess.run(["bash", "-c", script], cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    parts = done.stdout.split(marker)
    assert len(parts) == len(steps) + 1, f"{block.where}: not every command finished:\n{done.stdout[-3000:]}"
    for (command, expected), got in zip(steps, parts):
        assert normalise(got.splitlines()) == normalise(expected), f"{block.where}: `$ {command}` printed:\n{got}"


def test_the_quick_start_install_provides_the_command_and_extras():
    """pyproject.toml: the favmac command, and extras holding every package requirements.txt lists."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["favmac"] == "favmac.cli:main"
    extras = project["optional-dependencies"]
    declared = {_name(r): r for r in project["dependencies"] + [r for group in extras.values() for r in group]}
    listed = [line.strip() for line in (REPO / "requirements.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    for requirement in listed:
        assert declared.get(_name(requirement)) == requirement, f"requirements.txt {requirement!r} not in pyproject.toml"
    readme = README.read_text(encoding="utf-8")
    assert 'pip install -e ".[dev]"' in readme
    assert set(re.findall(r"favmac-studio\[([\w,]+)\]", " ".join(extras["dev"]))[0].split(",")) == set(extras) - {"dev"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!\[ ;]", requirement, maxsplit=1)[0].lower()
