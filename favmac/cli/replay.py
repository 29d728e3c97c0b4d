"""``favmac replay``: walk a labelled file as an online stream (FavMac or a baseline) and write per-step results."""
from __future__ import annotations

import numpy as np

from ..io import DataError
from ..methods import get_method, method_keys, run_method
from ..runspec import AUTO
from .options import add_settings_option, c_max_of, load_data, run_spec, segment_groups, settings_file, settings_spec
from .output import check_out, input_files, print_recalibration, progress_line, report_stream, write_csv, write_provenance
from .parser import Command, add_common, add_output

__all__ = ["COMMAND", "add_parser", "run_replay"]


def add_parser(sub):
    replay = sub.add_parser(
        "replay", help="replay a labelled file as an online stream and write per-step results",
        description="Walk the labelled patients in order: after the burn-in, each patient gets a set "
        "calibrated on the patients before it, then joins the calibration data.",
    )
    add_common(replay)
    add_settings_option(replay)
    targets = replay.add_mutually_exclusive_group()  # one of them, or --settings (its target)
    targets.add_argument("--targets", metavar="C1,C2,...", help="comma-separated target costs (cost units)")
    targets.add_argument("--target-percents", metavar="P1,P2,...", help="comma-separated targets, percent of C_max")
    replay.add_argument("--burn-in", type=int, default=0, metavar="N", help="calibration-only patients (default 0)")
    replay.add_argument("--window", type=int, metavar="W", help="calibrate on the last W patients only (FavMac)")
    replay.add_argument("--adaptive-rate", type=float, metavar="GAMMA",
                        help="adaptive target under drift (expected-cost control, FavMac): c_(n+1) = c_n + GAMMA (c - C_n)")
    arrivals = replay.add_mutually_exclusive_group()
    arrivals.add_argument("--label-delay", type=int, metavar="D",
                          help="labels arrive D stream positions after the prediction: patient n is calibrated on "
                          "positions < n - D (the burn-in is labelled from the start); FavMac")
    arrivals.add_argument("--label-available-column", metavar="COL",
                          help="column saying when each patient's labels arrived: a stream position (0 = first "
                          "patient; the labels join right after that position's prediction) or a date (then a "
                          "predicted_at date column places it: the labels join before the first patient predicted "
                          "on or after that date); FavMac")
    replay.add_argument("--method", default="favmac", choices=method_keys(),
                        help="favmac (default; uses --universe and --score), favmac_price, "
                        "favmac_<universe> (cost score), or a baseline for comparison")
    replay.add_argument("--shuffle", type=int, metavar="SEED",
                        help="replay in the order numpy.random.RandomState(SEED).permutation(N) "
                        "(the paper's protocol); default: file order")
    add_output(replay)
    return replay


def run_replay(args) -> int:
    check_out(args.out, input_files(args), record=True)
    if args.shuffle is not None and args.label_available_column:
        raise DataError("--shuffle reorders the stream, but --label-available-column gives arrival positions in file "
                        "order.", fix="Drop --shuffle, or use --label-delay D (a delay in stream positions).")
    if args.settings:  # the app's settings file: the run as the app ran it
        raw = settings_file(args)
        data = load_data(args)
        given = args.targets if args.targets is not None else args.target_percents
        spec = settings_spec(args, raw, data, None if given is None else given.split(","),
                             percent=args.targets is None, flag="--targets" if args.targets is not None else "--target-percents")
        if args.shuffle is not None and spec.label_available_column:
            raise DataError("--shuffle reorders the stream, but the settings file's label_available_column gives arrival "
                            "positions in file order.", fix="Drop --shuffle.")
        return _replay(args, data, spec)
    if args.targets is None and args.target_percents is None:
        raise DataError("replay needs --targets C1,C2,... or --target-percents P1,P2,... (or --settings JSON).")
    data = load_data(args)
    stream = dict(burn_in=args.burn_in, window=args.window, adaptive_rate=args.adaptive_rate,
                  label_delay=args.label_delay, label_available_column=args.label_available_column)
    if args.targets is not None:
        spec = run_spec(args, data, args.targets.split(","), percent=False, flag="--targets", **stream)
    else:
        spec = run_spec(args, data, args.target_percents.split(","), percent=True, flag="--target-percents", **stream)
    return _replay(args, data, spec)


