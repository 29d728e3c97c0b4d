"""The Programs page's logic (``pages/8_Programs.py`` only lays it out): programs in the store, as the
session's user (:mod:`favmac.ui.store`; access is checked by the store itself, :mod:`favmac.access`).

* :func:`create_from_session` — a program whose history is the session's calibration data, with the
  session's current (validated) settings;
* :func:`predict_upload` / :func:`label_upload` — a new-patients file (the Data page's layouts, read by
  :mod:`favmac.ui.parsing`) and a labels file (the probabilities layout with 0/1 values) sent to a program;
* :func:`new_version` — the session's settings as the program's next settings version;
* :func:`timeline_figure`, :func:`status_tiles` — the program's timeline and status in the user's units;
* :func:`filter_trail`, :func:`trail_bytes`, :func:`sets_csv` — the audit trail, filtered, and the
  files the page offers (CSV with formula cells and bidi/format characters neutralized, or Parquet);
* :func:`store_shown` — how the page names the store: its URL in local mode, only its kind when users sign in.

Bad input is one message (:func:`explain`) naming the batch, row and column (the store's DataError),
the settings field, or the refusal (AccessDenied: a viewer may not write); never a traceback.
"""
from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from favmac import io as fio
from favmac.access import AccessDenied
from favmac.functions import FormulaError
from favmac.io import to_safe_csv
from favmac.runspec import SettingsError
from favmac.store import ProgramNotFound, StoreError
from favmac.store.members import dataset_members
from favmac.store.state import segment_columns
from favmac.ui import figures, parsing, settings_form, units
from favmac.ui.store import store_problem, store_shown, without_url
from favmac.ui.samples import NamedBytes
from favmac.ui.session import Session
from favmac.ui.text import plain_html, show_bidi

__all__ = ["PROBLEMS", "create_from_session", "explain", "filter_trail", "label_upload", "new_version",
           "predict_upload", "program_settings", "read_labels", "sets_csv", "status_tiles", "store_shown",
           "timeline_figure", "trail_bytes", "trail_shown"]

#: The errors a program action reports as a message (the page shows :func:`explain` of them).
PROBLEMS = (fio.DataError, SettingsError, FormulaError, AccessDenied, StoreError, ProgramNotFound, ValueError)


def explain(err: Exception, *, signed_in: bool | None = None) -> str:
    """The message for a refused program action; the store named as :func:`favmac.ui.store.store_shown` names
    it (in sign-in mode, ``signed_in``, default the server's mode: its kind, never its URL)."""
    if isinstance(err, AccessDenied):
        return f"Refused by the store: {err} Ask your team's administrator for the auditor role to change programs."
    if isinstance(err, ProgramNotFound):
        return f"{without_url(str(err), signed_in=signed_in)}."
    if isinstance(err, StoreError):  # the store cannot be used (its reason names hosts and paths)
        return store_problem(err, signed_in=signed_in)
    return str(err)


# --------------------------------------------------------------------------- creating a program


def program_spec(ss: Session, history: int):
    """The session's settings as a program of ``history`` labelled patients runs them (labels arrive as label
    events, so the replay's label-arrival settings are left out; an "auto" fold is resolved for the
    history) and the notes on what changed."""
    spec = ss.spec()
    notes = []
    if spec.label_delay is not None or spec.label_available_column is not None:
        spec = spec.replace(label_delay=None, label_available_column=None)
        notes.append("In a program labels arrive when you upload them, so the settings' label arrivals are not used.")
    return spec.with_default_fold(history), notes


def create_from_session(store, ss: Session, name: str, team: str | None):
    """A program named ``name`` of ``team`` whose history is the session's calibration data (every
    patient labelled) and whose version 1 is the session's settings. Returns (program, notes)."""
    dataset = ss.dataset
    if dataset is None or not dataset.has_labels:
        raise ValueError("Load labelled calibration data on the Data page first: it becomes the program's history.")
    name = str(name or "").strip()
    if not name:
        raise ValueError("Name the program (e.g. east-2026).")
    spec, notes = program_spec(ss, dataset.n_patients)
    program = store.create_program(name, spec, dataset.patient_ids, dataset.prob_array(), dataset.label_array(),
                                   codes=list(dataset.codes), members=dataset_members(dataset), team=team)
    return program, notes


# --------------------------------------------------------------------------- batches


