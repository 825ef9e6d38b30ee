"""compose.yaml against spec §7, checked structurally (no Docker engine is needed).

`docker compose config` is run as well when the Compose plugin is installed. The tracker-init
script is executed for real against a temporary directory standing in for ./secrets.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[3]
COMPOSE = yaml.safe_load((ROOT / "compose.yaml").read_text())
SERVICES = COMPOSE["services"]
TRACKERS = ("tracker", "tracker-2")


def env_example() -> dict[str, str]:
    out = {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key] = value
    return out


def test_project_name_and_services() -> None:
    assert COMPOSE["name"] == "saveweb-hq"
    assert set(SERVICES) == {"postgres", "tracker-init", "tracker", "tracker-2"}


def test_postgres_is_private_and_checked() -> None:
    pg = SERVICES["postgres"]
    assert pg["image"] == "postgres:17-alpine"
    assert pg["environment"]["POSTGRES_DB"] == "hq"
    assert pg["environment"]["POSTGRES_USER"] == "hq"
    assert pg["environment"]["POSTGRES_HOST_AUTH_METHOD"] == "trust"
    assert "ports" not in pg and "expose" not in pg
    assert pg["networks"] == ["database"]
    assert COMPOSE["networks"]["database"]["internal"] is True
    assert pg["volumes"] == ["./data/postgres:/var/lib/postgresql/data"]
    assert pg["healthcheck"]["test"] == ["CMD", "pg_isready", "-U", "hq", "-d", "hq"]
    assert pg["healthcheck"]["interval"] == "5s"
    assert pg["healthcheck"]["retries"] == 20
    assert "no-new-privileges:true" in pg["security_opt"]


def test_tracker_init_is_minimal_root_one_shot() -> None:
    init = SERVICES["tracker-init"]
    assert init["user"] == "0:0"
    assert init["restart"] == "no"
    assert init["cap_drop"] == ["ALL"]
    assert sorted(init["cap_add"]) == ["CHOWN", "DAC_OVERRIDE", "FOWNER"]
    assert init["network_mode"] == "none"
    assert init["volumes"] == ["./secrets:/run/secrets"]
    assert init["image"] == SERVICES["tracker"]["image"]


@pytest.mark.parametrize("name", TRACKERS)
def test_tracker_hardening_and_environment(name: str) -> None:
    t = SERVICES[name]
    assert t["image"] == "${HQ_IMAGE:-saveweb-hq}:${HQ_VERSION:-dev}"
    assert t["build"]["args"] == {
        "VERSION": "${HQ_VERSION:-dev}",
        "COMMIT": "${HQ_COMMIT:-unknown}",
    }
    assert t["environment"] == {
        "HQ_DATABASE_URL": "postgres://hq@postgres:5432/hq?sslmode=disable",
        "HQ_PUBLIC_URL": "${HQ_PUBLIC_URL:-https://hq.saveweb.org}",
        "HQ_GITHUB_CLIENT_ID": "${HQ_GITHUB_CLIENT_ID:-}",
        "HQ_GITHUB_CLIENT_SECRET_FILE": "/run/secrets/github-client.secret",
        "HQ_WEB_SESSION_SECRET_FILE": "/run/secrets/tracker-web.secret",
        "HQ_OAUTH_ADMIN_ORG": "${HQ_OAUTH_ADMIN_ORG:-saveweb}",
        "HQ_OAUTH_ADMIN_TEAM": "${HQ_OAUTH_ADMIN_TEAM:-core}",
    }
    assert t["volumes"] == ["./secrets:/run/secrets:ro"]
    assert t["read_only"] is True
    assert t["tmpfs"] == ["/tmp:size=272m,mode=1777"]
    # Issue 13 #4: the only spool (an admin upload whose file precedes the csrf field) fits.
    from hq_apps.web.context import UPLOAD_FORM_LIMIT

    assert UPLOAD_FORM_LIMIT + (8 << 20) <= 272 << 20
    assert t["cap_drop"] == ["ALL"] and "cap_add" not in t
    assert t["user"] == "65532:65532"
    assert t["init"] is True
    assert t["stop_grace_period"] == "15s"
    assert "no-new-privileges:true" in t["security_opt"]
    assert set(t["networks"]) == {"database", "edge"}
    assert t["depends_on"]["postgres"] == {"condition": "service_healthy"}
    assert t["depends_on"]["tracker-init"] == {"condition": "service_completed_successfully"}
    hc = t["healthcheck"]
    assert (hc["interval"], hc["retries"], hc["start_period"]) == ("10s", 12, "10s")
    assert hc["test"][:3] == ["CMD", "python", "-c"]
    assert "http://127.0.0.1:8080/healthz" in hc["test"][3]


def test_healthcheck_command_fails_on_a_dead_server() -> None:
    # The image's healthcheck is plain Python: it must exit non-zero when nothing listens.
    code = SERVICES["tracker"]["healthcheck"]["test"][3].replace("8080", "9")
    proc = subprocess.run(["python3", "-c", code], capture_output=True, timeout=30)
    assert proc.returncode != 0


def test_ports_are_loopback_only_and_distinct() -> None:
    assert SERVICES["tracker"]["ports"] == ["127.0.0.74:8080:8080"]
    assert SERVICES["tracker-2"]["ports"] == ["127.0.0.74:8081:8080"]
    for service in SERVICES.values():
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.74:")


def test_second_replica_is_opt_in_and_waits_for_the_first() -> None:
    assert SERVICES["tracker-2"]["profiles"] == ["replicas"]
    assert "profiles" not in SERVICES["tracker"]
    assert SERVICES["tracker-2"]["depends_on"]["tracker"] == {"condition": "service_healthy"}


def test_env_example_matches_spec_and_covers_compose_variables() -> None:
    env = env_example()
    assert {k: env[k] for k in ("HQ_VERSION", "HQ_COMMIT", "HQ_PUBLIC_URL", "HQ_GITHUB_CLIENT_ID",
                                "HQ_OAUTH_ADMIN_ORG", "HQ_OAUTH_ADMIN_TEAM")} == {
        "HQ_VERSION": "dev",
        "HQ_COMMIT": "unknown",
        "HQ_PUBLIC_URL": "https://hq.saveweb.org",
        "HQ_GITHUB_CLIENT_ID": "",
        "HQ_OAUTH_ADMIN_ORG": "saveweb",
        "HQ_OAUTH_ADMIN_TEAM": "core",
    }  # fmt: skip
    used = set(re.findall(r"\$\{(\w+)", (ROOT / "compose.yaml").read_text()))
    documented = set(env) | set(re.findall(r"^# (\w+)=", (ROOT / ".env.example").read_text(), re.M))
    assert used <= documented


def _init_script(secrets: Path) -> str:
    script = SERVICES["tracker-init"]["command"][0]
    assert SERVICES["tracker-init"]["entrypoint"] == ["/bin/sh", "-eu", "-c"]
    assert "$" not in script.replace("$$", "")  # no Compose interpolation inside the script
    return script.replace("/run/secrets", str(secrets))


def _run_init(tmp_path: Path, secrets: Path) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "tracker"
    # Stands in for `tracker web-keygen --out PATH` (exclusive create, mode 0600).
    fake.write_text(
        '#!/bin/sh\n[ "$1" = web-keygen ] && [ ! -e "$3" ] && umask 077 && echo key > "$3"\n'
    )
    fake.chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    return subprocess.run(
        ["/bin/sh", "-eu", "-c", _init_script(secrets)], env=env, capture_output=True, text=True
    )


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to 65532 needs root")


@needs_root
def test_init_refuses_missing_or_empty_github_secret(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    proc = _run_init(tmp_path, secrets)
    assert proc.returncode == 1 and "github-client.secret is missing or empty" in proc.stderr
    (secrets / "github-client.secret").write_text("")
    assert _run_init(tmp_path, secrets).returncode == 1
    assert not (secrets / "tracker-web.secret").exists()


@needs_root
def test_init_creates_web_secret_and_fixes_ownership(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    secrets.mkdir(mode=0o755)
    (secrets / "github-client.secret").write_text("gh-secret\n")
    (secrets / "github-client.secret").chmod(0o644)
    proc = _run_init(tmp_path, secrets)
    assert proc.returncode == 0, proc.stderr
    web = secrets / "tracker-web.secret"
    assert web.read_text() == "key\n"
    for path, mode in ((secrets, 0o700), (web, 0o600), (secrets / "github-client.secret", 0o600)):
        st = path.stat()
        assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (65532, 65532, mode), path


@needs_root
def test_init_keeps_an_existing_web_secret(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "github-client.secret").write_text("gh-secret\n")
    (secrets / "tracker-web.secret").write_text("old-key\n")
    assert _run_init(tmp_path, secrets).returncode == 0
    assert (secrets / "tracker-web.secret").read_text() == "old-key\n"


def _compose_plugin() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _compose_plugin(), reason="the docker compose plugin is not installed")
def test_docker_compose_config_accepts_the_file() -> None:
    for extra in ([], ["--profile", "replicas"]):
        subprocess.run(
            ["docker", "compose", *extra, "-f", str(ROOT / "compose.yaml"), "config", "-q"],
            check=True,
            cwd=ROOT,
        )
