"""The two implementations under test and their life cycle on a shared PostgreSQL server.

Both speak the same command line (``tracker migrate|bootstrap-user|put-project|enqueue-source|
serve``, ``source pack``, ``hqctl enqueue-source``), so one code path drives either. Each
implementation gets template databases (migrated, a bootstrapped admin+worker user, optionally a
project full of jobs enqueued through its own admin route); every measured run then starts from
``CREATE DATABASE bench_… TEMPLATE …``: a fresh database with the same starting state for every
run, and no migration or enqueue inside a cell.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg

from benchmarks import env
from benchmarks.loadgen.admin import Target

OURS = "ours"
REF = "ref"


@dataclass(frozen=True)
class Impl:
    """How to run one implementation's binaries."""

    name: str
    tracker: tuple[str, ...]
    source: tuple[str, ...]
    hqctl: tuple[str, ...]
    serve_extra: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)

    def pooled(self) -> Impl:
        """The same implementation configured for a transaction-mode pooler."""
        if self.name != OURS:
            return self  # the reference has no pooler setting
        return Impl(
            self.name,
            self.tracker,
            self.source,
            self.hqctl,
            self.serve_extra,
            {**self.env, "HQ_DATABASE_POOLER": "transaction"},
        )


OURS_PYTHON_ENV = "HQ_OURS_PYTHON"
"""The interpreter that runs our commands (a virtualenv's ``python`` with this project
installed); by default the one running the benchmark. The container image runs CPython built
with profile-guided and link-time optimisation (``python:3.11-slim-bookworm``); an interpreter
built without them (pyenv's default build) ran plain Python ~20 % slower here and cost our
tracker ~10 % more CPU per worker request; the reference's figures do not depend on it.
docs/performance.md records which one ran and how fast it is."""


def ours_python() -> str:
    return os.environ.get(OURS_PYTHON_ENV) or sys.executable


def _entry(name: str, module: str) -> tuple[str, ...]:
    python = ours_python()
    script = Path(python).parent / name
    if python == sys.executable and script.exists():
        return (str(script),)
    return (python, "-m", module)


def ours(processes: int = 1) -> Impl:
    extra = ("--processes", str(processes)) if processes > 1 else ()
    return Impl(
        OURS,
        _entry("tracker", "hq_apps.cli.tracker"),
        _entry("source", "hq_apps.cli.source"),
        _entry("hqctl", "hq_apps.cli.hqctl"),
        extra,
    )


def compile_bytecode() -> float:
    """Compile our code and its dependencies to bytecode once, as the container image does
    (``UV_COMPILE_BYTECODE=1`` in the Dockerfile), and return the seconds it took.

    Where ``PYTHONDONTWRITEBYTECODE`` is set (this workplace sets it) Python never caches what
    it compiles, so every CLI run would recompile its imports from source: about 0.2 s of a
    4-6 s import, a cost no deployment pays. Python reads existing ``.pyc`` files whatever that
    variable says, so compiling them here is enough.
    """
    started = time.perf_counter()
    # Our source and the virtualenv's packages, as the interpreter that runs our commands sees
    # them; its own library under sys.base_prefix was compiled when it was installed.
    python = ours_python()
    found = subprocess.run(
        [python, "-c", "import json, sys; print(json.dumps([sys.base_prefix, sys.path]))"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    base_prefix, paths = json.loads(found.stdout)
    base = Path(base_prefix).resolve()
    dirs = [
        p for p in paths
        if p and Path(p).is_dir() and Path(p).resolve() != Path.cwd()
        and not Path(p).resolve().is_relative_to(base)
    ]  # fmt: skip
    subprocess.run(
        [python, "-m", "compileall", "-q", "-j", "0", *dirs],
        check=False,  # a file that does not compile (a test fixture) leaves the rest compiled
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def reference(bin_dir: Path) -> Impl:
    missing = [b for b in ("tracker", "source", "hqctl") if not (bin_dir / b).is_file()]
    if missing:
        raise SystemExit(f"HQ_REF_BIN_DIR={bin_dir} lacks {', '.join(missing)}")
    return Impl(
        REF,
        (str(bin_dir / "tracker"),),
        (str(bin_dir / "source"),),
        (str(bin_dir / "hqctl"),),
    )


def run_cli(cmd: Sequence[str], impl: Impl, timeout: float = 900) -> None:
    done = subprocess.run(
        list(cmd),
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **impl.env},
        cwd=env.REPO_ROOT,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:2])} failed: {(done.stderr or done.stdout)[-800:]}")


