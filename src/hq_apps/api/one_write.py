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
