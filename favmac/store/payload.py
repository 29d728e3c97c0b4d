"""A batch's arrays as one binary payload of its event (compact: a batch of probabilities is one blob).

The payload is a numpy ``.npz`` archive (no pickles: text travels as UTF-8 JSON bytes) holding named
arrays and one JSON document of plain values.

>>> import numpy as np
>>> blob = pack({"probs": np.array([[0.25, 1.0]])}, {"ids": ["a"]})
>>> arrays, doc = unpack(blob)
>>> arrays["probs"].tolist(), doc
([[0.25, 1.0]], {'ids': ['a']})
"""
from __future__ import annotations

import io
import json

import numpy as np

__all__ = ["pack", "unpack"]


def pack(arrays: dict, doc: dict) -> bytes:
    """``arrays`` (name -> numeric or bool ndarray) and ``doc`` (JSON values) as bytes. O(size)."""
    out = io.BytesIO()
    encoded = {name: np.ascontiguousarray(value) for name, value in arrays.items() if value is not None}
    for name, value in encoded.items():
        if value.dtype == object:
            raise TypeError(f"pack: array {name!r} holds Python objects; put text in the JSON document")
    encoded["__doc__"] = np.frombuffer(json.dumps(doc, separators=(",", ":")).encode(), dtype=np.uint8)
    np.savez(out, **encoded)
    return out.getvalue()


def unpack(blob: bytes) -> tuple[dict, dict]:
    """``(arrays, doc)`` of a payload written by :func:`pack`."""
    with np.load(io.BytesIO(blob), allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    doc = json.loads(arrays.pop("__doc__").tobytes().decode())
    return arrays, doc