def _check_codes(program, ss: Session | None = None) -> None:
    if ss is not None and ss.has_dataset and list(ss.dataset.codes) != list(program.codes):
        raise ValueError(f"The session's data has other codes than the program {program.name!r} "
                         f"({len(ss.dataset.codes)} vs {len(program.codes)}); load data with the program's codes on the "
                         "Data page to use its settings.")


def predict_upload(program, data: bytes, file_name: str):
    """Send a new-patients file (the Data page's layouts: ``patient_id`` + one probability column per code,
    or a wide file; grouping columns, ``cms_cell``, known codes beside them) to ``program``; its sets."""
    columns = segment_columns(program.spec)
    frame = parsing.parse_new_patients(bytes(data), file_name, tuple(program.codes), tuple(columns))
    members = {str(k): np.asarray(v, dtype=object) for k, v in (frame.attrs.get("groupings") or {}).items()}
    found = frame.attrs.get("members") or {}
    if found.get("cells") is not None:
        members["cells"] = found["cells"]
    if found.get("known") is not None:
        members["known"] = found["known"]
    return program.predict(frame.index.to_numpy(dtype=object), frame.to_numpy(dtype=float), members=members or None,
                           batch=file_name)


def read_labels(data: bytes, file_name: str, codes) -> pd.DataFrame:
    """A labels file (``patient_id`` + one 0/1 column per code, the Data page's labels layout), its columns in
    the program's code order; a DataError naming the file otherwise."""
    frame = fio.read_labels(NamedBytes(bytes(data), file_name), name=file_name)
    columns = [str(c) for c in frame.columns]
    missing = [c for c in codes if c not in columns]
    extra = [c for c in columns if c not in codes]
    if missing or extra:
        parts = [f"missing {', '.join(missing[:5])}" if missing else "", f"not the program's {', '.join(extra[:5])}" if extra else ""]
        raise fio.DataError("the labels' codes differ from the program's: " + "; ".join(p for p in parts if p) + ".",
                            file=file_name, row=1, fix=f"Give exactly the program's {len(codes)} codes as 0/1 columns.")
    return frame[list(codes)]


def label_upload(program, data: bytes, file_name: str) -> tuple[int, int]:
    """Send a labels file to ``program``; (patients newly labelled, patients in the file)."""
    frame = read_labels(data, file_name, program.codes)
    count = program.label(frame.index.to_numpy(dtype=object), frame.to_numpy(), batch=file_name)
    return count, len(frame)


def new_version(program, ss: Session) -> tuple[int, list[str]]:
    """The session's current settings as the program's next settings version; (version, notes)."""
    _check_codes(program, ss)
    spec, notes = program_spec(ss, program.status()["history"])
    return program.update_settings(spec), notes


def sets_csv(frame: pd.DataFrame) -> bytes:
    """A batch's sets as CSV: codes ";"-joined, formula cells and bidi characters neutralized."""
    out = frame.copy()
    if "codes" in out:
        out["codes"] = [";".join(map(str, c)) for c in out["codes"]]
    return to_safe_csv(_bidi_visible(out), index=False)


# --------------------------------------------------------------------------- views


def program_settings(program) -> dict:
    """The settings form's dict of the program's current version (for the units of its numbers)."""
    return settings_form.from_spec(program.spec, {})


def _fmt(x: float, digits: int = 3) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:,.{digits}g}" if abs(x) < 1000 else f"{x:,.0f}"


def status_tiles(status: dict, settings: dict) -> list[tuple[str, str, str]]:
    """(label, value, help) tiles of a program's status, each with its unit."""
    cost = units.cost_unit(settings)
    value = units.value_unit(settings)
    if status["control"] == "expected":
        realized = (f"Realized {cost} per chart", f"{_fmt(status['realized'])} ± {_fmt(status['standard_error'], 2)}",
                    f"Mean {cost} per chart of the labelled predicted patients, ± one standard error; target "
                    f"{_fmt(status['target'])} {cost} per chart.")
        target = ("Target", f"{_fmt(status['target'])} {cost} per chart", "The settings' target in force (version "
                  f"{status['version']}).")
    else:
        realized = ("Violation rate", f"{_fmt(100 * status['realized'])} % ± {_fmt(100 * status['standard_error'], 2)} %",
                    f"Share of labelled predicted charts whose {cost} exceeded the cost target, ± one standard error.")
        target = ("Allowed violation rate", f"{_fmt(100 * status['target'])} %", f"δ of settings version {status['version']}.")
    if not status["labelled"]:  # nothing to measure yet
        realized = (realized[0], "no labels yet", f"Measured once labels of predicted patients arrive ({cost} per chart).")
    share = status.get("value_share", math.nan)
    return [
        ("Patients predicted", f"{status['predicted']:,} patients", f"Plus {status['history']:,} patients of history."),
        ("Labels pending", f"{status['pending']:,} patients", f"{status['labelled']:,} patients labelled so far."),
        realized,
        target,
        (f"Value captured ({value})", _fmt(status["value_captured"]),
         f"Of {_fmt(status['value_available'])} {value} that the labelled patients' confirmed codes hold"
         + (f" ({100 * share:.1f} %)." if not math.isnan(share) else ".")),
    ]


