"""``favmac predict``: calibrate on labelled patients, then choose a code set for every new patient."""
from __future__ import annotations

from ..io import DataError
from ..methods import run_method
from .distributed import predict_distributed, refuse_dask_inputs
from .options import add_settings_option, c_max_of, load_data, run_spec, segment_groups, settings_file, settings_spec
from .output import check_out, input_files, print_recalibration, progress_line, report_stream, write_csv, write_provenance
from .parser import Command, add_common, add_output

__all__ = ["COMMAND", "add_parser", "run_predict"]


def add_parser(sub):
    predict = sub.add_parser(
        "predict", help="calibrate on labelled patients and choose code sets for new patients",
        description="Calibrate FavMac on all labelled patients, then choose a code set for each new patient.",
    )
    add_common(predict, data_required=False)
    predict.add_argument("--new", required=True, metavar="FILE",
                         help="new patients' probabilities (CSV or Parquet); with --engine dask also a glob, a folder "
                         "or a URL")
    target = predict.add_mutually_exclusive_group()  # one of them, or --settings (its target)
    target.add_argument("--target", type=float, metavar="C", help="target cost in the cost's units")
    target.add_argument("--target-percent", type=float, metavar="P", help="target cost as a percent of C_max")
    engine = predict.add_argument_group("distributed engine")
    engine.add_argument("--engine", choices=["memory", "dask"], default="memory",
                        help="memory (default): one file each, in this process, --out is a CSV; dask: files, globs, "
                        "folders or URLs on Dask (favmac.distributed), --out is a folder of Parquet parts")
    add_settings_option(predict, engine, also="; with --engine dask: the file 'favmac calibrate --settings-out' wrote "
                        "(its thresholds are used; no --calibration)")
    engine.add_argument("--scheduler", metavar="ADDRESS",
                        help="Dask scheduler address (tcp://host:8786) or name (threads, processes, synchronous); default: local")
    add_output(predict)
    return predict


def run_predict(args) -> int:
    from ..export import new_patient_sets
    from ..io import load_new_patients_segmented

    if args.engine == "dask":
        if args.target is None and args.target_percent is None:
            raise DataError("--engine dask needs --target C or --target-percent P (one of the targets the settings "
                            "file was calibrated for).")
        return predict_distributed(args)
    refuse_dask_inputs(args)
    check_out(args.out, input_files(args), record=True)
    if args.calibration is None:
        raise DataError("predict needs --calibration FILE (labelled patients), or --engine dask --settings JSON "
                        "from 'favmac calibrate'.")
    raw = settings_file(args) if args.settings else None  # the app's settings file: the run as the app ran it
    segment_column = (args.segment_column[0] if len(args.segment_column) == 1 else list(args.segment_column)) \
        if args.segment_column else None
    data = load_data(args)
    if raw is not None:
        given = args.target if args.target is not None else args.target_percent
        spec = settings_spec(args, raw, data, None if given is None else [repr(given)], percent=args.target is None,
                             flag="--target" if args.target is not None else "--target-percent")
        if len(spec.targets) > 1:
            raise DataError(f"the settings file holds {len(spec.targets)} targets; predict uses one.", file=args.settings,
                            fix="Choose one with --target C (or --target-percent P).")
    elif args.target is None and args.target_percent is None:
        raise DataError("predict needs --target C or --target-percent P (or --settings JSON).")
    elif args.target is not None:
        spec = run_spec(args, data, [repr(args.target)], percent=False, flag="--target")
    else:
        spec = run_spec(args, data, [repr(args.target_percent)], percent=True, flag="--target-percent")
    new, new_groups = load_new_patients_segmented(args.new, data.codes, segment_column=segment_column,
                                                  text_columns=data.segment_columns())  # as the app reads them
    target, c_max = spec.target, c_max_of(spec, data)

    # a run with burn_in = N records no steps; its final threshold is calibrated on all N patients.
    progress = progress_line(args, "calibrating")
    try:
        result = run_method(spec, "favmac", data.prob_array(), data.label_array(), progress=progress, codes=data.codes,
                            burn_in=data.n_patients - (spec.recalibrate or 0), groups=segment_groups(args, data), members=data.members)
    finally:
        progress.close()
    threshold = float(result.final_thresholds[0])
    value, cost = spec.build(data.codes, new.attrs.get("members"))
    frame = new_patient_sets(new, result, value, cost, universe=spec.universe, score=spec.score,
                             groups=new_groups if args.segment_column else None)
    write_provenance(args, spec, data, write_csv(frame, args.out), new, result)
    control = "expected cost" if spec.control_delta is None else f"violation rate <= {spec.delta:g}"
    where = "standard output" if args.out == "-" else args.out
    print(
        f"{result.method}: calibrated on {data.n_patients - (spec.recalibrate or 0)} patients x {data.n_codes} codes "
        f"({control}, target {target:g} of C_max {c_max:g}); threshold {threshold:g}.\n"
        f"Wrote {len(frame)} patients to {where}: {frame['n_codes'].mean():.2f} codes per patient on average, "
        f"{int((frame['n_codes'] == 0).sum())} with an empty set.",
        file=report_stream(args),
    )
    print_recalibration(args, result)
    if result.groupings is not None and len(result.groupings) > 1:
        print("  each new patient's threshold is the smallest of its groups' (one per grouping):",
              file=report_stream(args))
        for grouping in result.groupings:
            for label, final in grouping.final_thresholds.items():
                print(f"  {grouping.name} {label}: {grouping.sizes[label]} calibration patients, threshold "
                      f"{float(final[0]):g}", file=report_stream(args))
    elif result.group_thresholds is not None:
        for label, final in result.group_thresholds.items():
            print(f"  segment {label}: {result.group_sizes[label]} calibration patients, threshold {float(final[0]):g}",
                  file=report_stream(args))
    return 0


COMMAND = Command(
    name="predict",
    summary=("calibrates FavMac on a labelled file, then writes the chosen code set of every new patient.",),
    add_parser=add_parser,
    run=run_predict,
)
