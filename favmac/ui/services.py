"""Pure functions behind the FavMac Studio pages.

Nothing here imports Streamlit: every function takes plain values (numpy arrays, pandas
frames, the ``settings`` dict) and returns plain values, so the pages stay thin and this
module is unit-tested without a browser. The Streamlit side (caching, session state,
progress bars) lives in ``favmac.ui.state``.

The ``settings`` dict (one per browser session) has these keys:

=============  ==============================================================
value_kind     "tp" (TP count), "weighted_tp" (risk-weighted TP), "formula"
formula        value formula text (used when value_kind == "formula")
cost_kind      "fp" (FP count) or "weighted_fp" (risk-weighted FP)
control        "expected" (mean cost <= target) or "violation" (P(cost > target) <= delta)
target         target cost c, in the cost's own units
delta          violation level (used when control == "violation")
universe       "ratio", "prob", "value" or "full" (full only when K <= 14)
burn_in        patients used for calibration only at the head of the stream
window         rolling calibration window in patients, or None for all patients
grid           trade-off grid: {"low_pct", "high_pct", "n_targets", "methods"}
=============  ==============================================================
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from favmac.functions import AdditiveCost, AdditiveValue, FormulaValue
from favmac.result import join_codes
from favmac.universe import MAX_FULL_CODES, UNIVERSES, check_universe

VALUE_KINDS = {"tp": "TP count", "weighted_tp": "Risk-weighted TP", "formula": "Custom formula"}
COST_KINDS = {"fp": "FP count", "weighted_fp": "Risk-weighted FP"}
CONTROLS = {"expected": "Expected cost", "violation": "Violation probability"}
UNIVERSE_LABELS = {
    "ratio": "ratio — p·v / ((1−p)·w), FavMac's default",
    "prob": "prob — by probability (FPCP's order)",
    "value": "value — by p·v",
    "full": "full — all 2^K subsets",
}
PAPER_FORMULA = "prod_hits((v + 5) / 10) + sum_hits((v - 5) ** 2)"

FAVMAC_METHODS = {"FavMac (ratio)": "ratio", "FavMac (value)": "value", "FavMac (prob)": "prob"}
BASELINE_METHODS = ("ClassWise", "InnerSet", "FPCP", "CRC", "RCPS")
ALL_METHODS = (*FAVMAC_METHODS, *BASELINE_METHODS)

SETTINGS_FORMAT = "favmac-studio-settings"
SETTINGS_VERSION = 1


class SettingsError(ValueError):
    """Settings that cannot be used; the message says which field and why."""


# --------------------------------------------------------------------------- samples


@dataclass(frozen=True)
class SampleSpec:
    """A bundled sample dataset: its label and the files in ``sample_data/``."""

    label: str
    calibration: str
    new_patients: str
    weights: str


SAMPLES = {
    "hcc": SampleSpec(
        "HCC cohort (synthetic, 35 codes)",
        "hcc_calibration.csv",
        "hcc_new_patients.csv",
        "hcc_weights.csv",
    ),
    "digits": SampleSpec(
        "Digits (superimposed, 10 codes)",
        "digits_calibration.csv",
        "digits_new_patients.csv",
        "digits_weights.csv",
    ),
}
DEFAULT_SAMPLE = "hcc"


def sample_dir() -> Path:
    """The repository's ``sample_data/`` folder."""
    return Path(__file__).resolve().parents[2] / "sample_data"


class NamedBytes:
    """Uploaded bytes with a file name, the file-like shape ``favmac.io`` reads.

    Error messages from ``favmac.io`` name the file, so the name travels with the bytes.
    """

    def __init__(self, data: bytes, name: str):
        self.data = bytes(data)
        self.name = name

    def getvalue(self) -> bytes:
        return self.data

    def read(self, *_args) -> bytes:
        return self.data


def content_key(*parts: bytes | str | None) -> str:
    """A short hex fingerprint of file contents (None parts count as empty)."""
    digest = hashlib.sha256()
    for part in parts:
        if part is None:
            part = b""
        if isinstance(part, str):
            part = part.encode()
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.hexdigest()[:16]


# --------------------------------------------------------------------------- weights


def unit_weights(codes) -> pd.DataFrame:
    """Weight 1 for every code (the table shown when no weights were given)."""
    return pd.DataFrame({"weight": 1.0, "description": ""}, index=pd.Index(list(codes), name="code"))


def weight_array(weights: pd.DataFrame, codes) -> np.ndarray:
    """The weights of ``codes`` in data order, as floats; raises SettingsError for gaps."""
    missing = [c for c in codes if c not in weights.index]
    if missing:
        raise SettingsError(f"no risk weight for code(s) {', '.join(map(str, missing[:5]))}; upload weights for every code")
    arr = weights.loc[list(codes), "weight"].to_numpy(dtype=float)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        bad = [c for c, w in zip(codes, arr) if not (math.isfinite(w) and w >= 0)]
        raise SettingsError(f"risk weights must be finite and >= 0; check code(s) {', '.join(map(str, bad[:5]))}")
    return arr


