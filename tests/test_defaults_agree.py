"""Every entry point takes its defaults from the one place each is decided: the library's functions, RunSpec, the
CLI's parser and the app's settings agree (universe, delta, score, recalibration, the payment value, burn-in)."""
import inspect

import numpy as np
import pytest

from favmac import FavMac, RunSpec, replay
from favmac.controller import FavMac as Controller
from favmac.data_change import default_burn_in
from favmac.distributed.calibration import calibrate
from favmac.distributed.prediction import predict as distributed_predict
from favmac.io import cms_hcc_weights, load_calibration
from favmac.io.cms_hcc import CMS_MODELS, CMS_TABLE_YEAR
from favmac.payment import DEFAULT_PAYMENT_YEAR, CmsHccValue
from favmac.payment_tables import CMS_PAYMENT_MODELS, DEFAULT_CMS_CELL, DEFAULT_CMS_MODEL, DEFAULT_CMS_YEAR
from favmac.recalibration import DEFAULT_RECALIBRATE_BY, DEFAULT_RECALIBRATION, default_recalibrate
from favmac.recalibration_evidence import recalibration_evidence
from favmac.replay import predict_with_threshold
from favmac.runspec import AUTO, DEFAULT_DELTA
from favmac.scores import default_score
from favmac.universe import DEFAULT_UNIVERSE
from favmac.validity import validity_check

LIBRARY = (replay, Controller.__init__, validity_check, predict_with_threshold, calibrate, distributed_predict,
           recalibration_evidence)


def _default(function, name):
    return inspect.signature(function).parameters[name].default


@pytest.mark.parametrize("function", LIBRARY, ids=lambda f: f.__qualname__)
def test_library_functions_take_the_decided_defaults(function):
    params = inspect.signature(function).parameters
    assert _default(function, "universe") == DEFAULT_UNIVERSE
    for name, decided in (("recalibration", DEFAULT_RECALIBRATION), ("recalibrate_by", DEFAULT_RECALIBRATE_BY),
                          ("score", None), ("c_max", None)):
        # predict_with_threshold's and the Dask predict's recalibration is the fitted maps (None: none), not a method
        if name in params and not (name == "recalibration" and params[name].default is None):
            assert params[name].default == decided, name


def test_runspec_and_the_payment_value_use_the_decided_defaults():
    spec = RunSpec()
    assert (spec.universe, spec.delta, spec.recalibration, spec.recalibrate_by, spec.recalibrate) == (
        DEFAULT_UNIVERSE, DEFAULT_DELTA, DEFAULT_RECALIBRATION, DEFAULT_RECALIBRATE_BY, AUTO)
    assert (spec.cms_model, spec.cms_year, spec.cms_segment) == (DEFAULT_CMS_MODEL, DEFAULT_CMS_YEAR, DEFAULT_CMS_CELL)
    assert spec.score == default_score(DEFAULT_UNIVERSE, None)
    assert (_default(CmsHccValue, "model"), _default(CmsHccValue, "segment"), _default(CmsHccValue, "year")) == (
        DEFAULT_CMS_MODEL, DEFAULT_CMS_CELL, DEFAULT_CMS_YEAR) and DEFAULT_PAYMENT_YEAR == DEFAULT_CMS_YEAR
    assert (_default(cms_hcc_weights, "model"), _default(cms_hcc_weights, "segment")) == (DEFAULT_CMS_MODEL, DEFAULT_CMS_CELL)
    assert CMS_MODELS is CMS_PAYMENT_MODELS and CMS_TABLE_YEAR == DEFAULT_CMS_YEAR


def _data(tmp_path, n=60):
    rng = np.random.RandomState(0)
    rows = ["patient_id,prob_HCC18,label_HCC18,prob_HCC85,label_HCC85"]
    rows += [f"p{i},{rng.rand():.3f},{i % 2},{rng.rand():.3f},{i % 3 == 0:d}" for i in range(n)]
    (tmp_path / "w.csv").write_text("\n".join(rows) + "\n")
    return tmp_path / "w.csv"


def test_the_cli_and_the_app_build_the_libraries_defaults(tmp_path):
    from favmac.cli.commands import build_parser
    from favmac.cli.options import run_spec
    from favmac.ui import payment_view
    from favmac.ui import settings_form as form

    path = _data(tmp_path)
    data = load_calibration(path)
    for command in ("replay", "predict"):
        target = ["--targets", "1"] if command == "replay" else ["--target", "1"]
        args = build_parser().parse_args([command, "--calibration", str(path), *target, "--out", "-"]
                                         + (["--new", str(path)] if command == "predict" else []))
        assert args.cms_year == DEFAULT_CMS_YEAR and args.recalibrate == AUTO
        cli = run_spec(args, data, ["1"], percent=False, flag="--targets")
        library = RunSpec(targets=(1.0,)).validate(data.n_codes, data.n_patients)
        for field in ("universe", "delta", "control", "score", "recalibrate", "recalibration", "recalibrate_by",
                      "cms_model", "cms_year", "cms_segment", "window", "label_delay", "largest_cost"):
            assert getattr(cli, field) == getattr(library, field), (command, field)
    app = form.default_settings(4000, 2)
    spec = form.to_spec(app, np.ones(2))
    assert (spec.universe, spec.delta, spec.recalibration, spec.recalibrate_by) == (
        DEFAULT_UNIVERSE, DEFAULT_DELTA, DEFAULT_RECALIBRATION, DEFAULT_RECALIBRATE_BY)
    assert app["burn_in"] == default_burn_in(4000) and app["recalibrate"] == default_recalibrate(4000, burn_in=app["burn_in"])
    assert payment_view.PAYMENT_DEFAULTS == {k: getattr(RunSpec(), k) for k in payment_view.PAYMENT_KEYS}
    assert form.default_score_of(app, np.ones(2)) == spec.score == default_score(DEFAULT_UNIVERSE, None)


def test_every_entry_point_resolves_the_same_default_score():
    rng = np.random.RandomState(1)
    y = rng.rand(80, 3) < 0.3
    p = np.clip(0.6 * y + 0.4 * rng.rand(80, 3), 0, 1)
    from favmac import AdditiveCost, AdditiveValue

    for delta in (None, 0.1):
        for target in (0.5, 2.0):
            want = default_score(DEFAULT_UNIVERSE, delta, target, [1.0, 1.0, 1.0])
            fm = FavMac(AdditiveValue(), AdditiveCost(), target, delta=delta, n_codes=3)
            res = replay(p, y, AdditiveValue(), AdditiveCost(), [target], delta=delta, burn_in=20)
            spec = RunSpec(targets=(target,), control="expected" if delta is None else "violation", delta=delta or 0.1)
            assert fm.score == res.settings["score"] == spec.score == want, (delta, target)
