"""The one registry of online methods: FavMac (per universe) and the baselines.

Every place that lists, labels or runs methods — the command line's ``--method``, the app's
Trade-offs page, the export's ``method`` column — reads :data:`METHODS`. A record says the
method's key, its display label, the function that runs it, the controls it supports and its
parameters (the FavMac universe and score). Adding a variant is one record, e.g.
``_favmac("favmac_price", "FavMac (price)", "ratio", score="price")``.

>>> get_method("FavMac (value)").universe
'value'
>>> get_method("classwise").controls
('expected',)
>>> applicability("rcps", "expected")
'RCPS supports violation probability control only'
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import baselines
from .baselines import BASELINE_CONTROLS
from .replay import method_name, replay
from .runspec import CONTROLS, RunSpec
from .universe import MAX_FULL_CODES

__all__ = ["BASELINE_OPTIONS", "FAVMAC_OPTIONS", "METHODS", "Method", "applicability", "get_method", "method_keys",
           "method_labels", "run_method"]

BOTH_CONTROLS = ("expected", "violation")
#: The optional keywords each kind of engine takes (besides delta, burn_in, codes, patient_ids).
FAVMAC_OPTIONS = ("window", "c_max", "progress", "groups", "adaptive_rate", "score", "recalibrate", "recalibration",
                  "recalibrate_by",
                  "label_delay", "label_available_at", "candidates", "work", "members")
BASELINE_OPTIONS = ("window", "c_max", "progress")


@dataclass(frozen=True)
class Method:
    """One registered method.

    Attributes
    ----------
    key : str
        Command-line name, e.g. ``"favmac"`` or ``"inner_set"``.
    label : str
        Display name, e.g. ``"FavMac (ratio)"``; the ``method`` column of results and exports.
    function : callable
        ``f(probs, labels, value, cost, targets, *, delta, burn_in, codes, patient_ids, ...)``
        returning a ``ReplayResult`` (``favmac.replay.replay`` or a baseline).
    controls : tuple of str
        Supported controls ("expected", "violation").
    universe : str or None
        FavMac's candidate sets; None = the run's own universe (the command line's ``favmac``).
    score : str or None
        What FavMac's threshold is on ("cost" or "price"); None = the run's own score
        (``RunSpec.score``, the command line's ``favmac``). None for the baselines.
    options : tuple of str
        The optional keywords ``function`` takes (:data:`FAVMAC_OPTIONS`, :data:`BASELINE_OPTIONS`);
        :func:`run_method` passes a run's option only to a method that declares it.
    """

    key: str
    label: str
    function: Callable
    controls: tuple = BOTH_CONTROLS
    universe: str | None = None
    score: str | None = None
    options: tuple = BASELINE_OPTIONS

    @property
    def is_favmac(self) -> bool:
        return self.function is replay

    def display_label(self, spec: RunSpec) -> str:
        """The label of a run of this method under ``spec`` (FavMac names its universe and score)."""
        if self.is_favmac and self.universe is None:
            return method_name(spec.universe, self.score or spec.score)
        return self.label

    def accepts(self, parameter: str) -> bool:
        """Whether ``function`` takes keyword ``parameter`` (e.g. ``window``, ``progress``): one of :attr:`options`."""
        return parameter in self.options


def _favmac(key: str, label: str, universe: str | None, score: str | None = "cost") -> Method:
    return Method(key, label, replay, BOTH_CONTROLS, universe=universe, score=score, options=FAVMAC_OPTIONS)


def _baseline(key: str, label: str) -> Method:
    return Method(key, label, getattr(baselines, key), tuple(BASELINE_CONTROLS[key]))


#: key -> Method, in display order.
METHODS: dict[str, Method] = {
    m.key: m
    for m in (
        _favmac("favmac", "FavMac", None, None),  # the command line's default: uses --universe and --score
        _favmac("favmac_price", "FavMac (price)", "ratio", "price"),
        _favmac("favmac_ratio", "FavMac (ratio)", "ratio"),
        _favmac("favmac_value", "FavMac (value)", "value"),
        _favmac("favmac_prob", "FavMac (prob)", "prob"),
        _favmac("favmac_full", "FavMac (full)", "full"),
        _baseline("classwise", "ClassWise"),
        _baseline("inner_set", "InnerSet"),
        _baseline("fpcp", "FPCP"),
        _baseline("crc", "CRC"),
        _baseline("rcps", "RCPS"),
    )
}


def get_method(name: str) -> Method:
    """The method with key or label ``name``; ValueError listing the choices otherwise."""
    if isinstance(name, Method):
        return name
    for method in METHODS.values():
        if name in (method.key, method.label):
            return method
    raise ValueError(f"unknown method {name!r}; choose one of {', '.join(METHODS)} "
                     f"(or a label: {', '.join(method_labels())})")


def method_keys() -> list[str]:
    """Every method key (the command line's ``--method`` choices)."""
    return list(METHODS)


def method_labels(n_codes: int | None = None) -> list[str]:
    """Labels of the methods a comparison offers: FavMac per fixed universe and the baselines.

    The "full" universe appears only when ``n_codes`` allows it (at most 14 codes).
    """
    labels = []
    for method in METHODS.values():
        if method.is_favmac and method.universe is None:
            continue
        if method.universe == "full" and (n_codes is None or n_codes > MAX_FULL_CODES):
            continue
        labels.append(method.label)
    return labels


def applicability(name: str, control: str, n_codes: int | None = None) -> str | None:
    """None if method ``name`` supports ``control`` (and K = ``n_codes`` codes), else the reason it does not."""
    method = get_method(name)
    if control not in method.controls:
        return f"{method.label} supports {' and '.join(CONTROLS[c].lower() for c in method.controls)} control only"
    if method.universe == "full" and n_codes is not None and n_codes > MAX_FULL_CODES:
        return f"{method.label} enumerates all 2^K sets and allows at most {MAX_FULL_CODES} codes (this data has {n_codes})"
    return None


def run_method(spec: RunSpec, method: str, probs, labels, *, codes=None, patient_ids=None, progress=None,
               c_max=None, burn_in: int | None = None, groups=None, label_available_at=None, members=None, candidates=None):
    """Run ``method`` (key or label) over the stream with ``spec``'s value, cost, targets and control.

    Parameters
    ----------
    spec : RunSpec
        The run (validate it against the data first; a ``recalibrate`` left at "auto" is resolved
        for ``len(probs)`` patients here, :meth:`favmac.runspec.RunSpec.with_default_fold`).
    method : str
        A key of :data:`METHODS` (``"favmac"``, ``"inner_set"``, ...) or a label (``"FavMac (value)"``).
    probs : ndarray (N, K)
    labels : ndarray (N, K) of 0/1
    codes, patient_ids : optional
        Code names (K) and patient ids (N), kept in the result.
    progress : callable, optional
        Called with the fraction done; a function without ``progress`` gets 0 and 1 around the run.
    c_max : float, optional
        Passed on when given (engines that take it).
    burn_in : int, optional
        Overrides ``spec.burn_in`` (``predict`` calibrates on the whole file with ``burn_in = N``).
    groups : array (N,), optional
        Segment labels, read from the ``spec.segment`` column (required when it is set;
        :attr:`favmac.io.Dataset.groups`); several columns: a dict column -> labels
        (:attr:`favmac.io.Dataset.groupings`).
    label_available_at : array (N,) of int, optional
        Label arrival positions, read from the ``spec.label_available_column`` column
        (:attr:`favmac.io.Dataset.label_available_at`; required when it is set).
    members : dict, optional
        The payment value's member context (:attr:`favmac.io.Dataset.members`), rows as ``probs``.
    candidates : favmac.universe.Candidates, optional
        FavMac only: the candidate sets of this stream in the method's universe, built once and
        shared by several runs (``favmac.replay.replay``'s ``candidates``; the same result).

    Returns
    -------
    ReplayResult

    Raises
    ------
    ValueError
        For an unknown method, or an option the method's function does not take yet
        (``window``, ``c_max``, a non-default ``score``/``segment``/``adaptive_rate``), named.
    """
    chosen = get_method(method)
    spec = spec.with_default_fold(len(probs))  # recalibrate="auto" (a spec not validated against the data): the data decide
    value, cost = spec.build(codes, members)  # members: the CMS payment value's per-patient context
    burn_in = spec.burn_in if burn_in is None else burn_in
    kwargs = dict(delta=spec.control_delta, burn_in=burn_in, codes=None if codes is None else list(codes),
                  patient_ids=None if patient_ids is None else np.asarray(patient_ids, dtype=object))
    score = (chosen.score or spec.score) if chosen.is_favmac else None
    if spec.segment is not None and groups is None:
        raise ValueError(f"segment: the run is per segment (column {spec.segment!r}) but no segment labels were given")
    if spec.label_available_column is not None and label_available_at is None:
        raise ValueError(f"label_available_column: the run reads label arrivals from column "
                         f"{spec.label_available_column!r} but none were given")
    optional = {"window": spec.window, "c_max": c_max, "score": score,
                "groups": None if spec.segment is None else groups, "adaptive_rate": spec.adaptive_rate,
                "recalibrate": spec.recalibrate, "recalibration": None if spec.recalibrate is None else spec.recalibration,
                "recalibrate_by": None if spec.recalibrate_by == "code" else spec.recalibrate_by,
                "label_delay": spec.label_delay,
                "label_available_at": None if spec.label_available_column is None else label_available_at,
                "candidates": candidates}
    for name, given in optional.items():
        if given is None:
            continue
        if not chosen.accepts(name):
            option = "segment" if name == "groups" else name
            raise ValueError(f"{option} is not supported by {chosen.display_label(spec)}; leave it unset for this method")
        kwargs[name] = given
    if chosen.is_favmac:
        kwargs.update(universe=chosen.universe or spec.universe,
                      method=None if chosen.universe is None else chosen.label)
    if progress is not None and chosen.accepts("progress"):
        return chosen.function(probs, labels, value, cost, list(spec.targets), progress=progress, **kwargs)
    if progress is not None:
        progress(0.0)
    result = chosen.function(probs, labels, value, cost, list(spec.targets), **kwargs)
    if progress is not None:
        progress(1.0)
    return result
