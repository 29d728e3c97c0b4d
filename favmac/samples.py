"""Where the bundled sample files are, from any directory: ``samples_dir()`` and ``favmac samples path``.

The sample data sets (the synthetic CMS-HCC cohort, the multi-label digits, the drift & segments
demo and the plan x age band groupings demo; ``sample_data/README.md`` describes each file) live in
the repository's ``sample_data/`` folder, beside the package, and are made by
``scripts/make_sample_data.py``. An install from a clone (``pip install -e .``, the quick start's)
finds them through the package's own location, so examples need not run from the repository root::

    favmac replay --calibration "$(favmac samples path)/hcc_calibration.csv" --targets 1 --out replay.csv

A package built from the clone (``pip install .``, a wheel) holds the library only, not the
sample files: ``samples_dir`` then says so and how to get them.
"""
from __future__ import annotations

from pathlib import Path

from .io.errors import DataError

__all__ = ["SAMPLE_FOLDER", "samples_dir"]

#: The folder of the repository (beside the ``favmac`` package) that holds the sample files.
SAMPLE_FOLDER = "sample_data"
# A file every copy of the sample data holds: the folder is the sample data only if it is there.
_MARKER = "hcc_calibration.csv"


def samples_dir() -> Path:
    """The absolute path of the folder holding the bundled sample files.

    O(1): one look at the file system.

    Raises
    ------
    DataError
        When the package was installed without the repository beside it (a wheel), so there
        are no sample files; the message names the folder it looked for and the fix.

    Examples
    --------
    >>> folder = samples_dir()
    >>> folder.is_absolute(), (folder / "hcc_calibration.csv").is_file()
    (True, True)
    """
    folder = Path(__file__).resolve().parents[1] / SAMPLE_FOLDER
    if not (folder / _MARKER).is_file():
        raise DataError(
            "the bundled sample files are not there: they ship with a clone of the FavMac Studio repository, "
            "not with a package built from it.",
            file=str(folder),
            fix="Install from a clone (git clone ..., then pip install -e . in it), or make them anywhere with "
                "python scripts/make_sample_data.py --out DIR from the clone.")
    return folder
