"""The Dask engine's commands: ``favmac calibrate`` and ``favmac predict --engine dask`` (favmac.distributed).

``calibrate`` computes the final thresholds over a very large file set exactly and writes the
settings file (its "calibration" block, :func:`_calibration_extras`) that ``predict --settings``
and the app load; :func:`predict_distributed` predicts a file set from it, or calibrates first.
"""
from __future__ import annotations

import math
import sys

from ..io import DataError
from ..recalibration import DEFAULT_RECALIBRATE_BY, as_recalibration
from ..runspec import AUTO
from .options import percent_target, run_spec
from .output import atomic_write, check_out, input_files, report_stream
from .parser import Command, add_common

__all__ = ["COMMAND", "add_parser", "run_calibrate", "predict_distributed", "refuse_dask_inputs", "DASK_WRITES"]


def add_parser(sub):
    calibrate = sub.add_parser(
        "calibrate", help="exact final thresholds over a very large file set, on Dask",
        description="Calibrate FavMac on every labelled patient of a large Parquet/CSV file set with the "
        "distributed engine (favmac.distributed; exact, equal to FavMac fed every row). Prints the thresholds "
        "and writes the settings file (JSON) that the app and 'favmac predict --settings' load.",
    )
    add_common(calibrate, data_flag="--data")
    targets = calibrate.add_mutually_exclusive_group(required=True)
    targets.add_argument("--targets", metavar="C1,C2,...", help="comma-separated target costs (cost units)")
    targets.add_argument("--target-percents", metavar="P1,P2,...", help="comma-separated targets, percent of C_max")
    calibrate.add_argument("--scheduler", metavar="ADDRESS",
                           help="Dask scheduler address (tcp://host:8786) or name (threads, processes, synchronous); "
                           "default: dask's local threads")
    calibrate.add_argument("--settings-out", metavar="JSON",
                           help="write the settings file here (default: print it after the thresholds)")
    calibrate.add_argument("--progress", action="store_true",
                           help="show dask's progress bar for every pass on standard error (default: only when it "
                           "is a terminal)")
    return calibrate


DASK_WRITES = "it writes --out as a folder of Parquet parts, part-NNNNN.parquet, not as a CSV"


def refuse_dask_inputs(args) -> None:
    """The in-memory engine reads one file each: a glob, folder or URL, or --scheduler needs --engine dask (--settings is
    the run's settings file there; with --engine dask, the thresholds 'favmac calibrate' stored)."""
    import os

    for flag, path in (("--calibration", args.calibration), ("--new", args.new)):
        if path is not None and (any(ch in str(path) for ch in "*?[") or os.path.isdir(path) or "://" in str(path)):
            raise DataError(f"{flag} {path}: a glob, a folder or a URL is read by the Dask engine only.",
                            fix=f"Pass --engine dask ({DASK_WRITES}), or give one file.")
    for flag, given in (("--scheduler", args.scheduler),):
        if given:
            raise DataError(f"{flag} applies to the Dask engine only.", fix=f"Pass --engine dask ({DASK_WRITES}).")


_DASK_SET_COST = ("the Dask engine needs an additive cost (per-code weights); --cost unsupported-payment (a set "
                  "function of the chosen codes) runs in memory only.")


_DASK_SET_COST_FIX = "Use favmac replay / predict with one calibration file, or --cost fp / weighted_fp on Dask."


def engine_spec(args, source, targets, *, percent: bool, flag: str):
    """(RunSpec, codes) for a file set the engine reads (codes from the headers; N unknown until the pass)."""
    from types import SimpleNamespace

    from ..distributed import source_codes

    if args.cost == "unsupported-payment":
        raise DataError(_DASK_SET_COST, fix=_DASK_SET_COST_FIX)
    codes = source_codes(source, segment=list(args.segment_column) if args.segment_column else None)
    data = SimpleNamespace(codes=codes, n_codes=len(codes), n_patients=None)
    return run_spec(args, data, targets, percent=percent, flag=flag), codes


