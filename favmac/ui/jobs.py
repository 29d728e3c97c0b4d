"""Long computations of the app in background threads, so a page never freezes and navigating
away keeps the work (no Streamlit here; ``favmac.ui.state`` keeps the jobs in the session).

A :class:`Job` runs ``fn(progress)`` in a daemon thread. ``progress(fraction)`` records how far
it got (0..1) and raises :class:`JobCancelled` once the job was cancelled (a newer run replaced
it), which ends the thread early. The session keeps the job object, not the script run, so a
page switch or a rerun does not interrupt or restart it: returning finds the same job, with its
progress or its result.

>>> job = Job("key", "Counting", lambda progress: [progress(i / 4) for i in range(4)] and 42).start()
>>> job.wait(10), job.result, job.fraction
(True, 42, 1.0)
"""
from __future__ import annotations

import threading
import time

__all__ = ["FOREGROUND_SECONDS", "Job", "JobCancelled"]

# How long a page waits for a job before drawing its progress instead: a quick job then shows
# its result at once (no flicker), a slow one never freezes the page for longer than this.
FOREGROUND_SECONDS = 0.5


class JobCancelled(Exception):
    """Raised inside a cancelled job's progress callback to end its thread."""


class Job:
    """``fn(progress)`` in a daemon thread: ``fraction``, ``result``, ``error``, ``done``.

    Parameters
    ----------
    key : str
        What the job computes (a run key); a page reuses a job only for the same key.
    label : str
        What the progress bar says ("Replaying 4,000 patients…").
    fn : callable
        ``fn(progress) -> result``; ``progress(fraction)`` may be called any number of times.
    """

    def __init__(self, key: str, label: str, fn):
        self.key = key
        self.label = label
        self.fn = fn
        self.fraction = 0.0
        self.result = None
        self.error: BaseException | None = None
        self.started: float | None = None
        self.finished: float | None = None
        self._done = threading.Event()
        self._cancelled = threading.Event()

    def start(self) -> "Job":
        """Start the thread (once); returns the job."""
        if self.started is None:
            self.started = time.monotonic()
            threading.Thread(target=self._run, name=f"favmac job: {self.label}", daemon=True).start()
        return self

    def _progress(self, fraction) -> None:
        if self._cancelled.is_set():
            raise JobCancelled(self.label)
        self.fraction = min(1.0, max(self.fraction, float(fraction)))

    def _run(self) -> None:
        try:
            self.result = self.fn(self._progress)
            self.fraction = 1.0
        except BaseException as err:  # noqa: BLE001 — handed to the page that shows the job
            self.error = err
        finally:
            self.finished = time.monotonic()
            self._done.set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def wait(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for the job; True when it has finished."""
        return self._done.wait(max(0.0, float(seconds)))

    def cancel(self) -> None:
        """Ask the job to stop at its next progress report (its result is no longer wanted)."""
        self._cancelled.set()

    def elapsed(self) -> float:
        if self.started is None:
            return 0.0
        return (self.finished or time.monotonic()) - self.started

    def __repr__(self):
        state = "done" if self.done else ("cancelled" if self.cancelled else f"{self.fraction:.0%}")
        return f"Job({self.label!r}, {state})"