def timeline_figure(timeline: pd.DataFrame, settings: dict, score: str, control: str) -> go.Figure:
    """Four panels over the program's events: the threshold used by each predict batch, the realized cost
    (or violation rate) against the target with its ± one-standard-error band, the labels pending and
    the value captured so far."""
    cost, value = units.cost_unit(settings), units.value_unit(settings)
    expected = control == "expected"
    titles = (f"Threshold ({units.threshold_label(settings, score).lower()})",
              f"Realized {cost} per chart vs target" if expected else "Violation rate vs allowed rate",
              "Labels pending (patients)", f"Value captured ({value})")
    fig = make_subplots(rows=2, cols=2, subplot_titles=titles, horizontal_spacing=0.12, vertical_spacing=0.2)
    x = timeline["seq"].to_numpy() if len(timeline) else np.zeros(0)
    hover = [f"event {s}: {k} · {b}" for s, k, b in zip(timeline.get("seq", []), timeline.get("kind", []),
                                                         timeline.get("batch", []))]
    hover = [plain_html(h) for h in hover]  # batch names are file names: user text
    predict = (timeline["kind"] == "predict").to_numpy() if len(timeline) else np.zeros(0, dtype=bool)
    palette = figures.OKABE_ITO
    if predict.any():
        lo = figures.threshold_plot_values(timeline["threshold_min"].to_numpy()[predict], score)
        hi = figures.threshold_plot_values(timeline["threshold_max"].to_numpy()[predict], score)
        xs = x[predict]
        if not np.allclose(lo, hi, equal_nan=True):
            fig.add_trace(go.Scatter(x=xs, y=hi, mode="lines", line={"width": 0}, showlegend=False, hoverinfo="skip"),
                          row=1, col=1)
            fig.add_trace(go.Scatter(x=xs, y=lo, mode="lines", line={"width": 0}, fill="tonexty",
                                     fillcolor="rgba(0,114,178,0.2)", name="range over groups", hoverinfo="skip"),
                          row=1, col=1)
        fig.add_trace(go.Scatter(x=xs, y=np.where(np.isnan(lo), hi, lo), mode="lines+markers", name="threshold used",
                                 line={"color": palette["blue"]}, text=[h for h, p in zip(hover, predict) if p],
                                 hovertemplate="%{text}<br>threshold %{y:.4g}<extra></extra>"), row=1, col=1)
    if expected:
        mean = timeline["mean_cost"].to_numpy(dtype=float) if len(timeline) else np.zeros(0)
        se = timeline["cost_se"].to_numpy(dtype=float) if len(timeline) else np.zeros(0)
        # the target in force at each event: measured with the labels, else the predict batches', else the settings'
        target = (timeline["target_cost"].astype(float).fillna(timeline["target"].astype(float)).ffill().bfill()
                  .fillna(float(settings.get("target", np.nan))).to_numpy(dtype=float)) if len(timeline) else np.zeros(0)
        target_name = f"target ({cost} per chart)"
    else:
        mean = timeline["violation_rate"].to_numpy(dtype=float) if len(timeline) else np.zeros(0)
        m = timeline["labelled"].to_numpy(dtype=float) if len(timeline) else np.zeros(0)
        with np.errstate(invalid="ignore", divide="ignore"):
            se = np.where(m > 1, np.sqrt(mean * (1 - mean) / m), np.nan)
        target = np.full(len(mean), float(settings.get("delta", np.nan)))
        target_name = "allowed violation rate δ"
    band = np.isfinite(se)
    if band.any():
        fig.add_trace(go.Scatter(x=x[band], y=(mean + se)[band], mode="lines", line={"width": 0}, showlegend=False,
                                 hoverinfo="skip"), row=1, col=2)
        fig.add_trace(go.Scatter(x=x[band], y=(mean - se)[band], mode="lines", line={"width": 0}, fill="tonexty",
                                 fillcolor="rgba(230,159,0,0.25)", name="± 1 standard error", hoverinfo="skip"),
                      row=1, col=2)
    fig.add_trace(go.Scatter(x=x, y=mean, mode="lines+markers", name="realized" if expected else "violation rate",
                             line={"color": palette["orange"]}, text=hover,
                             hovertemplate="%{text}<br>realized %{y:.4g}<extra></extra>"), row=1, col=2)
    fig.add_trace(go.Scatter(x=x, y=target, mode="lines+markers", name=target_name, marker={"size": 4},
                             line={"color": palette["black"], "dash": "dash"},
                             hovertemplate="target %{y:.4g}<extra></extra>"),
                  row=1, col=2)
    pending = timeline["pending"].to_numpy() if len(timeline) else np.zeros(0)
    fig.add_trace(go.Scatter(x=x, y=pending, mode="lines+markers", name="labels pending", line={"color": palette["vermillion"],
                                                                                                 "shape": "hv"},
                             text=hover, hovertemplate="%{text}<br>%{y:,} patients pending<extra></extra>"), row=2, col=1)
    captured = timeline["value_captured"].to_numpy(dtype=float) if len(timeline) else np.zeros(0)
    fig.add_trace(go.Scatter(x=x, y=captured, mode="lines+markers", name="value captured",
                             line={"color": palette["bluish_green"], "shape": "hv"}, text=hover,
                             hovertemplate="%{text}<br>%{y:,.4g} " + value + "<extra></extra>"), row=2, col=2)
    fig.update_layout(height=680, margin={"l": 60, "r": 20, "t": 70, "b": 120}, hovermode="closest",
                      legend={"orientation": "h", "yanchor": "top", "y": -0.14, "xanchor": "left", "x": 0},
                      title={"text": "Program timeline, by event", "x": 0, "xanchor": "left"})
    span = [float(x.min()) - 0.5, float(x.max()) + 0.5] if len(x) else None  # the four panels on one event axis
    for row, col, y_title in ((1, 1, units.threshold_label(settings, score)),
                              (1, 2, f"{cost} per chart" if expected else "share of charts"),
                              (2, 1, "patients"), (2, 2, value)):
        fig.update_xaxes(title_text="event number (settings, predict and label batches)", row=row, col=col, tickformat=",",
                         range=span, dtick=max(1, round(len(x) / 10)) if len(x) else None)
        fig.update_yaxes(title_text=y_title, row=row, col=col, tickformat="," if row == 2 else None)
    return fig


