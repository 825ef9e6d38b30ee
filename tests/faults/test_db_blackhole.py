"""A database that stops answering without closing connections (a network partition, a hung
server): requests must still fail within a bounded time instead of hanging, and ``/readyz``
must say 503 within its own timeout.

PostgreSQL is reached through a TCP proxy in this process that can be frozen (bytes are no
longer relayed, sockets stay open) and thawed again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from urllib.parse import parse_qs, urlsplit, urlunsplit

import httpx
import pytest

from hq_apps.api.app import create_app
from hq_apps.settings import Settings
from hq_apps.wiring import open_store
from hq_domain.clock import SystemClock
from tests.faults.harness import ADMIN, seed
from tests.faults.live import ensure_optional_routes

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]

BOUND_S = 10.0


class FreezableProxy:
    def __init__(self, target: tuple[str, int] | str) -> None:
        self.target = target  # (host, port) or a Unix socket path
        self.frozen = asyncio.Event()
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            while data := await reader.read(65536):
                while self.frozen.is_set():  # hold the bytes: the peer just waits
                    await asyncio.sleep(0.05)
                writer.write(data)
                await writer.drain()
        writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if isinstance(self.target, str):
            up_r, up_w = await asyncio.open_unix_connection(self.target)
        else:
            up_r, up_w = await asyncio.open_connection(*self.target)
        await asyncio.gather(self._pipe(reader, up_w), self._pipe(up_r, writer))

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()


def _target(dsn: str) -> tuple[str, int] | str:
    """Where the DSN's server listens: TCP (host, port) or the Unix socket path."""
    parts = urlsplit(dsn)
    query = parse_qs(parts.query)
    if "host" in query:  # e.g. the embedded server: ?host=<socket dir>&port=<n>
        port = query.get("port", [str(parts.port or 5432)])[0]
        return f"{query['host'][0]}/.s.PGSQL.{port}"
    return parts.hostname or "127.0.0.1", parts.port or 5432


@pytest.fixture
async def proxied(pg_dsn: str) -> AsyncIterator[tuple[FreezableProxy, httpx.AsyncClient]]:
    dsn = os.environ.get("HQ_BLACKHOLE_DSN", pg_dsn)
    await seed(dsn, "bh", 1)
    proxy = FreezableProxy(_target(dsn))
    port = await proxy.start()
    parts = urlsplit(dsn)
    user = parts.username or "postgres"
    via = urlunsplit(("postgresql", f"{user}@127.0.0.1:{port}", parts.path, "", ""))
    # The production wiring bounds every statement and connection attempt; the bounds are
    # shrunk here so the test stays short.
    settings = Settings(
        database_url=via, pool_min=1, pool_max=4, db_command_timeout_s=3, db_connect_timeout_s=2
    )
    store = await open_store(settings, SystemClock())
    app = ensure_optional_routes(create_app(replace(settings, sweep_interval_s=0), store), store)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://hq") as client:
            yield proxy, client
    finally:
        proxy.frozen.clear()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(store.close(), 5)
        await proxy.close()


@pytest.mark.slow
async def test_frozen_database_fails_requests_in_bounded_time(proxied) -> None:  # type: ignore[no-untyped-def]
    proxy, client = proxied
    assert (await client.get("/api/v1/whoami", headers=ADMIN)).status_code == 200
    proxy.frozen.set()
    t0 = time.monotonic()
    assert (await client.get("/healthz")).status_code == 200
    ready = await client.get("/readyz")
    assert ready.status_code == 503 and time.monotonic() - t0 < 5
    try:
        r = await asyncio.wait_for(client.get("/api/v1/whoami", headers=ADMIN), BOUND_S)
    except TimeoutError:
        pytest.fail(f"whoami still waiting on the database after {BOUND_S}s")
    assert 500 <= r.status_code < 600 and r.json()["error"]["code"] == "internal_error"
    proxy.frozen.clear()
    assert (await client.get("/api/v1/whoami", headers=ADMIN)).status_code == 200


async def test_readyz_reports_a_frozen_database(proxied) -> None:  # type: ignore[no-untyped-def]
    """The part that already holds: readiness has its own bound."""
    proxy, client = proxied
    assert (await client.get("/readyz")).status_code == 200
    proxy.frozen.set()
    t0 = time.monotonic()
    assert (await client.get("/readyz")).status_code == 503
    assert time.monotonic() - t0 < 5
    assert (await client.get("/healthz")).status_code == 200
    proxy.frozen.clear()
    await asyncio.sleep(0.2)
    assert (await client.get("/readyz")).status_code == 200
