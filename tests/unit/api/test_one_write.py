"""One socket write per response (hq_apps.api.one_write), on its own and under uvicorn."""

from __future__ import annotations

import asyncio
import re
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from hq_apps.api.one_write import (
    HeldWriteTransport,
    TrackerHttpProtocol,
    send_whole,
    whole_response_cycle,
)
from tests.unit.api.live import uvicorn_in_thread


class _Recorder:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False
        self.closing = False

    def write(self, data: bytes) -> None:
        assert not self.closed
        self.writes.append(data)

    def close(self) -> None:
        self.closed = self.closing = True

    def is_closing(self) -> bool:
        return self.closing


async def test_a_write_followed_in_the_same_step_goes_out_joined() -> None:
    rec = _Recorder()
    held = HeldWriteTransport(rec, asyncio.get_running_loop())  # type: ignore[arg-type]
    held.write(b"head")
    assert rec.writes == []
    held.write(b"body")
    assert rec.writes == [b"headbody"]
    await asyncio.sleep(0)
    assert rec.writes == [b"headbody"]  # the scheduled flush found nothing held


async def test_a_lone_write_goes_out_next_iteration_in_order() -> None:
    rec = _Recorder()
    held = HeldWriteTransport(rec, asyncio.get_running_loop())  # type: ignore[arg-type]
    held.write(b"head")
    await asyncio.sleep(0)
    assert rec.writes == [b"head"]
    held.write(b"chunk1")
    held.write(b"chunk2")
    held.write(b"chunk3")
    await asyncio.sleep(0)
    assert b"".join(rec.writes) == b"headchunk1chunk2chunk3"


async def test_close_writes_what_is_held_first() -> None:
    rec = _Recorder()
    held = HeldWriteTransport(rec, asyncio.get_running_loop())  # type: ignore[arg-type]
    held.write(b"last")
    held.close()
    assert rec.writes == [b"last"] and rec.closed
    await asyncio.sleep(0)
    assert rec.writes == [b"last"]


async def test_nothing_is_written_to_a_connection_already_closing() -> None:
    rec = _Recorder()
    held = HeldWriteTransport(rec, asyncio.get_running_loop())  # type: ignore[arg-type]
    held.write(b"head")
    rec.closing = True  # the client went away before the next iteration
    await asyncio.sleep(0)
    assert rec.writes == []


WRITES: list[int] = []
WRITTEN_BY_THE_END: list[int] = []


class _CountingProtocol(TrackerHttpProtocol):
    """Counts the writes that reach the connection's transport (asyncio's, which allows it)."""

    def connection_made(self, transport: Any) -> None:
        real = transport.write

        def write(data: bytes) -> None:
            WRITES.append(len(data))
            real(data)

        transport.write = write
        super().connection_made(transport)


