"""Header blocks over 64 KiB get 431 before routing (issue 13 #2), under the real protocol."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

import pytest

from hq_apps.api.header_limit import MAX_HEADER_BLOCK_BYTES, BoundedHttpToolsProtocol
from tests.unit.api.live import uvicorn_in_thread

SEEN: list[str] = []


async def _app(scope: dict, receive: object, send: object) -> None:
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()  # type: ignore[operator]
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    SEEN.append(scope["path"])
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", str(len(body)).encode())]})  # type: ignore[operator]
    await send({"type": "http.response.body", "body": body})  # type: ignore[operator]


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, int]]:
    with uvicorn_in_thread(_app, http=BoundedHttpToolsProtocol) as addr:
        yield addr


def _exchange(addr: tuple[str, int], raw: bytes) -> bytes:
    with socket.create_connection(addr, timeout=10) as c:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            c.sendall(raw)
        out = b""
        while True:
            try:
                chunk = c.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            out += chunk
            if b"\r\n\r\n" in out and (out.startswith(b"HTTP/1.1 431") or b"connection: close" in out):
                break
            if out.startswith(b"HTTP/1.1 200") and out.endswith(b"|end"):
                break
    return out


def _request(header_bytes: int, body: bytes = b"|end") -> bytes:
    head = b"POST /x HTTP/1.1\r\nhost: t\r\nconnection: close\r\n"
    head += f"content-length: {len(body)}\r\n".encode()
    filler = MAX_HEADER_BLOCK_BYTES if header_bytes < 0 else header_bytes - len(head) - 2 - 9
    if filler > 0:
        head += b"x-pad: " + b"a" * filler + b"\r\n"
    return head + b"\r\n" + body


def test_block_at_the_limit_is_served(server: tuple[str, int]) -> None:
    raw = _request(MAX_HEADER_BLOCK_BYTES, body=b"b" * 100_000 + b"|end")
    assert len(raw.split(b"\r\n\r\n", 1)[0]) + 4 == MAX_HEADER_BLOCK_BYTES
    assert _exchange(server, raw).startswith(b"HTTP/1.1 200")


def test_block_over_the_limit_is_431(server: tuple[str, int]) -> None:
    SEEN.clear()
    raw = _request(MAX_HEADER_BLOCK_BYTES + 1)
    assert _exchange(server, raw).startswith(b"HTTP/1.1 431 Request Header Fields Too Large")
    raw = _request(4 << 20)
    assert _exchange(server, raw).startswith(b"HTTP/1.1 431")
    assert SEEN == []  # never routed


def test_keep_alive_requests_each_get_the_full_bound(server: tuple[str, int]) -> None:
    one = _request(MAX_HEADER_BLOCK_BYTES - 100, body=b"1").replace(b"connection: close", b"connection: keep-alive")
    two = _request(MAX_HEADER_BLOCK_BYTES - 100)
    with socket.create_connection(server, timeout=10) as c:
        c.sendall(one)
        out = b""
        while not (b"\r\n\r\n" in out and out.endswith(b"\r\n\r\n1")):
            chunk = c.recv(65536)
            assert chunk, out
            out += chunk
        assert out.startswith(b"HTTP/1.1 200")
        c.sendall(two)
        out = b""
        while not out.endswith(b"|end"):
            chunk = c.recv(65536)
            assert chunk, out
            out += chunk
        assert out.startswith(b"HTTP/1.1 200")


def test_second_request_on_a_kept_alive_connection_is_bounded_too(server: tuple[str, int]) -> None:
    one = _request(200, body=b"1").replace(b"connection: close", b"connection: keep-alive")
    with socket.create_connection(server, timeout=10) as c:
        c.sendall(one)
        out = b""
        while not (b"\r\n\r\n" in out and out.endswith(b"\r\n\r\n1")):
            out += c.recv(65536)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            c.sendall(_request(4 << 20))
        out = b""
        while b"\r\n" not in out:
            chunk = c.recv(65536)
            if not chunk:
                break
            out += chunk
        assert out.startswith(b"HTTP/1.1 431"), out[:100]
