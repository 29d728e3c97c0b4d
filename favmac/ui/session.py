"""The browser session's state, typed: :class:`Session`, one attribute per documented key.

Each browser session has its own ``st.session_state``; :func:`current` wraps it. Nothing here is
module-global, so two sessions never see each other's data. The keys are plain values, not
widget keys, so they survive page switches; widget keys (``upload_wide``, ``target``, ...) hold
only what a widget shows, and the actions (:mod:`favmac.ui.actions`) copy their values into the
keys below. The derived values (:meth:`Session.spec`, :meth:`Session.c_max`,
:meth:`Session.online_key`) are computed from the keys, never stored.

A :class:`Session` wraps any mutable mapping, so the state is unit-tested without Streamlit:

>>> ss = Session({})
>>> ss.has_dataset, ss.messages
(False, {})
>>> ss.set_message("weights", "error", "bad weight"); ss.messages
{'weights': ('error', 'bad weight')}
"""
from __future__ import annotations

from collections.abc import MutableMapping

import streamlit as st

from favmac.runspec import RunSpec
from favmac.ui import playback, settings_form, weights_view

__all__ = ["Session", "current"]


class _Key:
    """One session-state key, read (None when absent) and written as a :class:`Session` attribute."""

    def __init__(self, key: str, doc: str):
        self.key = key
        self.__doc__ = doc

    def __get__(self, session, owner=None):
        if session is None:
            return self
        return session.store.get(self.key)

    def __set__(self, session, value) -> None:
        session.store[self.key] = value


