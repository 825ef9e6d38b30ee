"""Admin commands beyond the reference ``hqctl``: whoami, projects, jobs, users, tokens.

Each prints a readable table by default and the server's JSON with ``--json``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Annotated, Any

from cyclopts import Parameter

from hq_adapters.admin_client import AdminClient, ApiError, ClientError
from hq_apps.cli.cliutil import CliError, CommandFailed, confirm
from hq_apps.cli.hqctl import render
from hq_apps.cli.hqctl.connect import (
    DEFAULT_TIMEOUT,
    AllowHttp,
    Json,
    ProjectId,
    Timeout,
    TokenFile,
    Url,
    open_client,
)
from hq_domain.projects import ClaimOrder, ProjectStatus

STATUSES = tuple(ProjectStatus)
IDENTITY_MODES = ("external_id", "unique_value", "none")
CLAIM_ORDERS = tuple(ClaimOrder)

UserId = Annotated[str, Parameter(help="The user's ID.")]
JobId = Annotated[int, Parameter(help="The job's numeric job_id (see 'hqctl jobs list').")]


def _call(name: str, conn: dict[str, Any], action: Callable[[AdminClient], Any]) -> Any:
    with open_client(name, **conn) as client:
        try:
            return action(client)
        except ApiError as exc:
            raise CommandFailed(f"{name}: {exc}", code=exc.code, status=exc.status) from None
        except ClientError as exc:
            raise CliError(f"{name}: {exc}") from None


def _need(name: str, **values: Any) -> None:
    for flag, value in values.items():
        if value in ("", None):
            raise CliError(f"{name}: --{flag.replace('_', '-')} is required")


def _conn(
    url: str | None, allow_http: bool, machine_token_file: str | None, timeout: str
) -> dict[str, Any]:
    return {"url": url, "allow_http": allow_http, "machine_token_file": machine_token_file,
            "timeout": timeout}  # fmt: skip


def _ok(json_output: bool, doc: dict[str, Any], text: str) -> None:
    if json_output:
        render.print_json(doc)
    else:
        sys.stdout.write(text + "\n")


def whoami(
    *,
    url: Url = None,
    allow_http: AllowHttp = False,
    machine_token_file: TokenFile = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    json_output: Json = False,
) -> None:
    """Print the user ID the machine token belongs to."""
    me = _call("whoami", _conn(url, allow_http, machine_token_file, timeout), lambda c: c.whoami())
    _ok(json_output, {"user_id": me.user_id}, me.user_id)


def projects_list(
    *,
    url: Url = None,
    allow_http: AllowHttp = False,
    machine_token_file: TokenFile = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    json_output: Json = False,
) -> None:
    """List every project with its status, policy and job counts."""
    got = _call(
        "projects list",
        _conn(url, allow_http, machine_token_file, timeout),
        lambda c: c.list_projects(),
    )
    if json_output:
        render.print_json(got)
    else:
        sys.stdout.write(render.project_rows(got.projects))


def projects_get(
    *,
    url: Url = None,
    allow_http: AllowHttp = False,
    machine_token_file: TokenFile = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    project_id: ProjectId = "",
    json_output: Json = False,
) -> None:
    """Show one project's settings and job counts by status."""
    _need("projects get", project_id=project_id)
    conn = _conn(url, allow_http, machine_token_file, timeout)
    got = _call("projects get", conn, lambda c: c.get_project(project_id))
    if json_output:
        render.print_json(got)
    else:
        sys.stdout.write(render.project_detail(got))
        progress = _call("projects get", conn, lambda c: c.get_progress(project_id))
        sys.stdout.write(render.progress_lines(progress))


def _qps(name: str, flag: str, text: str | None) -> float | None:
    if text is None or not text.strip():
        return None
    try:
        return float(text)
    except ValueError:
        raise CliError(f"{name}: invalid --{flag} {text!r}") from None