def _replay(args, data, spec) -> int:
    from ..metrics import summarize

    c_max = c_max_of(spec, data)
    method = get_method(args.method)
    if args.recalibrate == AUTO and not method.accepts("recalibrate"):
        spec = spec.replace(recalibrate=None)  # the default fold is FavMac's: a baseline is not recalibrated unasked
    if method.key != "favmac":  # the other methods fix their universe and score: a typed one would be ignored
        for flag, given, own in (("--universe", args.universe, method.universe), ("--score", args.score, method.score)):
            if given is not None and given != own:
                runs = f"the {own} {flag[2:]}" if own else f"no {flag[2:]} of FavMac's (a baseline)"
                raise DataError(f"--method {method.key} runs {runs}; {flag} {given} would be ignored.",
                                fix=f"Drop {flag}, or use --method favmac, which takes --universe and --score.")
        if method.is_favmac:  # the settings the provenance record states are the ones the run uses
            spec = spec.replace(universe=method.universe, score=method.score)
    if spec.window is not None and not method.accepts("window"):
        raise DataError(f"--window applies to --method favmac only, not {args.method} (yet).",
                        fix="Drop --window or use --method favmac.")

    probs, labels, ids, groups = data.prob_array(), data.label_array(), data.patient_ids, segment_groups(args, data)
    members = data.members
    if args.shuffle is not None:
        if not 0 <= args.shuffle < 2**32:  # numpy's own message names no option
            raise DataError(f"--shuffle must be a seed from 0 to 2**32 - 1; got {args.shuffle}.")
        order = np.random.RandomState(args.shuffle).permutation(data.n_patients)
        probs, labels, ids = probs[order], labels[order], ids[order]
        groups = None if groups is None else {k: v[order] for k, v in groups.items()} if isinstance(groups, dict) \
            else groups[order]
        members = None if members is None else {k: None if v is None else v[order] for k, v in members.items()}
    progress = progress_line(args, "replay")
    try:
        result = run_method(spec, method.key, probs, labels, codes=data.codes, patient_ids=ids, progress=progress,
                            groups=groups, label_available_at=data.label_available_at, members=members)
    finally:
        progress.close()
    write_provenance(args, spec, data, write_csv(result.to_frame(), args.out), result=result)

    summary = summarize(result)
    stream = report_stream(args)
    control = "expected cost" if spec.control_delta is None else f"violation control, delta {spec.delta:g}"
    print(
        f"{result.method}: {data.n_patients} patients x {data.n_codes} codes, burn-in {spec.burn_in}, "
        f"{result.n_steps} predicted per target ({control}; C_max {c_max:g}).",
        file=stream,
    )
    print(summary.to_string(index=False, float_format=lambda x: f"{x:.4g}"), file=stream)
    if result.settings.get("label_delay") or result.settings.get("label_arrivals"):
        pending, sizes = result.labels_pending, result.calibration_sizes
        print(f"labels pending: {pending.mean():.1f} on average, at most {pending.max()}; calibration patients: "
              f"{sizes[0]} at the first prediction, {sizes[-1]} at the last.", file=stream)
    if spec.adaptive_rate is not None:  # the app's warning (Value & cost, Online session), said here too
        from ..adaptive import delay_advice, result_lag

        advice = delay_advice(spec.adaptive_rate, result_lag(result))
        if advice:
            print(f"note: {advice}", file=stream)
    print_recalibration(args, result)
    if result.group_thresholds is not None:
        from ..segments import grouping_tables

        several = len(result.groupings or []) > 1
        for name, table in grouping_tables(result).items():
            print(f"per segment of {name} (first target):" if several else "per segment (first target):", file=stream)
            dropped = ["target", "delta"] + (["bound"] if table["bound"].isna().all() else []) + ([] if several else ["binds"])
            print(table.drop(columns=dropped).to_string(index=False, float_format=lambda x: f"{x:.4g}"),
                  file=stream)
        if several:
            print("binds: share of a segment's patients whose threshold came from that grouping (the smallest of "
                  "their groupings' thresholds).", file=stream)
    return 0


COMMAND = Command(
    name="replay",
    summary=("walks a labelled file as an online stream (FavMac or a baseline) and writes per-step",
             "results plus a summary table."),
    add_parser=add_parser,
    run=run_replay,
)