def trail_shown(frame: pd.DataFrame, settings: dict, score: str) -> tuple[pd.DataFrame, str]:
    """The trail as the page shows it: beside the raw threshold T (what the files hold), the threshold in the
    user's units (the timeline's: value per false flag under the price score); (frame, that column's name)."""
    name = units.threshold_label(settings, score)
    out = frame.copy()
    if "threshold" in out:
        out.insert(out.columns.get_loc("threshold"), name, figures.threshold_plot_values(out["threshold"].to_numpy(dtype=float),
                                                                                         score))
    return out, name


def filter_trail(frame: pd.DataFrame, patient: str = "", versions=None, batches=None) -> pd.DataFrame:
    """The audit trail's rows whose patient id contains ``patient`` (plain text, case-insensitive), of the
    settings ``versions`` and the ``batches`` chosen (None: all)."""
    out = frame
    text = str(patient or "").strip()
    if text:
        out = out[out["patient_id"].astype(str).str.contains(text, case=False, regex=False)]
    if versions:
        out = out[out["version"].isin(list(versions))]
    if batches:
        out = out[out["batch"].isin(list(batches))]
    return out


def _bidi_visible(frame: pd.DataFrame) -> pd.DataFrame:
    """Text cells with direction-control and invisible format characters made visible ("[U+202E]", as the
    pages show them): a CSV opened in a spreadsheet shows what the cell holds, in order."""
    out = frame.copy()
    for column in out.columns:
        if pd.api.types.is_object_dtype(out[column]) or pd.api.types.is_string_dtype(out[column]):
            out[column] = [show_bidi(v) if isinstance(v, str) else v for v in out[column]]
    return out


def trail_bytes(frame: pd.DataFrame, kind: str) -> bytes:
    """The trail as a file: "csv" (formula cells and bidi/format characters neutralized) or "parquet"."""
    if kind == "csv":
        return to_safe_csv(_bidi_visible(frame), index=False)
    if kind == "parquet":
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        return buffer.getvalue()
    raise ValueError(f"kind: csv or parquet; got {kind!r}")