def projects_put(
    *,
    url: Url = None,
    allow_http: AllowHttp = False,
    machine_token_file: TokenFile = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    project_id: ProjectId = "",
    status: str = "active",
    identity_mode: str | None = None,
    claim_order: str | None = None,
    dispatch_qps: str | None = None,
    worker_claim_qps: str | None = None,
    max_jobs_per_claim: int | None = None,
    max_resets: int | None = None,
    recommended_lease_seconds: int | None = None,
    client_versions: str | None = None,
    json_output: Json = False,
) -> None:
    """Create or update a project (a full replacement: omitted fields take their defaults).

    Parameters
    ----------
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
        Most jobs one claim returns, 1-256 (default 256).
    max_resets
        Times an expired lease is re-queued before reset_exhausted, 0-1000 (default 3).
    recommended_lease_seconds
        Lease length the policy recommends to workers (default 300).
    client_versions
        Comma-separated worker client versions allowed (X-SavewebHQ-Client-Version).
    """
    name = "projects put"
    _need(name, project_id=project_id)
    for flag, value, allowed in (
        ("status", status, STATUSES),
        ("identity-mode", identity_mode, IDENTITY_MODES),
        ("claim-order", claim_order, CLAIM_ORDERS),
    ):
        if value is not None and value not in allowed:
            raise CliError(f"{name}: invalid --{flag} {value!r}: use one of {', '.join(allowed)}")
    body: dict[str, Any] = {
        "status": status,
        "dispatch_qps": _qps(name, "dispatch-qps", dispatch_qps),
        "worker_claim_qps": _qps(name, "worker-claim-qps", worker_claim_qps),
    }
    optional = {"identity_mode": identity_mode, "claim_order": claim_order,
                "max_jobs_per_claim": max_jobs_per_claim, "max_resets": max_resets,
                "recommended_lease_seconds": recommended_lease_seconds}  # fmt: skip
    body.update({k: v for k, v in optional.items() if v is not None})
    if client_versions is not None:
        body["client_versions"] = (
            [v.strip() for v in client_versions.split(",")] if client_versions else []
        )
    got = _call(
        name,
        _conn(url, allow_http, machine_token_file, timeout),
        lambda c: c.put_project(project_id, body),
    )
    if json_output:
        render.print_json(got)
    else:
        sys.stdout.write(render.project_detail(got))


def projects_delete(
    *,
    url: Url = None,
    allow_http: AllowHttp = False,
    machine_token_file: TokenFile = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    project_id: ProjectId = "",
    yes: Annotated[bool, Parameter(negative="")] = False,
    json_output: Json = False,
) -> None:
    """Delete a project and all of its jobs (refused while any job is WIP).

    On a terminal it shows the project's job counts and asks you to type the project ID;
    without a terminal it needs --yes.

    Parameters
    ----------
    yes
        Delete without asking (scripts).
    """
    name = "projects delete"
    _need(name, project_id=project_id)
    conn = _conn(url, allow_http, machine_token_file, timeout)
    summary = _call(name, conn, lambda c: c.get_project(project_id))
    counts = render.counts_text(summary.job_counts)
    if not yes:
        confirm(
            name,
            f"Project {project_id} ({summary.status}) has {counts}.\n"
            f"Deleting it removes the project and every job. This cannot be undone.\n"
            f"Type the project ID ({project_id}) to delete it: ",
            project_id,
        )
    _call(name, conn, lambda c: c.delete_project(project_id))
    _ok(
        json_output,
        {"project_id": project_id, "deleted": True},
        f"deleted project {project_id} ({counts})",
    )


def jobs_list(
    *,
    url: Url = None,
    allow_http: AllowHttp = False,
    machine_token_file: TokenFile = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    project_id: ProjectId = "",
    status: str | None = None,
    after_job_id: int = 0,
    limit: int = 50,
    all: bool = False,
    json_output: Json = False,
) -> None:
    """List a project's jobs by job_id, one page at a time or every page with --all.

    Parameters
    ----------
    status
        Only jobs in this status: todo, wip, done, failed or reset_exhausted.
    after_job_id
        Cursor: list jobs with a larger job_id (the previous page prints the next value).
    limit
        Jobs per page (server maximum 1000).
    all
        Follow the cursor through every page.
    """
    _need("jobs list", project_id=project_id)

    def fetch(c: AdminClient) -> Any:
        if all:
            return list(c.iter_jobs(project_id, status=status, after_job_id=after_job_id,
                                    limit=limit))  # fmt: skip
        return c.list_jobs(project_id, status=status, after_job_id=after_job_id, limit=limit)

    got = _call("jobs list", _conn(url, allow_http, machine_token_file, timeout), fetch)
    jobs = got if all else got.jobs
    if json_output:
        render.print_json(
            {"jobs": jobs, "next_after_job_id": None if all else got.next_after_job_id}
        )
        return
    sys.stdout.write(render.job_rows(jobs))
    if not all and got.next_after_job_id is not None:
        sys.stderr.write(f"more: --after-job-id {got.next_after_job_id}\n")


def _job_id(name: str, job_id: int) -> None:
    if job_id < 1:
        raise CliError(f"{name}: --job-id must be a positive integer")


def jobs_get(
    *,
    url: Url = None,
    allow_http: AllowHttp = False,
    machine_token_file: TokenFile = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    project_id: ProjectId = "",
    job_id: JobId = 0,
    json_output: Json = False,
) -> None:
    """Show one job in full: spec, status, attempt, outcome or error, receipts."""
    _need("jobs get", project_id=project_id)
    _job_id("jobs get", job_id)
    got = _call(
        "jobs get",
        _conn(url, allow_http, machine_token_file, timeout),
        lambda c: c.get_job(project_id, job_id),
    )
    if json_output:
        render.print_json(got)
    else:
        sys.stdout.write(render.job_detail(got))