class Session:
    """Typed view of one browser session's ``st.session_state`` (or of any mapping, in tests).

    Every key the app keeps is an attribute here, with its type and meaning; the key name in
    ``st.session_state`` is the attribute name, except ``playback`` (key ``"session"``) and the
    three keys of :mod:`favmac.ui.bootstrap` (leading underscore).
    """

    dataset = _Key("dataset", "favmac.io.Dataset — the labelled calibration stream being analysed.")
    dataset_key = _Key("dataset_key", "str — fingerprint of the calibration data (content hash).")
    new_patients = _Key("new_patients", "DataFrame | None — unlabelled patients' probabilities (columns = dataset codes).")
    new_patients_name = _Key("new_patients_name", "str | None — file the new patients came from.")
    weights = _Key("weights", "DataFrame (index code; columns weight, description) — risk weights in use, "
                              "including edits made in the weights table.")
    weights_source = _Key("weights_source", 'str — where the weights came from ("sample file ...", "CMS-HCC V28 CNA", ...).')
    settings = _Key("settings", "dict — the settings form's working copy (favmac.ui.settings_form); everything that "
                                "uses it goes through spec().")
    playback = _Key("session", "favmac.ui.playback.Playback — the Online session's position, playing, speed, key, last_tick.")
    messages = _Key("messages", 'dict[area, (level, text)] — last message per area ("calibration", "new_patients", '
                                '"weights", "settings", "settings_json", "recalibration"); level "error", "warning" or "success".')
    results = _Key("results", "dict[run key, ReplayResult] — this session's online replays, newest last (at most "
                              "favmac.ui.jobs.RESULTS_KEPT).")
    jobs = _Key("jobs", 'dict[name, favmac.ui.jobs.Job] — computations running in the background ("online", '
                        '"tradeoffs", "exports", "validity"), kept across page switches.')
    tradeoffs = _Key("tradeoffs", "dict | None — the last trade-off comparison: key, points, table, skipped.")
    exports = _Key("exports", "dict | None — CSV bytes and previews of the last export build, with its key.")
    validity = _Key("validity", "(run key, ValidityReport) | None — the last validity check.")
    validity_params = _Key("validity_params", "dict — the Validity page's orderings and seed (its widgets' keys are "
                                              "dropped when another page runs).")
    # widget keys whose choice the Online session keeps while it plays (favmac.ui.groupings)
    split_grouping = _Key("split_grouping", "str — the Online session's select box: the grouping its per-group cost curves split "
                                            "by, with several groupings (favmac.ui.groupings.choose_grouping).")
    label_arrival = _Key("label_arrival", 'str — Value & cost\'s "Labels arrive" radio: "all_at_once", "fixed_delay" or "column" '
                                          "(favmac.ui.arrivals_view; saved as the settings' label_delay / label_available_column).")
    target_cost_kind = _Key("_target_cost_kind", "str — the cost kind whose units Value & cost's target input holds; when the "
                                                 "Cost radio changes, the target keeps its percentage of C_max "
                                                 "(settings_form.rescaled_target).")
    target_base_rate = _Key("_target_base_rate", "float or None — the base rate whose units Value & cost's target input holds "
                                                 "under the unsupported-payment cost (None: RAF); when the base-rate input "
                                                 "changes, the target keeps its percentage of C_max (dollars = RAF x base rate).")
    workspace = _Key("workspace", "favmac.store.workspace.Workspace | None — the acting user's workspace in the store, set by "
                                  "bootstrap.page_setup every run (None: no store); favmac.ui.workspace saves the session there.")
    owner = _Key("owner", "str | None — the user id whose data this session holds (bootstrap.page_setup): when another "
                          "user signs in in the same browser session, everything of the previous user is dropped first.")
    workspace_doc = _Key("workspace_doc", "dict | None — the workspace document last saved or restored (favmac.ui.workspace).")
    uploads_read = _Key("uploads_read", "set[str] — ids of the uploaded files this session read (an action, or an uploader read on "
                                        "request holding it); favmac.ui.workspace_uploads says what became of the others.")
    uploads_reading = _Key("uploads_reading", "dict[str, (kind, [file ids])] — uploaded files an action started reading and "
                                              "has not finished (a page change cut it short): favmac.ui.workspace_uploads "
                                              "finishes them.")
    upload_late_page = _Key("upload_late_page", "str | None — the page (script hash) that showed the \"upload_late\" message "
                                                "first; it is dropped when another page runs (favmac.ui.bootstrap).")
    program_sets = _Key("program_sets", "dict | None — the sets of the Programs page's last predict batch: program, batch (file "
                                        "name), csv (bytes, neutralized), n, flagged, version.")
    program_name = _Key("program_name", "str | None — the program the Programs page has open (favmac.ui.programs).")
    summary_slot = _Key("_sidebar_summary_slot", "this run's sidebar-summary placeholder (favmac.ui.widgets).")
    page_runs = _Key("_page_runs", "int — page runs so far in this session (counted by bootstrap.page_setup).")
    rest_pending = _Key("_rest_pending", "bool — a first run left the sidebar, charts and tables to a rerun that its timer is about to start "
                                         "(bootstrap.page_setup).")

    def __init__(self, store: MutableMapping):
        self.store = store

    # ---------------------------------------------------------------- messages

    def set_message(self, area: str, level: str, text: str) -> None:
        if self.messages is None:
            self.messages = {}
        self.messages[area] = (level, text)

    def clear_message(self, area: str) -> None:
        if self.messages:
            self.messages.pop(area, None)

    def message_level(self, area: str) -> str | None:
        """The level of ``area``'s message ("error", "warning", "success"), None without one."""
        return (self.messages or {}).get(area, (None, ""))[0]

    # ---------------------------------------------------------------- derived values

    @property
    def has_dataset(self) -> bool:
        return self.dataset is not None

    def weight_array(self):
        """Risk weights of the dataset's codes, in data order (floats)."""
        return weights_view.weight_array(self.weights, self.dataset.codes)

    def spec(self) -> RunSpec:
        """The current run: the settings form's values with the weights in use."""
        return settings_form.to_spec(self.settings, self.weight_array())

    def c_max(self) -> float:
        return self.spec().c_max(self.dataset.n_codes, self.dataset.codes, self.dataset.members)

    def online_key(self) -> str:
        """The run key of the Online session's replay (data and settings)."""
        return settings_form.run_key(self.dataset_key, self.spec(), "online")

    def running_jobs(self) -> dict:
        """The background jobs by name (created empty)."""
        if self.jobs is None:
            self.jobs = {}
        return self.jobs

    def fill_defaults(self) -> None:
        """Empty messages and results, no comparison, a fresh playback (keys already set are kept)."""
        for key, empty in (("messages", {}), ("results", {}), ("tradeoffs", None)):
            self.store.setdefault(key, empty)
        if not isinstance(self.playback, playback.Playback):
            self.playback = playback.Playback()


def current() -> Session:
    """This browser session's state."""
    return Session(st.session_state)
