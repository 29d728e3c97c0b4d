"""Programs: FavMac running for months in the store (create, open, predict, label, settings, timeline, audit trail)."""
import streamlit as st

from favmac.ui import auth, programs, settings_form, store as store_ui, widgets
from favmac.ui.bootstrap import page_setup
from favmac.ui.text import md
from favmac.ui.units import cost_short, threshold_label, threshold_rule, value_short

ss = page_setup("Programs")
st.title("Programs")
st.caption("A program is FavMac running for months for one team: each month's new patients get their sets from the "
           "thresholds in force, the chart reviews come back as labels and join the calibration, and every decision is "
           "on record with the threshold and settings version behind it.")


def say(level: str, text: str) -> None:
    ss.set_message("programs", level, text)


try:
    store = store_ui.user_store()
except store_ui.StoreUnavailable as err:
    st.error(md(str(err)))
    st.stop()
me = store.identity
writer = me.role == "auditor"
st.caption(f"Acting as {md(me.label)} · teams: {md(', '.join(me.teams) or 'none')} · store: "
           f"{md(programs.store_shown(store.url, signed_in=auth.auth_settings().enabled))}")
if not writer:
    st.info("You have the viewer role: you can open your teams' programs, their timelines and audit trails, but not "
            "create programs, predict, label or change settings (the store refuses those).")

listed = store.programs()
names = listed["name"].tolist()

# a deep link (/Programs?program=<name>) opens that program when it is one of the user's teams'; any other name
# gets the same message whether the program exists or not (nothing of another team's program is shown), and the
# store records the refusal with the user (store.refusals())
asked = st.query_params.get("program")
if asked is not None and asked in names:
    st.session_state["program_choice"] = ss.program_name = asked
    ss.clear_message("program_link")
elif asked is not None:
    del st.query_params["program"]  # refused once, not again on every rerun (the message stays until the user moves on)
    try:
        store.program(asked)
    except programs.PROBLEMS:
        pass
    ss.set_message("program_link", "error", f"No program named {asked[:200]!r} among your teams' programs (teams: "
                                            f"{', '.join(me.teams) or 'none'}). A program is open only to the members of "
                                            "its team.")
widgets.show_message("program_link")


def on_choose():
    for key in ("program_create", "programs", "program_link"):
        ss.clear_message(key)
    st.query_params["program"] = st.session_state["program_choice"]  # the URL is this program's deep link


# --------------------------------------------------------------------------- open / create
def on_create():
    """The form's Create button (a callback: it runs before the page, so the new program is the one opened)."""
    try:
        program, notes = programs.create_from_session(store, ss, st.session_state.get("program_new_name", ""),
                                                      st.session_state.get("program_team"))
    except programs.PROBLEMS as err:
        ss.set_message("program_create", "error", programs.explain(err))
        return
    ss.clear_message("program_create")
    ss.clear_message("program_link")
    ss.program_name = program.name
    st.session_state["program_choice"] = program.name
    st.query_params["program"] = program.name
    st.session_state["program_new_name"] = ""
    say("success", " ".join([f"Created program {program.name} (team {program.team}) with {ss.dataset.n_patients:,} patients "
                             "of history; settings version 1.", *notes]))


st.header("1 · Open or create", divider="gray")
open_col, create_col = st.columns(2, gap="large")
with open_col:
    st.markdown("**Open a program** (your teams' programs)")
    if names:
        if st.session_state.get("program_choice") not in names:  # the widget's key is dropped when another page runs
            st.session_state["program_choice"] = ss.program_name if ss.program_name in names else names[0]
        teams = dict(zip(listed["name"], listed["team"]))
        ss.program_name = st.selectbox("Program", names, key="program_choice", format_func=lambda n: f"{n} · team {teams[n]}",
                                       on_change=on_choose)
    else:
        st.caption("No program in your teams yet: create one from the current data.")
        ss.program_name = None
with create_col:
    st.markdown("**Create a program from the current data and settings**")
    if ss.has_dataset:
        st.caption(f"History: {md(ss.dataset.name)} ({ss.dataset.n_patients:,} labelled patients × {ss.dataset.n_codes} codes); "
                   "settings version 1: the session's settings (Value & cost).")
    with st.form("create_program", border=False):
        st.text_input("Name", key="program_new_name", placeholder="east-2026", max_chars=200)
        if me.teams:
            st.selectbox("Team", list(me.teams), key="program_team")
        st.form_submit_button("Create program", icon=":material/add_circle:", disabled=not writer, on_click=on_create)
    widgets.show_message("program_create")

if not ss.program_name:
    st.stop()
try:
    program = store.program(ss.program_name)
except programs.PROBLEMS as err:
    st.error(md(programs.explain(err)))
    st.stop()
settings = programs.program_settings(program)
score = program.spec.score

# --------------------------------------------------------------------------- batches
st.header(f"2 · {md(program.name)}: new patients, labels, settings", divider="gray")
st.caption(f"Team {md(program.team)} · {len(program.codes)} codes · settings version {program.version}: "
           + " · ".join(f"{label}: {md(text)}" for label, text in settings_form.settings_summary(
               settings, program.spec.c_max(len(program.codes), program.codes))))
