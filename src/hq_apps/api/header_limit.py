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
is counted from the next read on, so its block is bounded by this limit plus one read (256 KiB).
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
    _in_header_block = True

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_header_block = True

    def on_headers_complete(self) -> None:
        self._in_header_block = False
        self._header_bytes = 0
        super().on_headers_complete()

    def data_received(self, data: bytes) -> None:
        if not self._in_header_block:
            super().data_received(data)
            return
        view = memoryview(data)
        while view and self._in_header_block:
            room = MAX_HEADER_BLOCK_BYTES - self._header_bytes
            if room <= 0:
                self._refuse()
                return
            piece, view = view[:room], view[room:]
            self._header_bytes += len(piece)
            super().data_received(bytes(piece))
            if self.transport.is_closing():
                return
        if view:
            super().data_received(bytes(view))

    def _refuse(self) -> None:
        self.logger.warning("request header block over %d bytes refused", MAX_HEADER_BLOCK_BYTES)
        self.transport.write(RESPONSE_431)
        self.transport.close()