def descriptions(weights: pd.DataFrame, codes) -> list[str]:
    """Description of each code (empty text when the weights table has none)."""
    if "description" not in weights.columns:
        return ["" for _ in codes]
    col = weights["description"]
    return ["" if c not in col.index or pd.isna(col.get(c)) else str(col.get(c)) for c in codes]


def weights_for_codes(weights: pd.DataFrame | None, codes) -> tuple[pd.DataFrame, str | None]:
    """Keep ``weights`` if it covers every code (reordered); otherwise unit weights and a note."""
    if weights is not None and all(c in weights.index for c in codes):
        return weights.loc[list(codes)].copy(), None
    return unit_weights(codes), "The loaded weights do not cover these codes; every code now weighs 1 until you upload weights."


# --------------------------------------------------------------------------- settings


def is_integer_valued(arr) -> bool:
    arr = np.asarray(arr, dtype=float)
    return bool(np.all(arr == np.round(arr)))


def cost_weights(settings: dict, weights: np.ndarray) -> np.ndarray:
    """Per-code cost weights w_k for the chosen cost (ones for an FP count)."""
    return np.ones_like(weights, dtype=float) if settings["cost_kind"] == "fp" else np.asarray(weights, dtype=float)


def c_max(settings: dict, weights: np.ndarray) -> float:
    """Largest cost any set can have, C_max, for the chosen cost."""
    return math.fsum(cost_weights(settings, weights))


def cost_unit(settings: dict) -> str:
    """Unit of the chosen cost, for axis titles and captions."""
    return "false positives" if settings["cost_kind"] == "fp" else "risk-weight units"


def value_unit(settings: dict) -> str:
    return {"tp": "true positives", "weighted_tp": "risk-weight units", "formula": "formula units"}[settings["value_kind"]]


# A new session's target: 3 % of C_max, about one false flag per patient on the 35-code HCC
# sample (10 %, the paper's smallest target, allows 3.5 and flags mostly wrong codes there).
DEFAULT_TARGET_PCT = 3.0


def default_target(cmax: float, integer_cost: bool, pct: float = DEFAULT_TARGET_PCT) -> float:
    """``pct`` % of C_max, moved 0.1 off an integer for integer costs (the paper's c = k + 0.1)."""
    target = round(cmax * pct / 100.0, 2)
    if integer_cost and float(target).is_integer():
        target += 0.1
    return max(target, 0.01)


def default_settings(n_patients: int, n_codes: int, weights: np.ndarray | None = None) -> dict:
    """Settings a new session starts with: risk-weighted TP value, FP-count cost, DEFAULT_TARGET_PCT % target."""
    settings = {
        "value_kind": "weighted_tp",
        "formula": PAPER_FORMULA,
        "cost_kind": "fp",
        "control": "expected",
        "target": 1.0,
        "delta": 0.1,
        "universe": "ratio",
        "burn_in": default_burn_in(n_patients),
        "window": None,
        "grid": {"low_pct": 5.0, "high_pct": 50.0, "n_targets": 10, "methods": list(default_methods())},
    }
    w = np.ones(n_codes) if weights is None else np.asarray(weights, dtype=float)
    settings["target"] = default_target(c_max(settings, w), True)
    return settings


