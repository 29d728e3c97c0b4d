"""Uploads the page never read: a page waits for them or says so, and never runs on older data unawares.

Issue 31: a user who left the Data page less than a second after choosing a file kept the previous data,
silently. Streamlit's front end sends a file in three steps: it asks the server for an upload URL
(``file_urls_request``), sends the bytes there, and only then sets the uploader's value, which reruns
the page and calls the uploader's callback (:mod:`favmac.ui.actions`). A page switch in between drops
the last step: the bytes may reach the server, but no widget ever hands them to the app.

**Workaround (labelled):** :func:`install` wraps two methods of the runtime's uploaded-file manager, per
browser session: ``get_upload_urls`` (a file the user chose: its name, when) and ``add_file`` (its bytes
arrived). :func:`check`, called by every page run (``bootstrap.page_setup``), compares that with the
files the app was handed (``Session.uploads_read``): those an action read (``workspace.handled``; the
Data page's uploaders read at once) and those an uploader read on request holds:

* a chosen file whose bytes are still on their way: the page waits up to :data:`WAIT_SECONDS`, then
  says it is still uploading and stops, and goes on by itself when the bytes arrive (a timer, every
  :data:`POLL_SECONDS`; a "Check again" button too);
* a file whose reading the page change cut short (an action had started on it,
  ``Session.uploads_reading``): the page finishes that reading, says so, and runs on the result;
* bytes that arrived but reached no widget: the page says so and stops, offering to read the file as the
  calibration data, the new patients or the risk weights, or to keep the data loaded (named);
* a chosen file that never arrived within :data:`LOST_SECONDS` (the browser dropped the upload when
  the page changed): the page says so and stops until the user continues with the data loaded (named).

Drop this when Streamlit hands a finished upload to its uploader's callback after a page switch.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import streamlit as st
from streamlit.runtime import get_instance
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
from streamlit.runtime.uploaded_file_manager import UploadedFile

from favmac.ui import actions
from favmac.ui.navigation import DATA
from favmac.ui.samples import content_key
from favmac.ui.session import Session
from favmac.ui.text import md

__all__ = ["GRACE_SECONDS", "LOST_SECONDS", "POLL_SECONDS", "WAIT_SECONDS", "Chosen", "check", "install", "unread"]

#: How long a page run waits for a chosen file's bytes before saying it is still uploading.
WAIT_SECONDS = 8.0
#: After a chosen file's bytes arrive, how long a page run leaves its uploader to set its value (the normal way).
GRACE_SECONDS = 1.0
#: How often a page waiting for a chosen file looks whether it arrived (seconds).
POLL_SECONDS = 1.0
#: A chosen file whose bytes have not arrived after this long is taken as dropped by the browser.
LOST_SECONDS = 120.0

_LOCK = threading.Lock()


@dataclass
class Chosen:
    """A file a session chose: its name, when it was chosen and when its bytes arrived (None: not yet)."""

    file_id: str
    name: str
    chosen_at: float
    arrived_at: float | None = None
    size: int = 0


@dataclass
class _Tracker:
    files: dict = field(default_factory=dict)  # session id -> {file id: Chosen}

    def chosen(self, session_id: str, infos, names) -> None:
        now = time.monotonic()
        with _LOCK:
            mine = self.files.setdefault(session_id, {})
            for info, name in zip(infos, names):
                mine[info.file_id] = Chosen(info.file_id, str(name), now)

    def arrived(self, session_id: str, record) -> None:
        with _LOCK:
            mine = self.files.setdefault(session_id, {})
            entry = mine.get(record.file_id) or Chosen(record.file_id, record.name, time.monotonic())
            entry.arrived_at, entry.size = time.monotonic(), len(record.data)
            mine[record.file_id] = entry

    def removed(self, session_id: str, file_id: str | None = None) -> None:
        with _LOCK:
            if file_id is None:
                self.files.pop(session_id, None)
            else:
                self.files.get(session_id, {}).pop(file_id, None)

    def of(self, session_id: str) -> list:
        with _LOCK:
            return list(self.files.get(session_id, {}).values())


TRACKER = _Tracker()


def install() -> bool:
    """Wrap the runtime's uploaded-file manager once (a no-op without a runtime); True when tracking."""
    try:
        manager = get_instance().uploaded_file_mgr
    except RuntimeError:
        return False
    with _LOCK:
        if getattr(manager, "_favmac_tracked", False):
            return True
        manager._favmac_tracked = True
    get_urls, add_file, remove_file = manager.get_upload_urls, manager.add_file, manager.remove_file
    remove_session = manager.remove_session_files

    def tracked_get_upload_urls(session_id, file_names):
        infos = get_urls(session_id, file_names)
        TRACKER.chosen(session_id, infos, list(file_names))
        return infos

    def tracked_add_file(session_id, file):
        add_file(session_id, file)
        TRACKER.arrived(session_id, file)

    def tracked_remove_file(session_id, file_id):
        remove_file(session_id, file_id)
        TRACKER.removed(session_id, file_id)

    def tracked_remove_session_files(session_id):
        remove_session(session_id)
        TRACKER.removed(session_id)

    manager.get_upload_urls = tracked_get_upload_urls
    manager.add_file = tracked_add_file
    manager.remove_file = tracked_remove_file
    manager.remove_session_files = tracked_remove_session_files
    return True


