"""Export: chosen sets as CSV, the settings as JSON, and restoring settings from JSON."""
import streamlit as st

from favmac.ui import actions, arrivals_view, groupings, guarantees, jobs, recalibration_view, settings_form, widgets
from favmac.ui.bootstrap import page_setup
from favmac.ui.formats import blank_missing, column_format
from favmac.ui.playback import format_threshold
from favmac.ui.text import md
from favmac.ui.units import cost_short, in_dollars, threshold_label, threshold_rule, threshold_text, value_short

ss = page_setup("Export")
st.title("Export")
widgets.require_dataset()

ds = ss.dataset
settings = ss.settings
spec = ss.spec()
run = jobs.online(ss) if settings.get("recalibrate") else None  # a recalibrated run's own maps, never refitted
maps = settings_form.run_maps(run)  # None without recalibration
widgets.show_settings_line()
sets_area = st.container()  # filled last: the settings below never wait for the export files

st.subheader("Settings")
left, right = st.columns(2, gap="large")
with left:
    st.download_button("Download settings (JSON)", guarantees.settings_with_provenance(
                           settings_form.settings_to_json(settings, ss.weights, ds.name, run), ds, spec, ss.weights_source, maps),
                       file_name="favmac_settings.json", mime="application/json", key="download_settings",
                       icon=":material/settings:", on_click="ignore")
    st.caption("The value, cost, target and risk weights in use. Upload the file here later to restore them.")
with right:
    def on_settings_upload():
        file = st.session_state.get("upload_settings")
        if file is not None:
            actions.apply_settings_json(ss, file.getvalue(), file.name)

    st.file_uploader("Restore settings from JSON", type=["json"], key="upload_settings", on_change=on_settings_upload)
    widgets.show_message("settings_json")

