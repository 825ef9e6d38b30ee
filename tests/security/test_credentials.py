"""Credential handling: machine tokens are looked up by digest only, secret material is
compared in constant time, and generated secret files are private (0600) whatever the umask."""

from __future__ import annotations

import ast
import asyncio
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest

from hq_adapters.memory import MemoryStore
from hq_adapters.postgres import connect
from hq_domain.clock import ManualClock, SystemClock
from hq_domain.ids import machine_token_digest
from hq_domain.users import Role

SRC = Path(__file__).resolve().parents[2] / "src"


def _sql_blocks() -> dict[str, str]:
    blocks: dict[str, str] = {}
    for path in SRC.rglob("*.sql"):
        name = str(path.relative_to(SRC))
        for chunk in re.split(r"^-- name: ", path.read_text(), flags=re.M)[1:]:
            head, _, body = chunk.partition("\n")
            blocks[f"{name}:{head.strip()}"] = body
    return blocks


def test_no_sql_selects_a_token_by_its_plaintext() -> None:
    """Lookups go through ``token_hash``; the plaintext column is only ever written or read
    back for re-display, never matched against a presented token."""
    blocks = _sql_blocks()
    assert any("principal_for_token" in k for k in blocks)
    for name, body in blocks.items():
        code = "\n".join(line.split("--")[0] for line in body.splitlines())
        assert not re.search(r"\btoken\s*=\s*\$\d", code), name
        assert not re.search(r"\$\d\s*=\s*(\w+\.)?token\b", code), name
    lookup = next(v for k, v in blocks.items() if k.endswith(":principal_for_token"))
    assert re.search(r"token_hash\s*=\s*\$1", lookup)


def _calls(path: Path, func: str) -> list[ast.Call]:
    tree = ast.parse(path.read_text())
    return [
        n for n in ast.walk(tree)
        if isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", "")) == func
    ]  # fmt: skip


def test_both_adapters_digest_before_looking_up() -> None:
    for path in (SRC / "hq_adapters/memory/user_ops.py", SRC / "hq_adapters/postgres/users.py"):
        assert _calls(path, "machine_token_digest"), path
    # the apps never look at stored tokens themselves: one authentication path
    callers = [p for p in (SRC / "hq_apps").rglob("*.py") if _calls(p, "principal_for_token")]
    assert [p.name for p in callers] == ["auth.py"], callers


def test_secret_comparisons_are_constant_time() -> None:
    security = (SRC / "hq_apps/web/security.py").read_text()
    pages = (SRC / "hq_apps/web/auth_pages.py").read_text()
    assert security.count("hmac.compare_digest") >= 2  # CSRF token, OAuth cookie signature
    assert "compare_digest" in pages  # OAuth state
    for text in (security, pages):
        assert not re.search(r"(csrf|state|sig\w*)\s*==\s*", text), "plain == on a secret"


async def test_memory_store_ignores_the_plaintext_column() -> None:
    store = MemoryStore(ManualClock())
    await store.bootstrap_user("u", [Role.ADMIN], "tok-real")
    store.state.tokens["u"].plaintext = "tok-forged"
    assert (await store.principal_for_token("tok-real")) is not None
    assert (await store.principal_for_token("tok-forged")) is None


@pytest.mark.postgres
async def test_postgres_store_ignores_the_plaintext_column(pg_dsn: str) -> None:
    store = await connect(pg_dsn, SystemClock(), min_size=1, max_size=1)
    conn = await asyncpg.connect(pg_dsn)
    try:
        await store.bootstrap_user("u", [Role.ADMIN], "tok-real")
        await conn.execute("UPDATE tracker_machine_tokens SET token = 'tok-forged'")
        assert (await store.principal_for_token("tok-real")) is not None
        assert (await store.principal_for_token("tok-forged")) is None
        stored = await conn.fetchval("SELECT token_hash FROM tracker_machine_tokens")
        assert bytes(stored) == machine_token_digest("tok-real")
    finally:
        await conn.close()
        await store.close()


def _umask0() -> None:
    os.umask(0)


def _tracker(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hq_apps.cli.tracker", *args], capture_output=True, text=True,
        timeout=60, preexec_fn=_umask0, cwd=cwd,
    )  # fmt: skip


def test_web_keygen_writes_a_private_file_and_never_overwrites(tmp_path: Path) -> None:
    out = tmp_path / "web.secret"
    r = _tracker("web-keygen", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600  # even with umask 0
    secret = out.read_text()
    assert secret.strip() not in r.stdout + r.stderr
    again = _tracker("web-keygen", "--out", str(out))
    assert again.returncode == 1 and out.read_text() == secret


def test_dev_admin_token_file_is_private(tmp_path: Path) -> None:
    """``tracker dev`` keeps its admin token in ``./data/admin.token`` (created 0600)."""
    from hq_apps.wiring import _dev_token

    old = os.umask(0)
    try:
        path = tmp_path / "admin.token"
        token = _dev_token(str(path))
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().strip() == token and token.startswith("hq_")
    assert _dev_token(str(path)) == token  # reused, not regenerated


def test_group_readable_token_files_are_refused(tmp_path: Path) -> None:
    token_file = tmp_path / "t"
    token_file.write_text("hq_do-not-print-me\n")
    token_file.chmod(0o640)
    r = _tracker("bootstrap-user", "--database-url", "postgresql://nobody@127.0.0.1:1/x",
                 "--user-id", "u", "--machine-token-file", str(token_file))  # fmt: skip
    assert r.returncode == 1
    assert "permissions must not allow group or other access; run: chmod 600" in r.stderr
    assert "do-not-print-me" not in r.stdout + r.stderr


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_tracker_dev_creates_a_private_admin_token(tmp_path: Path) -> None:
    """The real ``tracker dev`` (embedded PostgreSQL under ./data) with umask 0."""
    import tempfile
    import time

    from tests.unit.api.live import free_port

    workdir = Path(tempfile.mkdtemp(prefix="rel-dev-"))  # pgserver must be able to enter it
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hq_apps.cli.tracker", "dev", "--listen", f"127.0.0.1:{port}"],
        cwd=workdir, preexec_fn=_umask0, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    token_path = workdir / "data" / "admin.token"
    try:
        deadline = time.monotonic() + 90
        while not token_path.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert token_path.exists()
        assert stat.S_IMODE(token_path.stat().st_mode) == 0o600
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert token_path.read_text().strip() not in out.decode(errors="replace")
    asyncio.run(asyncio.sleep(0))
    import shutil

    shutil.rmtree(workdir, ignore_errors=True)
