"""The settings form's working copy and its bridge to :class:`favmac.runspec.RunSpec`.

The Value & cost and Trade-offs forms edit a plain ``settings`` dict (one per session):

=============  ==============================================================
value_kind     "tp" (TP count), "weighted_tp" (risk-weighted TP), "formula", "cms_payment" (CMS-HCC payment)
cms_model ...  cms_model, cms_year, cms_segment, normalization, coding_intensity, base_rate: the payment value's
               inputs (RunSpec fields; payment_view.PAYMENT_KEYS); base_rate (dollars) turns values into dollars
formula        value formula text (used when value_kind == "formula")
cost_kind      "fp" (FP count) or "weighted_fp" (risk-weighted FP)
control        "expected" (mean cost <= target) or "violation" (P(cost > target) <= delta)
target         target cost c, in the cost's own units
delta          violation level (used when control == "violation")
universe       "ratio", "prob", "value" or "full" (full only when K <= 14)
score          "price" or "cost": what the threshold is on (price needs a greedy universe)
burn_in        patients used for calibration only at the head of the stream
window         rolling calibration window in patients, or None for all patients
label_delay    labels arrive this many patients after the prediction, or None (label_available_column: the
               calibration file's column of arrivals instead; favmac.ui.arrivals_view)
recalibrate    the recalibration fold R, or None (off); a new session's is the data's default
               (favmac.recalibration.default_recalibrate: 1,000 from 3,000 labelled patients on), and
               adapt_settings re-derives it for new data while it is at its default
recalibration  the map fitted on the fold ("platt_tested", the default; favmac.ui.recalibration_view)
grid           trade-off grid: {"low", "high", "unit", "n_targets", "methods", ...} (favmac.target_grid)
=============  ==============================================================

Everything that *uses* the settings goes through :func:`to_spec`: validation, the value and
cost objects, C_max, the settings JSON. The dict is only what the form shows.
"""
from __future__ import annotations

import json
import math

import numpy as np

from favmac.data_change import adapt_stream, default_burn_in
from favmac.functions import FormulaValue
from favmac.recalibration import DEFAULT_RECALIBRATION, default_recalibrate
from favmac.runspec import (DEFAULT_DELTA, DEFAULT_RECALIBRATE_BY, CONTROLS, COST_KINDS, VALUE_KINDS, RunSpec, SettingsError, check_against_data,
                            read_settings_json, target_from_percent)
from favmac.ui.navigation import EXPLAIN
from favmac.ui.payment_view import PAYMENT_DEFAULTS, PAYMENT_KEYS
from favmac.ui.samples import content_key
from favmac.target_grid import default_grid, restore_grid, validate_grid
from favmac.ui.units import UNIVERSE_PLAIN, cost_unit, value_unit
from favmac.scores import default_score
from favmac.universe import DEFAULT_UNIVERSE, MAX_FULL_CODES, UNIVERSES

__all__ = [
    "CONTROLS", "COST_KINDS", "EXPLAIN", "VALUE_KINDS", "UNIVERSE_LABELS", "SCORE_LABELS", "SCORE_HELP", "PAPER_FORMULA", "DEFAULT_TARGET_PCT",
    "FORMULA_EXAMPLE", "SPEC_KEYS", "SettingsError", "default_score_of", "score_for", "fold_for", "from_spec", "adapt_settings", "cost_unit", "default_burn_in", "default_settings", "default_target", "formula_preview",
    "is_integer_valued", "run_key", "run_maps", "settings_from_json", "settings_summary", "settings_to_json",
    "target_percent", "to_spec", "universe_options", "validate_settings", "value_unit",
]

#: The universes in plain words (their math is ``units.universe_math()``).
UNIVERSE_LABELS = UNIVERSE_PLAIN
#: The score choice in words a coding auditor reads (docs/method.md "The score a threshold is on").
SCORE_LABELS = {
    "price": "Price: spend the false-flag budget where each flag is most likely to pay off, across all patients",
    "cost": "Cost: give every patient the same false-flag budget (the paper's rule)",
}
SCORE_HELP = ("Both keep the same guarantee. Under expected-cost control the price score found more value at the "
              "same budget in every measured workload (docs/score_comparison.md); under violation control the "
              "cost score usually finds a little more, because that guarantee is per patient. "
              "Price needs the ratio, value or prob universe.")
