"""Online session: replay the calibration stream as if patients arrived one by one."""
import time

import streamlit as st

from favmac.ui import arrivals_view, figures, groupings, guarantees, jobs, playback, recalibration_view, widgets
from favmac.ui.bootstrap import page_setup
from favmac.ui.formats import column_format
from favmac.ui.settings_form import cost_unit, value_unit
from favmac.ui.text import md
from favmac.ui.units import (amount_format, cost_per_100_label, cost_short, in_dollars, per_100_charts, target_text, threshold_label, threshold_rule, threshold_tile,
                             value_charts, value_short, value_tile)

ss = page_setup("Online session")
st.title("Online session")
widgets.require_dataset()

ds = ss.dataset
settings = ss.settings
session = ss.playback
playback.follow(session, ss.online_key())  # new data or settings: start over
result = jobs.online(ss, wait=False)  # the whole replay, computed once per data + settings; None while it runs
pending = result is None
n_steps = 0 if pending else result.n_steps

if pending:
    st.caption(f"{ds.n_patients:,} patients: replaying the stream; the controls turn on when the replay is ready.")
else:
    st.caption(recalibration_view.stream_intro(ss.settings, ds.n_patients, result.burn_in, n_steps, result.groups is not None))
    if arrivals_view.stream_caption(ss.settings):
        st.caption(arrivals_view.stream_caption(ss.settings))  # several groupings, labels that arrive later
    if recalibration_view.fold_note(ss.settings, "online"):
        st.caption(recalibration_view.fold_note(ss.settings, "online") + " " + arrivals_view.fold_caption(ss.settings))
widgets.show_settings_line()

controls = st.columns([1, 1, 1, 1, 3])
if session.playing:
    controls[0].button("Pause", key="pause", icon=":material/pause:", on_click=playback.pause, args=(session,), width="stretch",
                       disabled=pending)
else:
    controls[0].button("Play", key="play", icon=":material/play_arrow:", type="primary", width="stretch", disabled=pending,
                       on_click=lambda: playback.play(session, n_steps, time.monotonic()))
controls[1].button("Step", key="step", icon=":material/skip_next:", on_click=playback.step, args=(session, n_steps), width="stretch",
                   disabled=pending)
controls[2].button("Reset", key="reset", icon=":material/replay:", on_click=playback.reset, args=(session,), width="stretch",
                   disabled=pending)
controls[3].button("End", key="to_end", icon=":material/last_page:", on_click=playback.to_end, args=(session, n_steps), width="stretch",
                   disabled=pending, help="Show the whole stream at once")
controls[4].select_slider("Speed (patients per second)", options=list(playback.SPEEDS),
                          value=session.speed if session.speed in playback.SPEEDS else 100,
                          key="speed", on_change=lambda: playback.set_speed(session, st.session_state["speed"]))
if pending:
    jobs.online(ss)  # waits a moment; a longer replay shows its progress here and stops the page
    st.rerun()  # the replay is ready: draw the page again with the controls on
series = playback.running_series(result)


