"""``tracker``: local database operations and the HTTP server (spec §4.1, D5).

Settings are read from flags and ``HQ_*`` variables here, and only here. Any failure prints one
JSON line ``{"level":"ERROR","msg":"tracker stopped","error":...}`` on stderr and exits 1.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import secrets
import sys
from collections.abc import Sequence
from typing import Annotated

from cyclopts import App, Parameter
from cyclopts.exceptions import CycloptsError

from hq_apps import logging as hq_logging
from hq_apps import wiring
from hq_apps.cli.common import (
    CliError,
    decode_web_secret,
    go_style_flags,
    parse_listen,
    parse_qps,
    read_secret_file,
    validate_public_url,
    write_exclusive,
)
from hq_apps.cli.ops import monitor, prune_claim_buckets
from hq_apps.cli.source_import import enqueue_source_command
from hq_apps.settings import Settings, WebSettings
from hq_domain.clock import SystemClock
from hq_domain.ids import is_id
from hq_domain.projects import ProjectPut
from hq_domain.users import Role

USAGE = (
    "usage: tracker {web-keygen|migrate|bootstrap-user|put-project|enqueue-source|serve} [flags]"
)
log = logging.getLogger("hq.tracker")

app = App(
    name="tracker",
    help_flags=[],
    version_flags=[],
    result_action="return_value",
    suppress_keyboard_interrupt=False,
)

DatabaseUrl = Annotated[str, Parameter(env_var="HQ_DATABASE_URL")]
Listen = Annotated[str, Parameter(env_var="HQ_LISTEN")]
PublicUrl = Annotated[str, Parameter(env_var="HQ_PUBLIC_URL")]
GithubClientId = Annotated[str, Parameter(env_var="HQ_GITHUB_CLIENT_ID")]
GithubSecretFile = Annotated[str, Parameter(env_var="HQ_GITHUB_CLIENT_SECRET_FILE")]
WebSecretFile = Annotated[str, Parameter(env_var="HQ_WEB_SESSION_SECRET_FILE")]
AdminOrg = Annotated[str, Parameter(env_var="HQ_OAUTH_ADMIN_ORG")]
AdminTeam = Annotated[str, Parameter(env_var="HQ_OAUTH_ADMIN_TEAM")]
MetricsListen = Annotated[str, Parameter(env_var="HQ_METRICS_LISTEN")]


@app.command(name="web-keygen")
def web_keygen(*, out: str = "") -> None:
    """Write a new web-session secret (base64url of 32 random bytes) to a new 0600 file."""
    if not out:
        raise CliError("web-keygen: --out is required")
    secret = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=")
    try:
        write_exclusive(out, secret + b"\n", 0o600)
    except OSError as exc:
        raise CliError(f"web-keygen: {exc}") from None


@app.command
def migrate(*, database_url: DatabaseUrl = "") -> None:
    """Apply the schema migrations (idempotent)."""
    if not database_url:
        raise CliError("migrate: --database-url or HQ_DATABASE_URL is required")
    applied = asyncio.run(wiring.run_migrations(database_url))
    log.info("migrations applied", extra={"fields": {"applied": applied}})


def parse_roles(text: str) -> list[Role]:
    roles: list[Role] = []
    for entry in text.split(","):
        name = entry.strip()
        if name not in ("admin", "worker"):
            raise CliError(f'bootstrap-user: unknown role "{name}"')
        if Role(name) not in roles:
            roles.append(Role(name))
    return roles


async def _with_store(database_url: str, action):  # type: ignore[no-untyped-def]
    clock = SystemClock()
    store = await wiring.open_store(
        Settings(database_url=database_url, pool_min=1, pool_max=2), clock
    )
    try:
        return await action(store)
    finally:
        await store.close()


@app.command(name="bootstrap-user")
def bootstrap_user(
    *,
    database_url: DatabaseUrl = "",
    user_id: str = "",
    roles: str = "worker",
    machine_token_file: str = "",
) -> None:
    """Create or update an active user with exactly ROLES and install the file's token."""
    if not database_url:
        raise CliError("bootstrap-user: --database-url or HQ_DATABASE_URL is required")
    if not is_id(user_id):
        raise CliError("bootstrap-user: --user-id must be an ID")
    role_list = parse_roles(roles)
    if not machine_token_file:
        raise CliError("bootstrap-user: --machine-token-file is required")
    token = read_secret_file(machine_token_file)
    asyncio.run(_with_store(database_url, lambda s: s.bootstrap_user(user_id, role_list, token)))
    log.info("user bootstrapped", extra={"fields": {"user_id": user_id, "roles": role_list}})