async def _app(scope: dict, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    if scope["path"] == "/stream":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for part in (b"one,", b"two,", b"three"):
            await asyncio.sleep(0.01)
            await send({"type": "http.response.body", "body": part, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return
    body = b"x" * 300
    headers = [(b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    before = len(WRITES)
    await send({"type": "http.response.body", "body": body, "more_body": False})
    WRITTEN_BY_THE_END.append(len(WRITES) - before)  # in the same step as the last send


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, int]]:
    with uvicorn_in_thread(_app, http=_CountingProtocol, loop="asyncio") as addr:
        yield addr


def _read_responses(c: socket.socket, count: int, end: bytes) -> bytes:
    out = b""
    while out.count(end) < count:
        chunk = c.recv(65536)
        assert chunk, out
        out += chunk
    return out


def test_each_response_is_one_write_on_a_kept_alive_connection(server: tuple[str, int]) -> None:
    WRITES.clear()
    request = b"POST /x HTTP/1.1\r\nhost: t\r\ncontent-length: 2\r\n\r\n{}"
    with socket.create_connection(server, timeout=10) as c:
        for _ in range(3):
            c.sendall(request)
            out = _read_responses(c, 1, b"x" * 300)
            assert out.startswith(b"HTTP/1.1 200 OK\r\n") and out.endswith(b"\r\n\r\n" + b"x" * 300)
        c.sendall(request * 3)  # pipelined: three responses, in order, one write each
        out = _read_responses(c, 3, b"x" * 300)
        assert out.count(b"HTTP/1.1 200 OK") == 3
    assert len(WRITES) == 6
    assert all(n > 300 for n in WRITES)


def test_a_streamed_response_arrives_whole_and_in_order(server: tuple[str, int]) -> None:
    request = b"GET /stream HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n"
    with socket.create_connection(server, timeout=10) as c:
        c.sendall(request)
        out = b""
        while chunk := c.recv(65536):
            out += chunk
    head, _, body = out.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head and b"connection: close" in head
    assert body == b"4\r\none,\r\n4\r\ntwo,\r\n5\r\nthree\r\n0\r\n\r\n"


def test_a_head_response_is_written_when_it_completes(server: tuple[str, int]) -> None:
    """A HEAD response has no body write to join its headers: the end of the response writes
    them, so nothing is held once the protocol may close the connection."""
    WRITTEN_BY_THE_END.clear()
    with socket.create_connection(server, timeout=10) as c:
        c.sendall(b"HEAD /x HTTP/1.1\r\nhost: t\r\n\r\n")
        out = _read_responses(c, 1, b"\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 200 OK\r\n") and b"content-length: 300" in out
    deadline = time.monotonic() + 5  # the app records after its send returns
    while not WRITTEN_BY_THE_END and time.monotonic() < deadline:
        time.sleep(0.01)
    assert WRITTEN_BY_THE_END == [1]


WHOLE: list[bool] = []  # what each send_whole call returned


async def _whole_app(scope: dict, receive: Any, send: Any) -> None:
    """The same response sent whole (``/whole``) or the ASGI way (anything else)."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    headers_in = dict(scope["headers"])
    rid = b"a\x01b" if b"x-bad" in headers_in else headers_in.get(b"x-request-id", b"none")
    body = b'{"ok":true}'
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"x-request-id", rid),
        (b"x-frame-options", b"SAMEORIGIN"),
    ]
    cycle = whole_response_cycle(send)
    if scope["path"] == "/whole":
        assert cycle is not None
        sent = await send_whole(cycle, 429, headers, body)
        WHOLE.append(sent)
        if sent:
            return
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


@pytest.fixture(scope="module")
def whole_server() -> Iterator[tuple[str, int]]:
    with uvicorn_in_thread(
        _whole_app, http=TrackerHttpProtocol, loop="asyncio", access_log=False
    ) as addr:
        yield addr


def _exchange(addr: tuple[str, int], request: bytes, count: int) -> bytes:
    with socket.create_connection(addr, timeout=10) as c:
        c.sendall(request)
        out = b""
        while out.count(b'{"ok":true}') < count:
            chunk = c.recv(65536)
            if not chunk:
                break
            out += chunk
    return re.sub(rb"date: [^\r]*\r\n", b"date: -\r\n", out)


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1\r\nhost: t\r\nx-request-id: abc",
        b"HTTP/1.1\r\nhost: t\r\nconnection: close",
        b"HTTP/1.0\r\nhost: t",
        b"HTTP/1.1\r\nhost: t\r\nx-bad: 1",  # a value uvicorn refuses: the ASGI way fails alike
    ],
)
def test_a_whole_response_is_the_bytes_uvicorn_sends(
    whole_server: tuple[str, int], head: bytes
) -> None:
    WHOLE.clear()
    request = b"POST /%s %s\r\ncontent-length: 2\r\n\r\n{}"
    whole = _exchange(whole_server, request % (b"whole", head) * 2, 2)
    plain = _exchange(whole_server, request % (b"plain", head) * 2, 2)
    assert whole == plain
    if b"x-bad" in head:
        assert WHOLE == [False] and whole == b""  # uvicorn closes the connection, both ways
    elif b"HTTP/1.1\r\nhost: t\r\nx" in head:
        assert WHOLE == [True, True]  # kept alive: two responses on one connection
        assert whole.count(b"HTTP/1.1 429 Too Many Requests\r\n") == 2
        assert b"connection: close" not in whole
    else:
        assert WHOLE == [True] and whole.count(b"HTTP/1.1 429") == 1
        assert b"connection: close\r\n" in whole