new_col, label_col = st.columns(2, gap="large")
with new_col:
    st.markdown("**New patients** — their sets are chosen with the thresholds in force and recorded")
    batch = st.file_uploader("New patients (patient_id + one probability column per code, CSV or Parquet)",
                             type=["csv", "parquet"], key="program_new_file")
    if st.button("Predict this batch", key="program_predict", icon=":material/playlist_add_check:",
                 disabled=batch is None or not writer):
        try:
            sets = programs.predict_upload(program, batch.getvalue(), batch.name)
        except programs.PROBLEMS as err:
            say("error", programs.explain(err))
        else:
            ss.program_sets = {"program": program.name, "batch": batch.name, "csv": programs.sets_csv(sets), "n": len(sets),
                               "flagged": int(sets["n_codes"].sum()), "version": program.version}
            say("success", f"Predicted {len(sets):,} patients from {batch.name} (settings version {program.version}): "
                           f"{int(sets['n_codes'].sum()):,} codes flagged for chart review.")
    made = ss.program_sets
    if made and made["program"] == program.name:
        st.download_button(f"Download the sets of {md(made['batch'])} ({made['n']:,} patients, CSV)", made["csv"],
                           file_name=f"{program.name}_sets.csv", mime="text/csv", key="program_sets_download",
                           icon=":material/download:", on_click="ignore")
with label_col:
    st.markdown("**Labels** — chart reviews that came back (0/1 per code); they join the calibration")
    labels = st.file_uploader("Labels (patient_id + one 0/1 column per code, CSV or Parquet)", type=["csv", "parquet"],
                              key="program_labels_file")
    if st.button("Record these labels", key="program_label", icon=":material/fact_check:",
                 disabled=labels is None or not writer):
        try:
            count, total = programs.label_upload(program, labels.getvalue(), labels.name)
        except programs.PROBLEMS as err:
            say("error", programs.explain(err))
        else:
            again = total - count
            say("success", f"Recorded the labels of {count:,} patients from {labels.name}"
                           + (f" ({again:,} patients already had these labels)." if again else "."))
st.markdown("**Settings** — a new version applies to the batches after it; earlier decisions keep theirs")
if st.button(f"Record the session's settings as version {program.version + 1}", key="program_settings",
             icon=":material/tune:", disabled=not writer):
    try:
        version, notes = programs.new_version(program, ss)
    except programs.PROBLEMS as err:
        say("error", programs.explain(err))
    else:
        say("success", " ".join([f"Settings version {version} recorded for {program.name}.", *notes]))
        settings = programs.program_settings(program)
        score = program.spec.score
st.caption("The session's settings are the ones on Value & cost (shown in the sidebar).")
widgets.show_message("programs")

# --------------------------------------------------------------------------- status and timeline
st.header("3 · Status and timeline", divider="gray")
status = program.status()
widgets.tiles(programs.status_tiles(status, settings))
timeline = program.timeline()
widgets.chart(programs.timeline_figure(timeline, settings, score, status["control"]), key="program_timeline")
st.caption(f"Threshold: {md(threshold_label(settings, score))}, used by each predict batch. Realized cost: the mean "
           f"{md(cost_short(settings))} per chart of the patients labelled so far, with ± one standard error. "
           f"Value captured: {md(value_short(settings))}, summed over the labelled patients.")

# --------------------------------------------------------------------------- audit trail
st.header("4 · Audit trail", divider="gray")
trail = program.decisions()
f1, f2, f3 = st.columns([2, 1, 2])
patient = f1.text_input("Patient id contains", key="trail_patient", max_chars=200)
versions = f2.multiselect("Settings version", sorted(set(trail["version"].tolist())) if len(trail) else [], key="trail_versions")
batches = f3.multiselect("Batch", list(dict.fromkeys(trail["batch"].tolist())) if len(trail) else [], key="trail_batches")
shown = programs.filter_trail(trail, patient, versions, batches)
st.caption(f"{len(shown):,} of {len(trail):,} decisions (patients). Threshold: {md(threshold_label(settings, score))}; "
           f"realized cost in {md(cost_short(settings))}, realized value in {md(value_short(settings))}.")
view, unit_column = programs.trail_shown(shown, settings, score)
widgets.table(view, hide_index=True, height=320, column_config={
    unit_column: st.column_config.NumberColumn(unit_column, help=threshold_rule(settings, score), format="%.4g"),
    "threshold": st.column_config.NumberColumn("threshold T (score)", format="%.4g",
                                               help="The threshold on the settings' score, as the downloaded files hold it."),
    "realized_cost": st.column_config.NumberColumn(f"realized cost ({cost_short(settings)})", format="%.4g"),
    "realized_value": st.column_config.NumberColumn(f"realized value ({value_short(settings)})", format="%.4g"),
    "target": st.column_config.NumberColumn(f"target ({cost_short(settings)} per chart)", format="%.4g"),
})
d1, d2 = st.columns(2)
d1.download_button("Download the trail (CSV)", programs.trail_bytes(shown, "csv"), file_name=f"{program.name}_trail.csv",
                   mime="text/csv", key="trail_csv", icon=":material/download:", on_click="ignore")
d2.download_button("Download the trail (Parquet)", programs.trail_bytes(shown, "parquet"),
                   file_name=f"{program.name}_trail.parquet", mime="application/octet-stream", key="trail_parquet",
                   icon=":material/download:", on_click="ignore")
