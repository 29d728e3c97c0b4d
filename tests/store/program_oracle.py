"""What a program must compute, said with ``favmac.replay`` (docs/method.md "Programs"), and random programs to check it on.

``replay_decisions`` turns a program's event log into the replay docs/method.md names: the history, then the
predicted patients in prediction order; the first R history patients a recalibration fold (maps fitted
on them with ``fit_recalibration``, applied to the rest, as ``replay(recalibrate=R)`` does), the rest
burn-in; patient i's ``label_available_at`` the stream position of the last patient predicted before
its label event (never, when pending). It returns the replay's thresholds and sets of the patients
predicted, to compare with what the program recorded.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from favmac import replay
from favmac.recalibration import fit_recalibration
from favmac.runspec import RunSpec

V28_CODES = [f"HCC{h}" for h in ("17", "18", "19", "36", "37", "38", "221", "222", "226", "280", "327", "48")]


@dataclass
class Event:
    kind: str  # history / predict / label / settings
    ids: list = field(default_factory=list)
    probs: np.ndarray | None = None
    labels: np.ndarray | None = None
    members: dict | None = None
    spec: RunSpec | None = None


@dataclass
class Cohort:
    """Every patient's probabilities, true labels and member context (by id)."""

    codes: list
    ids: np.ndarray
    probs: np.ndarray
    labels: np.ndarray
    members: dict  # column -> (N,) values

    def rows(self, ids):
        index = {p: i for i, p in enumerate(self.ids.tolist())}
        return np.array([index[p] for p in ids], dtype=np.int64)

    def members_of(self, ids):
        rows = self.rows(ids)
        return {name: np.asarray(values, dtype=object)[rows] if np.ndim(values) == 1 else np.asarray(values)[rows]
                for name, values in self.members.items()}


def cohort(seed: int, n: int, codes, *, cells: bool = False, rounded: int | None = 3) -> Cohort:
    rng = np.random.RandomState(seed)
    k = len(codes)
    base = rng.beta(0.6, 2.5, size=(n, k))
    labels = rng.rand(n, k) < base
    probs = np.clip(base + 0.15 * rng.randn(n, k), 0, 1)
    if rounded is not None:
        probs = probs.round(rounded)
    members = {"plan": rng.choice(["A", "B", "C"], size=n).astype(object),
               "band": rng.choice(["young", "old"], size=n).astype(object)}
    if cells:
        members["cms_cell"] = rng.choice(["CNA", "CFA", "INS", "CPD"], size=n).astype(object)
        known = rng.rand(n, k) < 0.1
        members["known"] = known
    ids = np.array([f"p{seed}-{i:05d}" for i in range(n)], dtype=object)
    return Cohort(list(codes), ids, probs, labels.astype(np.int8), members)


def random_events(data: Cohort, seed: int, *, history: int, batches: int, batch_size: int, specs=(), label_share=0.8):
    """A random interleaving: the history, then predict batches and label batches (labels in random
    order, some never arriving), and ``specs`` as settings events at random places."""
    rng = np.random.RandomState(seed)
    order = rng.permutation(len(data.ids))
    head, rest = order[:history], order[history:]
    events = [Event("history", data.ids[head].tolist())]
    pending, start = [], 0
    changes = sorted(rng.choice(np.arange(1, batches + 1), size=len(specs), replace=False).tolist()) if specs else []
    for b in range(batches):
        size = int(rng.randint(1, batch_size + 1))
        chunk = rest[start : start + size]
        start += size
        if not len(chunk):
            break
        events.append(Event("predict", data.ids[chunk].tolist()))
        pending += data.ids[chunk].tolist()
        while pending and rng.rand() < 0.7:
            take = min(len(pending), int(rng.randint(1, 2 * batch_size + 1)))
            picked = rng.choice(len(pending), size=take, replace=False)
            chosen = [pending[i] for i in picked]
            for i in sorted(picked.tolist(), reverse=True):
                pending.pop(i)
            chosen = [p for p in chosen if rng.rand() < label_share / 0.8 * 0.95]  # some never come
            if chosen:
                events.append(Event("label", chosen))
        if changes and b + 1 == changes[0]:
            changes.pop(0)
            events.append(Event("settings", spec=specs[len(specs) - len(changes) - 1]))
    return events


def replay_decisions(spec: RunSpec, data: Cohort, events, *, upto: int | None = None):
    """The replay docs/method.md "Programs" names over ``events[:upto]`` under ``spec``: {patient id: (threshold,
    chosen (K,) bool, {grouping: threshold})} for every patient predicted there."""
    events = events[:upto]
    history = events[0].ids
    predicted, arrival_of, n_before = [], {}, 0
    for event in events[1:]:
        if event.kind == "predict":
            predicted += event.ids
            n_before += len(event.ids)
        elif event.kind == "label":
            for p in event.ids:
                arrival_of[p] = n_before - 1  # position among the predicted: the last predicted before the event
    fold = spec.recalibrate or 0
    stream = history + predicted
    rows = data.rows(stream)
    probs, labels = data.probs[rows].astype(float), data.labels[rows]
    members = data.members_of(stream)
    columns = [] if spec.segment is None else [spec.segment] if isinstance(spec.segment, str) else list(spec.segment)
    if fold:
        segments = members[columns[0]] if spec.recalibrate_by == "segment" else None
        maps = fit_recalibration(probs[:fold], labels[:fold], spec.recalibration, codes=data.codes,
                                 by=spec.recalibrate_by, groups=None if segments is None else segments[:fold])
        probs = maps.apply(probs[fold:], groups=None if segments is None else segments[fold:])
        labels = labels[fold:]
        members = {name: values[fold:] for name, values in members.items()}
    burn_in = len(history) - fold
    n = len(probs)
    available = np.full(n, n + 5, dtype=np.int64)
    available[:burn_in] = np.arange(burn_in)  # burn-in: labelled from the start whatever is given
    for j, p in enumerate(predicted):
        if p in arrival_of:
            available[burn_in + j] = burn_in + arrival_of[p]
    value_members = {"cells": members.get("cms_cell"), "known": members.get("known")}
    value, cost = spec.build(data.codes, value_members)
    groups = None if not columns else {c: members[c] for c in columns}
    result = replay(probs, labels, value, cost, [spec.targets[0]], delta=spec.control_delta, universe=spec.universe,
                    burn_in=burn_in, window=spec.window, score=spec.score, adaptive_rate=spec.adaptive_rate,
                    groups=groups, label_available_at=available)
    chosen = result.chosen.masks(0)
    out = {}
    for j, p in enumerate(predicted):
        per = {} if result.groupings is None else {g.name: float(g.thresholds[0, j]) for g in result.groupings}
        out[p] = (float(result.thresholds[0, j]), chosen[j], per)
    return out
