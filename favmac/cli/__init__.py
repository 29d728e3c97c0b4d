"""Command line: ``favmac predict|replay|calibrate|program|samples`` (also ``python -m favmac``).

``predict`` calibrates FavMac on a labelled file and writes the chosen code set of every
new (unlabelled) patient; ``replay`` walks a labelled file as an online stream and writes
per-step results plus a summary table. Bad input prints ``error: <what and where>`` and
exits with status 2, without a traceback. Beside ``--out FILE`` both write
``FILE.provenance.json`` (:mod:`favmac.provenance`: input SHA-256s, settings, CMS-HCC
model/year/segment, package versions, and the SHA-256 of FILE).

Examples::

    python -m favmac predict --calibration sample_data/hcc_calibration.csv \\
        --new sample_data/hcc_new_patients.csv --weights sample_data/hcc_weights.csv \\
        --value weighted_tp --cost fp --target 1.1 --out chosen_sets.csv

    python -m favmac replay --calibration sample_data/digits_calibration.csv \\
        --weights sample_data/digits_weights.csv --value weighted_tp --cost fp \\
        --targets 1.1,2.1,3.1 --delta 0.1 --burn-in 1000 --out replay.csv

Modules: :mod:`~favmac.cli.main` (:func:`main`), :mod:`~favmac.cli.commands` (:data:`COMMANDS`,
the one list a command group registers in, and :func:`build_parser`), :mod:`~favmac.cli.parser`
(the shared option groups, :class:`~favmac.cli.parser.Command`), :mod:`~favmac.cli.options` (options
to RunSpec, weights, targets, data), :mod:`~favmac.cli.output` (progress, CSV, provenance, summaries),
one module per command group: :mod:`~favmac.cli.predict`, :mod:`~favmac.cli.replay`,
:mod:`~favmac.cli.distributed` (``calibrate`` and ``predict --engine dask``), :mod:`~favmac.cli.program`
(``program create|predict|label|...``: programs in a store), :mod:`~favmac.cli.samples` (``samples path``).
"""
from .commands import build_parser
from .main import main

__all__ = ["main", "build_parser"]