with sets_area:
    st.caption("Text cells that a spreadsheet would run as formulas (starting with = + - @) are prefixed with ' so they stay text.")
    start = ds.n_patients <= jobs.AUTO_EXPORT_PATIENTS
    if not start:
        start = st.button(f"Prepare the export files ({ds.n_patients:,} patients)", key="prepare_exports", type="primary",
                          icon=":material/build:")
    files = jobs.exports(ss, start=start)
    if files is None:
        st.info("The export files are built when you ask for them (large data); you can switch pages while they are prepared.")
        st.stop()
    # previews put the numbers before the long descriptions; the CSV keeps its documented column order
    money, thresholds = in_dollars(settings) and "$%,.0f", files["calibration_preview"]["threshold"]  # values in dollars: whole dollars
    PREVIEW = dict(hide_index=True, column_order=["patient_id", "segment", "codes", "n_codes", "expected_value", "cost_proxy", "threshold",
                                                  "realized_value", "realized_cost", "method", "target", "delta", "universe", "score", "descriptions", "note"],
                   column_config={"descriptions": st.column_config.TextColumn(width="large"),
                                  "codes": st.column_config.TextColumn(width=160),  # the chosen codes, not cut after two (as the Online session's)
                                  "realized_cost": st.column_config.NumberColumn(f"realized cost ({cost_short(settings)})",
                                                                                 format=widgets.number_format(files["calibration_preview"]["realized_cost"])),
                                  "method": st.column_config.TextColumn(width="medium"),
                                  "expected_value": st.column_config.NumberColumn("expected value V̂", format=money if money else "%.3f"),
                                  "cost_proxy": st.column_config.NumberColumn("cost proxy Ĉ", format="%.3f"),
                                  "realized_value": st.column_config.NumberColumn(f"realized {'payment' if settings['value_kind'] == 'cms_payment' else 'value'} "
                                                                                  f"({value_short(settings)})",
                                                                                  format=money or widgets.number_format(files["calibration_preview"]["realized_value"])),
                                  # T in dollars is about 1e-3: significant digits, not 0.0009 on every row
                                  "threshold": st.column_config.NumberColumn("threshold T", format=widgets.number_format(thresholds) if in_dollars(settings)
                                                                             else column_format(thresholds, at_most=4))})

    st.subheader("Chosen sets on the calibration stream")
    st.download_button("Download calibration-stream sets (CSV)", files["calibration"], file_name="favmac_calibration_sets.csv",
                       mime="text/csv", key="download_sets_csv", icon=":material/download:", on_click="ignore")
    after = "the recalibration fold and the burn-in" if settings.get("recalibrate") else "the burn-in"
    st.caption(f"{files['n_calibration']:,} patients after {after}; each set was chosen before that patient's codes were known, "
               + ("with its segment's threshold, learned from the earlier patients of that segment." if settings.get("segment")
                  else "with the threshold learned from every patient before it.") + " First 20 rows:")
    if arrivals_view.stream_caption(settings):  # labels that arrive later: "every patient before it" had not all arrived
        st.caption(arrivals_view.stream_caption(settings))
    widgets.table(blank_missing(files["calibration_preview"]), **PREVIEW)

    groupings.show_grouping_thresholds(jobs.online(ss), settings, spec.score)
    st.subheader("Chosen sets for new patients")
    if recalibration_view.fold_note(settings, "export"):
        st.caption(recalibration_view.fold_note(settings, "export"))
    if files.get("new_refused"):
        st.warning(md(files["new_refused"]), icon=":material/block:")
    elif files["new"] is None:
        st.info("No new patients loaded; upload them on the Data page.")
    else:
        st.download_button("Download new-patient sets (CSV)", files["new"], file_name="favmac_new_patient_sets.csv",
                           mime="text/csv", key="download_new_csv", icon=":material/download:", on_click="ignore")
        per_segment = groupings.new_patient_thresholds(jobs.online(ss), ss.new_patients, settings, spec.score)
        if per_segment is None:
            st.caption(f"{files['n_new']:,} patients from {md(ss.new_patients_name)}; threshold T = "
                       f"{format_threshold(files['threshold'])} calibrated on all {ds.n_patients - (settings.get('recalibrate') or 0):,} labelled patients"
                       f"{' after the recalibration fold' if settings.get('recalibrate') else ''}: "
                       f"{threshold_text(files['threshold'], settings, spec.score)}. First 20 rows:")
        else:
            st.caption(f"{files['n_new']:,} patients from {md(ss.new_patients_name)}. {groupings.new_patients_rule(settings)}")
            widgets.table(per_segment, hide_index=True, key="segment_thresholds",
                          column_order=["segment", "rule", "calibration patients", "new patients", "threshold"],  # the rule first, T (math) last
                          column_config={"segment": st.column_config.TextColumn(width="small"),
                                         "threshold": st.column_config.NumberColumn("threshold T", format=widgets.number_format(per_segment["threshold"]),
                                                                             width="small"),
                                         "calibration patients": st.column_config.NumberColumn(format="%,d", width="small"),
                                         "new patients": st.column_config.NumberColumn(format="%,d", width="small"),
                                         "rule": st.column_config.TextColumn(threshold_label(settings, spec.score),
                                                                             help=threshold_rule(settings, spec.score))})
            st.caption("First 20 rows:")
        widgets.table(blank_missing(files["new_preview"]), **PREVIEW)

    st.subheader("Provenance")
    outputs = {"favmac_calibration_sets.csv": files["calibration"]}
    if files["new"] is not None:
        outputs["favmac_new_patient_sets.csv"] = files["new"]
    st.download_button("Download provenance (JSON)", guarantees.provenance_bytes(ds, spec, ss.weights_source, outputs, ss.new_patients, maps),
                       file_name="favmac_provenance.json", mime="application/json", key="download_provenance",
                       icon=":material/verified_user:", on_click="ignore")
    st.caption("SHA-256 of the data files and of each CSV above, the settings, the CMS-HCC model, year and segment when used, "
               "and the package versions: what is needed to reproduce and defend these results. The CSV files stay plain tables.")
