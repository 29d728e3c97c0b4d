"""``__version__``: the installed distribution's version, or the source tree's when not installed."""
from __future__ import annotations

FALLBACK = "0.1.0"  # keep equal to pyproject.toml's [project] version


def _installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("favmac-studio")
    except PackageNotFoundError:
        return FALLBACK


__version__ = _installed_version()
