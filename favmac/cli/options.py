"""From a command's options to the run they describe: the RunSpec, the weights, the targets, the data.

Every check names the option the user typed (:data:`OPTION_OF_FIELD`); bad input is a
:class:`~favmac.io.DataError`, printed by :func:`favmac.cli.main` as ``error: ...``.
"""
from __future__ import annotations

import math

from ..io import DataError
from ..runspec import DEFAULT_DELTA, RunSpec, SettingsError, target_from_percent
from ..payment_tables import DEFAULT_CMS_CELL, DEFAULT_CMS_MODEL
from ..universe import DEFAULT_UNIVERSE

__all__ = ["OPTION_OF_FIELD", "run_spec", "settings_file", "settings_spec", "add_settings_option", "load_weights", "is_payment", "cost_kind", "c_max_of", "resolve_targets",
           "percent_target", "load_data", "refuse_id_segments", "segment_groups"]


# The option that sets each RunSpec field, so a SettingsError names what the user typed.
OPTION_OF_FIELD = {"value_kind": "--value", "cost_kind": "--cost", "cms_model": "--cms-model", "cms_year": "--cms-year",
                   "cms_segment": "--cms-segment", "normalization": "--normalization",
                   "coding_intensity": "--coding-intensity", "base_rate": "--base-rate", "delta": "--delta", "universe": "--universe", "score": "--score",
                   "burn_in": "--burn-in", "window": "--window", "weights": "--weights", "formula": "--value",
                   "segment": "--segment-column", "adaptive_rate": "--adaptive-rate", "recalibrate": "--recalibrate",
                   "recalibration": "--recalibration", "recalibrate_by": "--recalibrate-by", "label_delay": "--label-delay",
                   "label_available_column": "--label-available-column"}


def load_weights(args, codes):
    from ..io import cms_hcc_weights, read_weights

    if args.weights:
        return read_weights(args.weights, codes)
    if args.cms_model:
        return cms_hcc_weights(args.cms_model, args.cms_segment or DEFAULT_CMS_CELL, codes)
    if args.cms_segment and not is_payment(args):
        raise DataError("--cms-segment needs --cms-model.", fix="For example --cms-model V28 --cms-segment CNA.")
    return None


