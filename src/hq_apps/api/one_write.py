"""One socket write per response: uvicorn's header write held until the body joins it.

uvicorn's httptools cycle writes a response's status line and headers as soon as
``http.response.start`` arrives and the body when ``http.response.body`` does: two ``send``
system calls and, with TCP_NODELAY, two packets for the client to wake up on. Together with
the batched log lines of ``hq_apps.logging`` this took a B=1 request from 4.1 writes to 2.1
(strace; benchmarks/notes/optimisations.md).

:class:`HeldWriteTransport` stands between a request's cycle and the connection's transport:
a write with nothing held is held, and the next write in the same loop iteration goes out
joined to it — the body of every response sent in one step, which is every response of the
worker routes and of Litestar. A write that nothing follows (a streamed response awaiting its
next chunk) goes out at the start of the next loop iteration, before any further socket events
are handled, so bytes never change order. ``close`` writes what is held first, and so does the
end of every response (a HEAD response's headers have no body to join), so nothing is ever
held once a response is complete and the protocol may close the connection itself.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.httptools_impl import (
    HEADER_VALUE_RE,
    STATUS_LINE,
    RequestResponseCycle,
)

from hq_apps.api.header_limit import BoundedHttpToolsProtocol


class HeldWriteTransport:
    """The part of an asyncio transport a uvicorn request cycle uses (write, close, is_closing),
    with writes joined."""

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes) -> None:
        held = self._held
        if held is None:
            self._held = data
            self._loop.call_soon(self.flush)
        else:
            self._held = None
            self._transport.write(held + data)

    def flush(self) -> None:
        held = self._held
        if held is not None:
            self._held = None
            if not self._transport.is_closing():  # the client left: nothing to write to
                self._transport.write(held)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()


class TrackerHttpProtocol(BoundedHttpToolsProtocol):
    """The tracker's uvicorn protocol: the header-block bound and one write per response."""

    def on_headers_complete(self) -> None:
        # uvicorn hands self.transport to the request cycle it builds here; the cycle gets the
        # holding wrapper, everything else of the protocol keeps the real transport.
        transport = self.transport
        held = HeldWriteTransport(transport, self.loop)
        self.transport = held  # type: ignore[assignment]
        try:
            super().on_headers_complete()
        finally:
            self.transport = transport
        cycle = self.cycle
        if cycle is not None and cycle.transport is held:
            complete = cycle.on_response

            def on_response() -> None:  # the end of this response writes what it holds
                held.flush()
                complete()

            cycle.on_response = on_response


def _access_line_due(cycle: RequestResponseCycle) -> bool:
    """Whether uvicorn's ``send`` would write an access log line (``tracker serve`` disables
    that logger: the request log is ours)."""
    logger = cycle.access_logger
    return cycle.access_log and not logger.disabled and logger.isEnabledFor(logging.INFO)


def cycle_of(channel: Any) -> RequestResponseCycle | None:
    """uvicorn's request cycle behind an ASGI ``send`` or ``receive`` that nothing wraps;
    ``None`` anywhere else (tests calling the app directly, another server)."""
    cycle = getattr(channel, "__self__", None)
    return cycle if type(cycle) is RequestResponseCycle else None


def whole_response_cycle(send: Any) -> RequestResponseCycle | None:
    """The cycle behind ``send`` when :func:`send_whole` may answer for it: the request came
    through :class:`TrackerHttpProtocol` (its writes held)."""
    cycle = cycle_of(send)
    return cycle if cycle is not None and type(cycle.transport) is HeldWriteTransport else None


async def send_whole(
    cycle: RequestResponseCycle, status: int, headers: list[tuple[bytes, bytes]], body: bytes
) -> bool:
    """``http.response.start`` then ``http.response.body`` (complete, ``content-length`` in
    ``headers``) as uvicorn's cycle would send them, in one step.

    uvicorn's ``send`` checks every header against two regular expressions and re-reads it
    for the framing headers: for the worker routes' dozen headers that was ~7 % of the
    tracker's CPU per request (benchmarks/notes/optimisations.md, row 29). The caller's
    names are lower-case constants and its values digits or constants, except the client's
    ``x-request-id``; a value uvicorn would refuse returns ``False`` with nothing sent, and
    the caller sends the ordinary way (which fails as uvicorn fails). The bytes written are
    uvicorn's: tests/unit/api/test_one_write.py compares them."""
    if cycle.flow.write_paused and not cycle.disconnected:
        await cycle.flow.drain()
    if cycle.disconnected:
        return True
    if cycle.response_started or _access_line_due(cycle):
        return False
    parts = [STATUS_LINE[status]]
    for name, value in cycle.default_headers:
        parts += (name.lower(), b": ", value, b"\r\n")
    for name, value in headers:
        if HEADER_VALUE_RE.search(value):
            return False
        parts += (name, b": ", value, b"\r\n")
    if not cycle.keep_alive:
        parts.append(b"connection: close\r\n")
    parts += (b"\r\n", body)
    cycle.response_started = True
    cycle.waiting_for_100_continue = False
    cycle.chunked_encoding = False
    cycle.expected_content_length = 0
    cycle.transport.write(b"".join(parts))
    cycle.response_complete = True
    cycle.message_event.set()
    if not cycle.keep_alive:
        cycle.transport.close()
    cycle.on_response()
    return True
