"""Request-body decoding (spec §1.3) and JSON responses (spec §1.1).

Bodies are read and decoded here rather than by Litestar so the error messages are the
spec's: content type, 8 MiB cap, ``invalid JSON body: ...``, exactly one JSON value.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import msgspec
from litestar import Response

from hq_apps.api.one_write import cycle_of
from hq_domain.errors import HqError, InvalidRequest
from hq_domain.validation import DEPTH_MESSAGE

MAX_JSON_BODY = 8 * 1024 * 1024
JSON_MEDIA_TYPE = "application/json"
READ_TIMEOUT_S = 15.0

T = TypeVar("T")
R = TypeVar("R")

_encoder = msgspec.json.Encoder()
_decoders: dict[type, msgspec.json.Decoder[Any]] = {}


def encode(value: Any) -> bytes:
    """One JSON document followed by a newline."""
    buf = bytearray()
    _encoder.encode_into(value, buf)
    buf += b"\n"
    return bytes(buf)


def json_response(
    value: Any, status: int = 200, headers: dict[str, str] | None = None
) -> Response[bytes]:
    return Response(encode(value), status_code=status, media_type=JSON_MEDIA_TYPE, headers=headers)


def no_content() -> Response[None]:
    return Response(None, status_code=204)


class Incoming(Protocol):
    """What the request helpers read of a request: Litestar's ``Request`` and the worker fast
    path's :class:`hq_apps.api.fast_path.RawRequest` both have it."""

    @property
    def scope(self) -> Any: ...

    @property
    def receive(self) -> Any: ...


def media_type(value: str | None) -> str | None:
    """The lower-cased ``type/subtype`` of a Content-Type header, or None if unparsable."""
    if not value:
        return None
    essence = value.split(";", 1)[0].strip().lower()
    kind, sep, sub = essence.partition("/")
    if not sep or not kind or not sub or any(c in essence for c in ' \t"(),:<=>?@[\\]{}'):
        return None
    return essence


def header(request: Incoming, name: bytes) -> str | None:
    """The first value of a header exactly as received (``name`` lower-case)."""
    for key, value in request.scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


async def read_body(request: Incoming, limit: int = MAX_JSON_BODY) -> bytes:
    """The whole body, at most ``limit`` bytes, arriving within the 15 s read timeout."""
    declared = header(request, b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise InvalidRequest(f"request body exceeds {limit} bytes")
    chunks = bytearray()
    receive = request.receive
    if _arrived(receive):  # nothing to wait for, so no timer (~3 % of a worker request)
        body = _take(await receive(), chunks, limit)
        if body is not None:
            return body
    try:
        async with asyncio.timeout(READ_TIMEOUT_S):
            while True:
                body = _take(await receive(), chunks, limit)
                if body is not None:
                    return body
    except TimeoutError:
        raise InvalidRequest("invalid JSON body: read timeout") from None


def _arrived(receive: Any) -> bool:
    """Whether uvicorn's request cycle behind ``receive`` already holds the whole body (its
    next ``receive()`` returns at once)."""
    cycle = cycle_of(receive)
    return cycle is not None and not cycle.more_body


def _take(message: Any, chunks: bytearray, limit: int) -> bytes | None:
    """Add one ``receive()`` message to ``chunks``: the whole body once it is complete."""
    if message["type"] == "http.disconnect":
        raise InvalidRequest("invalid JSON body: unexpected EOF")
    chunks += message.get("body", b"")
    if len(chunks) > limit:
        raise InvalidRequest(f"request body exceeds {limit} bytes")
    if not message.get("more_body", False):
        return bytes(chunks)
    return None


def decode_json(raw: bytes, kind: type[T]) -> T:
    if not raw.strip():
        raise InvalidRequest("invalid JSON body: EOF")
    if raw.strip() == b"null":
        raw = b"{}"
    decoder = _decoders.get(kind)
    if decoder is None:
        decoder = _decoders[kind] = msgspec.json.Decoder(kind)
    try:
        return decoder.decode(raw)  # type: ignore[no-any-return]
    except RecursionError:
        # msgspec gives up at the interpreter's recursion limit (~900 levels here); values
        # between MAX_JSON_DEPTH and that are refused by domain validation with its own field.
        raise InvalidRequest(f"invalid JSON body: {DEPTH_MESSAGE}") from None
    except msgspec.DecodeError as exc:
        text = str(exc)
        if "trailing characters" in text:
            raise InvalidRequest("request body must contain exactly one JSON object") from None
        raise InvalidRequest(f"invalid JSON body: {text}") from None


async def read_json(request: Incoming, kind: type[T]) -> T:
    """Content-type check, capped read, strict decode (spec §1.3 steps 1–3)."""
    if media_type(header(request, b"content-type")) != JSON_MEDIA_TYPE:
        raise InvalidRequest("content type must be application/json")
    return decode_json(await read_body(request), kind)


EARLY_BODY_LIMIT = 64 * 1024
"""Bodies declared at most this large may be read before the worker gate, so the gate read and
the operation share one round trip; an unauthenticated client costs at most this much."""


@dataclass(frozen=True, slots=True)
class EarlyBody(Generic[T]):
    """A body read before the gate: decoded, or the error to raise once the gate has passed
    (spec §1.6: gate errors come before body errors)."""

    body: T | None
    error: HqError | None

    def get(self) -> T:
        if self.error is not None:
            raise self.error
        assert self.body is not None
        return self.body

    def prepared(self, prepare: Callable[[T], R]) -> R | None:
        """``prepare(body)`` (pure request validation), or None when the body or its
        validation failed: the caller then runs the gate first and raises in wire order."""
        if self.body is None:
            return None
        try:
            return prepare(self.body)
        except HqError:
            return None


async def read_early(request: Incoming, kind: type[T]) -> EarlyBody[T] | None:
    """The body, read now when it declares a Content-Length of at most ``EARLY_BODY_LIMIT``;
    None (nothing read) otherwise, and the route reads it after the gate as usual."""
    declared = header(request, b"content-length")
    if declared is None or not declared.isdigit() or int(declared) > EARLY_BODY_LIMIT:
        return None
    try:
        return EarlyBody(await read_json(request, kind), None)
    except HqError as exc:
        return EarlyBody(None, exc)
