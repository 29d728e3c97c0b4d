"""Export writes the run's own recalibration maps (favmac.ui.settings_form.settings_to_json, run_maps), never a refit."""
import json

import numpy as np
import pandas as pd

from favmac.provenance import provenance
from favmac.recalibration import fit_recalibration
from favmac.runspec import read_settings_json
from favmac.ui import playback, settings_form as form


def _data(n=900, k=4, seed=3):
    rng = np.random.RandomState(seed)
    groups = np.where(rng.rand(n) < 0.5, "north", "south").astype(object)
    q = rng.rand(n, k)
    y = rng.rand(n, k) < np.where((groups == "north")[:, None], q ** 2, np.sqrt(q))  # the segments' maps differ
    return q, y, groups


def test_settings_file_and_provenance_carry_the_maps_the_run_used():
    probs, labels, groups = _data()
    codes = ["A", "B", "C", "D"]
    settings = {**form.default_settings(len(probs), len(codes)), "burn_in": 50, "recalibrate": 300,
                "recalibration": "platt", "recalibrate_by": "segment", "segment": "region"}
    spec = form.to_spec(settings, np.ones(len(codes)))
    run = playback.run_online(probs, labels, codes, np.arange(len(probs)).astype(str), spec, groups=groups)
    used = run.settings["recalibration_maps"]
    assert used["by"] == "segment"
    refit = fit_recalibration(probs[:300], labels[:300], "platt", codes=codes).to_dict()  # the old Export's maps
    assert refit != used
    weights = pd.DataFrame({"weight": np.ones(len(codes))}, index=codes)
    doc = json.loads(form.settings_to_json(settings, weights, "toy", run))
    assert doc["settings"]["recalibration_maps"] == json.loads(json.dumps(used))
    assert read_settings_json(json.dumps(doc).encode()).extras["recalibration_maps"] == doc["settings"]["recalibration_maps"]
    record = provenance(spec, codes=codes, recalibration=form.run_maps(run))
    assert record["settings"]["recalibration_maps"] == used
    assert form.run_maps(None) is None
    plain = playback.run_online(probs, labels, codes, np.arange(len(probs)).astype(str), spec.replace(recalibrate=None, recalibrate_by="code"), groups=groups)
    assert "recalibration_maps" not in json.loads(form.settings_to_json(settings, weights, "toy", plain))["settings"]