def engine_calibrate(args, source, spec, codes, targets):
    """(pooled thresholds, {segment: thresholds} or None, details) from the distributed engine; with
    several segment columns the second item is {column: {segment: thresholds}}. The payment value's
    cells and known codes are read from the files (favmac.distributed.members)."""
    from ..distributed import calibrate

    if spec.recalibrate_by != DEFAULT_RECALIBRATE_BY:
        raise DataError("the distributed engine fits one recalibration map per code only; --recalibrate-by segment "
                        "is not available there yet.", fix="Use 'favmac replay' or 'favmac predict --calibration FILE' "
                        "(in memory), or --recalibrate-by code.")
    out = calibrate(source, *spec.build(codes), list(targets), delta=spec.control_delta, universe=spec.universe,
                    score=spec.score, segment=spec.segment, scheduler=args.scheduler,
                    progress=args.progress or sys.stderr.isatty(), return_details=True,
                    recalibrate=spec.recalibrate, recalibration=spec.recalibration)
    return out if spec.segment is not None else (out[0], None, out[1])


def _as_text(thresholds) -> list[str]:
    """Thresholds for JSON, which has no infinity: repr text ("inf", "-inf", "1.25")."""
    return [repr(float(t)) for t in thresholds]


def _calibration_extras(spec, codes, thresholds, by_segment, details, source) -> dict:
    """What 'favmac calibrate' adds to the settings file."""
    block = {
        "engine": "favmac.distributed",
        "data": str(source),
        "codes": [str(c) for c in codes],
        "n_patients": int(details["n_patients"]),
        "targets": [float(t) for t in spec.targets],
        "thresholds": _as_text(thresholds),
    }
    if by_segment is not None and isinstance(spec.segment, tuple):  # several groupings
        block["groupings"] = {column: {label: {"n_patients": int(details["segment_sizes"][column][label]),
                                               "thresholds": _as_text(values)} for label, values in by_label.items()}
                              for column, by_label in by_segment.items()}
    elif by_segment is not None:
        block["segments"] = {label: {"n_patients": int(details["segment_sizes"][label]), "thresholds": _as_text(values)}
                             for label, values in by_segment.items()}
    maps = details.get("recalibration_maps")  # the fold's maps: predict --settings applies them
    return {"calibration": block, **({"recalibration_maps": maps} if maps is not None else {})}


def _stored_calibration(block: dict, file: str) -> dict:
    """The "calibration" block of a settings file (:func:`_calibration_extras`), checked field by field:
    codes (distinct text), targets and thresholds (lists of numbers of one length; thresholds may be the
    text "inf" / "-inf"), segments / groupings ({label: {"thresholds": [...], "n_patients": n}}).
    A hand-edited or damaged block is a DataError naming the field, not a traceback."""
    fix = "Write the file again with 'favmac calibrate ... --settings-out FILE' (do not edit its calibration block)."

    def refuse(field: str, expected: str, got) -> DataError:
        shown = repr(got) if len(repr(got)) <= 60 else repr(got)[:57] + "..."
        return DataError(f"calibration.{field} must be {expected}; got {shown}.", file=file, fix=fix)

    def numbers(field: str, values, length=None) -> list:
        if not isinstance(values, list) or not values or (length is not None and len(values) != length):
            raise refuse(field, "a list of numbers" + ("" if length is None else f" ({length}, one per target)"), values)
        out = []
        for value in values:
            try:
                if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                    raise ValueError
                number = float(value)
            except (ValueError, OverflowError):
                raise refuse(field, "a list of numbers", values) from None
            if math.isnan(number):
                raise refuse(field, "a list of numbers (not NaN)", values)
            out.append(number)
        return out

    codes = block.get("codes")
    if not isinstance(codes, list) or not codes or not all(isinstance(c, str) and c for c in codes) \
            or len(set(codes)) != len(codes):
        raise refuse("codes", "a list of distinct code names", codes)
    targets = numbers("targets", block.get("targets"))
    if not all(math.isfinite(t) and t > 0 for t in targets):
        raise refuse("targets", "a list of finite targets > 0", block.get("targets"))
    out = {**block, "codes": codes, "targets": targets,
           "thresholds": numbers("thresholds", block.get("thresholds"), len(targets))}

    def by_label(field: str, entries) -> dict:
        if not isinstance(entries, dict):
            raise refuse(field, 'an object {segment: {"thresholds": [...], "n_patients": n}}', entries)
        checked = {}
        for label, entry in entries.items():
            if not isinstance(entry, dict):
                raise refuse(f"{field}.{label}", 'an object {"thresholds": [...], "n_patients": n}', entry)
            n = entry.get("n_patients", 0)
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise refuse(f"{field}.{label}.n_patients", "a whole number >= 0", n)
            checked[label] = {**entry, "thresholds": numbers(f"{field}.{label}.thresholds", entry.get("thresholds"),
                                                             len(targets))}
        return checked

    if "segments" in block:
        out["segments"] = by_label("segments", block["segments"])
    if "groupings" in block:
        if not isinstance(block["groupings"], dict):
            raise refuse("groupings", "an object {column: {segment: ...}}", block["groupings"])
        out["groupings"] = {column: by_label(f"groupings.{column}", entries) for column, entries in block["groupings"].items()}
    return out