#: The Data page's single-file uploaders: their callback reads the file at once (an action records it,
#: ``workspace.handled``), so a file one of them holds was read only if that action says so (a callback cut
#: short by the page change holds a file no action read). Other uploaders' files are read when the user asks
#: (the pair of calibration files, the Programs page's batches): held is as good as read.
READ_AT_ONCE = ("upload_wide", "upload_new", "upload_weights")


def _widget_files() -> set:
    """Ids of the files the session's widgets hold now (uploaders' values), but those of :data:`READ_AT_ONCE`."""
    ids = set()
    state = st.session_state
    for key in [k for k in state.keys() if k not in READ_AT_ONCE]:
        try:
            value = state[key]
        except Exception:  # noqa: BLE001 — a widget value that cannot be read here is no file
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, UploadedFile):
                ids.add(item.file_id)
    return ids


def unread(ss: Session, session_id: str) -> list:
    """The files this session chose that no widget was handed (oldest first); marks the others read."""
    read = ss.uploads_read if isinstance(ss.uploads_read, set) else set()
    read |= _widget_files()
    ss.uploads_read = read
    return sorted((c for c in TRACKER.of(session_id) if c.file_id not in read), key=lambda c: c.chosen_at)


def _bytes(session_id: str, chosen: Chosen):
    records = get_instance().uploaded_file_mgr.get_files(session_id, [chosen.file_id])
    return records[0] if records else None


class _Upload:
    """An arrived file in the shape the actions read (``name``, ``getvalue``, ``file_id``)."""

    def __init__(self, record):
        self.name, self.file_id, self._data = record.name, record.file_id, record.data

    def getvalue(self) -> bytes:
        return self._data


def check(ss: Session) -> None:
    """Wait for the files this session chose, or say what became of them and stop the page (module docstring)."""
    ctx = get_script_run_ctx()
    if ctx is None or not install():
        return
    session_id = ctx.session_id
    waiting = [c for c in unread(ss, session_id) if c.arrived_at is None and time.monotonic() - c.chosen_at < LOST_SECONDS]
    if waiting:
        deadline = time.monotonic() + WAIT_SECONDS
        with st.spinner(f"Waiting for {md(waiting[0].name)} to finish uploading…"):
            while time.monotonic() < deadline and any(c.arrived_at is None for c in waiting):
                time.sleep(0.1)
        if all(c.arrived_at is not None for c in waiting):  # arrived: give the uploader's own rerun (if its page is
            time.sleep(GRACE_SECONDS)                         # still open) the time to hand the file over instead
            st.empty()  # a rerun requested meanwhile takes over here
    left = unread(ss, session_id)
    if not left:
        return
    if _finish_reading(ss, session_id, left):
        st.rerun()  # the page (its sidebar and dataset line included) runs on the file read
    chosen = left[-1]  # the last file the user chose
    if chosen.arrived_at is not None and _in_use(ss, session_id, chosen):
        _mark(ss, left[-1:])  # the same bytes as the data in use: nothing to choose
        left = left[:-1]
        if not left:
            return
        chosen = left[-1]
    current = ss.dataset.name if ss.has_dataset else "no data"
    if chosen.arrived_at is None and time.monotonic() - chosen.chosen_at < LOST_SECONDS:
        st.info(f"{md(chosen.name)} is still uploading. This page waits for it rather than run on {md(current)}.")
        _poll(session_id, chosen.file_id)
        st.button("Check again", key="upload_check_again", icon=":material/refresh:")
        _keep_button(ss, left, current)
        st.stop()
    if chosen.arrived_at is None:
        st.warning(f"The upload of {md(chosen.name)} did not finish: the page changed while it was being sent. "
                   f"This page runs on {md(current)}; upload the file again on the Data page to use it.")
        st.page_link(DATA.path, label="Go to Data", icon=DATA.icon)
        _keep_button(ss, left, current, label="Continue with the data loaded")
        st.stop()
    st.warning(f"You chose {md(chosen.name)} ({chosen.size:,} bytes), but the page changed before it was read, so it is "
               f"not in use: this page would run on {md(current)}. What is {md(chosen.name)}?")
    record = _bytes(session_id, chosen)
    cols = st.columns(4)
    done = False
    if record is not None:
        upload = _Upload(record)
        if cols[0].button("The calibration data", key="unread_calibration", icon=":material/dataset:"):
            done = actions.apply_calibration_upload(ss, upload)
            area = "calibration"
        elif cols[1].button("New patients", key="unread_new", icon=":material/group_add:", disabled=not ss.has_dataset):
            done = actions.apply_new_patients_upload(ss, upload)
            area = "new_patients"
        elif cols[2].button("Risk weights", key="unread_weights", icon=":material/balance:", disabled=not ss.has_dataset):
            done = actions.apply_weights_upload(ss, upload)
            area = "weights"
        else:
            area = None
        if area is not None:
            if done:
                _mark(ss, left)
                st.rerun()
            level, text = (ss.messages or {}).get(area, ("error", "The file could not be read."))
            st.error(md(text))
    with cols[3]:
        _keep_button(ss, left, current)
    st.stop()