def default_burn_in(n_patients: int) -> int:
    """A third of the stream, at most the paper's 1000 patients."""
    return int(min(1000, max(1, n_patients // 3)))


def default_methods() -> tuple[str, ...]:
    return ("FavMac (ratio)", "FavMac (value)", "FavMac (prob)", "ClassWise", "InnerSet", "CRC", "RCPS")


def universe_options(n_codes: int) -> list[str]:
    """Universes the data allows (``full`` only for K <= 14)."""
    return [u for u in UNIVERSES if u != "full" or n_codes <= MAX_FULL_CODES]


def build_value(settings: dict, weights: np.ndarray):
    """The value function the settings describe (raises FormulaError for a bad formula)."""
    kind = settings["value_kind"]
    if kind == "tp":
        return AdditiveValue(None)
    if kind == "weighted_tp":
        return AdditiveValue(np.asarray(weights, dtype=float))
    return FormulaValue(settings["formula"], weights=np.asarray(weights, dtype=float))


def build_cost(settings: dict, weights: np.ndarray) -> AdditiveCost:
    return AdditiveCost(None if settings["cost_kind"] == "fp" else np.asarray(weights, dtype=float))


def value_max(value, n_codes: int) -> float:
    """Largest value any set can have (all codes chosen and present); scales value to 0–100."""
    everything = np.ones(n_codes, dtype=bool)
    return float(value(everything, everything))


def validate_settings(settings: dict, n_codes: int, n_patients: int, weights: np.ndarray | None = None) -> dict:
    """Check every field; return a cleaned copy or raise SettingsError naming the field.

    A formula value is compiled here, so a formula error surfaces on submit.
    """
    s = dict(settings)
    if s.get("value_kind") not in VALUE_KINDS:
        raise SettingsError(f"value_kind must be one of {', '.join(VALUE_KINDS)}; got {s.get('value_kind')!r}")
    if s.get("cost_kind") not in COST_KINDS:
        raise SettingsError(f"cost_kind must be one of {', '.join(COST_KINDS)}; got {s.get('cost_kind')!r}")
    if s.get("control") not in CONTROLS:
        raise SettingsError(f"control must be one of {', '.join(CONTROLS)}; got {s.get('control')!r}")
    s["formula"] = str(s.get("formula") or "")
    target = _number(s.get("target"), "target")
    if not target > 0:
        raise SettingsError(f"target must be > 0 (cost units); got {target}")
    s["target"] = target
    delta = _number(s.get("delta", 0.1), "delta")
    if not 0 < delta < 1:
        raise SettingsError(f"delta must be between 0 and 1 (e.g. 0.1); got {delta}")
    s["delta"] = delta
    try:
        check_universe(s.get("universe"), n_codes)
    except ValueError as err:
        raise SettingsError(str(err)) from None
    burn_in = _integer(s.get("burn_in"), "burn_in")
    if not 0 <= burn_in < n_patients:
        raise SettingsError(f"burn_in must be between 0 and {n_patients - 1} (the stream has {n_patients} patients); got {burn_in}")
    s["burn_in"] = burn_in
    window = s.get("window")
    if window in (None, "", 0):
        s["window"] = None
    else:
        window = _integer(window, "window")
        if window < 1:
            raise SettingsError(f"window must be a positive number of patients, or empty for no window; got {window}")
        s["window"] = window
    s["grid"] = _validate_grid(s.get("grid") or {})
    w = np.ones(n_codes) if weights is None else np.asarray(weights, dtype=float)
    if s["value_kind"] == "formula":
        build_value(s, w)  # raises FormulaError with the reason
    return s


def _validate_grid(grid: dict) -> dict:
    g = {"low_pct": 5.0, "high_pct": 50.0, "n_targets": 10, "methods": list(default_methods())}
    g.update({k: v for k, v in grid.items() if k in g})
    low, high = _number(g["low_pct"], "grid.low_pct"), _number(g["high_pct"], "grid.high_pct")
    if not 0 < low < high <= 100:
        raise SettingsError(f"trade-off targets must satisfy 0 < lowest < highest <= 100 % of C_max; got {low} and {high}")
    n = _integer(g["n_targets"], "grid.n_targets")
    if not 2 <= n <= 50:
        raise SettingsError(f"number of trade-off targets must be between 2 and 50; got {n}")
    methods = [m for m in g["methods"] if m in ALL_METHODS]
    unknown = [m for m in g["methods"] if m not in ALL_METHODS]
    if unknown:
        raise SettingsError(f"unknown method(s) {', '.join(map(str, unknown))}; choose from {', '.join(ALL_METHODS)}")
    return {"low_pct": low, "high_pct": high, "n_targets": n, "methods": methods}


def _number(x, name: str) -> float:
    if isinstance(x, bool):
        raise SettingsError(f"{name} must be a number; got {x!r}")
    try:
        out = float(x)
    except (TypeError, ValueError):
        raise SettingsError(f"{name} must be a number; got {x!r}") from None
    if not math.isfinite(out):
        raise SettingsError(f"{name} must be finite; got {x!r}")
    return out


def _integer(x, name: str) -> int:
    out = _number(x, name)
    if not out.is_integer():
        raise SettingsError(f"{name} must be a whole number; got {x!r}")
    return int(out)


def adapt_settings(settings: dict, n_patients: int, n_codes: int, weights: np.ndarray, old_cmax: float | None = None) -> tuple[dict, list[str]]:
    """Fit settings to newly loaded data; returns the new settings and notes for the user.

    When C_max changes (``old_cmax`` given) the target keeps its percentage of C_max.
    """
    s = dict(settings)
    notes = []
    if s["universe"] == "full" and n_codes > MAX_FULL_CODES:
        s["universe"] = "ratio"
        notes.append(f"Universe set to 'ratio': 'full' allows at most {MAX_FULL_CODES} codes.")
    if not 0 <= s["burn_in"] < n_patients:
        s["burn_in"] = default_burn_in(n_patients)
        notes.append(f"Burn-in set to {s['burn_in']} patients to fit the new stream.")
    cmax = c_max(s, weights)
    integer_cost = is_integer_valued(cost_weights(s, weights))
    if old_cmax and old_cmax > 0 and not math.isclose(old_cmax, cmax):
        pct = target_percent(s["target"], old_cmax)
        s["target"] = default_target(cmax, integer_cost, pct=pct)
        notes.append(f"Target set to {s['target']:g}, {pct:.1f} % of the new C_max = {cmax:g} as before.")
    if not 0 < s["target"] < cmax:
        s["target"] = default_target(cmax, integer_cost)
        notes.append(f"Target set to {s['target']:g} (about {DEFAULT_TARGET_PCT:g} % of C_max = {cmax:g}).")
    return s, notes


def settings_summary(settings: dict, cmax: float) -> list[tuple[str, str]]:
    """(label, text) rows describing the settings, for the sidebar and exports."""
    rows = [
        ("Value", VALUE_KINDS[settings["value_kind"]] + (f": {settings['formula']}" if settings["value_kind"] == "formula" else "")),
        ("Cost", COST_KINDS[settings["cost_kind"]]),
        ("Control", CONTROLS[settings["control"]]),
        ("Target c", f"{settings['target']:g} {cost_unit(settings)} ({target_percent(settings['target'], cmax):.1f} % of C_max = {cmax:g})"),
    ]
    if settings["control"] == "violation":
        rows.append(("Delta", f"{settings['delta']:g}"))
    rows += [
        ("Universe", settings["universe"]),
        ("Burn-in", f"{settings['burn_in']} patients"),
        ("Window", "all patients" if settings["window"] is None else f"last {settings['window']} patients"),
    ]
    return rows


def settings_text(settings: dict) -> str:
    """One-line description of the settings for the export's ``settings`` column."""
    keys = ("value_kind", "formula", "cost_kind", "control", "target", "delta", "universe", "burn_in", "window")
    parts = []
    for k in keys:
        if k == "formula" and settings["value_kind"] != "formula":
            continue
        if k == "delta" and settings["control"] != "violation":
            continue
        parts.append(f"{k}={settings[k]}")
    return "; ".join(parts)


def target_percent(target: float, cmax: float) -> float:
    return 100.0 * target / cmax if cmax > 0 else float("nan")


def run_key(data_key: str, weights: np.ndarray, settings: dict, extra=None) -> str:
    """Fingerprint of a computation's inputs (data, weights, settings that matter)."""
    relevant = {k: settings[k] for k in ("value_kind", "cost_kind", "control", "target", "delta", "universe", "burn_in", "window")}
    if settings["value_kind"] == "formula":
        relevant["formula"] = settings["formula"]
    blob = json.dumps([data_key, np.asarray(weights, dtype=float).tolist(), relevant, extra], sort_keys=True, default=str)
    return content_key(blob)


def settings_to_json(settings: dict, weights: pd.DataFrame, dataset_name: str) -> bytes:
    """The session settings (and the risk weights in use) as a JSON document."""
    doc = {
        "format": SETTINGS_FORMAT,
        "version": SETTINGS_VERSION,
        "dataset": dataset_name,
        "settings": {k: settings[k] for k in ("value_kind", "formula", "cost_kind", "control", "target", "delta", "universe", "burn_in", "window", "grid")},
        "weights": {str(code): float(w) for code, w in weights["weight"].items()},
    }
    return json.dumps(doc, indent=2).encode()


def settings_from_json(raw: bytes, current: dict, codes, n_patients: int) -> tuple[dict, dict | None, list[str]]:
    """Read a settings JSON written by ``settings_to_json``.

    Returns ``(settings, weights, notes)``: validated settings (fields missing from the file
    keep their current values), a {code: weight} dict when the file's weights cover the
    loaded codes (else None, with a note), and notes for the user. Raises SettingsError.
    """
    try:
        doc = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise SettingsError("the settings file is not UTF-8 text; upload the .json file FavMac Studio downloaded") from None
    except json.JSONDecodeError as err:
        raise SettingsError(f"the settings file is not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})") from None
    if not isinstance(doc, dict) or doc.get("format") != SETTINGS_FORMAT:
        raise SettingsError(f"this JSON is not a FavMac Studio settings file (expected \"format\": \"{SETTINGS_FORMAT}\")")
    if doc.get("version") != SETTINGS_VERSION:
        raise SettingsError(f"unsupported settings version {doc.get('version')!r}; this app reads version {SETTINGS_VERSION}")
    given = doc.get("settings")
    if not isinstance(given, dict):
        raise SettingsError('the settings file has no "settings" object')
    notes = []
    unknown = sorted(set(given) - set(current))
    if unknown:
        notes.append(f"Ignored unknown field(s): {', '.join(unknown)}.")
    merged = dict(current)
    merged.update({k: v for k, v in given.items() if k in current})
    weights = None
    raw_weights = doc.get("weights")
    if raw_weights is not None:
        if not isinstance(raw_weights, dict):
            raise SettingsError('"weights" must map each code to its weight')
        missing = [c for c in codes if str(c) not in raw_weights]
        if missing:
            notes.append(f"Weights in the file do not cover code(s) {', '.join(map(str, missing[:5]))}; kept the current weights.")
        else:
            weights = {c: _number(raw_weights[str(c)], f"weights.{c}") for c in codes}
            bad = [c for c, w in weights.items() if w < 0]
            if bad:
                raise SettingsError(f"weights must be >= 0; check {', '.join(map(str, bad[:5]))}")
    w = np.ones(len(codes)) if weights is None else np.array([weights[c] for c in codes])
    merged = validate_settings(merged, len(codes), n_patients, w)
    return merged, weights, notes


# --------------------------------------------------------------------------- data views


def prevalence_table(probs: np.ndarray, labels: np.ndarray, codes, descs=None) -> pd.DataFrame:
    """Per-code observed prevalence and mean predicted probability, most prevalent first."""
    frame = pd.DataFrame(
        {
            "code": list(codes),
            "description": list(descs) if descs is not None else ["" for _ in codes],
            "prevalence": np.asarray(labels, dtype=float).mean(axis=0),
            "mean_prob": np.asarray(probs, dtype=float).mean(axis=0),
        }
    )
    return frame.sort_values(["prevalence", "code"], ascending=[False, True], kind="stable").reset_index(drop=True)


def reliability_bins(probs: np.ndarray, labels: np.ndarray, n_bins: int = 10) -> pd.DataFrame:
    """Reliability diagram data: pooled over codes, equal-width probability bins.

    Columns: bin_low, bin_high, mean_prob (mean predicted probability in the bin),
    observed (fraction of those code slots truly present), count. Empty bins are dropped.
    """
    p = np.asarray(probs, dtype=float).ravel()
    y = np.asarray(labels, dtype=float).ravel()
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    idx = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, n_bins - 1)
    count = np.bincount(idx, minlength=n_bins)
    sum_p = np.bincount(idx, weights=p, minlength=n_bins)
    sum_y = np.bincount(idx, weights=y, minlength=n_bins)
    keep = count > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        frame = pd.DataFrame(
            {
                "bin_low": edges[:-1],
                "bin_high": edges[1:],
                "mean_prob": sum_p / count,
                "observed": sum_y / count,
                "count": count,
            }
        )
    return frame[keep].reset_index(drop=True)


# --------------------------------------------------------------------------- online session


def running_series(result, target_index: int = 0) -> pd.DataFrame:
    """Per-step series of one target of a replay, with running means.

    Columns: step, position, patient_id, threshold, cost, value, violation (cost > target),
    mean_cost, mean_value, violation_rate (running over steps 0..s).
    """
    cost = np.asarray(result.cost[target_index], dtype=float)
    value = np.asarray(result.value[target_index], dtype=float)
    target = float(np.asarray(result.targets)[target_index])
    n_steps = cost.shape[0]
    seen = np.arange(1, n_steps + 1)
    violation = cost > target
    ids = result.patient_ids if result.patient_ids is not None else np.arange(result.burn_in, result.burn_in + n_steps)
    return pd.DataFrame(
        {
            "step": np.arange(n_steps),
            "position": np.arange(n_steps) + result.burn_in,
            "patient_id": np.asarray(ids, dtype=object),
            "threshold": np.asarray(result.thresholds[target_index], dtype=float),
            "cost": cost,
            "value": value,
            "violation": violation,
            "mean_cost": np.cumsum(cost) / seen,
            "mean_value": np.cumsum(value) / seen,
            "violation_rate": np.cumsum(violation) / seen,
        }
    )


def downsample_index(n: int, max_points: int = 2000) -> np.ndarray:
    """At most ``max_points`` evenly spread indices of 0..n-1, always keeping the first and last."""
    if n <= max_points:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, max_points).round().astype(np.int64))


