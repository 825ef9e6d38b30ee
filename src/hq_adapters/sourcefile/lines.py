"""One JSON Lines job: decoding a line (source files, hqctl JSONL) and encoding one (writers).

Messages are bare (``required field "value" is missing``); callers add their own prefix
(``source format: line N: `` or ``enqueue: line N: ``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from hq_domain.errors import InvalidJob
from hq_domain.jobs import JobSpec
from hq_domain.validation import DEPTH_MESSAGE, job_spec


class _SourceLine(msgspec.Struct, forbid_unknown_fields=True):
    value: str | None  # null gets the spec's value message from validation, as in Go
    id: str | None = None
    type: str | None = None
    via: str | None = None
    hops: int | None = None
    attr: dict[str, Any] | None = None


class _EnqueueLine(_SourceLine, forbid_unknown_fields=True):
    random_key: int | None = None


class _OutLine(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Writer key order: id, value, type, via, hops, attr; empties omitted."""

    id: str = ""
    value: str
    type: str = ""
    via: str | None = None
    hops: int = 0
    attr: dict[str, Any] | None = None


_source_decoder = msgspec.json.Decoder(_SourceLine)
_enqueue_decoder = msgspec.json.Decoder(_EnqueueLine)
_any_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


def _explain(raw: bytes, exc: msgspec.MsgspecError) -> str:
    text = str(exc)
    if isinstance(exc, msgspec.ValidationError):
        # The spec checks for "value" before unknown keys; msgspec reports whichever it meets.
        try:
            doc = _any_decoder.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            doc = None
        if isinstance(doc, dict) and "value" not in doc:
            return 'required field "value" is missing'
        if text.startswith("Object contains unknown field"):
            return "unknown field " + '"' + text.split("`")[1] + '"'
        if text.startswith("Expected `object`"):
            return "line must be a JSON object"
        return "invalid job: " + text
    if "UTF-8" in text:
        return "line is not valid UTF-8"
    if "trailing characters" in text:
        return "line must contain exactly one JSON value"
    return "invalid JSON: " + text


def parse_job_line(raw: bytes, *, allow_random_key: bool = False) -> JobSpec:
    """Decode and validate one non-blank line; raises InvalidJob with a bare message."""
    try:
        line = (_enqueue_decoder if allow_random_key else _source_decoder).decode(raw)
    except msgspec.MsgspecError as exc:
        raise InvalidJob(_explain(raw, exc)) from None
    except RecursionError:
        raise InvalidJob(f"invalid JSON: {DEPTH_MESSAGE}") from None
    return job_spec(
        line.value, line.id, line.type, line.via, line.hops, line.attr,
        line.random_key if allow_random_key else None,  # type: ignore[attr-defined]
    )  # fmt: skip


def encode_job_line(spec: JobSpec) -> bytes:
    """The writer form of a job (no HTML escaping), ``\\n``-terminated; random_key dropped."""
    out = _OutLine(
        id=spec.id or "",
        value=spec.value,
        type=spec.type or "",
        via=spec.via,
        hops=spec.hops,
        attr=spec.attr or None,
    )
    return _encoder.encode(out) + b"\n"
