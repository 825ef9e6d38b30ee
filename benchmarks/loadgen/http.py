"""A minimal keep-alive HTTP/1.1 client on asyncio streams.

httpx spends 1.5–2.5 ms of client CPU per request on this machine, which would swamp the
server-side cost of small batches. This client does only what the benchmark needs: one
connection, one request at a time, ``Content-Length`` or chunked response bodies, JSON in
and out via msgspec. Each worker coroutine owns its own connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import msgspec

IDLE_REUSE_S = 20.0
"""Reconnect instead of reusing a connection idle for longer (uvicorn closes after 60 s)."""

_encode = msgspec.json.encode
_decode = msgspec.json.decode


class HttpError(Exception):
    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"HTTP {status}: {body[:300]!r}")
        self.status = status
        self.body = body


class Connection:
    """One persistent HTTP/1.1 connection to ``host:port``; reconnects if the server closes."""

    def __init__(self, host: str, port: int, headers: dict[str, str] | None = None) -> None:
        self.host = host
        self.port = port
        fixed = {"Host": f"{host}:{port}", "Connection": "keep-alive", **(headers or {})}
        self._fixed = "".join(f"{k}: {v}\r\n" for k, v in fixed.items()).encode("latin-1")
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._last_used = 0.0

    async def _connect(self) -> None:
        self._reader, self._writer = await asyncio.open_connection(self.host, self.port)

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(OSError):
                await self._writer.wait_closed()
            self._reader = self._writer = None

    async def request(
        self, method: str, path: str, body: bytes | None = None
    ) -> tuple[int, dict[bytes, bytes], bytes]:
        """Send one request and read the whole response: (status, lower-cased headers, body)."""
        if self._writer is not None and time.monotonic() - self._last_used > IDLE_REUSE_S:
            await self.close()  # the server may already have closed it (keep-alive timeout)
        if self._writer is None:
            await self._connect()
        assert self._reader is not None and self._writer is not None
        head = f"{method} {path} HTTP/1.1\r\n".encode("latin-1") + self._fixed
        if body is not None:
            head += b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
        self._writer.write(head + b"\r\n" + (body or b""))
        try:
            response = await self._read_response()
        except (asyncio.IncompleteReadError, ConnectionError):
            await self.close()
            raise
        self._last_used = time.monotonic()
        return response

    async def _read_response(self) -> tuple[int, dict[bytes, bytes], bytes]:
        assert self._reader is not None
        raw = await self._reader.readuntil(b"\r\n\r\n")
        lines = raw[:-4].split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        headers: dict[bytes, bytes] = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
            payload = await self._read_chunked()
        else:
            length = int(headers.get(b"content-length", b"0"))
            payload = await self._reader.readexactly(length) if length else b""
        if headers.get(b"connection", b"").lower() == b"close":
            await self.close()
        return status, headers, payload

    async def _read_chunked(self) -> bytes:
        """A ``Transfer-Encoding: chunked`` body (Go's net/http streams larger JSON bodies)."""
        assert self._reader is not None
        parts = []
        while True:
            size_line = await self._reader.readuntil(b"\r\n")
            size = int(size_line.split(b";", 1)[0].strip(), 16)
            if size == 0:
                while (await self._reader.readuntil(b"\r\n")) != b"\r\n":
                    pass  # trailers
                return b"".join(parts)
            parts.append(await self._reader.readexactly(size))
            await self._reader.readexactly(2)

    async def json(
        self, method: str, path: str, doc: Any = None, *, ok: tuple[int, ...] = (200,)
    ) -> tuple[int, Any]:
        """Send ``doc`` as JSON; decode the JSON answer (None for an empty body)."""
        body = None if doc is None else _encode(doc)
        status, _, payload = await self.request(method, path, body)
        if status not in ok:
            raise HttpError(status, payload)
        return status, (_decode(payload) if payload else None)