PAPER_FORMULA = "prod_hits((v + 5) / 10) + sum_hits((v - 5) ** 2)"
SPEC_KEYS = ("value_kind", "formula", "cost_kind", "control", "target", "delta", "universe", "score", "burn_in",
             "window")

# A new session's target: 3 % of C_max, about one false flag per patient on the 35-code HCC
# sample (10 %, the paper's smallest target, allows 3.5 and flags mostly wrong codes there).
DEFAULT_TARGET_PCT = 3.0


def to_spec(settings: dict, weights) -> RunSpec:
    """The run the form describes, with the app's risk weights (not yet validated)."""
    window, segment = settings.get("window"), settings.get("segment")
    return RunSpec(
        value_kind=settings.get("value_kind"),
        formula=settings.get("formula") or "",
        cost_kind=settings.get("cost_kind"),
        weights=None if weights is None else tuple(np.asarray(weights, dtype=float)),
        control=settings.get("control"),
        targets=(settings.get("target"),),
        delta=settings.get("delta", DEFAULT_DELTA),
        universe=settings.get("universe"),
        burn_in=settings.get("burn_in"),
        window=None if window in (None, "", 0) else window,
        score=settings.get("score"),  # None: the universe's default score
        segment=tuple(segment) if isinstance(segment, list) else segment,  # several columns: a list in the session
        adaptive_rate=settings.get("adaptive_rate"),
        recalibrate=settings.get("recalibrate"),
        recalibration=settings.get("recalibration") or DEFAULT_RECALIBRATION,
        recalibrate_by=settings.get("recalibrate_by") or DEFAULT_RECALIBRATE_BY,
        label_delay=settings.get("label_delay"),
        label_available_column=settings.get("label_available_column"),
        **{k: settings.get(k, PAYMENT_DEFAULTS[k]) for k in PAYMENT_KEYS},  # the payment value's fields (payment_view)
    )


def from_spec(spec: RunSpec, grid: dict) -> dict:
    """The form's dict for ``spec`` (and a trade-off grid)."""
    out = {k: getattr(spec, k) for k in SPEC_KEYS if k != "target"}
    out["target"] = float(spec.target)
    out["grid"] = dict(grid)
    for key, default in (("segment", None), ("adaptive_rate", None), ("recalibrate", None), ("label_delay", None),
                         ("label_available_column", None)):
        if getattr(spec, key) != default:
            out[key] = getattr(spec, key)
    if spec.recalibrate is not None:
        out["recalibration"] = spec.recalibration
        out["recalibrate_by"] = spec.recalibrate_by
    if spec.value_kind == "cms_payment":
        out.update({k: getattr(spec, k) for k in PAYMENT_KEYS})
    return out


def default_score_of(settings: dict, weights=None) -> str:
    """The default score of the settings' universe, control, target and cost (:func:`favmac.scores.default_score`;
    the cost's false-flag weights as RunSpec reads them, ``weights`` being the risk weights a risk-weighted cost needs)."""
    flags = to_spec({**settings, "score": None}, weights).false_flag_weights()
    control = settings.get("control", "expected")
    return default_score(settings["universe"], settings["delta"] if control == "violation" else None,
                         settings.get("target"), flags)


def score_for(current: dict, chosen: dict, weights=None) -> str:
    """The score the form saves: the user's pick; a pick left at the default the form showed
    follows the chosen control, universe and target (:func:`default_score_of`); "cost" on ``full``.
    ``chosen`` holds the form's values (missing keys: ``current``'s).

    >>> shown = {"control": "expected", "delta": 0.1, "universe": "ratio", "score": "price", "target": 1.1, "cost_kind": "fp"}
    >>> score_for(shown, {**shown, "control": "violation"}), score_for({**shown, "score": "cost"}, {**shown, "score": "cost"})
    ('cost', 'cost')
    >>> score_for(shown, {**shown, "control": "violation", "target": 0.5})  # below one false flag
    'price'
    """
    chosen = {**current, **chosen}
    if chosen["score"] == current["score"] == default_score_of(current, weights):
        return default_score_of(chosen, weights)
    return "cost" if chosen["universe"] == "full" else chosen["score"]