def playback_interval(speed: float) -> float:
    """Seconds between chart updates while playing at ``speed`` patients per second.

    At most two updates per second; ``advance_position`` then moves by the time that passed.
    """
    return 1.0 / min(max(float(speed), 1.0), 2.0)


def advance_position(position: int, n_steps: int, speed: float, elapsed: float) -> int:
    """Stream position after ``elapsed`` seconds of playback at ``speed`` patients per second.

    Playback follows the wall clock, so slow redraws skip patients rather than slowing down;
    at least one patient per update, at most two seconds' worth (after a stall), never past the end.
    """
    elapsed = min(max(float(elapsed), 0.0), 2.0)
    return int(min(n_steps, position + max(1, round(float(speed) * elapsed))))


def codes_text(mask: np.ndarray, codes) -> str:
    """``;``-joined codes where ``mask`` is true (the same joiner as ReplayResult.to_frame)."""
    return ";".join(str(c) for c, m in zip(codes, np.asarray(mask, dtype=bool)) if m)


def first_informative_step(result, labels: np.ndarray, probs: np.ndarray | None = None) -> int:
    """The first predicted patient whose chosen set confidently (p >= 0.5) catches a true code,
    else the first that catches one at all, else 0: a better first look on the Patients page
    than a patient whose probabilities are all near zero."""
    caught = result.selected[0] & labels[result.burn_in :].astype(bool)
    if probs is not None:
        confident = (caught & (probs[result.burn_in :] >= 0.5)).any(axis=1)
        if confident.any():
            return int(np.argmax(confident))
    hits = caught.any(axis=1)
    return int(np.argmax(hits)) if hits.any() else 0


