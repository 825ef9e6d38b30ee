"""Canonical JSON used for size limits and identity (spec §1.3.4).

Go's ``json.Marshal`` is the reference: keys sorted, no whitespace, ``<``, ``>``, ``&``,
U+2028 and U+2029 escaped as ``\\u003c``-style sequences. Numbers are re-encoded by Python
(the reference keeps input literals; the spec lets us differ there).
"""

from __future__ import annotations

import json
from typing import Any

_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)
_encoder = json.JSONEncoder(
    ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
)


def dumps(value: Any, *, html_escape: bool = True) -> str:
    """Canonical text of a JSON value; raises ValueError for NaN/Infinity."""
    text = _encoder.encode(value)
    return text.translate(_ESCAPES) if html_escape else text


def size(value: Any) -> int:
    """Byte length of the canonical (HTML-escaped) encoding."""
    return len(dumps(value).encode("utf-8", "surrogatepass"))
