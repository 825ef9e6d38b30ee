"""Authentication (§1.5) and the worker gate's exact check order (§1.6)."""

from __future__ import annotations

import httpx
import pytest

from hq_domain.users import Role, UserStatus
from hq_domain.worker import ClaimRequest
from tests.unit.api.conftest import ADMIN, VERSION, WORKER, Api, error


@pytest.mark.parametrize(
    ("authorization", "message"),
    [
        (None, "machine token required"),
        ("", "machine token required"),
        ("Bearer", "machine token required"),
        ("Bearer ", "machine token required"),
        ("Basic admin-token", "machine token required"),
        ("Bearer  admin-token", "machine token required"),
        ("Bearer admin token", "machine token required"),
        ("Bearer admin\ttoken", "machine token required"),
        ("Bearer unknown", "invalid machine token"),
        ("Bearer " + "x" * 1025, "invalid machine token"),
    ],
)
async def test_bad_credentials_are_401(
    client: httpx.AsyncClient, authorization: str | None, message: str
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    r = await client.get("/api/v1/whoami", headers=headers)
    assert r.status_code == 401
    assert error(r)["code"] == "invalid_machine_token"
    assert error(r)["message"] == message


@pytest.mark.parametrize(
    "authorization", ["bearer admin-token", "BEARER admin-token", "  Bearer admin-token  "]
)
async def test_scheme_is_case_insensitive_and_header_trimmed(
    client: httpx.AsyncClient, authorization: str
) -> None:
    r = await client.get("/api/v1/whoami", headers={"Authorization": authorization})
    assert r.status_code == 200
    assert r.json() == {"user_id": "admin"}


async def test_whoami_ignores_status_and_roles(api: Api) -> None:
    await api.store.bootstrap_user("nobody", [], "nobody-token")
    await api.store.put_user("nobody", UserStatus.SUSPENDED, [])
    r = await api.client.get("/api/v1/whoami", headers={"Authorization": "Bearer nobody-token"})
    assert r.status_code == 200
    assert r.json() == {"user_id": "nobody"}


async def test_revoked_token_is_401(api: Api) -> None:
    await api.store.revoke_machine_token("worker")
    r = await api.client.get("/api/v1/whoami", headers=WORKER)
    assert error(r)["message"] == "invalid machine token"


async def test_admin_routes_need_an_active_admin(api: Api) -> None:
    r = await api.client.get("/api/v1/admin/projects", headers=WORKER)
    assert r.status_code == 403
    assert error(r) == {
        "code": "permission_denied", "message": "active admin role required",
        "retryable": False, "retry_after_ms": 0, "details": {},
    }  # fmt: skip
    await api.store.put_user("admin", UserStatus.PENDING, [Role.ADMIN])
    r = await api.client.get("/api/v1/admin/projects", headers=ADMIN)
    assert r.status_code == 403


async def test_admin_check_order_auth_then_role_then_body(api: Api) -> None:
    bad = {"content": b"{nope", "headers": {"Content-Type": "application/json"}}
    r = await api.client.put("/api/v1/admin/projects/p", **bad)  # type: ignore[arg-type]
    assert r.status_code == 401
    r = await api.client.put(
        "/api/v1/admin/projects/p",
        content=b"{nope",
        headers={**WORKER, "Content-Type": "application/json"},
    )
    assert r.status_code == 403
    r = await api.client.put(
        "/api/v1/admin/projects/bad id",
        content=b"{nope",
        headers={**ADMIN, "Content-Type": "application/json"},
    )
    assert r.status_code == 400
    assert error(r)["message"].startswith("invalid JSON body: ")


async def test_worker_gate_order(api: Api) -> None:
    """401 → 400 invalid project ID → 404 → 403 → 426 → body decode → validation."""
    await api.put_project("p")
    await api.store.bootstrap_user("idle", [Role.ADMIN], "idle-token")
    idle = {"Authorization": "Bearer idle-token", "X-SavewebHQ-Client-Version": VERSION}
    garbage = b"{garbage"
    ct = {"Content-Type": "application/json"}

    async def claim(project: str, headers: dict[str, str], body: bytes = garbage) -> httpx.Response:
        return await api.client.post(
            f"/api/v1/projects/{project}/jobs/claim", content=body, headers={**headers, **ct}
        )

    r = await claim("bad id!", {})
    assert (r.status_code, error(r)["code"]) == (401, "invalid_machine_token")
    r = await claim("bad%20id", idle)
    assert (r.status_code, error(r)["message"]) == (400, "invalid project ID")
    r = await claim("missing", idle)
    assert (r.status_code, error(r)["message"]) == (404, "user or project not found")
    r = await claim("p", idle)
    assert (r.status_code, error(r)["message"]) == (403, "active worker role required")
    r = await claim("p", {**WORKER, "X-SavewebHQ-Client-Version": "v0"})
    assert r.status_code == 426
    assert error(r) == {
        "code": "client_upgrade_required",
        "message": "client version is not supported; upgrade required",
        "retryable": False, "retry_after_ms": 0,
        "details": {"client_version": "v0", "client_versions": [VERSION]},
    }  # fmt: skip
    r = await claim("p", {"Authorization": WORKER["Authorization"]})
    assert error(r)["details"]["client_version"] == ""
    r = await claim("p", WORKER)
    assert (r.status_code, error(r)["code"]) == (400, "invalid_request")
    assert error(r)["message"].startswith("invalid JSON body")
    r = await claim(
        "p", WORKER, b'{"worker_id":"w","max_jobs":0,"lease_seconds":5,"policy_version":1}'
    )
    assert error(r)["message"] == "invalid claim request"


async def test_version_match_is_exact(api: Api) -> None:
    await api.put_project("p", client_versions=["1.2.0", "2.0"])
    for version, status in (("1.2.0", 200), ("1.2", 426), ("1.2.0 ", 426), ("2.0", 200), ("", 426)):
        r = await api.client.get(
            "/api/v1/projects/p", headers={**WORKER, "X-SavewebHQ-Client-Version": version}
        )
        assert r.status_code == status, version
    await api.put_project("p", client_versions=[])
    r = await api.client.get("/api/v1/projects/p", headers=WORKER)
    assert r.status_code == 426
    assert error(r)["details"]["client_versions"] == []


async def test_gate_ignores_project_status_but_operations_do_not(api: Api) -> None:
    """The gate never looks at project status; the operation does (archived refuses all)."""
    await api.put_project("p", status="archived")
    r = await api.client.get(
        "/api/v1/projects/p", headers={**WORKER, "X-SavewebHQ-Client-Version": "zzz"}
    )
    assert r.status_code == 426
    r = await api.client.get("/api/v1/projects/p", headers=WORKER)
    assert (r.status_code, error(r)["code"], error(r)["message"]) == (
        409,
        "project_not_active",
        "project is not active",
    )
    r = await api.claim("p")
    assert r.status_code == 409


@pytest.mark.parametrize("route", ["claim", "complete", "fail", "extend-lease"])
async def test_worker_gate_order_with_a_valid_small_body(api: Api, route: str) -> None:
    """A valid body declared small is read before the gate (the gate read and the operation
    then share one store call), but the gate still answers first, in the same order, and a
    refused request changes nothing; an invalid body still loses to every gate error."""
    await api.put_project("p")
    await api.store.bootstrap_user("idle", [Role.ADMIN], "idle-token")
    idle = {"Authorization": "Bearer idle-token", "X-SavewebHQ-Client-Version": VERSION}
    bodies = {
        "claim": {"worker_id": "w", "max_jobs": 1, "lease_seconds": 30, "policy_version": 1},
        "complete": {"worker_id": "w", "items": [
            {"job_id": 1, "attempt_id": "at_x", "outcome": {"kind": "success"}}]},
        "fail": {"worker_id": "w", "items": [
            {"job_id": 1, "attempt_id": "at_x", "retryable": True, "error": {"code": "e"}}]},
        "extend-lease": {"worker_id": "w", "extend_seconds": 30, "items": [
            {"job_id": 1, "attempt_id": "at_x"}]},
    }  # fmt: skip

    async def post(project: str, headers: dict[str, str], body: object) -> httpx.Response:
        return await api.client.post(
            f"/api/v1/projects/{project}/jobs/{route}", json=body, headers=headers
        )

    for body in (bodies[route], {"worker_id": ""}):
        r = await post("p", {"Authorization": "Bearer nope"}, body)
        assert (r.status_code, error(r)["code"]) == (401, "invalid_machine_token")
        r = await post("bad%20id", idle, body)
        assert (r.status_code, error(r)["message"]) == (400, "invalid project ID")
        r = await post("missing", idle, body)
        assert (r.status_code, error(r)["message"]) == (404, "user or project not found")
        r = await post("p", idle, body)
        assert (r.status_code, error(r)["message"]) == (403, "active worker role required")
        r = await post("p", {**WORKER, "X-SavewebHQ-Client-Version": "v0"}, body)
        assert r.status_code == 426
    assert await api.store.list_worker_mappings(None, 10) == []  # nothing ran
    r = await post("p", WORKER, {"worker_id": ""})
    assert (r.status_code, error(r)["code"]) == (400, "invalid_request")
    r = await post("p", WORKER, bodies[route])
    assert r.status_code == 200
    assert [m.worker_id for m in await api.store.list_worker_mappings(None, 10)] == ["w"]


async def test_a_refused_gate_that_passes_when_rechecked_runs_the_operation(api: Api) -> None:
    """A refused gated call returns the project for the route to raise the gate's error from;
    the PostgreSQL store reads it after the verdict, in a second statement (migration 0020),
    so an allowlist changed in between can let the re-check pass where the verdict did not.
    The route then claims on its own."""
    await api.put_project("p")
    r = await api.enqueue("p", [{"id": "a", "value": "a"}])
    assert r.status_code == 200, r.text
    real = api.store.gated_claim
    seen: list[tuple[object, object]] = []

    async def verdict_read_before_the_allowlist_changed(
        token: str, project_id: str, _version: str, request: ClaimRequest
    ) -> object:
        found, project, result = await real(token, project_id, "v0", request)
        seen.append((project, result))
        return found, project, result

    api.store.gated_claim = verdict_read_before_the_allowlist_changed  # type: ignore[method-assign]
    r = await api.claim("p", max_jobs=1)
    assert r.status_code == 200, r.text
    assert [j["value"] for j in r.json()["jobs"]] == ["a"]
    [(project, result)] = seen
    assert result is None and project is not None and VERSION in project.client_versions