def recent_patients(result, labels: np.ndarray, position: int, n: int = 10, target_index: int = 0) -> pd.DataFrame:
    """The last ``n`` patients predicted up to step ``position`` (exclusive), newest first.

    ``labels`` is the full (N, K) label matrix of the stream the result was replayed on.
    """
    codes = result.codes if result.codes is not None else [str(k) for k in range(result.selected.shape[2])]
    ids = result.patient_ids if result.patient_ids is not None else np.arange(result.burn_in, result.burn_in + result.n_steps)
    rows = []
    for step in range(position - 1, max(position - n, 0) - 1, -1):
        rows.append(
            {
                "patient_id": str(ids[step]),
                "selected_codes": codes_text(result.selected[target_index, step], codes),
                "true_codes": codes_text(labels[result.burn_in + step], codes),
                "value": float(result.value[target_index, step]),
                "cost": float(result.cost[target_index, step]),
                "threshold": float(result.thresholds[target_index, step]),
            }
        )
    return pd.DataFrame(rows, columns=["patient_id", "selected_codes", "true_codes", "value", "cost", "threshold"])


def format_threshold(t: float) -> str:
    if math.isnan(t):
        return "—"
    if math.isinf(t):
        return "+∞" if t > 0 else "−∞"
    return f"{t:.3g}"


