"""One settings file for the app and the CLI: the app's exported settings run unchanged in `favmac replay --settings`
and `favmac predict --settings`, giving the app's sets (favmac.cli.options.settings_file / settings_spec)."""
import json

import numpy as np
import pandas as pd
import pytest

from favmac import export
from favmac.cli import main
from favmac.io import load_calibration, load_new_patients_segmented
from favmac.ui import playback, settings_form as form

CODES = ["HCC18", "HCC19", "HCC85", "HCC96", "HCC111"]


def _files(tmp_path, n=500, n_new=40, seed=5):
    rng = np.random.RandomState(seed)
    y = rng.rand(n + n_new, len(CODES)) < 0.3
    p = np.round(np.clip(0.55 * y + 0.45 * rng.rand(*y.shape), 0, 1), 4)
    plan = np.where(rng.rand(n + n_new) < 0.5, "PLAN-A", "PLAN-B")
    band = np.where(rng.rand(n + n_new) < 0.5, "65-79", "80-84")
    cal = pd.DataFrame({"patient_id": [f"m{i}" for i in range(n)], "plan": plan[:n], "age_band": band[:n]})
    for k, code in enumerate(CODES):
        cal[f"prob_{code}"], cal[f"label_{code}"] = p[:n, k], y[:n, k].astype(int)
    new = pd.DataFrame({"patient_id": [f"n{i}" for i in range(n_new)], "plan": plan[n:]})
    for k, code in enumerate(CODES):
        new[code] = p[n:, k]
    cal.to_csv(tmp_path / "cal.csv", index=False)
    new.to_csv(tmp_path / "new.csv", index=False)
    return tmp_path / "cal.csv", tmp_path / "new.csv"


@pytest.mark.parametrize("control", ["expected", "violation"])
def test_the_apps_settings_file_gives_the_apps_sets_in_replay_and_predict(tmp_path, control):
    cal, new_file = _files(tmp_path)
    data = load_calibration(cal)
    weights = np.array([0.4, 0.3, 0.2, 1.1, 0.9])
    settings = {**form.default_settings(data.n_patients, data.n_codes, weights), "value_kind": "weighted_tp",
                "cost_kind": "weighted_fp", "control": control, "delta": 0.2, "segment": "plan", "burn_in": 60,
                "recalibrate": 100, "recalibration": "platt", "target": 0.9}
    settings = form.validate_settings(settings, data.n_codes, data.n_patients, weights, dataset=data)
    spec = form.to_spec(settings, weights)
    app = playback.run_online(data.prob_array(), data.label_array(), data.codes, data.patient_ids, spec,
                              groups=data.segments("plan"))
    raw = form.settings_to_json(settings, pd.DataFrame({"weight": weights}, index=data.codes), "cal", app)
    (tmp_path / "favmac_settings.json").write_bytes(raw)
    assert json.loads(raw)["settings"]["segment"] == "plan"

    out = tmp_path / "replay.csv"
    assert main(["replay", "--calibration", str(cal), "--settings", str(tmp_path / "favmac_settings.json"),
                 "--out", str(out)]) == 0
    cli = pd.read_csv(out, dtype=str, keep_default_na=False)
    app_sets = export.stream_sets(app, data.prob_array(), data.label_array(), *spec.build(data.codes), universe=spec.universe)
    assert len(cli) == len(app_sets) == data.n_patients - 160
    assert cli["selected_codes"].tolist() == app_sets["codes"].tolist()

    out = tmp_path / "predict.csv"
    assert main(["predict", "--calibration", str(cal), "--new", str(new_file), "--settings",
                 str(tmp_path / "favmac_settings.json"), "--out", str(out)]) == 0
    cli = pd.read_csv(out, dtype=str, keep_default_na=False)
    new, groups = load_new_patients_segmented(new_file, data.codes, segment_column="plan")
    app_new = export.new_patient_sets(new, app, *spec.build(data.codes), universe=spec.universe, groups=groups)
    assert cli["codes"].tolist() == app_new["codes"].tolist()
    assert any(cli["codes"])  # some sets are not empty


def test_options_the_file_decides_are_refused_with_it(tmp_path, capsys):
    cal, _ = _files(tmp_path, n=200)
    raw = form.settings_to_json(form.default_settings(200, 5), pd.DataFrame({"weight": np.ones(5)}, index=CODES), "cal")
    (tmp_path / "s.json").write_bytes(raw)
    assert main(["replay", "--calibration", str(cal), "--settings", str(tmp_path / "s.json"), "--delta", "0.1",
                 "--out", str(tmp_path / "o.csv")]) == 2
    assert "--delta: the settings file" in capsys.readouterr().err
    assert main(["replay", "--calibration", str(cal), "--out", str(tmp_path / "o.csv")]) == 2
    assert "--targets" in capsys.readouterr().err