def _segment_entries(spec, by_segment, sizes):
    """(column, label, thresholds, calibration patients) of every segment the engine calibrated."""
    if by_segment is None:
        return []
    if isinstance(spec.segment, tuple):
        return [(column, label, values, sizes[column][label])
                for column, by_label in by_segment.items() for label, values in by_label.items()]
    return [(spec.segment, label, values, sizes[label]) for label, values in by_segment.items()]


def run_calibrate(args) -> int:
    from ..replay import method_name

    check_out(args.settings_out, input_files(args), flag="--settings-out")  # before the passes over the data
    raw = args.targets.split(",") if args.targets is not None else args.target_percents.split(",")
    spec, codes = engine_spec(args, args.data, raw, percent=args.targets is None,
                               flag="--targets" if args.targets is not None else "--target-percents")
    thresholds, by_segment, details = engine_calibrate(args, args.data, spec, codes, spec.targets)
    spec = spec.replace(recalibrate=details.get("recalibrate"))  # "auto" as the engine decided it: the file says what ran
    c_max = spec.c_max(len(codes))
    control = "expected cost" if spec.control_delta is None else f"violation control, delta {spec.delta:g}"
    print(f"{method_name(spec.universe, spec.score)} on Dask: {details['n_patients']:,} patients x {len(codes)} codes "
          f"({control}; C_max {c_max:g}), {details['passes']} passes over the data.")
    if details.get("recalibration_maps") is not None:
        maps = as_recalibration(details["recalibration_maps"])
        print(f"Recalibrated ({maps.method}) on the first {maps.n_fold} patients (no prediction, not calibration).")
    import pandas as pd

    table = pd.DataFrame({"target": list(spec.targets), "threshold": thresholds})
    for column, label, values, n in _segment_entries(spec, by_segment, details.get("segment_sizes")):
        table[f"{column}={label} (n={n})"] = values
    print(table.to_string(index=False))
    settings = spec.to_json(codes, dataset=str(args.data),
                            extras=_calibration_extras(spec, codes, thresholds, by_segment, details, args.data))
    if args.settings_out:
        atomic_write({args.settings_out: settings})
        print(f"Settings written to {args.settings_out} (load it in the app, or: favmac predict --engine dask "
              f"--settings {args.settings_out} --target C --new FILES --out FOLDER).")
    else:
        print(settings.decode())
    return 0


