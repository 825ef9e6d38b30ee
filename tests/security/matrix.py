"""The authorisation matrix of spec §1.5/§1.6/§1.7: every API route × every kind of caller,
and the exact status/code/message each cell must give.

Each caller kind gets its own freshly seeded app (memory store, web dashboard enabled so a
*valid* browser session exists), so the admin column's deletes cannot disturb other cells.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import zstandard

from hq_adapters.memory import MemoryStore
from hq_apps.api.app import create_app
from hq_apps.settings import Settings, WebSettings
from hq_apps.web import security
from hq_domain.clock import ManualClock
from hq_domain.jobs import ExecutionError, JobSpec, Outcome
from hq_domain.projects import ProjectPut
from hq_domain.users import Role, UserStatus
from hq_domain.worker import ClaimRequest, CompleteItem, FailItem
from tests.faults.live import ensure_optional_routes

VERSION = "m/1"
WEB_SECRET = b"k" * 32
SESSION_TOKEN = "s" * 43
TOKENS = {
    "admin": "tok-admin", "worker": "tok-worker", "pending": "tok-pending",
    "suspended": "tok-suspended", "no_roles": "tok-noroles", "revoked": "tok-revoked",
}  # fmt: skip

CALLERS = [
    "no_header", "malformed", "unknown_token", "overlong_token", "revoked", "pending",
    "suspended", "no_roles", "worker", "admin", "session_cookie",
]  # fmt: skip
MALFORMED = ["Basic dG9r", "Bearer", "Bearer   ", "Bearer a b", "Bearertok-admin", "tok-admin",
             "Bearer tok\tadmin", "Token tok-admin"]  # fmt: skip


@dataclass(frozen=True)
class Route:
    number: int
    kind: str  # health | whoami | admin | worker
    method: str
    path: str
    ok: int
    body: Any = None
    content_type: str = "application/json"


SOURCE = zstandard.ZstdCompressor().compress(b'{"id":"s1","value":"https://s/1"}\n')
CLAIM = {"worker_id": "w", "max_jobs": 1, "lease_seconds": 60, "policy_version": 1}
REF = {"job_id": 3, "attempt_id": "at_none"}
ROUTES = [
    Route(1, "health", "GET", "/healthz", 200),
    Route(2, "whoami", "GET", "/api/v1/whoami", 200),
    Route(3, "admin", "GET", "/api/v1/admin/projects", 200),
    Route(4, "admin", "GET", "/api/v1/admin/projects/p", 200),
    Route(5, "admin", "PUT", "/api/v1/admin/projects/new", 200, {"status": "active"}),
    Route(6, "admin", "DELETE", "/api/v1/admin/projects/gone", 204),
    Route(7, "admin", "POST", "/api/v1/admin/projects/p/jobs", 200,
          {"jobs": [{"id": "e1", "value": "https://e/1"}]}),
    Route(8, "admin", "POST", "/api/v1/admin/projects/p/source", 200, SOURCE, "application/zstd"),
    Route(9, "admin", "GET", "/api/v1/admin/projects/p/jobs", 200),
    Route(10, "admin", "GET", "/api/v1/admin/projects/p/jobs/3", 200),
    Route(11, "admin", "POST", "/api/v1/admin/projects/p/jobs/1/requeue", 204),
    Route(12, "admin", "DELETE", "/api/v1/admin/projects/p/jobs/2", 204),
    Route(13, "admin", "GET", "/api/v1/admin/users", 200),
    Route(14, "admin", "PUT", "/api/v1/admin/users/fresh", 204,
          {"status": "active", "roles": ["worker"]}),
    Route(15, "admin", "DELETE", "/api/v1/admin/users/doomed", 204),
    Route(16, "admin", "GET", "/api/v1/admin/users/victim/machine-token", 200),
    Route(17, "admin", "POST", "/api/v1/admin/users/victim/machine-token", 201),
    Route(18, "admin", "DELETE", "/api/v1/admin/users/victim/machine-token", 204),
    Route(19, "worker", "GET", "/api/v1/projects/p", 200),
    Route(20, "worker", "POST", "/api/v1/projects/p/jobs/claim", 200, CLAIM),
    Route(21, "worker", "POST", "/api/v1/projects/p/jobs/complete", 200, {"worker_id": "w",
          "items": [{**REF, "outcome": {"kind": "success"}}]}),
    Route(22, "worker", "POST", "/api/v1/projects/p/jobs/fail", 200, {"worker_id": "w",
          "items": [{**REF, "retryable": False, "error": {"code": "e", "message": ""}}]}),
    Route(23, "worker", "POST", "/api/v1/projects/p/jobs/extend-lease", 200,
          {"worker_id": "w", "extend_seconds": 10, "items": [REF]}),
    # not in the spec: our progress route (issue 14), admin-only like the other admin routes
    Route(24, "admin", "GET", "/api/v1/admin/projects/p/progress", 200),
]  # fmt: skip


def expected(route: Route, caller: str) -> tuple[int, str | None, str | None]:
    """(status, error code, error message) the spec prescribes for one cell."""
    if route.kind == "health":
        return 200, None, None
    if caller in ("no_header", "malformed", "session_cookie"):
        return 401, "invalid_machine_token", "machine token required"
    if caller in ("unknown_token", "overlong_token", "revoked"):
        return 401, "invalid_machine_token", "invalid machine token"
    if route.kind == "whoami":
        return 200, None, None  # any valid token, whatever the status or roles (§1.5)
    if route.kind == "admin":
        if caller == "admin":
            return route.ok, None, None
        return 403, "permission_denied", "active admin role required"
    if caller == "worker":
        return route.ok, None, None
    return 403, "permission_denied", "active worker role required"


def headers_for(caller: str) -> list[dict[str, str]]:
    """The request headers (one or more variants) a caller kind sends."""
    worker_version = {"X-SavewebHQ-Client-Version": VERSION}
    if caller == "no_header":
        return [worker_version]
    if caller == "malformed":
        return [{"Authorization": h, **worker_version} for h in MALFORMED]
    if caller == "unknown_token":
        return [{"Authorization": "Bearer hq_" + "A" * 43, **worker_version}]
    if caller == "overlong_token":
        return [{"Authorization": "Bearer " + "a" * 1025, **worker_version}]
    if caller == "session_cookie":
        return [{"Cookie": f"{security.SESSION_COOKIE}={SESSION_TOKEN}", **worker_version}]
    return [{"Authorization": f"Bearer {TOKENS[caller]}", **worker_version}]


async def seed(store: MemoryStore) -> None:
    both = [Role.ADMIN, Role.WORKER]
    for user, roles in [("admin", [Role.ADMIN]), ("worker", [Role.WORKER]), ("pending", both),
                        ("suspended", both), ("no_roles", []), ("revoked", both)]:  # fmt: skip
        await store.bootstrap_user(user, roles, TOKENS[user])
    await store.put_user("pending", UserStatus.PENDING, both)
    await store.put_user("suspended", UserStatus.SUSPENDED, both)
    await store.revoke_machine_token("revoked")
    await store.bootstrap_user("victim", [Role.WORKER], "tok-victim")
    await store.put_user("doomed", UserStatus.ACTIVE, [])
    await store.put_project("p", ProjectPut(status="active", client_versions=(VERSION,)))
    await store.put_project("gone", ProjectPut(status="active"))
    await store.enqueue("p", [JobSpec(f"https://j/{i}", id=f"j{i}") for i in range(1, 4)])
    claimed = await store.claim("worker", "p", ClaimRequest("seed", 2, 600, (), 1))
    first, second = claimed.jobs[0], claimed.jobs[1]
    await store.fail("worker", "p", "seed", [
        FailItem(first.job_id, first.attempt_id, False, ExecutionError("x"))])  # fmt: skip
    await store.complete("worker", "p", "seed", [
        CompleteItem(second.job_id, second.attempt_id, Outcome("success"), None)])  # fmt: skip
    await store.create_session(
        security.session_digest(WEB_SECRET, SESSION_TOKEN), "admin", 2_000_000_000
    )


def web_settings() -> WebSettings:
    return WebSettings(
        public_url="http://hq.test", github_client_id="cid", github_client_secret="csecret",
        web_session_secret=WEB_SECRET, oauth_admin_org="o", oauth_admin_team="t",
        github_url="http://127.0.0.1:9", github_api_url="http://127.0.0.1:9",
    )  # fmt: skip


def build_app() -> tuple[Any, MemoryStore]:
    clock = ManualClock(1_700_000_000 * 10**9)
    store = MemoryStore(clock)
    asyncio.run(seed(store))
    settings = Settings(web=web_settings(), sweep_interval_s=0, openapi=False)
    return ensure_optional_routes(create_app(settings, store, clock), store), store
