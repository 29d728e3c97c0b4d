"""The first page view's background warm-up loads (or compiles) the additive and the CMS-HCC payment
kernels, and what a first Trade-offs run loads, without raising: a failure there would be silent in
the app (the thread swallows it). It starts only once the first page has been served, fills numba's
disk cache in a niced child process first, and FAVMAC_WARM_UP=off turns it off."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from favmac import target_grid
from favmac.ui import bootstrap, tradeoffs as tradeoffs_view


def test_warm_up_runs_the_additive_and_payment_replays(monkeypatch):
    seen = []
    real = bootstrap.run_method

    def spy(spec, method, probs, labels, **kwargs):
        seen.append((spec.value_kind, method))
        return real(spec, method, probs, labels, **kwargs)

    compared = []
    real_tradeoffs = tradeoffs_view.run_tradeoffs

    def spy_tradeoffs(probs, labels, codes, patient_ids, spec, targets, methods, **kwargs):
        out = real_tradeoffs(probs, labels, codes, patient_ids, spec, targets, methods, **kwargs)
        compared.append((spec.control, set(out["table"]["Method"]), spec.label_delay, spec.value_kind))
        return out

    online = []
    real_online = bootstrap.jobs.replay_online

    def spy_online(dataset, spec, progress=None):
        online.append((dataset.n_patients, spec))
        return real_online(dataset, spec, progress)

    monkeypatch.setattr(bootstrap, "run_method", spy)
    monkeypatch.setattr(tradeoffs_view, "run_tradeoffs", spy_tradeoffs)
    monkeypatch.setattr(bootstrap.jobs, "replay_online", spy_online)
    bootstrap.warm_up(0)
    # the Online session's other settings, on a few of the sample's patients: segments (one grouping, two) under
    # both controls, the adaptive target, a formula value, the unsupported payment
    settings = [spec for n, spec in online if n == bootstrap.SETTINGS_PATIENTS]
    assert {(spec.control, spec.segment) for spec in settings if spec.segment} == {
        (control, segment) for control in ("expected", "violation") for segment in ("plan", ("plan", "county"))}
    assert any(spec.adaptive_rate for spec in settings) and any(spec.value_kind == "formula" for spec in settings)
    assert any(spec.cost_kind == "cms_unsupported" for spec in settings)
    assert bootstrap.SETTINGS_PATIENTS <= 100
    assert ("cms_payment", "FavMac (price)") in seen and seen.count(("tp", "FavMac (ratio)")) == 2
    # the Trade-offs page's default methods under both controls: scipy.stats and every baseline's kernels loaded
    assert [control for control, *_ in compared[:2]] == ["expected", "violation"]
    assert set().union(*(methods for _, methods, *_ in compared[:2])) == set(target_grid.DEFAULT_METHODS)
    # then ClassWise under a label delay (its per-patient kernel) and a baseline under the payment value
    assert [(c, "ClassWise" in m, d, v) for c, m, d, v in compared[2:3]] == [("expected", True, 3, "weighted_tp")]
    # a baseline under the payment value (the toy, then the sample's first patients with their member context)
    assert [(c, "InnerSet" in m, d, v) for c, m, d, v in compared[3:5]] == [("expected", True, None, "cms_payment")] * 2
    # and under many-decimal cost weights (their sums beyond int64)
    assert [(c, "InnerSet" in m, d, v) for c, m, d, v in compared[5:]] == [("expected", True, None, "weighted_tp")]
    assert "scipy.stats" in sys.modules


#: The modules whose numba kernels the warm-up loads: the replay's, the payment value's and its unsupported
#: payment's, the formula value's, the near-ties' and the baselines'.
KERNEL_MODULES = ("favmac.replay_kernels", "favmac.payment_kernels", "favmac.cost_kernels", "favmac.formula_kernels",
                  "favmac.near_ties", "favmac.baselines.kernels", "favmac.fenwick")

#: Kernels called from Python that the warm-up leaves to the first run that needs them, and why.
NOT_WARMED = {
    "favmac.baselines.kernels.split_keys": "CRC's keys split across threads from 2**20 probabilities on",
}


def entry_kernels(module) -> set[str]:
    """The numba kernels of ``module`` that plain Python code of the package calls (each compiled for the
    types of its callers); the kernels only other kernels call are compiled inside those.

    A name counts where it is the kernel's: in the module itself, imported from it (``from ..near_ties import
    resolve``), or read from the module (``kernels.crc_kernel``); not a method of the same name elsewhere
    (``self._join`` of favmac.store.state)."""
    import ast
    import importlib

    from numba.core.registry import CPUDispatcher

    module = importlib.import_module(module) if isinstance(module, str) else module
    kernels = {name for name, obj in vars(module).items()
               if isinstance(obj, CPUDispatcher) and obj.__module__ == module.__name__}
    base, own = module.__name__.rsplit(".", 1)[-1], Path(module.__file__).resolve()
    called = set()
    for path in Path(bootstrap.__file__).resolve().parents[1].rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names, aliases = set(kernels) if path.resolve() == own else set(), set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").rsplit(".", 1)[-1] == base:
                names |= {alias.asname or alias.name for alias in node.names if alias.name in kernels}
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                aliases |= {alias.asname or alias.name for alias in node.names if alias.name.rsplit(".", 1)[-1] == base}
        for function in ast.walk(tree):
            if isinstance(function, ast.FunctionDef) and not any("jit" in ast.unparse(d) for d in function.decorator_list):
                for node in ast.walk(function):
                    if isinstance(node, ast.Name) and node.id in names:
                        called.add(node.id)
                    elif (isinstance(node, ast.Attribute) and node.attr in kernels and isinstance(node.value, ast.Name)
                          and node.value.id in aliases):
                        called.add(node.attr)
    return called


def test_the_scan_finds_the_kernels_python_calls_and_not_methods_of_the_same_name():
    assert {"classwise_code", "classwise_queries", "crc_kernel", "set_outcomes"} <= entry_kernels("favmac.baselines.kernels")
    replay = entry_kernels("favmac.replay_kernels")
    assert {"adaptive_thresholds", "group_slots", "rank_order", "weight_totals"} <= replay
    assert "_join" not in replay  # only kernels call it; favmac.store.state has a method _join
    assert "_expected" not in entry_kernels("favmac.payment_kernels")  # only _proxy_many; Engine._expected is a method
    assert entry_kernels("favmac.near_ties") == {"_gather"}
    assert entry_kernels("favmac.formula_kernels") == {"_kernel"}


def test_warm_up_loads_every_kernel_an_ordinary_action_calls():
    """A fresh process (the app's warm-up child) after warm_up: every kernel of :data:`KERNEL_MODULES` that Python
    code calls has a compiled signature, so no ordinary action (a replay with segments, two groupings, the adaptive
    target, a formula value, the payment value with its unsupported payment, many-decimal weights' near-ties, a
    Trade-offs comparison) compiles one on the user's click; a kernel added without a warm-up fails here (or is
    named in NOT_WARMED with its reason)."""
    entries = {f"{module}.{name}" for module in KERNEL_MODULES for name in entry_kernels(module)}
    assert set(NOT_WARMED) <= entries  # no stale exceptions
    code = ("import importlib, json; from favmac.ui import bootstrap; bootstrap.warm_up(0); "
            f"print(json.dumps([n for n in {sorted(entries)!r} "
            "if not getattr(importlib.import_module(n.rsplit('.', 1)[0]), n.rsplit('.', 1)[1]).signatures]))")
    env = {**os.environ, "PYTHONPATH": str(Path(bootstrap.__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    missing = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert missing - set(NOT_WARMED) == set(), f"not in the warm-up: {sorted(missing - set(NOT_WARMED))}"
    assert missing == set(NOT_WARMED), f"warmed now, no longer an exception: {sorted(set(NOT_WARMED) - missing)}"


def _fresh_warm_up_state(monkeypatch):
    """A server process before its first page run (the module's once-per-process state, reset)."""
    monkeypatch.setattr(bootstrap, "_warm_up_started", False)
    monkeypatch.setattr(bootstrap, "_first_page_served", threading.Event())
    monkeypatch.setattr(bootstrap, "WARM_UP_DELAY", 0.0)


def test_warm_up_waits_for_the_first_page_then_fills_the_cache_in_a_child_then_loads(monkeypatch):
    _fresh_warm_up_state(monkeypatch)
    monkeypatch.setattr(bootstrap, "FIRST_PAGE_TIMEOUT", 60.0)
    monkeypatch.delenv(bootstrap.WARM_UP_ENV, raising=False)
    steps, done = [], threading.Event()
    monkeypatch.setattr(bootstrap, "fill_kernel_cache", lambda: steps.append("child") or 0)
    monkeypatch.setattr(bootstrap, "warm_up", lambda delay=1.0: (steps.append(("here", delay)), done.set()))
    bootstrap._start_warm_up()  # the first page's first run
    time.sleep(0.3)
    assert steps == []  # nothing competes with the first page
    bootstrap._start_warm_up()  # the next page run (the sidebar's): the first page has been served
    assert done.wait(10)
    assert steps == ["child", ("here", 0)]
    bootstrap._start_warm_up()  # once per process
    time.sleep(0.1)
    assert steps == ["child", ("here", 0)]


def test_warm_up_without_a_second_run_starts_after_the_timeout(monkeypatch):
    _fresh_warm_up_state(monkeypatch)
    monkeypatch.setattr(bootstrap, "FIRST_PAGE_TIMEOUT", 0.2)
    monkeypatch.delenv(bootstrap.WARM_UP_ENV, raising=False)
    done = threading.Event()
    monkeypatch.setattr(bootstrap, "fill_kernel_cache", lambda: 1)  # a failed child: the server warms itself
    monkeypatch.setattr(bootstrap, "warm_up", lambda delay=1.0: done.set())
    bootstrap._start_warm_up()
    assert done.wait(10)


def test_warm_up_off(monkeypatch):
    _fresh_warm_up_state(monkeypatch)
    monkeypatch.setenv(bootstrap.WARM_UP_ENV, "off")
    started = []
    monkeypatch.setattr(bootstrap, "_warm_up_after_first_page", lambda: started.append(1))
    bootstrap._start_warm_up()
    bootstrap._start_warm_up()
    time.sleep(0.1)
    assert started == [] and not bootstrap._warm_up_started


def test_the_child_lowers_its_priority_before_warming_up(monkeypatch):
    calls = []
    monkeypatch.setattr(bootstrap.os, "nice", lambda inc: calls.append(("nice", inc)))
    monkeypatch.setattr(bootstrap, "warm_up", lambda delay=1.0: calls.append(("warm_up", delay)))
    bootstrap.warm_up_process(os.getppid())
    assert calls == [("nice", bootstrap.WARM_UP_NICENESS), ("warm_up", 0)] and bootstrap.WARM_UP_NICENESS > 0


def test_fill_kernel_cache_runs_the_child_on_this_checkout(monkeypatch):
    seen, real_run = {}, subprocess.run

    def run(argv, env, **kwargs):
        seen.update(argv=argv, env=env)
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(bootstrap.subprocess, "run", run)
    assert bootstrap.fill_kernel_cache() == 0
    assert seen["argv"][:2] == [sys.executable, "-c"]
    assert f"warm_up_process({os.getpid()})" in seen["argv"][2]
    root = str(Path(bootstrap.__file__).resolve().parents[2])
    assert seen["env"]["PYTHONPATH"].split(os.pathsep)[0] == root
    # the command itself names a real function of the checkout the child imports
    check = real_run([sys.executable, "-c", "import favmac.ui.bootstrap as b; print(callable(b.warm_up_process))"],
                           env=seen["env"], capture_output=True, text=True, cwd="/")
    assert check.stdout.strip() == "True", check.stderr[-2000:]


def test_prepare_first_page_fills_the_payment_model_cache_without_numba():
    """What the first page run would pay for (the sample, its payment model) is read at server start; the
    kernels stay the deferred warm-up's."""
    from favmac.ui import payment_view

    bootstrap.prepare_first_page()
    assert payment_view._payment_model.cache_info().currsize >= 1
    check = subprocess.run([sys.executable, "-c", "import sys; from favmac.ui import bootstrap; bootstrap.prepare_first_page(); "
                            "print('numba' in sys.modules, 'hccinfhir' in sys.modules)"],
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(Path(bootstrap.__file__).parents[2])})
    assert check.stdout.split() == ["False", "True"], check.stderr[-2000:]