@dataclass
class Timed:
    wall_s: float
    cli_cpu: float
    peak_rss_mib: float
    returncode: int
    output: str


def run_timed(cmd: Sequence[str], impl: Impl, timeout: float = 1800) -> Timed:
    """Run ``cmd`` and account its own CPU and peak RSS (``wait4``), not the benchmark's."""
    out_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"hq-bench-{secrets.token_hex(4)}.out"
    with open(out_path, "wb") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            list(cmd),
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **impl.env},
            cwd=env.REPO_ROOT,
        )
        deadline = time.monotonic() + timeout
        peak_kib = 0
        while True:
            peak_kib = max(peak_kib, peak_rss_kib(proc.pid) or 0)
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
            time.sleep(0.02)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    text = out_path.read_text(errors="replace")[-2000:]
    out_path.unlink()
    return Timed(wall, usage.ru_utime + usage.ru_stime, peak_kib / 1024, proc.returncode, text)


def parse_vmhwm(status_text: str) -> int | None:
    """``VmHWM`` (peak resident set, KiB) from a ``/proc/PID/status`` text."""
    for line in status_text.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return None


def peak_rss_kib(pid: int) -> int | None:
    """The process's own peak RSS so far. (``wait4``'s ``ru_maxrss`` is no use here: Linux
    carries the forking parent's peak across ``exec``, so every child would report at least the
    benchmark's own size.)"""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            return parse_vmhwm(f.read())
    except OSError:
        return None


BUSY = (asyncpg.exceptions.TooManyConnectionsError, asyncpg.exceptions.CannotConnectNowError)


async def admin_connect(dsn: str, patience_s: float = 300.0) -> asyncpg.Connection:
    """Connect, waiting while the shared server has no free connection slot (other work on the
    machine may hold all of ``max_connections`` for a while)."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            return await asyncpg.connect(dsn)
        except BUSY:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(2.0)


async def create_database(admin_dsn: str, template: str | None = None) -> str:
    name = f"bench_{int(time.time())}_{secrets.token_hex(3)}"
    conn = await admin_connect(admin_dsn)
    try:
        suffix = f' TEMPLATE "{template}"' if template else ""
        await conn.execute(f'CREATE DATABASE "{name}"{suffix}')
    finally:
        await conn.close()
    return name


async def drop_database(admin_dsn: str, name: str, *, template: bool = False) -> None:
    conn = await admin_connect(admin_dsn)
    try:
        if template:
            await conn.execute(f'ALTER DATABASE "{name}" WITH IS_TEMPLATE false')
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


async def freeze_template(admin_dsn: str, name: str) -> None:
    """Make ``name`` a template nobody (not even autovacuum) connects to while it is copied."""
    conn = await admin_connect(admin_dsn)
    try:
        await conn.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false IS_TEMPLATE true')
        await conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name
        )
    finally:
        await conn.close()


def bootstrap(impl: Impl, dsn: str, token_file: Path) -> None:
    run_cli([*impl.tracker, "migrate", "--database-url", dsn], impl)
    run_cli(
        [
            *impl.tracker,
            "bootstrap-user",
            "--database-url",
            dsn,
            "--user-id",
            env.BENCH_USER,
            "--roles",
            "admin,worker",
            "--machine-token-file",
            str(token_file),
        ],
        impl,
    )


def write_token(workdir: Path) -> tuple[str, Path]:
    token = "hq_" + secrets.token_urlsafe(32)
    path = workdir / f"bench-{secrets.token_hex(3)}.token"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token, path


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    target: Target
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://{self.target.host}:{self.target.port}"


@asynccontextmanager
async def serve(impl: Impl, dsn: str, token: str, workdir: Path) -> AsyncIterator[Server]:
    """``tracker serve`` of ``impl`` on a free loopback port; SIGINT and wait at exit."""
    port = env.free_port()
    log_path = workdir / f"{impl.name}-{port}.log"
    cmd = [
        *impl.tracker,
        "serve",
        "--database-url",
        dsn,
        "--listen",
        f"127.0.0.1:{port}",
        *impl.serve_extra,
    ]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=env.REPO_ROOT,
            env={**os.environ, **impl.env},
        )
    try:
        try:
            await env._wait_healthy("127.0.0.1", port, process, timeout=60)
        except RuntimeError as exc:
            tail = log_path.read_text(errors="replace")[-1500:]
            raise RuntimeError(f"{impl.name} serve: {exc}: {tail}") from exc
        yield Server(process, Target("127.0.0.1", port, token, process.pid), log_path)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                await asyncio.to_thread(process.wait, 30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