def session_metrics(series: pd.DataFrame, position: int) -> dict:
    """Numbers for the metric tiles after ``position`` patients have been predicted."""
    if position <= 0:
        return {"seen": 0, "threshold": float("nan"), "mean_cost": float("nan"), "mean_value": float("nan"), "violation_rate": float("nan")}
    row = series.iloc[position - 1]
    return {
        "seen": int(position),
        "threshold": float(row["threshold"]),
        "mean_cost": float(row["mean_cost"]),
        "mean_value": float(row["mean_value"]),
        "violation_rate": float(row["violation_rate"]),
    }


def run_online(probs, labels, codes, patient_ids, weights, settings: dict, progress=None):
    """The FavMac replay behind the online session: one target, the settings' control."""
    from favmac.replay import replay

    value, cost = build_value(settings, weights), build_cost(settings, weights)
    return replay(
        probs,
        labels,
        value,
        cost,
        [settings["target"]],
        delta=settings["delta"] if settings["control"] == "violation" else None,
        universe=settings["universe"],
        burn_in=settings["burn_in"],
        window=settings["window"],
        codes=list(codes),
        patient_ids=np.asarray(patient_ids, dtype=object),
        method=f"FavMac ({settings['universe']})",
        progress=progress,
    )


def estimate_replay_seconds(probs, labels, weights, settings: dict, n_sample: int = 12) -> float:
    """Rough time for ``run_online`` on the whole stream, from a replay of its first patients.

    Used to warn before a slow run (a custom formula's Monte Carlo proxy is costly per patient).
    """
    import time

    n_patients = len(probs)
    n = min(n_sample, n_patients)
    trial = {**settings, "burn_in": min(settings["burn_in"], n // 2), "window": None}
    start = time.perf_counter()
    run_online(probs[:n], labels[:n], [str(k) for k in range(probs.shape[1])], np.arange(n).astype(str), weights, trial)
    return (time.perf_counter() - start) * n_patients / max(n, 1)


# --------------------------------------------------------------------------- trade-offs


def tradeoff_targets(cmax: float, low_pct: float, high_pct: float, n_targets: int, integer_cost: bool) -> np.ndarray:
    """``n_targets`` targets from ``low_pct`` to ``high_pct`` % of C_max, in cost units.

    For integer costs a target that lands on an integer is moved up by 0.1, as the paper does,
    to stay clear of exact ties.
    """
    targets = np.round(np.linspace(low_pct, high_pct, int(n_targets)) / 100.0 * cmax, 6)
    if integer_cost:
        targets = np.where(targets == np.round(targets), targets + 0.1, targets)
    return np.unique(targets)


BASELINE_FUNCTIONS = {"ClassWise": "classwise", "InnerSet": "inner_set", "FPCP": "fpcp", "CRC": "crc", "RCPS": "rcps"}


def method_applicability(settings: dict) -> dict[str, str | None]:
    """For each method: None if it applies to the settings' control, else the reason it does not.

    FavMac applies to both controls; the baselines follow ``favmac.baselines.BASELINE_CONTROLS``.
    """
    from favmac.baselines import BASELINE_CONTROLS

    reasons = {name: None for name in ALL_METHODS}
    for name, func in BASELINE_FUNCTIONS.items():
        controls = BASELINE_CONTROLS.get(func, ("expected", "violation"))
        if settings["control"] not in controls:
            reasons[name] = f"{name} supports {' and '.join(CONTROLS[c].lower() for c in controls)} control only"
    return reasons


def run_method(method: str, probs, labels, codes, patient_ids, weights, settings: dict, targets, progress=None):
    """One method's replay over ``targets`` (FavMac universes via ``replay``, else a baseline).

    Trade-offs use every calibration patient (no rolling window) so all methods see the same data.
    """
    from favmac import baselines
    from favmac.replay import replay

    value, cost = build_value(settings, weights), build_cost(settings, weights)
    delta = settings["delta"] if settings["control"] == "violation" else None
    common = dict(burn_in=settings["burn_in"], codes=list(codes), patient_ids=np.asarray(patient_ids, dtype=object))
    if method in FAVMAC_METHODS:
        return replay(probs, labels, value, cost, targets, delta=delta, universe=FAVMAC_METHODS[method], method=method, progress=progress, **common)
    func = getattr(baselines, BASELINE_FUNCTIONS[method])
    return func(probs, labels, value, cost, targets, delta=delta, **common)


def run_tradeoffs(probs, labels, codes, patient_ids, weights, settings: dict, targets, methods, progress=None) -> dict:
    """Replay every applicable method over ``targets`` and summarise.

    Returns {"points": one row per (method, target) (see ``tradeoff_points``), "table":
    ``favmac.metrics.compare_methods`` on the 0–100 scales, "skipped": {method: reason},
    "targets": the targets}. Raw results are not kept (they can be large).
    """
    from favmac.metrics import compare_methods, summarize

    reasons = method_applicability(settings)
    runnable = [m for m in methods if reasons.get(m) is None]
    skipped = {m: reasons[m] for m in methods if reasons.get(m) is not None}
    value = build_value(settings, weights)
    cmax = c_max(settings, weights)
    vscale = value_scale(value, len(codes))
    summaries, results = {}, []
    for i, method in enumerate(runnable):
        def part(fraction, i=i):
            if progress is not None:
                progress((i + float(fraction)) / len(runnable))

        result = run_method(method, probs, labels, codes, patient_ids, weights, settings, targets, progress=part)
        part(1.0)
        summaries[method] = summarize(result)
        results.append(result)
    table = compare_methods(results, value_scale=vscale, cost_scale=100.0 / cmax if cmax > 0 else None) if results else None
    predicted = np.asarray(labels)[settings["burn_in"]:].astype(bool)
    oracle = float(np.mean(value(predicted, predicted))) if len(predicted) else float("nan")
    return {
        "points": tradeoff_points(summaries, cmax, vscale),
        "table": comparison_display(table, oracle * vscale),
        "skipped": skipped,
        "targets": np.asarray(targets, dtype=float),
    }


COMPARISON_COLUMNS = {
    "method": "Method",
    "mean_value": "Value (0–100)",
    "captured": "Value captured (% of true codes' value)",
    "mean_cost": "Realized cost (% of C_max)",
    "excess_cost": "Excess cost (% of C_max)",
    "violation_freq": "Violation frequency (%)",
}


def comparison_display(table: pd.DataFrame | None, oracle_value: float = float("nan")) -> pd.DataFrame:
    """``compare_methods`` output as the page shows it: one run per method, so no std columns.

    ``oracle_value`` is the mean value of choosing exactly the true codes, on the same scale
    as ``table["mean_value"]``; the captured share is mean value / oracle value. Violation
    frequency is turned from a share into a percentage.
    """
    if table is None or table.empty:
        return pd.DataFrame(columns=list(COMPARISON_COLUMNS.values()))
    out = table.copy()
    out["captured"] = 100.0 * out["mean_value"] / oracle_value if oracle_value > 0 else np.nan
    out = out[list(COMPARISON_COLUMNS)]
    out["violation_freq"] = 100.0 * out["violation_freq"]
    return out.rename(columns=COMPARISON_COLUMNS).reset_index(drop=True)


def value_scale(value, n_codes: int) -> float:
    vmax = value_max(value, n_codes)
    return 100.0 / vmax if vmax > 0 else 1.0


def tradeoff_points(summaries: dict[str, pd.DataFrame], cmax: float, vscale: float) -> pd.DataFrame:
    """Stack per-method ``favmac.metrics.summarize`` tables into one plotting table.

    Adds: method, target_pct (target as % of C_max), value_pct (mean value on the 0–100 scale).
    """
    frames = []
    for method, summary in summaries.items():
        frame = summary.copy()
        frame["method"] = method
        frame["target_pct"] = 100.0 * frame["target"] / cmax if cmax > 0 else np.nan
        frame["value_pct"] = frame["mean_value"] * vscale
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=["method", "target", "mean_value", "mean_cost", "excess_cost", "violation_freq", "target_pct", "value_pct"])
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------- patients & exports


def proxies(value, cost, selected: np.ndarray, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vhat and Chat of each patient's chosen set; ``selected`` and ``probs`` are (N, K).

    Additive proxies are one matrix product; a formula value's Monte Carlo proxy is per patient.
    """
    selected = np.asarray(selected, dtype=bool)
    probs = np.asarray(probs, dtype=float)
    chat = np.asarray(cost.proxy(selected, probs), dtype=float)
    if getattr(value, "is_additive", False):
        vhat = np.asarray(value.proxy(selected, probs), dtype=float)
    else:
        vhat = np.array([float(value.proxy(s, p)) for s, p in zip(selected, probs)], dtype=float)
    return vhat, chat


def chosen_sets_frame(patient_ids, probs, selected, thresholds, codes, descs, value, cost, method: str, settings: dict, labels=None) -> pd.DataFrame:
    """The export table: one row per patient with the chosen codes and their proxies.

    Columns: patient_id, codes, descriptions, expected_value (Vhat), cost_proxy (Chat),
    threshold, method, settings; plus realized_value and realized_cost when ``labels`` are given.
    """
    selected = np.asarray(selected, dtype=bool)
    vhat, chat = proxies(value, cost, selected, probs)
    desc_arr = list(descs)
    frame = pd.DataFrame(
        {
            "patient_id": [str(i) for i in patient_ids],
            "codes": join_codes(selected, [str(c) for c in codes]),
            "descriptions": join_codes(selected, desc_arr, sep="; "),
            "expected_value": vhat,
            "cost_proxy": chat,
            "threshold": np.broadcast_to(np.asarray(thresholds, dtype=float), (selected.shape[0],)),
        }
    )
    if labels is not None:
        frame["realized_value"] = np.asarray(value(selected, labels), dtype=float)
        frame["realized_cost"] = np.asarray(cost(selected, labels), dtype=float)
    frame["method"] = method
    frame["settings"] = settings_text(settings)
    return frame


def calibration_export(result, probs, labels, descs, value, cost, settings: dict, target_index: int = 0) -> pd.DataFrame:
    """Chosen sets of the replayed calibration stream (patients after the burn-in)."""
    start = result.burn_in
    ids = result.patient_ids if result.patient_ids is not None else np.arange(start, start + result.n_steps)
    codes = result.codes if result.codes is not None else [str(k) for k in range(result.selected.shape[2])]
    return chosen_sets_frame(
        ids,
        probs[start:],
        result.selected[target_index],
        result.thresholds[target_index],
        codes,
        descs,
        value,
        cost,
        result.method,
        settings,
        labels=labels[start:],
    )


def new_patients_export(new_probs: pd.DataFrame, result, descs, value, cost, settings: dict, target_index: int = 0) -> pd.DataFrame:
    """Chosen sets for unlabelled patients with the threshold calibrated on the whole stream."""
    from favmac.replay import predict_with_threshold

    probs = new_probs.to_numpy(dtype=float)
    threshold = float(result.final_thresholds[target_index])
    selected = predict_with_threshold(probs, value, cost, threshold, universe=settings["universe"])
    codes = [str(c) for c in new_probs.columns]
    return chosen_sets_frame(new_probs.index, probs, selected, threshold, codes, descs, value, cost, result.method, settings)


def patient_codes(probs_row, labels_row, selected_row, codes, weights_df: pd.DataFrame, order=None) -> pd.DataFrame:
    """One row per code of one patient, for the patient bar chart.

    Columns: code, description, prob, weight, selected, present (None when unlabelled),
    status (one of STATUS_ORDER). Rows follow ``order`` (code indices) if given.
    """
    probs_row = np.asarray(probs_row, dtype=float)
    selected_row = np.asarray(selected_row, dtype=bool)
    present = None if labels_row is None else np.asarray(labels_row, dtype=bool)
    status = []
    for k in range(len(codes)):
        if present is None:
            status.append(STATUS_SELECTED if selected_row[k] else STATUS_NOT_SELECTED)
        elif selected_row[k]:
            status.append(STATUS_TP if present[k] else STATUS_FP)
        else:
            status.append(STATUS_FN if present[k] else STATUS_TN)
    frame = pd.DataFrame(
        {
            "code": [str(c) for c in codes],
            "description": descriptions(weights_df, codes),
            "prob": probs_row,
            "weight": weights_df.loc[list(codes), "weight"].to_numpy(dtype=float),
            "selected": selected_row,
            "present": [None] * len(codes) if present is None else present,
            "status": status,
        }
    )
    if order is not None:
        frame = frame.iloc[list(order)].reset_index(drop=True)
    return frame


STATUS_TP = "Chosen · present"
STATUS_FP = "Chosen · absent (false flag)"
STATUS_FN = "Not chosen · present (missed)"
STATUS_TN = "Not chosen · absent"
STATUS_SELECTED = "Chosen"
STATUS_NOT_SELECTED = "Not chosen"
STATUS_ORDER = (STATUS_TP, STATUS_FP, STATUS_FN, STATUS_TN, STATUS_SELECTED, STATUS_NOT_SELECTED)


def greedy_cut(explain: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """Mark where ``threshold`` cuts a greedy order (``FavMac.explain`` output).

    The chosen set is the longest prefix whose cumulative cost proxy stays below the
    threshold, so ``selected`` is recomputed as ``chat < threshold`` for the given threshold.
    """
    frame = explain.copy()
    frame["selected"] = frame["chat"].to_numpy(dtype=float) < threshold
    return frame


def patient_summary(selected_row, probs_row, labels_row, value, cost) -> dict:
    """Vhat, Chat and (when labelled) realized V and C of one patient's chosen set."""
    sel = np.asarray(selected_row, dtype=bool)[None, :]
    vhat, chat = proxies(value, cost, sel, np.asarray(probs_row, dtype=float)[None, :])
    out = {"n_selected": int(sel.sum()), "vhat": float(vhat[0]), "chat": float(chat[0]), "value": None, "cost": None}
    if labels_row is not None:
        out["value"] = float(np.asarray(value(sel[0], labels_row)))
        out["cost"] = float(np.asarray(cost(sel[0], labels_row)))
    return out


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