def jobs_requeue(
    *,
    url: Url = None,
    allow_http: AllowHttp = False,
    machine_token_file: TokenFile = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    project_id: ProjectId = "",
    job_id: JobId = 0,
    json_output: Json = False,
) -> None:
    """Put a failed or reset_exhausted job back to todo."""
    _need("jobs requeue", project_id=project_id)
    _job_id("jobs requeue", job_id)
    _call(
        "jobs requeue",
        _conn(url, allow_http, machine_token_file, timeout),
        lambda c: c.requeue_job(project_id, job_id),
    )
    _ok(
        json_output,
        {"project_id": project_id, "job_id": job_id, "requeued": True},
        f"requeued job {job_id}",
    )


def jobs_delete(
    *,
    url: Url = None,
    allow_http: AllowHttp = False,
    machine_token_file: TokenFile = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    project_id: ProjectId = "",
    job_id: JobId = 0,
    json_output: Json = False,
) -> None:
    """Delete one job (refused while it is WIP)."""
    _need("jobs delete", project_id=project_id)
    _job_id("jobs delete", job_id)
    _call(
        "jobs delete",
        _conn(url, allow_http, machine_token_file, timeout),
        lambda c: c.delete_job(project_id, job_id),
    )
    _ok(
        json_output,
        {"project_id": project_id, "job_id": job_id, "deleted": True},
        f"deleted job {job_id}",
    )


def users_list(
    *,
    url: Url = None,
    allow_http: AllowHttp = False,
    machine_token_file: TokenFile = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    json_output: Json = False,
) -> None:
    """List users with their status, roles and machine-token state."""
    got = _call(
        "users list", _conn(url, allow_http, machine_token_file, timeout), lambda c: c.list_users()
    )
    if json_output:
        render.print_json(got)
    else:
        sys.stdout.write(render.user_rows(got.users))


def users_put(
    *,
    url: Url = None,
    allow_http: AllowHttp = False,
    machine_token_file: TokenFile = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    user_id: UserId = "",
    status: str = "",
    roles: str = "",
    json_output: Json = False,
) -> None:
    """Create or update a user's status and roles.

    Parameters
    ----------
    status
        active, pending or suspended.
    roles
        Comma-separated roles: admin, worker (may be empty).
    """
    _need("users put", user_id=user_id, status=status)
    role_list = [r.strip() for r in roles.split(",") if r.strip()]
    _call(
        "users put",
        _conn(url, allow_http, machine_token_file, timeout),
        lambda c: c.put_user(user_id, status, role_list),
    )
    _ok(
        json_output,
        {"user_id": user_id, "status": status, "roles": role_list},
        f"user {user_id}: status={status} roles={','.join(role_list) or render.EMPTY}",
    )


def users_delete(
    *,
    url: Url = None,
    allow_http: AllowHttp = False,
    machine_token_file: TokenFile = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    user_id: UserId = "",
    json_output: Json = False,
) -> None:
    """Delete a user with their sessions and machine token."""
    _need("users delete", user_id=user_id)
    _call(
        "users delete",
        _conn(url, allow_http, machine_token_file, timeout),
        lambda c: c.delete_user(user_id),
    )
    _ok(json_output, {"user_id": user_id, "deleted": True}, f"deleted user {user_id}")


def _token_cmd(name: str, action: str) -> Callable[..., None]:
    def command(
        *,
        url: Url = None,
        allow_http: AllowHttp = False,
        machine_token_file: TokenFile = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
        user_id: UserId = "",
        json_output: Json = False,
    ) -> None:
        _need(name, user_id=user_id)
        conn = _conn(url, allow_http, machine_token_file, timeout)
        if action == "revoke":
            _call(name, conn, lambda c: c.revoke_token(user_id))
            _ok(json_output, {"user_id": user_id, "revoked": True}, f"revoked token of {user_id}")
            return
        got = _call(name, conn, lambda c: c.get_token(user_id) if action == "get"
                    else c.rotate_token(user_id))  # fmt: skip
        _ok(json_output, {"user_id": got.user_id, "token": got.token}, got.token)

    command.__name__ = name.replace(" ", "_")
    command.__doc__ = {
        "get": "Print a user's current machine token (if it is still viewable).",
        "rotate": "Issue a new machine token for a user (the old one stops working).",
        "revoke": "Revoke a user's machine token.",
    }[action]
    return command


tokens_get = _token_cmd("tokens get", "get")
tokens_rotate = _token_cmd("tokens rotate", "rotate")
tokens_revoke = _token_cmd("tokens revoke", "revoke")