def fold_for(current: dict, chosen: dict, n_patients: int) -> int | None:
    """The recalibration fold the form saves: the user's; a fold left at the default the form showed follows
    the chosen burn-in, window and label arrivals (:func:`favmac.recalibration.default_recalibrate`), so
    choosing a label-arrival column, a short window or a long burn-in never meets an error about a fold the
    user did not choose. ``chosen`` holds the form's values (missing keys: ``current``'s).

    >>> shown = {"recalibrate": 1000, "burn_in": 1000, "window": None}
    >>> fold_for(shown, {**shown, "label_available_column": "arrived"}, 4000), fold_for(shown, {**shown, "recalibrate": 600}, 4000)
    (None, 600)
    """
    chosen = {**current, **chosen}

    def default(s):
        return default_recalibrate(n_patients, burn_in=int(s.get("burn_in") or 0), window=s.get("window"),
                                   arrival_times=s.get("label_available_column") is not None)

    if chosen.get("recalibrate") == current.get("recalibrate") == default(current):
        return default(chosen)
    return chosen.get("recalibrate")


def is_integer_valued(arr) -> bool:
    arr = np.asarray(arr, dtype=float)
    return bool(np.all(arr == np.round(arr)))


def default_target(cmax: float, integer_cost: bool, pct: float = DEFAULT_TARGET_PCT) -> float:
    """``pct`` % of C_max to 2 decimals, moved 0.1 off an integer for integer costs (:func:`favmac.runspec.target_from_percent`)."""
    return target_from_percent(min(pct, 100.0), cmax, decimals=2, integer_cost=integer_cost)


def default_settings(n_patients: int, n_codes: int, weights: np.ndarray | None = None) -> dict:
    """Settings a new session starts with: risk-weighted TP value, FP-count cost, DEFAULT_TARGET_PCT % target."""
    settings = {
        "value_kind": "weighted_tp",
        "formula": PAPER_FORMULA,
        "cost_kind": "fp",
        "control": "expected",
        "target": 1.0,
        "delta": DEFAULT_DELTA,
        "universe": DEFAULT_UNIVERSE,
        "score": None,  # below: the default of the control and universe
        "burn_in": default_burn_in(n_patients),
        "window": None,
        "grid": default_grid(),
    }
    fold = default_recalibrate(n_patients, burn_in=settings["burn_in"])
    if fold is not None:  # the keys from_spec writes for a recalibrated run
        settings.update(recalibrate=fold, recalibration=DEFAULT_RECALIBRATION, recalibrate_by=DEFAULT_RECALIBRATE_BY)
    w = np.ones(n_codes) if weights is None else np.asarray(weights, dtype=float)
    settings["target"] = default_target(to_spec(settings, w).c_max(n_codes), True)
    settings["score"] = default_score_of(settings, w)
    return settings


def universe_options(n_codes: int) -> list[str]:
    """Universes the data allows (``full`` only for K <= 14)."""
    return [u for u in UNIVERSES if u != "full" or n_codes <= MAX_FULL_CODES]


def validate_settings(settings: dict, n_codes: int, n_patients: int, weights: np.ndarray | None = None,
                      dataset=None) -> dict:
    """Check every field (through RunSpec.validate); return a cleaned copy or raise SettingsError.

    A formula value is compiled here, so a formula error surfaces on submit. With ``dataset``
    the settings are also checked against it (``favmac.runspec.check_against_data``: a segment
    column must label every patient).
    """
    w = np.ones(n_codes) if weights is None else np.asarray(weights, dtype=float)
    spec = to_spec(settings, w).validate(n_codes=n_codes, n_patients=n_patients)
    if dataset is not None:
        check_against_data(spec, dataset)
    return from_spec(spec, validate_grid(settings.get("grid") or {}))