def run_spec(args, data, targets, *, percent: bool, flag: str, burn_in: int = 0, window=None,
          adaptive_rate=None, label_delay=None, label_available_column=None) -> RunSpec:
    """The run the options describe (validated against the data); targets given in percent of C_max
    are converted once C_max is known."""
    weights_table = load_weights(args, data.codes)
    weights = None if weights_table is None else weights_table["weight"].to_numpy(dtype=float)
    value = args.value.strip()
    payment = dict(cms_model=args.cms_model or DEFAULT_CMS_MODEL, cms_year=args.cms_year,
                   cms_segment=args.cms_segment or DEFAULT_CMS_CELL, normalization=args.normalization,
                   coding_intensity=args.coding_intensity, base_rate=args.base_rate) if is_payment(args) else {}
    spec = RunSpec(
        value_kind="cms_payment" if payment else value if value in ("tp", "weighted_tp") else "formula",
        formula="" if value in ("tp", "weighted_tp") or payment else value,
        cost_kind=cost_kind(args),
        weights=None if weights is None else tuple(weights),
        control="expected" if args.delta is None else "violation",
        targets=(1.0,),
        delta=DEFAULT_DELTA if args.delta is None else args.delta,
        universe=args.universe or DEFAULT_UNIVERSE,
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
        placeholder = 1.0 if unknown_weights else (c_max_of(spec, data) or 1.0)
        spec.replace(targets=(placeholder,)).validate(data.n_codes, data.n_patients)
        spec = spec.replace(targets=tuple(resolve_targets(targets, percent, c_max_of(spec, data), flag)))
        return spec.validate(data.n_codes, data.n_patients)
    except SettingsError as err:
        option = flag if err.field.startswith("target") else OPTION_OF_FIELD.get(err.field, err.field)
        raise DataError(f"{option} {err.problem}.") from None


def is_payment(args) -> bool:
    return args.value.strip().lower() in ("cms-payment", "cms_payment")


def cost_kind(args) -> str:
    """The RunSpec cost kind of ``--cost``; the unsupported payment only with the payment value."""
    if args.cost != "unsupported-payment":
        return args.cost
    if not is_payment(args):
        raise DataError(f"--cost unsupported-payment is the CMS-HCC payment value's cost (the payment the false flags "
                        f"alone add: RADV exposure); it needs --value cms-payment, got --value {args.value}.",
                        fix="Add --value cms-payment (with --base-rate for dollars), or choose --cost fp / weighted_fp.")
    return "cms_unsupported"


def c_max_of(spec: RunSpec, data) -> float:
    """C_max of the run on this data (the unsupported payment's depends on the data's codes and cells)."""
    return spec.c_max(data.n_codes, data.codes, getattr(data, "members", None))


def resolve_targets(raw, percent: bool, c_max: float, flag: str) -> list[float]:
    targets = []
    for text in raw:
        try:
            number = float(text)
        except ValueError:
            raise DataError(f"{flag}: {text!r} is not a number.", fix="Write targets as numbers, e.g. 1,2,3.") from None
        if percent:  # the one percent rule (0 < P <= 100), also for negative and non-finite numbers
            targets.append(percent_target(number, c_max, flag))
            continue
        if not math.isfinite(number) or number < 0:  # RunSpec's wording, which 0 and numbers above C_max get
            raise DataError(f"{flag} must be > 0 and <= C_max, in (0, C_max = {c_max:g}] cost units; got {number:g}.")
        targets.append(number)
    if not targets:
        raise DataError(f"{flag}: no target given.", fix="For example --targets 1,2,3.")
    return targets


def percent_target(percent: float, c_max: float, flag: str) -> float:
    try:
        return target_from_percent(percent, c_max)
    except SettingsError as err:
        raise DataError(f"{flag}: {err.field} {err.problem}.") from None


def load_data(args):
    """The calibration data; with --segment-column its segment labels are required (and with
    --label-available-column its label arrivals)."""
    from ..io import load_calibration

    return load_calibration(args.calibration, args.labels, segment_column=args.segment_column,
                            label_available_column=getattr(args, "label_available_column", None))


def refuse_id_segments(args) -> None:
    """--segment-column naming the id column: each patient would be a segment of its own (the readers
    would also say the file has no id column, which is wrong)."""
    from ..io import ID_COLUMN

    if any(not name.strip() for name in getattr(args, "segment_column", None) or ()):
        raise DataError("--segment-column needs a column name; got an empty one.",
                        fix="Name the column of segment labels, e.g. --segment-column segment, or leave the option out.")
    if ID_COLUMN in (getattr(args, "segment_column", None) or ()):
        raise DataError(f"--segment-column {ID_COLUMN}: the patient id column cannot be a segment column (every patient "
                        "would be a segment of one, calibrated on nobody).",
                        fix="Name the column of segment labels instead, e.g. --segment-column segment (a plan, region or "
                            "provider column).")


def segment_groups(args, data):
    """The segment labels: one column's, or {column: labels} for several groupings."""
    if not args.segment_column:
        return None
    return data.groups if len(args.segment_column) == 1 else dict(data.groupings)


#: The options a settings file replaces (dest -> option): with --settings the file decides them; giving one too is refused.
SETTINGS_DECIDE = {"weights": "--weights", "cms_model": "--cms-model", "cms_segment": "--cms-segment", "value": "--value",
                   "cms_year": "--cms-year", "normalization": "--normalization", "coding_intensity": "--coding-intensity",
                   "base_rate": "--base-rate", "cost": "--cost", "delta": "--delta", "universe": "--universe",
                   "score": "--score", "segment_column": "--segment-column", "recalibrate": "--recalibrate",
                   "recalibration": "--recalibration", "recalibrate_by": "--recalibrate-by", "burn_in": "--burn-in",
                   "window": "--window", "adaptive_rate": "--adaptive-rate", "label_delay": "--label-delay",
                   "label_available_column": "--label-available-column"}


def add_settings_option(parser, group=None, also: str = "") -> None:
    """``--settings FILE``: the run's settings from a settings file (the app's Export, ``RunSpec.to_json``);
    ``also``: what else the command reads from it (help text)."""
    parser.set_defaults(option_default=parser.get_default)  # what settings_file compares the options with
    (group or parser).add_argument(
        "--settings", metavar="JSON",
        help="the run's settings from a FavMac Studio settings file (the app's Export -> Download settings, or "
             "RunSpec.to_json): value, cost, weights, control, target, universe, score, burn-in, window, segments, "
             "label arrivals and recalibration, as the app ran them; a --target option replaces its target. "
             "The options it decides cannot be given with it" + also)


def settings_file(args):
    """Before the data are read: the file's bytes, with ``args`` set to read what the file's run needs (its segment
    columns and label-arrival column). Refuses an option the file decides, given too (``args.option_default``: the
    command parser's ``get_default``, set by :func:`add_settings_option`)."""
    from pathlib import Path

    from ..runspec import SettingsError, read_settings_json

    given = [flag for dest, flag in SETTINGS_DECIDE.items()
             if hasattr(args, dest) and getattr(args, dest) != args.option_default(dest)]
    if given:
        raise DataError(f"{', '.join(given)}: the settings file ({args.settings}) decides this; give it in the file or "
                        "as options, not both.", fix="Drop the option, or edit the settings file.")
    try:
        raw = Path(args.settings).read_bytes()
    except OSError as err:
        raise DataError(f"the settings file cannot be read ({err.strerror or err}).", file=args.settings) from None
    try:
        spec = read_settings_json(raw).spec
    except SettingsError as err:
        raise DataError(f"{err}.", file=args.settings) from None
    segment = spec.segment
    args.segment_column = None if segment is None else [segment] if isinstance(segment, str) else list(segment)
    args.label_available_column = spec.label_available_column
    return raw


def settings_spec(args, raw: bytes, data, targets=None, *, percent: bool = False, flag: str = "--target") -> RunSpec:
    """The run a settings file describes (:func:`favmac.runspec.read_settings_json`, checked against ``data``: the
    weights keyed by the data's codes), its targets replaced by ``targets`` (in cost units or ``percent`` of C_max)
    when given; the file's notes go to standard error."""
    import sys

    from ..runspec import read_settings_json

    try:
        parsed = read_settings_json(raw, dataset=data)
        spec = parsed.spec
        if spec.weights is None and (spec.value_kind == "weighted_tp" or spec.cost_kind == "weighted_fp"):
            raise SettingsError("weights", "are not in the settings file; export the settings with their weights")
        if targets is not None:
            spec = spec.replace(targets=tuple(resolve_targets(targets, percent, c_max_of(spec, data), flag)))
            spec = spec.validate(data.n_codes, data.n_patients)
    except SettingsError as err:
        raise DataError(f"{err}.", file=args.settings) from None
    for note in parsed.notes:
        if not note.startswith("Ignored unknown field(s)"):
            print(f"note: {args.settings}: {note}", file=sys.stderr)
    return spec
