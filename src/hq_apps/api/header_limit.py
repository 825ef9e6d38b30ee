"""A bound on the request header block, enforced in uvicorn's httptools protocol (issue 13 #2).

uvicorn's ``h11_max_incomplete_event_size`` does not apply to the httptools parser, which
buffers a header line of any length until it ends: a 4 MiB header was accepted and parsed.
:class:`BoundedHttpToolsProtocol` feeds the parser at most :data:`MAX_HEADER_BLOCK_BYTES` while a
request's header block (request line, headers, blank line) is still incomplete; a block that has
not ended by then gets ``431 Request Header Fields Too Large`` and the connection is closed,
before anything is routed. Once the headers are complete, bytes go to the parser untouched, so
a normal request pays one comparison per socket read.

The reference answers 431 above 1 MB (Go's default); this bound is lower, 64 KiB, which every
real client stays far below. A request pipelined behind another's body in the same socket read
(or behind another's body on a kept-alive connection) in the same socket read is counted
from the next read on, so its block is bounded by this limit plus one read (256 KiB).
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

MAX_HEADER_BLOCK_BYTES = 64 * 1024
_BODY = b"431 Request Header Fields Too Large"
RESPONSE_431 = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"content-length: " + str(len(_BODY)).encode() + b"\r\n"
    b"connection: close\r\n\r\n" + _BODY
)


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a header-block bound (``uvicorn.Config(http=...)``)."""

    _header_bytes = 0
    _in_header_block = True  # the next bytes start (or continue) a request's header block

    def on_headers_complete(self) -> None:
        self._in_header_block = False
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_header_block = True
        self._header_bytes = 0

    def data_received(self, data: bytes) -> None:
        if self._in_header_block:
            room = MAX_HEADER_BLOCK_BYTES - self._header_bytes
            if len(data) > room:
                self._over_room(data, room)
                return
            self._header_bytes += len(data)
        super().data_received(data)

    def _over_room(self, data: bytes, room: int) -> None:
        """Feed only what still fits; if the block has not ended by then, refuse it."""
        if room > 0:
            self._header_bytes += room
            super().data_received(data[:room])
            if self.transport.is_closing():
                return
        if self._in_header_block and self._header_bytes >= MAX_HEADER_BLOCK_BYTES:
            self._refuse()
            return
        self.data_received(data[room:])

    def _refuse(self) -> None:
        self.logger.warning("request header block over %d bytes refused", MAX_HEADER_BLOCK_BYTES)
        self.transport.write(RESPONSE_431)
        self.transport.close()
