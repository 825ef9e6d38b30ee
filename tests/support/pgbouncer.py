"""A real PgBouncer (Debian's ``pgbouncer``) in front of the test PostgreSQL, on a free port.

PgBouncer refuses to run as root, so under root it runs as the owner of the server's Unix
socket directory (the embedded server's system user) or as ``nobody`` for a TCP server, via
``runuser``; its config, auth file and log live in a private temporary directory owned by that
user. ``$CI`` set and no ``pgbouncer`` binary is a failure, not a skip (``.ci/run`` installs it).
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from tests.unit.api.live import free_port

BINARY_PATHS = ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer")


def pgbouncer_binary() -> str:
    """The binary's path; skips (fails with ``$CI`` set) when PgBouncer is not installed."""
    found = shutil.which("pgbouncer") or next((p for p in BINARY_PATHS if os.path.exists(p)), None)
    if found:
        return found
    message = "pgbouncer is not installed (apt-get install pgbouncer; .ci/run does it)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def _server_address(dsn: str) -> tuple[str, int, str]:
    """host (a TCP host or a Unix socket directory), port and user of a libpq-style URL."""
    parts = urlsplit(dsn)
    query = parse_qs(parts.query)
    host = (query.get("host") or [parts.hostname or "127.0.0.1"])[0]
    port = int((query.get("port") or [parts.port or 5432])[0])
    return host, port, parts.username or "postgres"


class PgBouncer:
    """One PgBouncer process; ``url(database)`` is a client URL through it."""

    def __init__(
        self,
        server_dsn: str,
        *,
        pool_size: int,
        pool_mode: str = "transaction",
        ignore_startup_parameters: str = "",
        max_client_conn: int = 2000,
    ) -> None:
        self.binary = pgbouncer_binary()
        self.host, self.server_port, self.user = _server_address(server_dsn)
        self.workdir = Path(tempfile.mkdtemp(prefix="hq-pgbouncer-"))
        self.port = free_port()
        self.pool_size = pool_size
        self.pool_mode = pool_mode
        self.ignore = ignore_startup_parameters
        self.max_client_conn = max_client_conn
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def config(self) -> str:
        """The tested configuration (docs/operations.md shows the same settings)."""
        ignore = f"ignore_startup_parameters = {self.ignore}\n" if self.ignore else ""
        return (
            "[databases]\n"
            f"* = host={self.host} port={self.server_port} user={self.user}\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {self.workdir / 'users.txt'}\n"
            f"pool_mode = {self.pool_mode}\n"
            f"default_pool_size = {self.pool_size}\nmin_pool_size = 0\nreserve_pool_size = 0\n"
            f"max_client_conn = {self.max_client_conn}\n"
            "server_reset_query = DISCARD ALL\nserver_reset_query_always = 0\n"
            f"{ignore}"
            f"logfile = {self.workdir / 'pgbouncer.log'}\n"
        )

    def _run_as(self) -> str | None:
        if os.geteuid() != 0:
            return None
        if self.host.startswith("/"):
            return pwd.getpwuid(os.stat(self.host).st_uid).pw_name
        return "nobody"

    def start(self, timeout: float = 15.0) -> PgBouncer:
        (self.workdir / "users.txt").write_text(f'"{self.user}" ""\n')
        ini = self.workdir / "pgbouncer.ini"
        ini.write_text(self.config)
        user = self._run_as()
        ids: dict[str, object] = {}
        if user is not None:
            entry = pwd.getpwnam(user)
            for path in (self.workdir, *self.workdir.iterdir()):
                os.chown(path, entry.pw_uid, entry.pw_gid)
            ids = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
        self.proc = subprocess.Popen(
            [self.binary, str(ini)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
            **ids,  # type: ignore[arg-type]
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"pgbouncer did not start: {self.log()[-2000:]}")
            time.sleep(0.05)

    def url(self, database: str) -> str:
        return f"postgresql://{quote(self.user)}@127.0.0.1:{self.port}/{quote(database)}"

    def log(self) -> str:
        try:
            return (self.workdir / "pgbouncer.log").read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> PgBouncer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
