"""True CMS-HCC payment captured by payment-aware FavMac vs additive FavMac, same guarantee.

    python scripts/compare_payment.py [--seeds 10] [--burn-in 1000] [--recalibrate 500] [--diagnose 2]

On the bundled HCC cohort (``sample_data/hcc_calibration.csv``: 4,000 members x 35 V28 HCCs,
each member's ``cms_cell`` and ``known_codes``), for every seeded ordering of the members
(``numpy.random.RandomState(seed).permutation``) and every target, FavMac runs with the same
cost, the risk-weighted false flags C(S; y) = sum_{k in S, y_k = 0} w_k (w = V28 CNA factors,
``sample_data/hcc_weights.csv``), the same control (expected cost <= c), the price score and the
ratio universe; they differ in the value they maximize:

* additive: V(S; y) = sum_{k in S} y_k w_k (the risk-weighted TP value);
* payment:  V(S; y) = RAF(D, B ∪ (S ∩ y)) - RAF(D, B) (:class:`favmac.CmsHccValue`: hierarchies,
  interactions, counts, each member's cell D and known codes B);

and, for each value, with and without recalibration on a split (SPEC "Recalibration on a
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--burn-in", type=int, default=1000, help="labelled members before the first prediction (L)")
    parser.add_argument("--recalibrate", type=int, default=500, help="the recalibrated runs' fold R (of the L)")
    parser.add_argument("--diagnose", type=float, default=None, help="a target for the per-code diagnosis")
    parser.add_argument("--skip-tables", action="store_true")
    args = parser.parse_args()
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