_ACTIONS = {"calibration": actions.apply_calibration_upload, "new_patients": actions.apply_new_patients_upload,
            "weights": actions.apply_weights_upload}
_AREAS = {"calibration": "calibration", "new_patients": "new_patients", "weights": "weights"}


def _finish_reading(ss: Session, session_id: str, left) -> bool:
    """Finish the readings a page change cut short (``Session.uploads_reading``): the action the uploader
    started, on the same files. True when one was finished (kept or refused: its message says which)."""
    started = ss.uploads_reading if isinstance(ss.uploads_reading, dict) else {}
    for chosen in reversed(left):  # the last file chosen first
        entry = started.get(chosen.file_id)
        if entry is None or chosen.arrived_at is None:
            continue
        kind, ids = entry
        records = {r.file_id: r for r in get_instance().uploaded_file_mgr.get_files(session_id, list(ids))}
        if kind not in _ACTIONS or set(records) != set(ids):
            continue
        files = [_Upload(records[i]) for i in ids]
        names = " + ".join(f.name for f in files)
        with st.spinner(f"Reading {md(names)}, the file you chose on the Data page…"):
            done = _ACTIONS[kind](ss, *files)
        level, text = (ss.messages or {}).get(_AREAS[kind], ("success" if done else "error", ""))
        ss.upload_late_page = None  # the message stays on the page it is shown on first
        ss.set_message("upload_late", "success" if done else "error",
                       f"Read {names}, chosen on the Data page just before the page changed. {text}".strip()
                       if done else f"{names}, chosen on the Data page just before the page changed, was refused: {text}")
        return True
    return False


def _in_use(ss: Session, session_id: str, chosen: Chosen) -> bool:
    """The file's bytes are those of the calibration data in use (the same file chosen again)."""
    record = _bytes(session_id, chosen)
    return record is not None and ss.dataset_key == f"upload:{content_key(record.data, None)}"


@st.fragment(run_every=POLL_SECONDS)
def _poll(session_id: str, file_id: str) -> None:
    """While a chosen file is on its way: rerun the page as soon as its bytes arrive (its uploader, on a page
    no longer shown, will not)."""
    if any(c.file_id == file_id and c.arrived_at is not None for c in TRACKER.of(session_id)):
        st.rerun()
    st.caption("The page goes on by itself once the file has arrived.")


def _mark(ss: Session, files) -> None:
    read = ss.uploads_read if isinstance(ss.uploads_read, set) else set()
    ss.uploads_read = read | {c.file_id for c in files}


def _keep_button(ss: Session, files, current: str, label: str | None = None) -> None:
    if st.button(label or "Keep the data loaded", key="unread_keep", icon=":material/undo:", help=f"Go on with {md(current)}."):
        _mark(ss, files)
        st.rerun()