@app.command(name="put-project")
def put_project(
    *,
    database_url: DatabaseUrl = "",
    project_id: str = "",
    status: str = "active",
    identity_mode: str = "",
    claim_order: str = "",
    dispatch_qps: str = "",
    worker_claim_qps: str = "",
    max_jobs_per_claim: int = 256,
    max_resets: int = 3,
    recommended_lease_seconds: int = 300,
    client_versions: str = "",
) -> None:
    """Create or fully replace a project's settings (same semantics as PUT project)."""
    if not database_url:
        raise CliError("put-project: --database-url or HQ_DATABASE_URL is required")
    versions = tuple(v.strip() for v in client_versions.split(",")) if client_versions else ()
    put = ProjectPut(
        status=status,
        identity_mode=identity_mode or None,
        claim_order=claim_order or None,
        dispatch_qps=parse_qps(dispatch_qps, "--dispatch-qps"),
        worker_claim_qps=parse_qps(worker_claim_qps, "--worker-claim-qps"),
        max_jobs_per_claim=max_jobs_per_claim,
        max_resets=max_resets,
        recommended_lease_seconds=recommended_lease_seconds,
        client_versions=versions,
    )
    summary = asyncio.run(_with_store(database_url, lambda s: s.put_project(project_id, put)))
    log.info(
        "project saved",
        extra={
            "fields": {
                "project_id": project_id,
                "status": str(summary.project.status),
                "policy_version": summary.project.policy_version,
            }
        },
    )


def web_settings(
    public_url: str,
    github_client_id: str,
    github_client_secret_file: str,
    web_session_secret_file: str,
    oauth_admin_org: str,
    oauth_admin_team: str,
) -> WebSettings | None:
    """Web administration is on iff any of the six values is set; then all six are required."""
    values = {
        "public URL": public_url,
        "GitHub client ID": github_client_id,
        "GitHub client secret file": github_client_secret_file,
        "web session secret file": web_session_secret_file,
        "OAuth admin org": oauth_admin_org,
        "OAuth admin team": oauth_admin_team,
    }
    if not any(values.values()):
        return None
    missing = [name for name, value in values.items() if not value]
    if missing:
        raise CliError("web administration requires " + ", ".join(missing))
    return WebSettings(
        public_url=validate_public_url(public_url),
        github_client_id=github_client_id,
        github_client_secret=read_secret_file(github_client_secret_file),
        web_session_secret=decode_web_secret(read_secret_file(web_session_secret_file)),
        oauth_admin_org=oauth_admin_org,
        oauth_admin_team=oauth_admin_team,
        github_url=os.environ.get("HQ_GITHUB_URL") or "https://github.com",
        github_api_url=os.environ.get("HQ_GITHUB_API_URL") or "https://api.github.com",
    )


@app.command
def serve(
    *,
    listen: Listen = ":8080",
    database_url: DatabaseUrl = "",
    public_url: PublicUrl = "",
    github_client_id: GithubClientId = "",
    github_client_secret_file: GithubSecretFile = "",
    web_session_secret_file: WebSecretFile = "",
    oauth_admin_org: AdminOrg = "",
    oauth_admin_team: AdminTeam = "",
    metrics_listen: MetricsListen = "",
) -> None:
    """Serve the tracker API (and the dashboard when web administration is configured).

    Parameters
    ----------
    metrics_listen
        Serve Prometheus ``/metrics`` on this separate HOST:PORT (off when empty).
    """
    host, port = parse_listen(listen or ":8080")
    if not database_url:
        raise CliError("serve: --database-url or HQ_DATABASE_URL is required")
    web = web_settings(
        public_url, github_client_id, github_client_secret_file,
        web_session_secret_file, oauth_admin_org, oauth_admin_team,
    )  # fmt: skip
    metrics = parse_listen(metrics_listen) if metrics_listen else None
    settings = Settings(listen=listen, database_url=database_url, web=web, metrics_listen=metrics)
    wiring.run(wiring.serve(settings, host, port))


@app.command
def dev(*, listen: Listen = "127.0.0.1:8080", fake_github: bool = False) -> None:
    """Local development: embedded PostgreSQL under ./data, a dev-admin token, the API.

    Parameters
    ----------
    fake_github
        Also serve the web dashboard, signing in through a local fake GitHub.
    """
    host, port = parse_listen(listen or "127.0.0.1:8080")
    wiring.run_dev(host, port, fake_github=fake_github)


app.command(enqueue_source_command, name="enqueue-source")
app.command(monitor, name="monitor")
app.command(prune_claim_buckets, name="prune-claim-buckets")
COMMANDS = frozenset(
    {
        "web-keygen",
        "migrate",
        "bootstrap-user",
        "put-project",
        "enqueue-source",
        "serve",
        "dev",
        "monitor",
        "prune-claim-buckets",
    }
)


def _fail(error: object) -> int:
    print(hq_logging.error_line(error), file=sys.stderr, flush=True)
    return 1


def run(argv: Sequence[str]) -> int:
    """Run one command; returns the exit status (never raises for user errors)."""
    if not argv or argv[0] not in COMMANDS:
        print(USAGE, file=sys.stderr)
        return _fail(f"unknown command {argv[0]!r}" if argv else "no command given")
    if any(a in ("-h", "-help", "--help") for a in argv[1:]):
        print(USAGE, file=sys.stderr)
        app.help_print([argv[0]], console=_stderr_console())
        return _fail("help requested")
    try:
        app(go_style_flags(argv), exit_on_error=False, print_error=False)
    except CycloptsError as exc:
        print(USAGE, file=sys.stderr)
        return _fail(str(exc).strip() or type(exc).__name__)
    except (CliError, ValueError, OSError) as exc:
        return _fail(exc)
    except KeyboardInterrupt:
        return 0
    except Exception as exc:
        return _fail(f"{type(exc).__name__}: {exc}")
    return 0


def _stderr_console():  # type: ignore[no-untyped-def]
    from rich.console import Console

    return Console(file=sys.stderr)


def main() -> None:
    hq_logging.configure()
    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