def predict_distributed(args) -> int:
    from ..distributed import predict
    from ..replay import method_name
    from ..runspec import read_settings_json

    if args.out == "-":
        raise DataError("--engine dask cannot write to standard output: it writes a folder of Parquet parts.",
                        fix="Give a folder name with --out (e.g. --out chosen_sets/).")
    print(f"--engine dask: the chosen sets go to the folder {args.out} as Parquet parts (part-NNNNN.parquet), "
          "one per task.", file=sys.stderr)

    flag = "--target" if args.target is not None else "--target-percent"
    wanted = args.target if args.target is not None else args.target_percent
    if args.settings:
        with open(args.settings, "rb") as handle:
            raw = handle.read()
        stored = read_settings_json(raw, extras=("calibration", "recalibration_maps")).extras
        calibration, maps = stored.get("calibration"), stored.get("recalibration_maps")
        if not calibration or "thresholds" not in calibration or "codes" not in calibration:
            raise DataError("the settings file holds no thresholds.", file=args.settings,
                            fix="Write it with 'favmac calibrate ... --settings-out FILE'.")
        calibration = _stored_calibration(calibration, args.settings)
        codes = [str(c) for c in calibration["codes"]]
        spec = read_settings_json(raw, codes=codes, extras=("calibration", "recalibration_maps")).spec.validate(len(codes))
        if spec.recalibrate == AUTO:  # a file that left the fold to the data: its maps say what the calibration decided
            spec = spec.replace(recalibrate=None if maps is None else AUTO)
        if spec.recalibrate is not None and spec.recalibrate != AUTO and maps is None:
            raise DataError("the settings file says recalibrate but holds no recalibration_maps.", file=args.settings,
                            fix="Write it with 'favmac calibrate ... --recalibrate R --settings-out FILE'.")
        if isinstance(maps, dict) and maps.get("by", "code") != "code":
            raise DataError("the settings file holds recalibration maps per segment; the distributed engine applies "
                            "maps per code only.", file=args.settings,
                            fix="Predict with 'favmac predict --calibration FILE ...' (one file, in memory), or "
                            "calibrate with --recalibrate-by code.")
        try:  # checked here, so a damaged map names the settings file (the workers would meet it otherwise)
            as_recalibration(maps, codes=codes)
        except ValueError as err:
            raise DataError(f"{err}.", file=args.settings,
                            fix="Write it again with 'favmac calibrate ... --recalibrate R --settings-out FILE'.") from None
        c_max = spec.c_max(len(codes))
        target = float(wanted) if args.target is not None else percent_target(wanted, c_max, flag)
        targets = [float(t) for t in calibration["targets"]]
        if target not in targets:
            raise DataError(f"{flag} {wanted:g}: the settings file was calibrated for targets "
                            f"{', '.join(f'{t:g}' for t in targets)} only.", file=args.settings,
                            fix="Use one of them, or run 'favmac calibrate' for this target.")
        index = targets.index(target)
        threshold = float(calibration["thresholds"][index])
        by_segment = segment_sizes = None
        if isinstance(spec.segment, tuple):  # several groupings
            stored_groupings = calibration.get("groupings", {})
            missing = [c for c in spec.segment if c not in stored_groupings]
            if missing:
                raise DataError(f"the settings file names the segment column {missing[0]!r} but holds no thresholds "
                                "for its segments.", file=args.settings,
                                fix="Write it with 'favmac calibrate ... --segment-column ... --settings-out FILE'.")
            by_segment = {c: {label: [float(t) for t in entry["thresholds"]] for label, entry in stored_groupings[c].items()}
                          for c in spec.segment}
            segment_sizes = {c: {label: int(entry["n_patients"]) for label, entry in stored_groupings[c].items()
                                 if "n_patients" in entry} for c in spec.segment}
        elif spec.segment is not None:
            by_segment = {label: [float(t) for t in entry["thresholds"]]
                          for label, entry in calibration.get("segments", {}).items()}
            segment_sizes = {label: int(entry["n_patients"]) for label, entry in calibration.get("segments", {}).items()
                             if "n_patients" in entry}
        n_patients = calibration.get("n_patients")
    else:
        if args.calibration is None:
            raise DataError("predict needs --calibration FILES (labelled patients) or --settings JSON.")
        spec, codes = engine_spec(args, args.calibration, [repr(wanted)], percent=args.target is None, flag=flag)
        target, index = spec.target, 0
        thresholds, by_segment, details = engine_calibrate(args, args.calibration, spec, codes, [target])
        threshold, n_patients = float(thresholds[0]), details["n_patients"]
        segment_sizes, maps = details.get("segment_sizes"), details.get("recalibration_maps")
    value, cost = spec.build(codes)  # the payment value reads each new patient's cell and known codes per batch
    if by_segment is None:
        chosen = threshold
    elif isinstance(spec.segment, tuple):
        chosen = {column: {label: values[index] for label, values in by_label.items()}
                  for column, by_label in by_segment.items()}
    else:
        chosen = {label: values[index] for label, values in by_segment.items()}
    written = predict(args.new, value, cost, chosen, args.out, universe=spec.universe, score=spec.score,
                      codes=codes, target=target, delta=spec.control_delta, segment=spec.segment,
                      segment_sizes=segment_sizes, c_max=spec.c_max(len(codes)), scheduler=args.scheduler, progress=args.progress or sys.stderr.isatty(),
                      recalibration=maps)
    per_segment = "" if by_segment is None else (
        f", {len(by_segment)} segments with their own thresholds" if not isinstance(spec.segment, tuple) else
        f", {sum(len(v) for v in by_segment.values())} segments of {len(by_segment)} groupings with their own "
        "thresholds; each patient uses the smallest of its groups'")
    print(f"{method_name(spec.universe, spec.score)}: threshold {threshold:g} for target {target:g} (calibrated on "
          f"{n_patients} patients{per_segment}); wrote {written:,} patients as Parquet parts to {args.out}.",
          file=report_stream(args))
    return 0


COMMAND = Command(
    name="calibrate",
    summary=("computes the final thresholds over a very large file set exactly on Dask (local or a",
             "cluster) and writes a settings file that the app and 'predict --settings' load."),
    add_parser=add_parser,
    run=run_calibrate,
)
