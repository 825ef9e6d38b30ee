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
from hq_apps.cli.cliutil import HELP_FLAGS, print_help
from hq_apps.cli.common import (
    CliError,
    DatabaseUrl,
    decode_web_secret,
    go_style_flags,
    parse_listen,
    parse_qps,
    read_secret_file,
    validate_public_url,
    write_exclusive,
)
from hq_apps.cli.dberrors import DATABASE_ERRORS, database_error
from hq_apps.cli.ops import monitor, prune_claim_buckets
from hq_apps.cli.source_import import enqueue_source_command
from hq_apps.settings import Settings, WebSettings
from hq_domain.clock import SystemClock
from hq_domain.ids import is_id
from hq_domain.projects import (
    DEFAULT_LEASE_SECONDS,
    DEFAULT_MAX_JOBS_PER_CLAIM,
    DEFAULT_MAX_RESETS,
    ProjectPut,
)
from hq_domain.users import Role

USAGE = (
    "usage: tracker {web-keygen|migrate|bootstrap-user|put-project|enqueue-source|serve} [flags]"
)
log = logging.getLogger("hq.tracker")

DESCRIPTION = """The SavewebHQ tracker: the HTTP API and dashboard (serve, dev) and the database-side
operator commands. Flags also read the HQ_* environment variables shown."""
MORE_USAGE = "       tracker {dev|monitor|prune-claim-buckets} [flags]"
HINT = "Run 'tracker --help' for a description of every command and flag."

app = App(
    name="tracker",
    help=DESCRIPTION,
    help_flags=[],
    version_flags=[],
    result_action="return_value",
    suppress_keyboard_interrupt=False,
)

DatabasePooler = Annotated[
    str,
    Parameter(env_var="HQ_DATABASE_POOLER",
              help="none (the URL is PostgreSQL) or transaction (it is PgBouncer or another "
                   "transaction-mode pooler)."),
]  # fmt: skip
Processes = Annotated[
    int, Parameter(env_var="HQ_PROCESSES", help="Server processes sharing the port.")
]
PoolMax = Annotated[
    int, Parameter(env_var="HQ_DATABASE_POOL_MAX", help="Database connections per process at most.")
]
WorkerLanes = Annotated[
    int,
    Parameter(env_var="HQ_WORKER_LANES",
              help="Worker statements per process at once; 0 = cores / processes."),
]  # fmt: skip
Listen = Annotated[str, Parameter(env_var="HQ_LISTEN", help="Address to listen on, host:port.")]
PublicUrl = Annotated[
    str, Parameter(env_var="HQ_PUBLIC_URL", help="Public origin of the dashboard (web only).")
]
GithubClientId = Annotated[
    str, Parameter(env_var="HQ_GITHUB_CLIENT_ID", help="GitHub OAuth App client ID (web only).")
]
GithubSecretFile = Annotated[
    str,
    Parameter(env_var="HQ_GITHUB_CLIENT_SECRET_FILE",
              help="File with the GitHub OAuth client secret, mode 0600 (web only)."),
]  # fmt: skip
WebSecretFile = Annotated[
    str,
    Parameter(env_var="HQ_WEB_SESSION_SECRET_FILE",
              help="File from 'tracker web-keygen' signing sessions and CSRF (web only)."),
]  # fmt: skip
AdminOrg = Annotated[
    str, Parameter(env_var="HQ_OAUTH_ADMIN_ORG", help="GitHub org whose team are admins.")
]
AdminTeam = Annotated[
    str, Parameter(env_var="HQ_OAUTH_ADMIN_TEAM", help="Team slug (in that org) of admins.")
]
MetricsListen = Annotated[
    str,
    Parameter(env_var="HQ_METRICS_LISTEN",
              help="Serve Prometheus /metrics on this separate host:port (off when empty)."),
]  # fmt: skip


@app.command(name="web-keygen")
def web_keygen(*, out: str = "") -> None:
    """Write a new web-session secret (base64url of 32 random bytes) to a new 0600 file.

    Parameters
    ----------
    out
        The file to create (refuses to overwrite).
    """
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


def _pooler(text: str) -> str:
    from hq_adapters.postgres import parse_pooler

    try:
        return str(parse_pooler(text))
    except ValueError as exc:
        raise CliError(str(exc)) from None


