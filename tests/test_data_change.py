"""One data-change rule (favmac.data_change.adapt_stream): burn-in, fold, window and delay follow new data together."""
import numpy as np
import pytest

from favmac.data_change import adapt_stream, default_burn_in
from favmac.runspec import RunSpec
from favmac.ui import settings_form as form


def test_platt_fold_on_1000_then_a_600_row_upload():
    # the reported case: recalibration (Platt) on 1,000 patients, then a valid 600-row file
    spec = RunSpec(burn_in=1000, recalibrate=1000, recalibration="platt", targets=(1.0,))
    adapted, notes = adapt_stream(spec, 600, old_n_patients=4000)
    assert (adapted.burn_in, adapted.recalibrate) == (200, None)
    adapted.validate(n_codes=5, n_patients=600)  # no ValueError on any page
    assert any("Burn-in set to 200" in n for n in notes) and any("Recalibration turned off" in n for n in notes)


@pytest.mark.parametrize("n_new", [60, 600, 1_200, 2_999, 3_000, 3_500, 50_000])
@pytest.mark.parametrize("old", [
    dict(burn_in=1000, recalibrate=1000),
    dict(burn_in=100, recalibrate=1000, window=1000),
    dict(burn_in=50, recalibrate=2000, recalibrate_by="segment", segment="plan"),
    dict(burn_in=300, recalibrate=None, label_delay=2000),
    dict(burn_in=5, recalibrate=60, window=5000),
])
def test_the_adapted_spec_always_fits_the_new_stream(old, n_new):
    spec = RunSpec(recalibration="platt", **old)
    adapted, _ = adapt_stream(spec, n_new, old_n_patients=4000)
    adapted.validate(n_patients=n_new)
    if spec.recalibrate is None:
        assert adapted.recalibrate is None  # a fold turned off stays off


def test_a_chosen_fold_that_fits_is_kept_and_the_app_form_uses_the_rule():
    spec = RunSpec(burn_in=100, recalibrate=500, recalibration="isotonic")
    assert adapt_stream(spec, 2000, old_n_patients=4000)[0].recalibrate == 500
    settings = {**form.default_settings(4000, 5), "recalibrate": 1000, "recalibration": "platt"}
    assert settings["burn_in"] == default_burn_in(4000) == 1000
    out, notes = form.adapt_settings(settings, 600, 5, np.ones(5), old_cmax=5.0, old_n_patients=4000)
    assert out["burn_in"] == 200 and out.get("recalibrate") is None
    form.validate_settings(out, 5, 600)