def adapt_settings(settings: dict, n_patients: int, n_codes: int, weights: np.ndarray, old_cmax: float | None = None,
                   old_n_patients: int | None = None) -> tuple[dict, list[str]]:
    """Fit settings to newly loaded data; returns the new settings and notes for the user.

    When C_max changes (``old_cmax`` given) the target keeps its percentage of C_max. The burn-in,
    recalibration fold, window and label delay follow the new stream together
    (:func:`favmac.data_change.adapt_stream`, the library's one rule; ``old_n_patients``: the old length).
    """
    s = dict(settings)
    notes = []
    if s["universe"] == "full" and n_codes > MAX_FULL_CODES:
        s["universe"], s["score"] = DEFAULT_UNIVERSE, default_score_of({**s, "universe": DEFAULT_UNIVERSE}, weights)
        notes.append(f"Universe set to 'ratio': 'full' allows at most {MAX_FULL_CODES} codes.")
    # burn-in, fold, window and label delay follow the data together: the library's one rule
    stream, stream_notes = adapt_stream(to_spec(s, weights), n_patients, old_n_patients=old_n_patients)
    notes += stream_notes
    before = to_spec(s, weights)
    for key in ("burn_in", "recalibrate", "recalibration", "recalibrate_by", "label_delay"):
        if getattr(stream, key) != getattr(before, key):  # only what the rule changed: other keys stay as the form keeps them
            s[key] = getattr(stream, key)
    spec = to_spec(s, weights)
    cmax = spec.c_max(n_codes)
    integer_cost = is_integer_valued(spec.cost_weights(n_codes))
    if old_cmax and old_cmax > 0 and not math.isclose(old_cmax, cmax):
        pct = target_percent(s["target"], old_cmax)
        s["target"] = default_target(cmax, integer_cost, pct=pct)
        notes.append(f"Target set to {s['target']:g}, {pct:.1f} % of the new C_max = {cmax:g} as before.")
    if not 0 < s["target"] < cmax:
        s["target"] = default_target(cmax, integer_cost)
        notes.append(f"Target set to {s['target']:g} (about {DEFAULT_TARGET_PCT:g} % of C_max = {cmax:g}).")
    return s, notes


def rescaled_target(target: float, old_cmax: float, new_cmax: float, integer_cost: bool) -> float:
    """The target in a new cost's units that keeps its percentage of C_max (Value & cost, when the
    Cost radio changes: 1.05 false flags of C_max 35 is 3 %, so 3 % of the new C_max).

    >>> rescaled_target(1.05, 35.0, 15.379, False)
    0.46
    """
    if not (old_cmax > 0 and new_cmax > 0 and math.isfinite(target)):
        return target
    return default_target(new_cmax, integer_cost, pct=target_percent(target, old_cmax))


def target_percent(target: float, cmax: float) -> float:
    return 100.0 * target / cmax if cmax > 0 else float("nan")


def settings_summary(settings: dict, cmax: float) -> list[tuple[str, str]]:
    """(label, text) rows describing the settings, for the sidebar and captions."""
    rows = [
        ("Value", VALUE_KINDS[settings["value_kind"]] + (f": {settings['formula']}" if settings["value_kind"] == "formula" else "")),
        ("Cost", COST_KINDS[settings["cost_kind"]]),
        ("Control", CONTROLS[settings["control"]]),
        ("Target c", f"{settings['target']:g} {cost_unit(settings)} per chart ({target_percent(settings['target'], cmax):.1f} % of C_max = {cmax:g})"),
    ]
    if settings["control"] == "violation":
        rows.append(("Delta", f"{settings['delta']:g}"))
    rows += [
        ("Universe", settings["universe"]),
        ("Score", settings.get("score") or default_score_of(settings)),
        ("Burn-in", f"{settings['burn_in']:,} patients"),
        ("Window", "all patients" if settings["window"] is None else f"last {settings['window']:,} patients"),
    ]
    if settings["value_kind"] == "cms_payment":
        rate = settings.get("base_rate")
        rows.append(("Payment", f"CMS-HCC {settings.get('cms_model', 'V28')} {settings.get('cms_year', '')}, default cell "
                                f"{settings.get('cms_segment', 'CNA')}, " + (f"base rate ${rate:,.0f} (dollars)" if rate is not None else "RAF units")))
    if settings.get("segment"):
        segment = settings["segment"]
        rows.append(("Segments", "per " + (segment if isinstance(segment, str) else " and per ".join(segment))))
    if settings.get("adaptive_rate"):
        rows.append(("Adaptive rate", f"γ = {settings['adaptive_rate']:g}"))
    if settings.get("recalibrate"):
        per = ", maps per segment" if settings.get("recalibrate_by") == "segment" else ""
        rows.append(("Recalibration", f"{settings.get('recalibration') or DEFAULT_RECALIBRATION} on the first {settings['recalibrate']:,} patients{per}"))
    if settings.get("label_delay") is not None:
        rows.append(("Label delay", f"{settings['label_delay']:,} patients"))
    if settings.get("label_available_column"):
        rows.append(("Labels arrive", f"as the file's {settings['label_available_column']} column says"))
    return rows


