"""``favmac samples path``: the folder of the bundled sample files (:mod:`favmac.samples`), so examples
run from any directory: ``--calibration "$(favmac samples path)/hcc_calibration.csv"``."""
from __future__ import annotations

from .parser import Command

__all__ = ["COMMAND", "run_samples"]


def add_parser(sub):
    samples = sub.add_parser("samples", prog="favmac samples", help="where the bundled sample files are",
                             description="The bundled sample data (favmac.samples): 'favmac samples path' prints "
                             "the folder holding its files.")
    samples.add_argument("action", choices=["path"], help="path: print the folder holding the bundled sample files")
    return samples


def run_samples(args) -> int:
    """Print the sample folder (a DataError, reported by :func:`favmac.cli.main`, when this install has none)."""
    from ..samples import samples_dir

    print(samples_dir())
    return 0


COMMAND = Command(
    name="samples",
    summary=("'samples path' prints the folder holding the bundled sample files, for examples that",
             "run from any directory: --calibration \"$(favmac samples path)/hcc_calibration.csv\"."),
    add_parser=add_parser,
    run=run_samples,
)
