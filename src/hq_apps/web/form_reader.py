"""Bounded form decoding for dashboard POSTs: what an anonymous client can make us hold.

Everything here runs before the session is known to be valid (spec §5.2 orders the form parse
before the session check), so every byte is bounded:

* url-encoded bodies: at most :data:`FORM_BYTES` (1 MiB) and :data:`FORM_FIELDS` fields, on
  every route, including the source-upload route (a url-encoded body can never carry a file);
* multipart bodies: at most :data:`FORM_FIELDS` parts; all non-file parts together at most
  :data:`FORM_BYTES`; a file part is never buffered here: :class:`FormStream` hands its bytes to
  the caller chunk by chunk (the source upload decodes them as they arrive) or drops them.

Litestar's own ``request.form()`` is not used: it keeps multipart text parts whole, and its
url-encoded parser sits behind an ``lru_cache`` keyed by the body (1,024 bodies a stranger chose).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qsl

import multipart
from litestar import Request
from litestar.datastructures import FormMultiDict

FORM_BYTES = 1 << 20
FORM_FIELDS = 1000
_HEADER_BYTES = 4096


class FormRejected(Exception):
    """The body is not a form we accept (spec: 400 ``Invalid form submission``)."""


def _content_type(request: Request) -> tuple[str, dict[str, str]]:
    from litestar._multipart import parse_content_header

    return parse_content_header(request.headers.get("content-type", ""))


def _declared_length(request: Request) -> int | None:
    raw = request.headers.get("content-length")
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise FormRejected("bad Content-Length") from None


async def _urlencoded(request: Request) -> FormMultiDict:
    declared = _declared_length(request)
    if declared is not None and declared > FORM_BYTES:
        raise FormRejected("url-encoded form over 1 MiB")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > FORM_BYTES:
            raise FormRejected("url-encoded form over 1 MiB")
    if body.count(b"&") >= FORM_FIELDS:
        raise FormRejected(f"more than {FORM_FIELDS} form fields")
    pairs = parse_qsl(bytes(body).decode("latin-1"), keep_blank_values=True, separator="&")
    return _multidict(pairs)


def _multidict(pairs: list[tuple[str, Any]]) -> FormMultiDict:
    return FormMultiDict(pairs)


class FormStream:
    """One multipart or url-encoded body, parsed incrementally as it arrives.

    ``await fields_before(file_field)`` parses up to the start of that file part's data (or the
    end of the body) and returns the text fields seen so far; :meth:`file_chunks` then yields the
    file's bytes as they arrive; :meth:`finish` parses the rest (dropping any file data nobody
    consumed) and returns every text field. Any violation raises :class:`FormRejected`.
    """

    def __init__(self, request: Request, *, body_limit: int) -> None:
        self._request = request
        self._limit = body_limit
        self._pairs: list[tuple[str, Any]] = []
        self._text_bytes = 0
        self._parser: multipart.PushMultipartParser | None = None
        self._events: list[Any] = []
        self._stream: AsyncIterator[bytes] | None = None
        self._segment: Any = None
        self._buffer: bytearray | None = None
        self._file_name: str | None = None
        self._in_file = False
        self._done = False
        self._received = 0

    async def _start(self) -> bool:
        """Set up the multipart parser; returns False for a url-encoded (or empty) body."""
        kind, options = _content_type(self._request)
        if kind == "application/x-www-form-urlencoded":
            self._pairs = list((await _urlencoded(self._request)).multi_items())
            self._done = True
            return False
        if kind != "multipart/form-data":
            self._done = True  # like Litestar: any other body is an empty form
            return False
        boundary = options.get("boundary")
        if not boundary:
            raise FormRejected("multipart boundary missing")
        declared = _declared_length(self._request)
        if declared is not None and declared > self._limit:
            raise FormRejected("body over the route's limit")
        try:
            self._parser = multipart.PushMultipartParser(
                boundary.encode("latin-1"),
                max_header_size=_HEADER_BYTES,
                max_segment_count=FORM_FIELDS,
            )
        except (ValueError, multipart.MultipartError) as exc:
            raise FormRejected(str(exc)) from None
        self._stream = self._request.stream().__aiter__()
        return True

    async def _next_event(self) -> Any:
        """The parser's next event (segment, bytes or None for a part's end); ``StopIteration``
        sentinel ``_END`` when the body is complete."""
        assert self._parser is not None and self._stream is not None
        while not self._events:
            if self._parser.closed:
                return _END
            try:
                chunk = await self._stream.__anext__()
            except StopAsyncIteration:
                chunk = b""
            self._received += len(chunk)
            if self._received > self._limit:
                raise FormRejected("body over the route's limit")
            try:
                self._events = list(self._parser.parse(chunk))
            except (multipart.MultipartError, multipart.ParserLimitReached) as exc:
                raise FormRejected(str(exc)) from None
            if not chunk and not self._events and not self._parser.closed:
                raise FormRejected("multipart body ended early")
            self._events.reverse()
        return self._events.pop()

    def _text(self, data: bytes) -> None:
        self._text_bytes += len(data)
        if self._text_bytes > FORM_BYTES:
            raise FormRejected("form text fields over 1 MiB")
        assert self._buffer is not None
        self._buffer += data

    async def _advance(self, stop_at_file: str | None) -> bool:
        """Parse until the data of file part ``stop_at_file`` begins (True) or the end (False).
        Data of other file parts is dropped."""
        while True:
            event = await self._next_event()
            if event is _END:
                self._done = True
                return False
            if isinstance(event, multipart.MultipartSegment):
                self._segment = event
                self._file_name = event.filename
                self._buffer = None if event.filename else bytearray()
                if event.filename and event.name == stop_at_file:
                    self._in_file = True
                    return True
            elif event is None:
                seg = self._segment
                if seg is None:
                    raise FormRejected("part ended before its headers")
                if self._buffer is not None:
                    try:
                        value = self._buffer.decode(seg.charset or "utf-8")
                    except (UnicodeDecodeError, LookupError):
                        raise FormRejected("form field is not valid text") from None
                    self._pairs.append((seg.name, value))
                else:
                    self._pairs.append((seg.name, _DroppedFile(self._file_name or "")))
                self._segment = self._buffer = None
            elif self._buffer is not None:
                self._text(event)

    async def fields_before(self, file_field: str | None) -> FormMultiDict:
        if self._parser is None and not self._done and not await self._start():
            return _multidict(self._pairs)
        if not self._done:
            await self._advance(file_field)
        return _multidict(self._pairs)

    @property
    def at_file(self) -> bool:
        return self._in_file

    @property
    def file_name(self) -> str:
        return self._file_name or ""

    async def file_chunks(self) -> AsyncIterator[bytes]:
        """The current file part's bytes as they arrive; stops at the part's end."""
        while self._in_file:
            event = await self._next_event()
            if event is _END:
                raise FormRejected("multipart body ended inside a file part")
            if event is None:
                self._in_file = False
                self._pairs.append((self._segment.name, _DroppedFile(self.file_name)))
                self._segment = None
            elif isinstance(event, bytes | bytearray) and event:
                yield bytes(event)

    async def finish(self) -> FormMultiDict:
        """Parse (and validate) the rest of the body; file data nobody read is dropped."""
        if self._parser is None and not self._done:
            await self._start()
        async for _ in self.file_chunks():
            pass
        if not self._done:
            await self._advance(None)
        return _multidict(self._pairs)


class _DroppedFile:
    """Stands in for a file part in the parsed form: the name only, never the data."""

    __slots__ = ("filename",)

    def __init__(self, filename: str) -> None:
        self.filename = filename


_END = object()


async def read_form(request: Request, *, body_limit: int = FORM_BYTES) -> FormMultiDict:
    """The whole form of a POST without files of interest (every dashboard POST but the source
    upload); raises :class:`FormRejected`."""
    return await FormStream(request, body_limit=body_limit).finish()
