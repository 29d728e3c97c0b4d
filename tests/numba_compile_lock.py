"""One compile per numba kernel across the test processes (pytest-xdist workers, the warm-up).

The kernels are ``@njit(cache=True)``: numba compiles a kernel for a signature once and saves the
machine code next to the source (``__pycache__``), where every later process loads it in well under a
second. On a fresh clone the cache is empty, and pytest-xdist's workers, which start on neighbouring
tests, reach the same kernels at about the same moment: each compiled its own copy (the CMS-HCC
payment greedy alone takes about a minute of CPU), four copies of the same work on two cores.

:func:`install` wraps numba's ``Dispatcher.compile`` (per kernel and signature: load from the disk
cache, else compile and save) in an exclusive file lock per kernel, so one process compiles a
kernel while the others wait for it and then load the saved code. It changes nothing in what is
compiled or run: the lock only orders the processes. Kernels without a disk cache are not locked.

* The file lock is taken inside numba's own (per-process, re-entrant) compiler lock, so the
  threads of one process never wait on each other's file locks, and a kernel that calls another
  holds its lock while it waits for the callee's: locks nest along the call graph, which has no
  cycles (a self-recursive kernel re-enters the lock its process already holds).
* A lock not obtained within :data:`WAIT_SECONDS` (a process stuck elsewhere) is skipped: that
  process then compiles by itself, as without the lock.
"""
from __future__ import annotations

import fcntl
import os
import re
import time
from pathlib import Path

ENV = "FAVMAC_TEST_NUMBA_LOCKS"  # the lock directory, shared by the controller, its workers and the warm-up
WAIT_SECONDS = 900.0
_held: set[str] = set()  # kernels whose lock this process holds (re-entry by a recursive compile)


def install(lock_dir: str | os.PathLike | None = None) -> bool:
    """Lock numba compiles on files in ``lock_dir`` (default ``$FAVMAC_TEST_NUMBA_LOCKS``); False
    (nothing installed) when neither is given. Idempotent."""
    lock_dir = lock_dir or os.environ.get(ENV)
    if not lock_dir:
        return False
    from numba.core.caching import NullCache
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.dispatcher import Dispatcher

    if getattr(Dispatcher.compile, "_favmac_locked", False):
        return True
    directory = Path(lock_dir)
    directory.mkdir(parents=True, exist_ok=True)
    original = Dispatcher.compile

    def compile(self, sig):
        if isinstance(self._cache, NullCache):
            return original(self, sig)
        with global_compiler_lock:
            name = re.sub(r"[^\w.]", "_", f"{self.py_func.__module__}.{self.py_func.__qualname__}")
            if name in _held:
                return original(self, sig)
            fd = _acquire(directory / f"{name}.lock")
            _held.add(name)
            try:
                return original(self, sig)
            finally:
                _held.discard(name)
                if fd is not None:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    os.close(fd)

    compile._favmac_locked = True
    Dispatcher.compile = compile
    return True


def _acquire(path: Path) -> int | None:
    """An exclusive lock on ``path`` (its open descriptor), or None after :data:`WAIT_SECONDS`."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.05)


# --------------------------------------------------------------------------- the run's warm-up

DONE = "warm-up.done"  # written in the lock directory when the warm-up process has ended
WARM_UP = (
    "import sys; sys.path[:0] = [{tests!r}, {repo!r}]\n"
    "import numba_compile_lock\n"
    "numba_compile_lock.install()\n"
    "try:\n"
    "    from favmac.ui.bootstrap import warm_up\n"
    "    warm_up(0, settings=False)\n"  # the core kernels: the browser servers wait for this process
    "finally:\n"
    "    open(numba_compile_lock.done_path(), 'w').close()\n"
)


class WarmUp:
    """The background warm-up of one test run: its lock directory and process (:func:`start_warm_up`)."""

    def __init__(self, lock_dir: Path, proc):
        self.lock_dir, self.proc = lock_dir, proc

    def finish(self) -> None:
        """Stop the process if it still runs (it ends on its own long before the tests do; not after
        an interrupted run), then remove the locks."""
        import shutil

        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait()
        shutil.rmtree(self.lock_dir, ignore_errors=True)
        os.environ.pop(ENV, None)


def start_warm_up(repo: Path) -> WarmUp:
    """A new lock directory in ``$FAVMAC_TEST_NUMBA_LOCKS`` (inherited by the processes started after
    this: pytest-xdist's workers, the browser tests' servers) and, in the background, a process that
    runs ``favmac.ui.bootstrap.warm_up`` under the lock. Its output goes to the controller's stderr."""
    import subprocess
    import sys
    import tempfile

    lock_dir = Path(tempfile.mkdtemp(prefix="favmac-numba-locks-"))
    os.environ[ENV] = str(lock_dir)
    install(lock_dir)
    script = WARM_UP.format(tests=str(Path(__file__).resolve().parent), repo=str(repo))
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=repo, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    return WarmUp(lock_dir, proc)


def done_path() -> Path | None:
    lock_dir = os.environ.get(ENV)
    return Path(lock_dir) / DONE if lock_dir else None


def wait_for_warm_up(timeout: float = WAIT_SECONDS) -> None:
    """Return once this run's warm-up process has ended (at once outside an xdist run, and after
    ``timeout`` seconds at most: a process that starts early then compiles what it needs itself)."""
    path = done_path()
    deadline = time.monotonic() + timeout
    while path is not None and not path.exists() and time.monotonic() < deadline:
        time.sleep(0.25)


def python_module_command(module: str) -> list[str]:
    """``python -m <module>`` as a command, under :func:`install` when this is an xdist run (the
    browser tests' ``streamlit`` server: its replays share the workers' compiles)."""
    import sys

    if not os.environ.get(ENV):
        return [sys.executable, "-m", module]
    here = str(Path(__file__).resolve().parent)
    return [sys.executable, "-c",
            f"import runpy, sys; sys.path.insert(0, {here!r}); import numba_compile_lock; "
            f"sys.path.remove({here!r}); numba_compile_lock.install(); "
            f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"]
