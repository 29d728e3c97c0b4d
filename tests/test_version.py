"""``favmac.__version__`` exists and matches pyproject.toml (issue 11, newcomer)."""
import re
from pathlib import Path

import favmac
from favmac import _version


def test_version_is_the_project_version():
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    declared = re.search(r'^version\s*=\s*"([^"]+)"', pyproject, re.M).group(1)
    assert _version.FALLBACK == declared
    assert favmac.__version__ in (declared, _version._installed_version())
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", favmac.__version__)
