"""docker/entrypoint.sh, run with a fake ``tracker`` on PATH that records its arguments."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"
WEB_VARS = {
    "HQ_PUBLIC_URL": "https://hq.example.org",
    "HQ_GITHUB_CLIENT_ID": "client-id",
    "HQ_GITHUB_CLIENT_SECRET_FILE": "/run/secrets/github-client.secret",
    "HQ_WEB_SESSION_SECRET_FILE": "/run/secrets/tracker-web.secret",
    "HQ_OAUTH_ADMIN_ORG": "saveweb",
    "HQ_OAUTH_ADMIN_TEAM": "core",
}
DB = "postgres://hq@postgres:5432/hq?sslmode=disable"

# Each call appends "<pid> <args, one per line>" then a "--" separator; FAIL_MIGRATE=1 makes
# `tracker migrate` fail like a database that is not reachable.
FAKE_TRACKER = """#!/bin/sh
{ echo "pid=$$"; for a in "$@"; do echo "$a"; done; echo "--"; } >> "$CALLS"
if [ "$1" = migrate ] && [ "${FAIL_MIGRATE:-}" = 1 ]; then echo 'migrate failed' >&2; exit 3; fi
exit 0
"""

pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")


def run(tmp_path: Path, *args: str, env: dict[str, str] | None = None):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "tracker"
    fake.write_text(FAKE_TRACKER)
    fake.chmod(0o755)
    calls = tmp_path / "calls"
    full_env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "CALLS": str(calls), **(env or {})}
    proc = subprocess.Popen(
        ["sh", str(ENTRYPOINT), *args],
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate(timeout=10)
    recorded = []
    if calls.exists():
        block: list[str] = []
        for line in calls.read_text().splitlines():
            if line == "--":
                recorded.append(block)
                block = []
            else:
                block.append(line)
    return proc, out, err, recorded


def args_of(call: list[str]) -> list[str]:
    return call[1:]


def test_non_serve_arguments_run_verbatim(tmp_path: Path) -> None:
    proc, _, _, calls = run(tmp_path, "tracker", "migrate", "--database-url", "x y")
    assert proc.returncode == 0
    assert [args_of(c) for c in calls] == [["migrate", "--database-url", "x y"]]


def test_other_programs_run_verbatim_without_any_configuration(tmp_path: Path) -> None:
    proc, out, _, calls = run(tmp_path, "echo", "hello", "world")
    assert (proc.returncode, out, calls) == (0, "hello world\n", [])


def test_serve_requires_database_url(tmp_path: Path) -> None:
    proc, _, err, calls = run(tmp_path, "serve")
    assert proc.returncode == 1
    assert "HQ_DATABASE_URL is required" in err
    assert calls == []


def test_serve_migrates_then_execs_serve(tmp_path: Path) -> None:
    proc, _, err, calls = run(tmp_path, "serve", env={"HQ_DATABASE_URL": DB})
    assert proc.returncode == 0, err
    assert [args_of(c) for c in calls] == [
        ["migrate", "--database-url", DB],
        ["serve", "--listen", ":8080", "--database-url", DB],
    ]
    # exec: the server replaces the entrypoint's shell (same PID), so it receives signals.
    assert calls[1][0] == f"pid={proc.pid}"
    assert calls[0][0] != f"pid={proc.pid}"


def test_no_arguments_means_serve(tmp_path: Path) -> None:
    proc, _, _, calls = run(tmp_path, env={"HQ_DATABASE_URL": DB})
    assert proc.returncode == 0
    assert [c[1] for c in calls] == ["migrate", "serve"]


def test_extra_serve_arguments_are_passed_on(tmp_path: Path) -> None:
    _, _, _, calls = run(
        tmp_path, "serve", "--public-url", "https://x", env={"HQ_DATABASE_URL": DB}
    )
    assert args_of(calls[1])[-2:] == ["--public-url", "https://x"]


def test_all_six_web_variables_are_accepted(tmp_path: Path) -> None:
    proc, _, err, calls = run(tmp_path, "serve", env={"HQ_DATABASE_URL": DB, **WEB_VARS})
    assert proc.returncode == 0, err
    assert [c[1] for c in calls] == ["migrate", "serve"]


@pytest.mark.parametrize("missing", sorted(WEB_VARS))
def test_partial_web_configuration_is_refused(tmp_path: Path, missing: str) -> None:
    env = {"HQ_DATABASE_URL": DB, **WEB_VARS}
    env[missing] = ""  # set but empty counts as missing
    proc, _, err, calls = run(tmp_path, "serve", env=env)
    assert proc.returncode == 1
    assert f"missing: {missing}" in err
    assert calls == []


def test_one_web_variable_names_all_missing_ones(tmp_path: Path) -> None:
    env = {"HQ_DATABASE_URL": DB, "HQ_OAUTH_ADMIN_TEAM": "core"}
    proc, _, err, calls = run(tmp_path, "serve", env=env)
    assert proc.returncode == 1
    for name in WEB_VARS:
        assert (name in err.split("missing:")[1]) == (name != "HQ_OAUTH_ADMIN_TEAM")
    assert calls == []


def test_failed_migration_stops_before_serving(tmp_path: Path) -> None:
    proc, _, err, calls = run(tmp_path, "serve", env={"HQ_DATABASE_URL": DB, "FAIL_MIGRATE": "1"})
    assert proc.returncode == 3
    assert "migrate failed" in err
    assert [c[1] for c in calls] == ["migrate"]


def test_entrypoint_is_executable_posix_sh() -> None:
    assert ENTRYPOINT.read_text().startswith("#!/bin/sh\n")
    assert os.access(ENTRYPOINT, os.X_OK)


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
def test_shellcheck_is_clean() -> None:
    subprocess.run(["shellcheck", "--shell=sh", str(ENTRYPOINT)], check=True)
