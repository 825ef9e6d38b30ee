"""Admin commands beyond the reference ``hqctl``: whoami, projects, jobs, users, tokens.

Each prints a readable table by default and the server's JSON with ``--json``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Annotated, Any

from cyclopts import Parameter

from hq_adapters.admin_client import AdminClient, ClientError
from hq_apps.cli.hqctl import render
from hq_apps.cli.hqctl.cliutil import CliError
from hq_apps.cli.hqctl.connect import DEFAULT_TIMEOUT, open_client

Json = Annotated[bool, Parameter(name="--json", negative="")]


def _call(name: str, conn: dict[str, Any], action: Callable[[AdminClient], Any]) -> Any:
    with open_client(name, **conn) as client:
        try:
            return action(client)
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
    url: str | None = None,
    allow_http: bool = False,
    machine_token_file: str | None = None,
    timeout: str = DEFAULT_TIMEOUT,
    json_output: Json = False,
) -> None:
    me = _call("whoami", _conn(url, allow_http, machine_token_file, timeout), lambda c: c.whoami())
    _ok(json_output, {"user_id": me.user_id}, me.user_id)


def projects_list(
    *,
    url: str | None = None,
    allow_http: bool = False,
    machine_token_file: str | None = None,
    timeout: str = DEFAULT_TIMEOUT,
    json_output: Json = False,
) -> None:
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
    url: str | None = None,
    allow_http: bool = False,
    machine_token_file: str | None = None,
    timeout: str = DEFAULT_TIMEOUT,
    project_id: str = "",
    json_output: Json = False,
) -> None:
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
    url: str | None = None,
    allow_http: bool = False,
    machine_token_file: str | None = None,
    timeout: str = DEFAULT_TIMEOUT,
    project_id: str = "",
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
    """Create or update a project. PUT is a full replacement: omitted policy fields take
    their defaults (spec §1.7.2)."""
    name = "projects put"
    _need(name, project_id=project_id)
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
    url: str | None = None,
    allow_http: bool = False,
    machine_token_file: str | None = None,
    timeout: str = DEFAULT_TIMEOUT,
    project_id: str = "",
    json_output: Json = False,
) -> None:
    _need("projects delete", project_id=project_id)
    _call(
        "projects delete",
        _conn(url, allow_http, machine_token_file, timeout),
        lambda c: c.delete_project(project_id),
    )
    _ok(json_output, {"project_id": project_id, "deleted": True}, f"deleted project {project_id}")


def jobs_list(
    *,
    url: str | None = None,
    allow_http: bool = False,
    machine_token_file: str | None = None,
    timeout: str = DEFAULT_TIMEOUT,
    project_id: str = "",
    status: str | None = None,
    after_job_id: int = 0,
    limit: int = 50,
    all: bool = False,
    json_output: Json = False,
) -> None:
    """One page of jobs (``--after-job-id`` is the cursor), or every page with ``--all``."""
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
    url: str | None = None,
    allow_http: bool = False,
    machine_token_file: str | None = None,
    timeout: str = DEFAULT_TIMEOUT,
    project_id: str = "",
    job_id: int = 0,
    json_output: Json = False,
) -> None:
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
    url: str | None = None,
    allow_http: bool = False,
    machine_token_file: str | None = None,
    timeout: str = DEFAULT_TIMEOUT,
    project_id: str = "",
    job_id: int = 0,
    json_output: Json = False,
) -> None:
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
    url: str | None = None,
    allow_http: bool = False,
    machine_token_file: str | None = None,
    timeout: str = DEFAULT_TIMEOUT,
    project_id: str = "",
    job_id: int = 0,
    json_output: Json = False,
) -> None:
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
    url: str | None = None,
    allow_http: bool = False,
    machine_token_file: str | None = None,
    timeout: str = DEFAULT_TIMEOUT,
    json_output: Json = False,
) -> None:
    got = _call(
        "users list", _conn(url, allow_http, machine_token_file, timeout), lambda c: c.list_users()
    )
    if json_output:
        render.print_json(got)
    else:
        sys.stdout.write(render.user_rows(got.users))


def users_put(
    *,
    url: str | None = None,
    allow_http: bool = False,
    machine_token_file: str | None = None,
    timeout: str = DEFAULT_TIMEOUT,
    user_id: str = "",
    status: str = "",
    roles: str = "",
    json_output: Json = False,
) -> None:
    """Create or update a user's status and roles (comma-separated, may be empty)."""
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
        f"user {user_id}: status={status} roles={','.join(role_list) or '-'}",
    )


def users_delete(
    *,
    url: str | None = None,
    allow_http: bool = False,
    machine_token_file: str | None = None,
    timeout: str = DEFAULT_TIMEOUT,
    user_id: str = "",
    json_output: Json = False,
) -> None:
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
        url: str | None = None,
        allow_http: bool = False,
        machine_token_file: str | None = None,
        timeout: str = DEFAULT_TIMEOUT,
        user_id: str = "",
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
    return command


tokens_get = _token_cmd("tokens get", "get")
tokens_rotate = _token_cmd("tokens rotate", "rotate")
tokens_revoke = _token_cmd("tokens revoke", "revoke")
