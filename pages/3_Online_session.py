"""Online session: replay the calibration stream as if patients arrived one by one."""
import time

import streamlit as st

from favmac.ui import figures, services, state, widgets
from favmac.ui.bootstrap import page_setup

page_setup("Online session")
st.title("Online session")
widgets.require_dataset()

ds = state.dataset()
settings = state.settings()
result = state.online_result()  # the whole replay, computed once per data + settings
series = services.running_series(result)
n_steps = result.n_steps
if st.session_state["session"].get("key") != state.online_key():  # new data or settings: start over
    st.session_state["session"].update(position=0, playing=False, key=state.online_key())

SPEEDS = [1, 5, 20, 100, 500, 2000, 10000]


def _session() -> dict:
    return st.session_state["session"]


def play():
    session = _session()
    if session["position"] >= n_steps:
        session["position"] = 0
    session["playing"] = True
    session["last_tick"] = time.monotonic()


def pause():
    session = _session()
    session["playing"] = False


def step():
    session = _session()
    session["playing"] = False
    session["position"] = min(n_steps, session["position"] + 1)


def reset():
    session = _session()
    session.update(position=0, playing=False)


def to_end():
    session = _session()
    session.update(position=n_steps, playing=False)


def on_speed():
    session = _session()
    session["speed"] = st.session_state["speed"]


st.caption(
    f"{ds.n_patients:,} patients: the first {result.burn_in:,} only calibrate (burn-in); each of the next {n_steps:,} gets a set "
    "chosen with the threshold learned from everyone before it, then its true codes join the calibration data."
)
widgets.show_settings_line()

session = _session()
controls = st.columns([1, 1, 1, 1, 3])
if session["playing"]:
    controls[0].button("Pause", key="pause", icon=":material/pause:", on_click=pause, width="stretch")
else:
    controls[0].button("Play", key="play", icon=":material/play_arrow:", on_click=play, type="primary", width="stretch")
controls[1].button("Step", key="step", icon=":material/skip_next:", on_click=step, width="stretch")
controls[2].button("Reset", key="reset", icon=":material/replay:", on_click=reset, width="stretch")
controls[3].button("End", key="to_end", icon=":material/last_page:", on_click=to_end, width="stretch", help="Show the whole stream at once")
controls[4].select_slider("Speed (patients per second)", options=SPEEDS, value=session["speed"] if session["speed"] in SPEEDS else 100,
                          key="speed", on_change=on_speed)

interval = services.playback_interval(session["speed"])


@st.fragment(run_every=interval if session["playing"] else None)
def live_view():
    """Only this part reruns while playing: advance, then redraw tiles, charts and table."""
    session = _session()
    if session["playing"]:
        now = time.monotonic()
        session["position"] = services.advance_position(session["position"], n_steps, session["speed"], now - session.get("last_tick", now))
        session["last_tick"] = now
        if session["position"] >= n_steps:
            session["playing"] = False
            st.rerun()  # whole page, so the button turns back into Play and the timer stops
    position = session["position"]
    m = services.session_metrics(series, position)
    tiles = st.columns(5)
    tiles[0].metric(f"Patients seen (of {n_steps:,})", f"{m['seen']:,}")
    tiles[1].metric("Current threshold", services.format_threshold(m["threshold"]))
    tiles[2].metric("Running mean cost", "—" if position == 0 else f"{m['mean_cost']:.3f}",
                    help=f"Target c = {settings['target']:g} {services.cost_unit(settings)}")
    tiles[3].metric("Running mean value", "—" if position == 0 else f"{m['mean_value']:.3f}")
    tiles[4].metric("Violation rate", "—" if position == 0 else f"{m['violation_rate']:.1%}",
                    help=f"Share of patients whose cost exceeded c = {settings['target']:g}")
    st.progress(position / max(n_steps, 1), text=f"Stream position {result.burn_in + position:,} of {ds.n_patients:,}")
    if position == 0:
        st.info("Press **Play** (or **Step**) to start the stream.")
        return
    shown = series.iloc[services.downsample_index(position)]
    cost_unit, value_unit = services.cost_unit(settings), services.value_unit(settings)
    charts = st.columns(3)
    charts[0].plotly_chart(figures.threshold_figure(shown, cost_unit), key="threshold_chart")
    charts[1].plotly_chart(figures.cost_figure(shown, settings["control"], settings["target"], settings["delta"], cost_unit), key="cost_chart")
    charts[2].plotly_chart(figures.value_figure(shown, value_unit), key="value_chart")
    st.markdown("**Most recent patients** (newest first)")
    st.dataframe(services.recent_patients(result, ds.label_array(), position), hide_index=True, key="recent_table",
                 column_config={"selected_codes": st.column_config.TextColumn(width="large"), "true_codes": st.column_config.TextColumn(width="medium"),
                                "value": st.column_config.NumberColumn(format="%.3f"), "cost": st.column_config.NumberColumn(format="%.3f"),
                                "threshold": st.column_config.NumberColumn(format="%.4g")})


live_view()
