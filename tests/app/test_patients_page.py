"""Patients page: the chosen set, the greedy order and the threshold cut for one patient."""
from __future__ import annotations

import numpy as np
from app_helpers import open_additive, assert_clean, open_page


def test_calibration_patient_matches_the_replay():
    at = open_additive("patients")
    assert_clean(at)
    result = next(iter(at.session_state["results"].values()))
    pick = str(result.patient_ids[25])
    at.selectbox(key="patient_select").set_value(pick).run()
    assert_clean(at)
    greedy = at.dataframe[0].value
    chosen = set(greedy.loc[greedy["selected"], "code"])
    expected = set(np.asarray(result.codes)[result.selected[0, 25]])
    assert chosen == expected
    # the cut is a prefix of the greedy order: every chosen code ranks before every other one
    ranks = greedy["rank"][greedy["selected"]]
    assert (int(ranks.max()) if len(ranks) else 0) == len(ranks)
    assert next(m.value for m in at.metric if m.label == "Codes chosen") == str(len(expected))
    assert len(at.get("plotly_chart")) == 1


def test_new_patient_view():
    at = open_page("patients")
    at.radio(key="patient_source").set_value("New patients").run()
    assert_clean(at)
    new = at.session_state["new_patients"]
    at.selectbox(key="patient_select_new").set_value(str(new.index[3])).run()
    assert_clean(at)
    labels = [m.label for m in at.metric]
    assert not any(label.startswith("Confirmed value") for label in labels)  # unlabelled