async def _with_store(database_url: str, action, pooler: str = "none"):  # type: ignore[no-untyped-def]
    clock = SystemClock()
    store = await wiring.open_store(
        Settings(database_url=database_url, database_pooler=pooler, pool_min=1, pool_max=2),
        clock,
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
    pooler: DatabasePooler = "none",
) -> None:
    """Create or update an active user with exactly ROLES and install the file's token.

    Parameters
    ----------
    user_id
        The user's ID.
    roles
        Comma-separated roles: admin, worker.
    machine_token_file
        File holding the user's machine token (mode 0600).
    """
    if not database_url:
        raise CliError("bootstrap-user: --database-url or HQ_DATABASE_URL is required")
    if not is_id(user_id):
        raise CliError("bootstrap-user: --user-id must be an ID")
    role_list = parse_roles(roles)
    if not machine_token_file:
        raise CliError("bootstrap-user: --machine-token-file is required")
    token = read_secret_file(machine_token_file)
    asyncio.run(
        _with_store(
            database_url, lambda s: s.bootstrap_user(user_id, role_list, token), _pooler(pooler)
        )
    )
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
    max_jobs_per_claim: int = DEFAULT_MAX_JOBS_PER_CLAIM,
    max_resets: int = DEFAULT_MAX_RESETS,
    recommended_lease_seconds: int = DEFAULT_LEASE_SECONDS,
    client_versions: str = "",
    pooler: DatabasePooler = "none",
) -> None:
    """Create or fully replace a project's settings (same semantics as PUT project).

    Parameters
    ----------
    project_id
        The project's ID.
    status
        active, draining (no new claims) or archived.
    identity_mode
        external_id, unique_value or none; fixed once the project exists (default external_id).
    claim_order
        fifo or random (default fifo).
    dispatch_qps
        Jobs handed out per second across all workers; empty means unlimited.
    worker_claim_qps
        Claims per second per worker; empty means unlimited.
    max_jobs_per_claim
        Most jobs one claim returns, 1-256.
    max_resets
        Times an expired lease is re-queued before reset_exhausted, 0-1000.
    recommended_lease_seconds
        Lease length the policy recommends to workers.
    client_versions
        Comma-separated worker client versions allowed (X-SavewebHQ-Client-Version).
    """
    if not database_url:
        raise CliError("put-project: --database-url or HQ_DATABASE_URL is required")
    for flag, value, allowed in (
        ("status", status, ("active", "draining", "archived")),
        ("identity-mode", identity_mode, ("", "external_id", "unique_value", "none")),
        ("claim-order", claim_order, ("", "fifo", "random")),
    ):
        if value not in allowed:
            valid = ", ".join(a for a in allowed if a)
            raise CliError(f"put-project: invalid --{flag} {value!r}: use one of {valid}")
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
    summary = asyncio.run(
        _with_store(database_url, lambda s: s.put_project(project_id, put), _pooler(pooler))
    )
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
    pooler: DatabasePooler = "none",
    processes: Processes = 1,
    pool_max: PoolMax = 4,
    worker_lanes: WorkerLanes = 0,
    metrics_listen: MetricsListen = "",
) -> None:
    """Serve the tracker API (and the dashboard when web administration is configured).

    Does not migrate: run 'tracker migrate' first. Setting any of the six web flags turns the
    dashboard on and then all six are required.

    Parameters
    ----------
    pooler
        ``none`` (HQ_DATABASE_URL is PostgreSQL itself) or ``transaction`` (it is PgBouncer or
        another transaction-mode pooler).
    processes
        Server processes sharing the port, each with its own connection pool.
    pool_max
        Connections per process at most (2 are kept open); the deployment needs
        replicas × processes × pool_max of PostgreSQL's (or PgBouncer's) connections.
    worker_lanes
        Worker statements (claims and completes of up to 16 items) a process runs at once, at
        most pool_max; requests beyond them wait and share statements. 0 (the default): the
        host's cores divided among the processes, at least 1.
    metrics_listen
        Serve Prometheus ``/metrics`` on this separate HOST:PORT (off when empty); with
        several processes, one of them serves every process's counters.
    """
    from hq_apps.processes import MAX_PROCESSES, serve_processes

    host, port = parse_listen(listen or ":8080")
    if not database_url:
        raise CliError("serve: --database-url or HQ_DATABASE_URL is required")
    if not 1 <= processes <= MAX_PROCESSES:
        raise CliError(f"serve: --processes must be between 1 and {MAX_PROCESSES}")
    if not 1 <= pool_max <= 1000:
        raise CliError("serve: --pool-max must be between 1 and 1000")
    if not 0 <= worker_lanes <= 1000:
        raise CliError("serve: --worker-lanes must be between 0 and 1000")
    web = web_settings(
        public_url, github_client_id, github_client_secret_file,
        web_session_secret_file, oauth_admin_org, oauth_admin_team,
    )  # fmt: skip
    metrics = parse_listen(metrics_listen) if metrics_listen else None
    settings = Settings(
        listen=listen, database_url=database_url, database_pooler=_pooler(pooler),
        processes=processes, pool_min=min(2, pool_max), pool_max=pool_max,
        worker_lanes=worker_lanes, web=web, metrics_listen=metrics,
    )  # fmt: skip
    if processes == 1:
        wiring.run(wiring.serve(settings, host, port))
        return
    if serve_processes(settings, host, port, metrics=metrics is not None) != 0:
        raise CliError("serve: a server process failed")


@app.command
def dev(
    *,
    listen: Listen = "127.0.0.1:8080",
    fake_github: Annotated[bool, Parameter(negative="")] = False,
) -> None:
    """Local development: embedded PostgreSQL under ./data, a dev-admin token, the API.

    Prints the URL, token file and database URL to export for hqctl, examples/worker.py,
    'tracker monitor' and 'tracker enqueue-source'.

    Parameters
    ----------
    fake_github
        Also serve the web dashboard, signing in through a local fake GitHub as gh_1.
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
    if argv and argv[0] in HELP_FLAGS:
        print_help(app, [])
        return 0
    if not argv or argv[0] not in COMMANDS:
        print(f"{USAGE}\n{MORE_USAGE}\n{HINT}", file=sys.stderr)
        return _fail(f"unknown command {argv[0]!r}" if argv else "no command given")
    if any(a in HELP_FLAGS for a in argv[1:]):
        print_help(app, [argv[0]])
        return 0
    try:
        app(go_style_flags(argv), exit_on_error=False, print_error=False)
    except CycloptsError as exc:
        print(f"{USAGE}\n{MORE_USAGE}\n{HINT}", file=sys.stderr)
        return _fail(str(exc).strip() or type(exc).__name__)
    except CliError as exc:
        return _fail(exc)
    except DATABASE_ERRORS as exc:
        return _fail(database_error(argv, exc))
    except (ValueError, OSError) as exc:
        return _fail(exc)
    except KeyboardInterrupt:
        return 0
    except Exception as exc:
        return _fail(f"{type(exc).__name__}: {exc}")
    return 0


def main() -> None:
    hq_logging.configure()
    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
