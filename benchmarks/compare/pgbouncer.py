"""A throw-away PgBouncer in transaction mode in front of the benchmark's PostgreSQL.

Debian's ``pgbouncer`` (``apt-get install -y pgbouncer``) runs as an unprivileged user with a
temporary configuration: ``pool_mode = transaction``, ``default_pool_size = 20``, a free port on
127.0.0.1, trust authentication with an ``auth_file`` listing the user, and a wildcard database
entry so every fresh ``bench_*`` database is reachable through it.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from benchmarks import env

POOL_SIZE = 20


def config_text(port: int, pg_host: str, pg_port: int, workdir: Path, pool_size: int) -> str:
    return f"""[databases]
* = host={pg_host} port={pg_port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {workdir}/userlist.txt
pool_mode = transaction
default_pool_size = {pool_size}
max_client_conn = 5000
max_db_connections = 0
ignore_startup_parameters = extra_float_digits
logfile = {workdir}/pgbouncer.log
pidfile = {workdir}/pgbouncer.pid
server_reset_query =
log_connections = 0
log_disconnections = 0
"""


def binary() -> str:
    found = shutil.which("pgbouncer") or (
        "/usr/sbin/pgbouncer" if Path("/usr/sbin/pgbouncer").exists() else None
    )
    if not found:
        raise SystemExit("pgbouncer not installed: apt-get update && apt-get install -y pgbouncer")
    return found


@dataclass
class Bouncer:
    port: int
    process: subprocess.Popen[bytes]
    workdir: Path

    def dsn(self, direct_dsn: str) -> str:
        """``direct_dsn`` with its host:port replaced by the bouncer's."""
        parts = urlsplit(direct_dsn)
        user = parts.username or "postgres"
        netloc = f"{user}@127.0.0.1:{self.port}"
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))

    def log_tail(self) -> str:
        try:
            return (self.workdir / "pgbouncer.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""


@contextmanager
def running(
    admin_dsn: str, run_as: str = "postgres", pool_size: int = POOL_SIZE
) -> Iterator[Bouncer]:
    parts = urlsplit(admin_dsn)
    user = parts.username or "postgres"
    workdir = Path(tempfile.mkdtemp(prefix="hq-bench-pgbouncer-"))
    port = env.free_port()
    (workdir / "userlist.txt").write_text(f'"{user}" ""\n"root" ""\n')
    (workdir / "pgbouncer.ini").write_text(
        config_text(port, parts.hostname or "127.0.0.1", parts.port or 5432, workdir, pool_size)
    )
    cmd = [binary(), str(workdir / "pgbouncer.ini")]
    if os.geteuid() == 0:  # pgbouncer refuses to run as root
        account = pwd.getpwnam(run_as)
        for path in [workdir, *workdir.iterdir()]:
            os.chown(path, account.pw_uid, account.pw_gid)
        cmd = ["runuser", "-u", run_as, "--", *cmd]
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    bouncer = Bouncer(port, process, workdir)
    try:
        deadline = time.monotonic() + 15
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"pgbouncer exited: {bouncer.log_tail()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"pgbouncer did not listen: {bouncer.log_tail()}") from None
                time.sleep(0.1)
        yield bouncer
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)  # immediate shutdown
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(workdir, ignore_errors=True)
