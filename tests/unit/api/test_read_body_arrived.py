"""A body uvicorn already holds whole is read without the read timer
(hq_apps.api.http.read_body); one still arriving is read under it, as before."""

from __future__ import annotations

import asyncio
import socket
import time
import types
from collections.abc import Iterator
from typing import Any

import pytest

from hq_apps.api import http
from tests.unit.api.live import uvicorn_in_thread

TIMERS: list[float] = []
BODIES: list[bytes] = []


def _counting_timeout(delay: float) -> Any:
    TIMERS.append(delay)
    return asyncio.timeout(delay)


class _Request:
    def __init__(self, scope: Any, receive: Any) -> None:
        self.scope = scope
        self.receive = receive


async def _app(scope: dict, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    BODIES.append(await http.read_body(_Request(scope, receive)))  # type: ignore[arg-type]
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, int]]:
    with uvicorn_in_thread(_app, loop="asyncio", access_log=False) as addr:
        yield addr


@pytest.fixture(autouse=True)
def _timer(monkeypatch: pytest.MonkeyPatch) -> None:
    TIMERS.clear()
    BODIES.clear()
    fake = types.SimpleNamespace(timeout=_counting_timeout)
    monkeypatch.setattr(http, "asyncio", fake)


def _post(addr: tuple[str, int], parts: list[bytes]) -> bytes:
    with socket.create_connection(addr, timeout=10) as c:
        for i, part in enumerate(parts):
            if i:
                time.sleep(0.2)  # the server has the headers and waits for the rest
            c.sendall(part)
        return c.recv(65536)


def test_a_body_that_came_with_the_headers_is_read_without_a_timer(
    server: tuple[str, int],
) -> None:
    out = _post(server, [b"POST / HTTP/1.1\r\nhost: t\r\ncontent-length: 7\r\n\r\n{\"a\":1}"])
    assert out.startswith(b"HTTP/1.1 204")
    assert BODIES == [b'{"a":1}'] and TIMERS == []


def test_a_body_still_arriving_is_read_under_the_timer(server: tuple[str, int]) -> None:
    head = b"POST / HTTP/1.1\r\nhost: t\r\ncontent-length: 7\r\n\r\n"
    out = _post(server, [head + b'{"a"', b":1}"])
    assert out.startswith(b"HTTP/1.1 204")
    assert BODIES == [b'{"a":1}'] and TIMERS == [http.READ_TIMEOUT_S]
