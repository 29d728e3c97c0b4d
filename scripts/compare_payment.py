"""True CMS-HCC payment captured by payment-aware FavMac vs additive FavMac, same guarantee.

    python scripts/compare_payment.py [--seeds 10] [--burn-in 1000] [--recalibrate 500] [--diagnose 2]
    python scripts/compare_payment.py --loose [bundled within across calibrated] [--seeds 8]
    python scripts/compare_payment.py --ablation [bundled within] [--seeds 8]
    python scripts/compare_payment.py --evidence [bundled within across calibrated] [--seeds 8]
    python scripts/compare_payment.py --page      # what the Trade-offs page shows with the app's defaults

On the bundled HCC cohort (``sample_data/hcc_calibration.csv``: 4,000 members x 35 V28 HCCs,
each member's ``cms_cell`` and ``known_codes``), for every seeded ordering of the members
(``numpy.random.RandomState(seed).permutation``) and every target, FavMac runs with the same
cost, the risk-weighted false flags C(S; y) = sum_{k in S, y_k = 0} w_k (w = V28 CNA factors,
``sample_data/hcc_weights.csv``), the same control (expected cost <= c), the price score and the
ratio universe; they differ in the value they maximize:

* additive: V(S; y) = sum_{k in S} y_k w_k (the risk-weighted TP value);
* payment:  V(S; y) = RAF(D, B ∪ (S ∩ y)) - RAF(D, B) (:class:`favmac.CmsHccValue`: hierarchies,
  interactions, counts, each member's cell D and known codes B);

and, for each value, with and without recalibration on a split (docs/method.md "Recalibration on a
split", Platt, ``recalibrate=R``). Every run spends the same labelled members before its first
prediction: the plain runs use the first ``--burn-in`` L members as burn-in, the recalibrated
ones fit their maps on the first R and calibrate on the next L - R; all predict the same
members (positions L .. N), which is what the table compares.

Two workloads: the cohort as bundled (its classifier is over-confident and a member's codes of
one family co-occur, neither of which the proxy's independent Bernoulli(p) model knows), and the
same members with labels redrawn from the classifier's own probabilities, y_k ~ Bernoulli(p_k)
independently (a calibrated classifier; known codes kept where still true), where the proxy is
the exact expected payment.

Every run's chosen sets are scored by the true payment (the payment value on the true labels)
and the realized cost. Printed per target: mean true payment per member (RAF units) of each run,
the gains in percent (paired per ordering: mean, min to max), realized mean cost, and what the
additive value claims (its own sum) against the payment it really captures. With ``--diagnose c``:
at target c on the bundled labels, where each run spends its budget (members by the number of codes
the classifier suspects: true payment, what the payment proxy claims, cost, flags), then per code, how often each plain run flags it, how often a flag
is right, and the true payment each run's flags of that code add (the code's marginal payment in
the chosen set), to see what the payment universe defers that the additive one takes.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from favmac import AdditiveCost, AdditiveValue, CmsHccValue, replay  # noqa: E402
from favmac.io import load_calibration, read_weights  # noqa: E402

TARGETS = (0.1, 0.25, 0.5, 1.0, 2.0)
RUNS = ("additive", "additive + platt", "payment", "payment + platt")


def run_all(probs, labels, cells, known, codes, weights, args, seed):
    """{run: (ReplayResult, true payment (T, S))} for one ordering, and the ordering."""
    cost = AdditiveCost(weights)
    order = np.random.RandomState(seed).permutation(len(probs))
    p, y = probs[order], labels[order]
    payment = CmsHccValue(codes, model="V28", cells=cells[order], known=known[order])
    tail = payment.take(slice(args.burn_in, None))
    out = {}
    for name in RUNS:
        value = payment if name.startswith("payment") else AdditiveValue(weights)
        split = dict(recalibrate=args.recalibrate, burn_in=args.burn_in - args.recalibrate) if "platt" in name \
            else dict(burn_in=args.burn_in)
        res = replay(p, y, value, cost, list(TARGETS), score="price", **split)
        true = np.stack([tail(res.chosen.masks(t), y[args.burn_in:]) for t in range(len(TARGETS))])
        out[name] = (res, true)
    return out, order


def table(title, probs, labels, cells, known, codes, weights, args) -> None:
    rows = {t: {name: [] for name in RUNS} | {"claimed": [], **{f"cost {name}": [] for name in RUNS}} for t in TARGETS}
    for seed in range(args.seeds):
        runs, _ = run_all(probs, labels, cells, known, codes, weights, args, seed)
        for t, target in enumerate(TARGETS):
            for name, (res, true) in runs.items():
                rows[target][name].append(true[t].mean())
                rows[target][f"cost {name}"].append(res.cost[t].mean())
            rows[target]["claimed"].append(runs["additive"][0].value[t].mean())
    print(f"\n{title}\n")
    print("| target c | additive | additive + platt | payment | payment + platt | payment vs additive "
          "| payment + platt vs additive | payment + platt vs additive + platt | mean cost (4 runs) "
          "| additive value's own sum vs the payment it captures |")
    print("|---" * 10 + "|")

    def gain(a, b):
        g = 100 * (a / b - 1)
        return f"{g.mean():+.1f} % ({g.min():+.1f} to {g.max():+.1f})"

    for target in TARGETS:
        r = {k: np.array(v) for k, v in rows[target].items()}
        print(f"| {target:g} | " + " | ".join(f"{r[name].mean():.4f}" for name in RUNS) + " | "
              f"{gain(r['payment'], r['additive'])} | {gain(r['payment + platt'], r['additive'])} | "
              f"{gain(r['payment + platt'], r['additive + platt'])} | "
              + " / ".join(f"{r[f'cost {name}'].mean():.3f}" for name in RUNS) + " | "
              f"{r['claimed'].mean():.4f}, {100 * (r['claimed'].mean() / r['additive'].mean() - 1):+.0f} % |")


BANDS = ("0", "1", "2", "3", "4", "5", "6", "7+")


def diagnose_members(probs, labels, cells, known, codes, weights, args) -> None:
    """Where each run spends its false-flag budget at one target (bundled labels): members grouped by how
    many codes the classifier suspects (p > 0.2), per band the true payment captured, what the payment
    value's proxy claims for the chosen sets (on the probabilities the run used: mapped for + platt), the
    realized cost and the flags per member."""
    from favmac.recalibration import recalibration_of

    t = TARGETS.index(args.diagnose)
    sums = {}
    for seed in range(args.seeds):
        runs, order = run_all(probs, labels, cells, known, codes, weights, args, seed)
        p, y = probs[order][args.burn_in:], labels[order][args.burn_in:]
        payment = CmsHccValue(codes, model="V28", cells=cells[order], known=known[order]).take(slice(args.burn_in, None))
        band = np.minimum((p > 0.2).sum(axis=1), len(BANDS) - 1)
        additive, aware = runs["additive"][0].chosen.masks(t), runs["payment"][0].chosen.masks(t)
        same = (additive == aware).all(axis=1)
        fewer = ~(aware & ~additive).any(axis=1) & ~same
        more = ~(additive & ~aware).any(axis=1) & ~same
        sums["sets"] = sums.get("sets", 0) + np.array([same.sum(), fewer.sum(), more.sum(), (~(same | fewer | more)).sum()])
        for name, (res, true) in runs.items():
            maps = recalibration_of(res)
            used = p if maps is None else maps.apply(p)
            masks = res.chosen.masks(t)
            numbers = np.stack([np.ones(len(p)), true[t], payment.proxy(masks, used), ((masks & ~y) * weights).sum(axis=1),
                                masks.sum(axis=1)], axis=1)
            for b in range(len(BANDS)):
                sums[name, b] = sums.get((name, b), 0) + numbers[band == b].sum(axis=0)
    print(f"\nWhere the budget goes at c = {args.diagnose:g} (bundled labels, {args.seeds} orderings): members by the "
          "number of codes with p > 0.2; per member: true payment / what the payment proxy claims for the chosen "
          "sets / realized cost / flags\n")
    print("| codes with p > 0.2 | members per ordering | " + " | ".join(RUNS) + " |")
    print("|---" * (len(RUNS) + 2) + "|")
    for b, label in enumerate(BANDS):
        n = sums[RUNS[0], b][0]
        print(f"| {label} | {n / args.seeds:.0f} | " + " | ".join(
            " / ".join(f"{x / n:.3f}" for x in sums[name, b][1:]) for name in RUNS) + " |")
    share = sums["sets"] / sums["sets"].sum() * 100
    print(f"\nPayment's set against additive's, per member: identical {share[0]:.0f} %, a subset (fewer flags) "
          f"{share[1]:.0f} %, a superset {share[2]:.0f} %, neither (other codes) {share[3]:.0f} %")


def diagnose(probs, labels, cells, known, codes, weights, args) -> None:
    """Per code at one target (bundled labels): flag rates, precision and true marginal payment of each plain run."""
    t = TARGETS.index(args.diagnose)
    stats = {name: {key: np.zeros(len(codes)) for key in ("flags", "right", "marginal")}
             for name in ("additive", "payment", "payment + platt")}
    members = 0
    for seed in range(args.seeds):
        runs, order = run_all(probs, labels, cells, known, codes, weights, args, seed)
        y = labels[order][args.burn_in:]
        payment = CmsHccValue(codes, model="V28", cells=cells[order], known=known[order]).take(slice(args.burn_in, None))
        members += len(y)
        for name in stats:
            masks = runs[name][0].chosen.masks(t)
            full = payment(masks, y)
            stats[name]["flags"] += masks.sum(axis=0)
            stats[name]["right"] += (masks & y).sum(axis=0)
            for k in range(len(codes)):  # the payment the flags of code k add, the rest of the set kept
                flagged = masks[:, k]
                if flagged.any():
                    without = masks.copy()
                    without[:, k] = False
                    stats[name]["marginal"][k] += (full - payment(without, y))[flagged].sum()
    print(f"\nDiagnosis at c = {args.diagnose:g} (bundled labels, {args.seeds} orderings): per code, flags per 1,000 "
          "members, precision of the flags, true payment the code's flags add per 1,000 members (its marginal "
          "payment given the rest of the chosen set); rows sorted by payment's minus additive's payment\n")
    print("| code | w_k | additive: flags / precision / payment | payment: flags / precision / payment "
          "| payment + platt: flags / precision / payment |")
    print("|---|---|---|---|---|")
    diff = stats["payment"]["marginal"] - stats["additive"]["marginal"]
    for k in np.argsort(diff):
        if max(s["flags"][k] for s in stats.values()) == 0:
            continue
        cells_text = []
        for name in stats:
            s = stats[name]
            precision = s["right"][k] / s["flags"][k] if s["flags"][k] else float("nan")
            cells_text.append(f"{1000 * s['flags'][k] / members:.1f} / {precision:.2f} / "
                              f"{1000 * s['marginal'][k] / members:.2f}")
        print(f"| {codes[k]} | {weights[k]:.3f} | " + " | ".join(cells_text) + " |")
    for name in stats:
        print(f"{name}: total marginal payment per 1,000 members {1000 * stats[name]['marginal'].sum() / members:.2f}")


# ----------------------------------------------------------------------------- loose budgets, default settings
#: Targets of the loose-budget study: false flags per chart (FP-count cost, the app's default cost).
LOOSE_TARGETS = (0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 4.0)
#: The runs of the loose-budget study: (label, value, map). "default" is the app's and a RunSpec's default
#: (recalibrate="auto": the first 1,000 of 4,000 labelled members fit the tested Platt maps); "family" the same
#: fold with the "platt_family" maps (each code beside its hierarchy family); "plain" (None) spends those 1,000
#: members as calibration instead, so every run predicts the same members.
LOOSE_RUNS = (("additive, plain", "additive", None), ("payment, plain", "payment", None),
              ("additive, default", "additive", "default"), ("payment, default", "payment", "default"),
              ("additive, family", "additive", "platt_family"), ("payment, family", "payment", "platt_family"))
#: Synthetic cohorts (the sample's generator, scripts/make_sample_data.py, with other co-occurrence): the
#: share of members with a less severe code of their own ladder documented too (within families), and a
#: factor by which the latent factors' loadings grow (across families).
COHORTS = {
    "bundled": "the bundled cohort (sample_data/hcc_calibration.csv)",
    "within": "a new cohort whose codes co-occur strongly within families (a lower level documented for 70 % of members)",
    "across": "a new cohort whose codes co-occur strongly across families (latent factor loadings x 1.35)",
    "calibrated": "a new cohort like the bundled one, its labels redrawn from the classifier's p (calibrated, independent given p)",
}


def make_cohort(kind: str, seed: int = 7, n: int = 4000):
    """(probs, labels, cells, known, codes, weights) of a cohort of :data:`COHORTS`: the bundled file, or the
    sample's generator run with ``seed`` and other co-occurrence (its classifier over-confident as the
    bundled one, except "calibrated")."""
    if kind == "bundled":
        data = load_calibration(ROOT / "sample_data" / "hcc_calibration.csv")
        weights = read_weights(ROOT / "sample_data" / "hcc_weights.csv", data.codes)["weight"].to_numpy(float)
        return (data.prob_array(), data.label_array().astype(bool), data.members["cells"], data.members["known"],
                list(data.codes), weights)
    sys.path.insert(0, str(ROOT / "scripts"))
    import make_sample_data as msd

    saved = (msd.LOWER_DOCUMENTED, list(msd.CONDITIONS))
    try:
        if kind == "within":
            msd.LOWER_DOCUMENTED = 0.7
        if kind == "across":
            msd.CONDITIONS = [(ladder, {f: min(0.95, 1.35 * w) for f, w in loadings.items()}) for ladder, loadings in saved[1]]
            for ladder, loadings in msd.CONDITIONS:  # keep each liability's variance at 1
                weights = np.array([loadings.get(f, 0.0) for f in msd.FACTORS])
                shared = weights @ msd.FACTOR_CORRELATION @ weights
                if shared > 0.9:
                    for f in loadings:
                        loadings[f] *= np.sqrt(0.9 / shared)
        rng = np.random.default_rng(seed)
        labels = msd.hcc_labels(rng, n)
        probs = msd.classifier_probabilities(rng, labels)
        cells, known_text = msd.member_context(rng, labels)
    finally:
        msd.LOWER_DOCUMENTED, msd.CONDITIONS = saved
    codes = list(labels.columns)
    probs = probs.to_numpy(dtype=float)
    y = labels.to_numpy().astype(bool)
    if kind == "calibrated":
        y = np.random.default_rng(seed + 1).random(probs.shape) < probs
    known = np.array([[code in set(filter(None, text.split(";"))) for code in codes] for text in known_text]) & y
    weights = msd.cms_hcc_weights("V28", "CNA", codes)["weight"].to_numpy(float)
    return probs, y, np.asarray(cells, dtype=object), known, codes, weights


def hindsight(probs, labels, value, cost, targets, score: str = "price") -> np.ndarray:
    """The true payment (mean per member) of the best single global threshold chosen in hindsight, per target:
    on these members' candidate sets and ``score`` (the run's own), every threshold is tried (each distinct
    score value and +inf: the chosen set of each member is ``Candidates.choose``'s), and the one with the most
    true payment among those whose realized mean cost is at most c is kept. An upper bound on any threshold of
    that score, the calibrated one included. O(N K log(N K))."""
    from favmac.universe import candidate_sets

    cands = candidate_sets(probs, value, cost, "ratio")
    n, m = cands.scores(score).shape
    best = cands.best_prefix()
    ranks = cands.code_ranks()
    pay = np.empty((n, m))
    spend = np.empty((n, m))
    for j in range(m):  # the true payment and cost of every member's j-th prefix
        masks = ranks < j
        pay[:, j], spend[:, j] = value(masks, labels), cost(masks, labels)
    chosen_pay = np.take_along_axis(pay, best, axis=1)
    chosen_cost = np.take_along_axis(spend, best, axis=1)
    keys = cands.scores(score)[:, 1:]
    rows, steps = np.nonzero(np.isfinite(keys))
    order = np.argsort(keys[rows, steps], kind="stable")
    rows, steps, values = rows[order], steps[order] + 1, keys[rows, steps][order]
    d_pay = chosen_pay[rows, steps] - chosen_pay[rows, steps - 1]
    d_cost = chosen_cost[rows, steps] - chosen_cost[rows, steps - 1]
    total_pay, total_cost = np.r_[0.0, np.cumsum(d_pay)], np.r_[0.0, np.cumsum(d_cost)]
    # a threshold t just above a distinct value admits every key <= it: the states after each last event of a value
    last = np.r_[np.flatnonzero(np.diff(values) > 0), len(values) - 1] + 1 if len(values) else np.zeros(0, np.int64)
    states = np.r_[0, last]
    out = []
    for target in targets:
        feasible = states[total_cost[states] / n <= target + 1e-12]
        out.append(total_pay[feasible].max() / n)
    return np.array(out)


def loose_runs(probs, labels, cells, known, codes, weights, seed, targets=LOOSE_TARGETS):
    """One ordering: {run label: (true payment per target (T,), mean cost per target (T,))} and the hindsight
    payments {"hindsight, default": (T,), "hindsight, plain": (T,)}; all on the same predicted members."""
    from favmac.methods import run_method
    from favmac.recalibration import recalibration_of
    from favmac.runspec import RunSpec
    from favmac.data_change import default_burn_in

    order = np.random.RandomState(seed).permutation(len(probs))
    p, y = probs[order], labels[order]
    members = {"cells": cells[order], "known": known[order]}
    n = len(p)
    payment_spec = RunSpec(value_kind="cms_payment", cost_kind="fp", targets=tuple(targets),
                           burn_in=default_burn_in(n)).validate(len(codes), n)
    fold = payment_spec.recalibrate
    assert fold, "the default settings recalibrate on this many members"
    start = fold + payment_spec.burn_in
    payment = CmsHccValue(codes, model="V28", cells=members["cells"], known=members["known"])
    tail = payment.take(slice(start, None))
    cost = AdditiveCost()
    out, hind = {}, {}
    for label, kind, method in LOOSE_RUNS:
        spec = payment_spec if kind == "payment" else payment_spec.replace(value_kind="weighted_tp", weights=tuple(weights))
        if method is None:
            spec = spec.replace(recalibrate=None, burn_in=start)
        elif method != "default":
            spec = spec.replace(recalibration=method)
        res = run_method(spec, "favmac", p, y, codes=codes, members=members)
        assert res.burn_in == start
        out[label] = (np.array([tail(res.chosen.masks(t), y[start:]).mean() for t in range(len(targets))]),
                      res.cost.mean(axis=1))
        if kind == "payment":
            maps = recalibration_of(res)
            used = p[start:] if maps is None else maps.apply(p[start:])
            which = label.split(", ")[1]
            hind["hindsight, " + which] = hindsight(used, y[start:], tail, cost, targets, res.settings["score"])
            # the same, at the run's own realized mean cost: what the ranking alone leaves, apart from the
            # guarantee's margin (the calibrated threshold spends c - (C_max - E C+) / (N + 1) on average)
            hind["hindsight at its cost, " + which] = hindsight(used, y[start:], tail, cost, res.cost.mean(axis=1),
                                                                res.settings["score"])
    return out, hind


def loose_table(kind: str, seeds: int, targets=LOOSE_TARGETS) -> list[str]:
    """The markdown of one cohort's loose-budget table."""
    probs, labels, cells, known, codes, weights = make_cohort(kind)
    runs = {label: [] for label, _, _ in LOOSE_RUNS} | {f"{h}, {w}": [] for h in ("hindsight", "hindsight at its cost")
                                                        for w in ("default", "plain", "family")}
    costs = {label: [] for label, _, _ in LOOSE_RUNS}
    for seed in range(seeds):
        out, hind = loose_runs(probs, labels, cells, known, codes, weights, seed, targets)
        for label, (pay, mean_cost) in out.items():
            runs[label].append(pay)
            costs[label].append(mean_cost)
        for label, pay in hind.items():
            runs[label].append(pay)
    r = {k: np.array(v) for k, v in runs.items()}

    def gain(a, b):
        g = 100 * (a / b - 1)
        return f"{g.mean():+.1f} % ({g.min():+.1f} to {g.max():+.1f})"

    def share(a, b):
        x = 100 * a / b
        return f"{x.mean():.1f} % ({x.min():.1f})"

    n = len(probs)
    lines = [f"**{COHORTS[kind]}**: {n:,} members x {len(codes)} codes, {labels.sum(axis=1).mean():.2f} true codes per "
             f"member; {seeds} orderings; FP-count cost (false flags per chart), expected-cost control, price score, the "
             "default settings (burn-in 1,000, recalibration on the first 1,000, tested Platt; \"family\": the same fold "
             "with the platt_family maps); 2,000 predicted members; "
             "true payment per member in RAF (mean over orderings; gains paired per ordering: mean (min to max)).", "",
             "| c (false flags per chart) | additive, plain | payment, plain | additive, default | payment, default "
             "| additive, family | payment, family "
             "| hindsight threshold (default) | payment vs additive, default | payment vs additive, plain "
             "| payment, default, % of hindsight (worst) | the same at its realized cost (worst) "
             "| payment: default vs plain | payment vs additive, family | payment, family vs default "
             "| payment, family, % of hindsight (worst) | mean cost, payment default |",
             "|---" * 17 + "|"]
    for t, target in enumerate(targets):
        col = {k: v[:, t] for k, v in r.items()}
        lines.append(f"| {target:g} | " + " | ".join(f"{col[label].mean():.4f}" for label, _, _ in LOOSE_RUNS)
                     + f" | {col['hindsight, default'].mean():.4f} | {gain(col['payment, default'], col['additive, default'])} | "
                     f"{gain(col['payment, plain'], col['additive, plain'])} | "
                     f"{share(col['payment, default'], col['hindsight, default'])} | "
                     f"{share(col['payment, default'], col['hindsight at its cost, default'])} | "
                     f"{gain(col['payment, default'], col['payment, plain'])} | "
                     f"{gain(col['payment, family'], col['additive, family'])} | "
                     f"{gain(col['payment, family'], col['payment, default'])} | "
                     f"{share(col['payment, family'], col['hindsight, family'])} | "
                     f"{np.array(costs['payment, default'])[:, t].mean():.3f} |")
    return lines + [""]


EVIDENCE_TARGETS = (0.25, 1.0, 3.0, 4.0)


def evidence_table(kind: str, seeds: int, targets=EVIDENCE_TARGETS) -> list[str]:
    """The Data page's held-out check on one cohort (favmac.recalibration_evidence: the default fold's two halves,
    the default map and the family map measured on the same held-out members at each target), against what the
    runs after the fold then capture with each map (payment value, default settings): how often the page offers
    the family map, and whether the runs it would switch gain."""
    from favmac.data_change import default_burn_in
    from favmac.methods import run_method
    from favmac.recalibration_evidence import better_method, candidate_methods, recalibration_evidence
    from favmac.runspec import RunSpec

    probs, labels, cells, known, codes, _ = make_cohort(kind)
    offered, held_gain, run_gain = np.zeros((seeds, len(targets)), bool), np.zeros((seeds, len(targets))), np.zeros((seeds, len(targets)))
    for seed in range(seeds):
        order = np.random.RandomState(seed).permutation(len(probs))
        p, y = probs[order], labels[order]
        members = {"cells": cells[order], "known": known[order]}
        spec = RunSpec(value_kind="cms_payment", cost_kind="fp", targets=tuple(targets),
                       burn_in=default_burn_in(len(p))).validate(len(codes), len(p))
        start = spec.recalibrate + spec.burn_in
        payment = CmsHccValue(codes, model="V28", cells=members["cells"], known=members["known"])
        tail = payment.take(slice(start, None))
        captured = {}
        for method in ("platt_tested", "platt_family"):
            res = run_method(spec.replace(recalibration=method), "favmac", p, y, codes=codes, members=members)
            captured[method] = np.array([tail(res.chosen.masks(t), y[start:]).mean() for t in range(len(targets))])
        run_gain[seed] = 100 * (captured["platt_family"] / captured["platt_tested"] - 1)
        for t, target in enumerate(targets):
            table = recalibration_evidence(p, y, payment, AdditiveCost(), target, fold=spec.recalibrate,
                                           methods=candidate_methods(codes), codes=codes)
            offered[seed, t] = better_method(table, "platt_tested") == "platt_family"
            mapped = table.groupby("method")["value_mapped"].mean()
            held_gain[seed, t] = 100 * (mapped["platt_family"] / mapped["platt_tested"] - 1)
    lines = [f"**{COHORTS[kind]}** ({seeds} orderings; the first 1,000 members of each are the default fold the check "
             "splits; the runs predict the same 2,000 members after burn-in):", "",
             "| c (false flags per chart) | family map offered | held-out gain of the family map (mean) "
             "| payment gain after the fold where offered | payment gain after the fold where not offered |",
             "|---|---|---|---|---|"]
    for t, target in enumerate(targets):
        yes, no = run_gain[offered[:, t], t], run_gain[~offered[:, t], t]
        where = lambda g: f"{g.mean():+.1f} % ({g.min():+.1f} to {g.max():+.1f})" if len(g) else "–"  # noqa: E731
        lines.append(f"| {target:g} | {offered[:, t].sum()} of {seeds} | {held_gain[:, t].mean():+.1f} % | {where(yes)} | {where(no)} |")
    return lines + [""]


def ranking_ablation(kind: str, seeds: int, targets=(1.0, 2.0, 3.0, 4.0)) -> list[str]:
    """Which part of the payment value's ranking matters at loose budgets: FavMac (price, the default fold and
    map) ranking with the payment value, with it minus its count variables (D1 ... D10P), minus its disease
    interactions, minus both (hierarchies only), and with the additive value; every run's sets paid by the true
    payment. A ranking-only variant: the value's tables with those coefficients zeroed (a copy; never a
    payment anyone is paid)."""
    import copy
    import dataclasses

    from favmac import AdditiveValue

    def variant(value, counts=True, interactions=True):
        out = copy.copy(value)
        tables = value._tables  # noqa: SLF001 - an experiment on the tables, not an API
        out._tables = dataclasses.replace(
            tables, count_coef=tables.count_coef if counts else np.zeros_like(tables.count_coef),
            inter_coef=tables.inter_coef if interactions else np.zeros_like(tables.inter_coef))
        return out

    probs, labels, cells, known, codes, weights = make_cohort(kind)
    names = ("payment", "without count variables", "without interactions", "hierarchies only", "additive")
    rows = {name: [] for name in names}
    for seed in range(seeds):
        order = np.random.RandomState(seed).permutation(len(probs))
        p, y = probs[order], labels[order]
        payment = CmsHccValue(codes, model="V28", cells=cells[order], known=known[order])
        tail = payment.take(slice(2000, None))
        values = dict(zip(names, (payment, variant(payment, counts=False), variant(payment, interactions=False),
                                  variant(payment, False, False), AdditiveValue(weights))))
        for name, value in values.items():
            res = replay(p, y, value, AdditiveCost(), list(targets), score="price", recalibrate=1000, burn_in=1000)
            rows[name].append([tail(res.chosen.masks(t), y[2000:]).mean() for t in range(len(targets))])
    base = np.array(rows["additive"])
    lines = [f"Ranking ablation on {COHORTS[kind]} ({seeds} orderings, FP cost, default fold and map, 2,000 predicted "
             "members): true payment per member (RAF), and against the additive ranking", "",
             "| ranking value | " + " | ".join(f"c = {t:g}" for t in targets) + " |", "|---" * (len(targets) + 1) + "|"]
    for name in names:
        v = np.array(rows[name])
        lines.append(f"| {name} | " + " | ".join(f"{m:.4f} ({g:+.1f} %)" for m, g in zip(v.mean(axis=0),
                                                                                     (100 * (v / base - 1)).mean(axis=0))) + " |")
    return lines + [""]


def page_table() -> list[str]:
    """What the Trade-offs page shows on the bundled sample with the app's defaults (payment value, FP-count
    cost, expected control, the data-decided grid plus the configured target, burn-in 1,000, and, since issue
    33, every row on the default recalibration fold): true payment per member of payment-aware FavMac (price)
    against ``FavMac (price, additive)``, the page's own comparison (``favmac.ui.jobs.compare_tradeoffs``), with
    the session's fold and with recalibration turned off."""
    from favmac import target_grid
    from favmac.tradeoffs import ADDITIVE_LABEL
    from favmac.ui import jobs, payment_view, settings_form as form

    data = load_calibration(ROOT / "sample_data" / "hcc_calibration.csv")
    weights = read_weights(ROOT / "sample_data" / "hcc_weights.csv", data.codes)["weight"].to_numpy(float)
    settings = {**form.default_settings(data.n_patients, data.n_codes, weights), **payment_view.payment_defaults(data.codes)}
    spec = form.to_spec(settings, weights).validate(n_codes=data.n_codes, n_patients=data.n_patients)
    c_max = spec.c_max(data.n_codes, data.codes, data.members)
    integer_cost = form.is_integer_valued(spec.cost_weights(data.n_codes))
    targets = target_grid.grid_plan(settings["grid"], spec, data, c_max, integer_cost, include=settings["target"]).targets
    runs = {}
    for name, run_spec in ((f"the session's fold (first {spec.recalibrate:,})", spec), ("recalibration off", spec.replace(recalibrate=None))):
        points = jobs.compare_tradeoffs(data, run_spec, targets, ["FavMac (price)"])["points"]
        runs[name] = {m: points[points["method"] == m].set_index("target")["mean_value"] for m in ("FavMac (price)", ADDITIVE_LABEL)}
    lines = [f"Trade-offs on the bundled sample with the app's defaults (burn-in {spec.burn_in:,}, {spec.cost_kind} cost, expected "
             "control, price score): true payment per member (RAF), payment-aware FavMac (price) vs "
             f"`{ADDITIVE_LABEL}`, the file's one ordering.", "",
             "| target c (false flags per chart) | " + " | ".join(f"{t:.3g}" for t in targets) + " |",
             "|---" * (len(targets) + 1) + "|"]
    for name, run in runs.items():
        aware, additive = run["FavMac (price)"], run[ADDITIVE_LABEL]
        lines.append(f"| payment-aware, {name} | " + " | ".join(f"{aware[t]:.4f}" for t in targets) + " |")
        lines.append(f"| additive, {name} | " + " | ".join(f"{additive[t]:.4f}" for t in targets) + " |")
        lines.append(f"| payment vs additive, {name} | "
                     + " | ".join(f"{100 * (aware[t] / additive[t] - 1):+.1f} %" for t in targets) + " |")
    return lines + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--burn-in", type=int, default=1000, help="labelled members before the first prediction (L)")
    parser.add_argument("--recalibrate", type=int, default=500, help="the recalibrated runs' fold R (of the L)")
    parser.add_argument("--diagnose", type=float, default=None, help="a target for the per-code diagnosis")
    parser.add_argument("--skip-tables", action="store_true")
    parser.add_argument("--loose", nargs="*", choices=list(COHORTS), default=None,
                        help="only the loose-budget study with the default settings, on these cohorts (none: all)")
    parser.add_argument("--ablation", nargs="*", choices=list(COHORTS), default=None,
                        help="only the ranking ablation (payment value without count variables / interactions) on these cohorts")
    parser.add_argument("--evidence", nargs="*", choices=list(COHORTS), default=None,
                        help="only the Data page's held-out check (default vs family map) against the runs, on these cohorts")
    parser.add_argument("--page", action="store_true",
                        help="only what the Trade-offs page shows on the bundled sample with the app's defaults")
    args = parser.parse_args()
    if args.page:
        print("\n".join(page_table()), flush=True)
        return
    if args.evidence is not None:
        start = time.perf_counter()
        for kind in args.evidence or list(COHORTS):
            print("\n".join(evidence_table(kind, args.seeds)), flush=True)
        print(f"done in {time.perf_counter() - start:.0f} s")
        return
    if args.ablation is not None:
        for kind in args.ablation or ["bundled", "within"]:
            print("\n".join(ranking_ablation(kind, args.seeds)), flush=True)
        return
    if args.loose is not None:
        start = time.perf_counter()
        for kind in args.loose or list(COHORTS):
            tick = time.perf_counter()
            print("\n".join(loose_table(kind, args.seeds)), flush=True)
            print(f"({kind}: {time.perf_counter() - tick:.0f} s)\n", flush=True)
        print(f"done in {time.perf_counter() - start:.0f} s")
        return
    start = time.perf_counter()
    data = load_calibration(ROOT / "sample_data" / "hcc_calibration.csv")
    weights = read_weights(ROOT / "sample_data" / "hcc_weights.csv", data.codes)["weight"].to_numpy(float)
    probs, labels = data.prob_array(), data.label_array().astype(bool)
    cells, known = data.members["cells"], data.members["known"]
    codes = list(data.codes)
    redrawn = np.random.RandomState(2023).rand(*probs.shape) < probs
    print(f"HCC cohort: {len(probs):,} members x {len(codes)} codes, cells "
          f"{', '.join(f'{c} {np.mean(cells == c):.0%}' for c in sorted(set(cells)))}, "
          f"{known.any(axis=1).mean():.0%} with known codes; {args.seeds} orderings, {args.burn_in} labelled members "
          f"before the first prediction (plain: burn-in {args.burn_in}; + platt: recalibrate={args.recalibrate}, "
          f"burn-in {args.burn_in - args.recalibrate}), {len(probs) - args.burn_in:,} predicted; FavMac price score, "
          "expected cost <= c (risk-weighted false flags per member); true payment per member in RAF units")
    if not args.skip_tables:
        for title, y_all, known_all in (("bundled labels", labels, known),
                                        ("labels redrawn from the probabilities (calibrated, independent)", redrawn,
                                         known & redrawn)):
            table(title, probs, y_all, cells, known_all, codes, weights, args)
    if args.diagnose is not None:
        diagnose_members(probs, labels, cells, known, codes, weights, args)
        diagnose(probs, labels, cells, known, codes, weights, args)
    print(f"\ndone in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
