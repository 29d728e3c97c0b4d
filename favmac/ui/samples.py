"""Bundled sample datasets and the small file helpers the uploads need (no Streamlit)."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SampleSpec:
    """A bundled sample dataset: its label and the files in ``sample_data/``."""

    label: str
    calibration: str
    new_patients: str
    weights: str


SAMPLES = {
    "hcc": SampleSpec(
        "HCC cohort (synthetic, 35 codes)",
        "hcc_calibration.csv",
        "hcc_new_patients.csv",
        "hcc_weights.csv",
    ),
    "digits": SampleSpec(
        "Digits (superimposed, 10 codes)",
        "digits_calibration.csv",
        "digits_new_patients.csv",
        "digits_weights.csv",
    ),
    "drift": SampleSpec(
        "Drift & segments demo (3 plans, 12 codes)",
        "drift_calibration.csv",
        "drift_new_patients.csv",
        "drift_weights.csv",
    ),
    "groupings": SampleSpec(  # no new patients or weights: the page loads only the files that exist
        "Plan × age band groupings demo (8 codes)",
        "groupings_calibration.csv",
        "groupings_new_patients.csv",
        "groupings_weights.csv",
    ),
}
DEFAULT_SAMPLE = "hcc"


def sample_dir() -> Path:
    """The repository's ``sample_data/`` folder."""
    return Path(__file__).resolve().parents[2] / "sample_data"


class NamedBytes:
    """Uploaded bytes with a file name, the file-like shape ``favmac.io`` reads.

    Error messages from ``favmac.io`` name the file, so the name travels with the bytes.
    """

    def __init__(self, data: bytes, name: str):
        self.data = bytes(data)
        self.name = name

    def getvalue(self) -> bytes:
        return self.data

    def read(self, *_args) -> bytes:
        return self.data


def content_key(*parts: bytes | str | None) -> str:
    """A short hex fingerprint of file contents (None parts count as empty)."""
    digest = hashlib.sha256()
    for part in parts:
        if part is None:
            part = b""
        if isinstance(part, str):
            part = part.encode()
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.hexdigest()[:16]