def run_key(data_key: str, spec: RunSpec, extra=None) -> str:
    """Fingerprint of a computation's inputs: the data and the run spec (weights included)."""
    fields = spec.to_dict()
    if spec.value_kind != "formula":
        fields.pop("formula")
    blob = json.dumps([data_key, list(spec.weights or ()), fields, extra], sort_keys=True, default=str)
    return content_key(blob)


def settings_to_json(settings: dict, weights_table, dataset_name: str, result=None) -> bytes:
    """The session settings and the risk weights in use as the settings JSON (``RunSpec.to_json``);
    a recalibrated run's own maps (``result``, the run the settings describe: its
    ``settings["recalibration_maps"]``, never refitted) are stored as ``recalibration_maps``."""
    spec = to_spec(settings, weights_table["weight"].to_numpy(dtype=float))
    extras = {"grid": settings["grid"]}
    maps = run_maps(result)
    if maps is not None:
        extras["recalibration_maps"] = maps
    return spec.to_json([str(c) for c in weights_table.index], dataset=dataset_name, extras=extras)


def run_maps(result) -> dict | None:
    """The recalibration maps ``result`` (a replay's) was run with, as it stored them (a dict), or None: what the
    settings file and the provenance record carry, so a restore applies exactly the run's correction."""
    if result is None:
        return None
    maps = result.settings.get("recalibration_maps")
    return None if maps is None else (maps if isinstance(maps, dict) else maps.to_dict())


def settings_from_json(raw: bytes, current: dict, codes, n_patients: int, weights=None, dataset=None) -> tuple[dict, dict | None, list[str]]:
    """Read a settings JSON (``favmac.runspec.read_settings_json``) over the current settings.

    Returns ``(settings, weights, notes)``: validated settings (fields missing from the file
    keep their current values), a {code: weight} dict when the file's weights cover the
    loaded codes (else None, with a note), and notes for the user. Raises SettingsError, also
    for a setting the ``dataset`` cannot serve (``favmac.runspec.check_against_data``).
    """
    base_weights = np.ones(len(codes)) if weights is None else np.asarray(weights, dtype=float)
    parsed = read_settings_json(raw, codes=codes, n_patients=n_patients, base=to_spec(current, base_weights), dataset=dataset)
    grid = validate_grid(restore_grid(current.get("grid", {}), parsed.extras.get("grid", {})))
    restored = dict(zip(codes, parsed.spec.weights)) if parsed.weights_restored else None
    many = [f"{t:g}" for t in parsed.spec.targets]  # a 'favmac calibrate --targets' file: the app runs one target
    notes = [f"The file holds {len(many)} targets ({', '.join(many[:10])}); the app uses the first, {many[0]} "
             "(Trade-offs compares a range of targets)."] if len(many) > 1 else []
    return from_spec(parsed.spec, grid), restored, [*parsed.notes, *notes]


FORMULA_EXAMPLE = (
    "**Worked example** (the paper's digits value, codes 1–9 and 0 counted as 10, `v` = the digit): "
    "`prod_hits((v + 5) / 10) + sum_hits((v - 5) ** 2)`. If the chosen set is {2, 7, 9} and the image "
    "truly shows 2 and 7, the hits are 2 and 7: prod = (7/10)·(12/10) = 0.84 and sum = (2−5)² + (7−5)² = 13, "
    "so V = 13.84. The proxy V̂ averages V over labels drawn from the predicted probabilities."
)


def formula_preview(formula: str, weights: np.ndarray, probs_row, labels_row, codes) -> str:
    """Evaluate ``formula`` for one patient with every code chosen; text for the form.

    Raises FormulaError with the reason when the formula is invalid.
    """
    fv = FormulaValue(formula, weights=np.asarray(weights, dtype=float))
    everything = np.ones(len(codes), dtype=bool)
    hits = [str(c) for c, y in zip(codes, np.asarray(labels_row, dtype=bool)) if y]
    v = float(fv(everything, np.asarray(labels_row, dtype=bool)))
    return f"With every code chosen for the first patient (true codes: {', '.join(hits) or 'none'}), V = {v:.4g}."