@st.fragment(run_every=playback.playback_interval(session.speed) if session.playing else None)
def live_view():
    """Only this part reruns while playing: advance, then redraw tiles, charts and table."""
    if playback.tick(session, n_steps, time.monotonic()):
        st.rerun()  # whole page, so the button turns back into Play and the timer stops
    position = session.position
    m = playback.session_metrics(series, position)
    score = ss.spec().score
    if m["segment"] is None:
        label, shown_threshold, why = threshold_tile(m["threshold"], settings, score)
    else:  # the tile names the segment, so it shows that segment's own threshold (not another grouping's that binds)
        label, shown_threshold, why = threshold_tile(m["segment_threshold"], settings, score)
        binds = "" if m["segment_threshold"] == m["threshold"] else (
            f" The patient's set used {threshold_tile(m['threshold'], settings, score)[1]}: another grouping's threshold, "
            "the smallest of its groups', binds.")
        label, why = (f"{label} ({md(m['segment'])})",
                      f"The latest patient's segment, {md(m['segment'])}: each segment has its own threshold. {why}{binds}")
    value_label, value_shown, value_help = value_tile(m["mean_value"], settings)
    widgets.tiles([
        (f"Patients seen (of {n_steps:,})", f"{m['seen']:,}", None),
        (label, shown_threshold, why),
        (cost_per_100_label(settings), "—" if position == 0 else
         ("$" if in_dollars(settings) and settings["cost_kind"] == "cms_unsupported" else "") + per_100_charts(m["mean_cost"]),
         f"Running mean cost per chart × 100; the target is {target_text(settings)}."),
        (value_label, "—" if position == 0 else value_shown, value_help),
        ("Charts over the target", "—" if position == 0 else f"{m['violation_rate']:.1%}",
         f"Share of patients whose cost exceeded c = {settings['target']:g} {cost_unit(settings)}")])
    if result.adaptive_targets is not None:
        guarantees.show_adaptive_tiles(result, position, st.columns([2, 2, 3]))  # two tiles, wide enough for their labels
        guarantees.delay_warning(settings.get("adaptive_rate"), guarantees.result_lag(result))  # gamma too fast for the lag
    groupings.show_delay_tiles(result, position)
    st.progress(position / max(n_steps, 1), text=f"Stream position {result.burn_in + position:,} of {ds.n_patients:,}")
    if position == 0:
        st.info("Press **Play** (or **Step**) to start the stream.")
        return
    shown = series.iloc[playback.downsample_index(position)]
    grouping = groupings.choose_grouping(result, st.columns([1, 2])[0])  # several groupings: the threshold and per-group charts split by this one
    # per segment the threshold chart has a line per segment: full width, its legend beside it; else three charts a row
    charts = [st.container(), *st.columns(2)] if result.groups is not None else st.columns(3)
    threshold_fig = figures.threshold_figure(groupings.threshold_series(shown, result, grouping), cost_short(settings), ss.spec().score, value_unit(settings))
    widgets.chart(arrivals_view.mark_fold(groupings.threshold_title(threshold_fig, result, grouping), settings), key="threshold_chart", where=charts[0])
    widgets.chart(arrivals_view.mark_fold(figures.cost_figure(shown, settings["control"], settings["target"], settings["delta"], cost_unit(settings)), settings), key="cost_chart", where=charts[1])
    widgets.chart(arrivals_view.mark_fold(figures.value_figure(shown, value_unit(settings), value_charts(settings)), settings), key="value_chart", where=charts[2])
    extra = st.columns(2)
    if result.adaptive_targets is not None:
        widgets.chart(arrivals_view.mark_fold(guarantees.adaptive_figure(result, position, cost_unit(settings)), settings), key="adaptive_chart", where=extra[0])
    segment_slot = extra[1] if result.adaptive_targets is not None else extra[0]
    if result.groups is not None and segment_slot.checkbox("Split the cost curve by segment", value=True, key="split_segments"):
        widgets.chart(groupings.grouping_cost_figure(result, position, settings, grouping),
                      key="segment_chart", where=segment_slot)
    groupings.show_delay_chart(result, position)
    st.markdown("**Most recent patients** (newest first)")
    recent = playback.recent_patients(result, ds.label_array(), position)
    score = ss.spec().score
    recent["threshold"] = figures.threshold_plot_values(recent["threshold"], score)  # as the tile and the chart show it
    recent = groupings.with_binding(recent, result, position)  # several groupings: each patient's groups, which one binds
    # the patient's rule beside its id and group, short unit headers, code lists 160 px: the table fits the page
    first = [c for c in ("patient_id", "segment", "groups (binding)", "threshold") if c in recent.columns]
    widgets.table(recent, hide_index=True, key="recent_table", column_order=first + [c for c in recent.columns if c not in first],
                  column_config={"selected_codes": st.column_config.TextColumn("selected codes", width=160),
                                 "true_codes": st.column_config.TextColumn("true codes", width=160),
                                 "value": st.column_config.NumberColumn(f"value ({value_short(settings)})",
                                                                        format=amount_format(recent["value"], True) if in_dollars(settings) else "%.3f"),
                                 "cost": st.column_config.NumberColumn(f"cost ({cost_short(settings)})", format=amount_format(recent["cost"], True)
                                                                       if cost_short(settings) == "unsupported $" else column_format(recent["cost"], at_most=3)),
                                 "threshold": st.column_config.NumberColumn(threshold_label(settings, score), help=threshold_rule(settings, score),
                                                                            format=amount_format(recent["threshold"], True) if in_dollars(settings) and score == "price"
                                                                            else column_format(recent["threshold"], at_most=4))})


live_view()
