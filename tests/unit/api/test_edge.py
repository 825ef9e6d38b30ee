"""Server-wide behaviour of spec §1.1: headers, routing fallbacks, limits, error mapping."""

from __future__ import annotations

import httpx
import pytest
from litestar.testing import AsyncTestClient

from hq_adapters.memory import MemoryStore
from hq_apps.api.app import create_app
from hq_apps.settings import Settings
from hq_domain.clock import ManualClock
from tests.unit.api.conftest import ADMIN, NO_STORE, error

SECURITY = {
    "x-xss-protection": "1; mode=block",
    "x-content-type-options": "nosniff",
    "x-frame-options": "SAMEORIGIN",
}


def assert_headers(r: httpx.Response, expected: dict[str, str]) -> None:
    for name, value in expected.items():
        assert r.headers.get_list(name) == [value], (name, r.headers)


async def test_healthz_has_security_headers_but_no_no_store(client: httpx.AsyncClient) -> None:
    r = await client.get("/healthz")
    assert r.status_code == 200
    assert r.content == b'{"status":"ok"}\n'
    assert r.headers["content-type"] == "application/json"
    assert_headers(r, SECURITY)
    assert "cache-control" not in r.headers
    assert len(r.headers["x-request-id"]) == 32


async def test_request_id_is_echoed(client: httpx.AsyncClient) -> None:
    r = await client.get("/healthz", headers={"X-Request-Id": "abc-123"})
    assert r.headers.get_list("x-request-id") == ["abc-123"]


async def test_generated_request_ids_differ(client: httpx.AsyncClient) -> None:
    a = (await client.get("/healthz")).headers["x-request-id"]
    b = (await client.get("/healthz")).headers["x-request-id"]
    assert a != b


@pytest.mark.parametrize(
    ("method", "path", "headers", "status", "code"),
    [
        ("GET", "/api/v1/whoami", ADMIN, 200, None),
        ("GET", "/api/v1/whoami", {}, 401, "invalid_machine_token"),
        ("GET", "/api/v1/nope", {}, 404, "not_found"),
        ("GET", "/api/v1/whoami/", ADMIN, 404, "not_found"),
        ("POST", "/api/v1/whoami", ADMIN, 405, "invalid_request"),
        ("GET", "/api/v1/admin/projects/x", ADMIN, 404, "not_found"),
    ],
)
async def test_api_responses_carry_no_store_and_security_headers(
    client: httpx.AsyncClient,
    method: str,
    path: str,
    headers: dict[str, str],
    status: int,
    code: str | None,
) -> None:
    r = await client.request(method, path, headers=headers)
    assert r.status_code == status
    assert_headers(r, {**NO_STORE, **SECURITY})
    assert r.headers["content-type"] == "application/json"
    assert r.content.endswith(b"}\n")
    if code:
        assert error(r)["code"] == code


async def test_unknown_paths_get_the_json_404(client: httpx.AsyncClient) -> None:
    for path in (
        "/",
        "/nope",
        "/api/v2/whoami",
        "/healthz/",
        "/api/v1/admin/projects/p/jobs/1/x",
        "/schema/x",
        "/schema/",
    ):
        r = await client.get(path)
        assert r.status_code == 404, path
        assert error(r) == {
            "code": "not_found", "message": "route not found",
            "retryable": False, "retry_after_ms": 0, "details": {},
        }  # fmt: skip


async def test_wrong_method_is_405_with_allow(client: httpx.AsyncClient) -> None:
    r = await client.patch("/api/v1/admin/projects/p", headers=ADMIN)
    assert r.status_code == 405
    assert error(r)["message"] == "method not allowed"
    assert {m.strip() for m in r.headers["allow"].split(",")} >= {"GET", "PUT", "DELETE"}


async def test_options_on_known_path_is_204_with_full_allow(client: httpx.AsyncClient) -> None:
    r = await client.options("/api/v1/admin/projects/p")
    assert r.status_code == 204
    assert r.content == b""
    assert {m.strip() for m in r.headers["allow"].split(",")} == {"GET", "PUT", "DELETE", "OPTIONS"}
    assert_headers(r, NO_STORE)
    r = await client.options("/api/v1/projects/p/jobs/claim")
    assert {m.strip() for m in r.headers["allow"].split(",")} == {"POST", "OPTIONS"}


async def test_declared_body_over_256_mib_is_413_without_later_headers(
    client: httpx.AsyncClient,
) -> None:
    r = await client.post(
        "/api/v1/admin/projects/p/jobs",
        headers={
            **ADMIN,
            "Content-Length": str(256 * 1024 * 1024 + 1),
            "Content-Type": "application/json",
        },
        content=b"{}",
    )
    assert r.status_code == 413
    assert error(r)["message"] == "request rejected"
    assert error(r)["code"] == "invalid_request"
    assert "x-request-id" in r.headers
    assert "cache-control" not in r.headers
    assert "x-frame-options" not in r.headers


class ExplodingStore(MemoryStore):
    async def list_projects(self):  # type: ignore[no-untyped-def]
        raise RuntimeError("secret database detail")


async def test_unexpected_errors_are_500_without_leaking() -> None:
    store = ExplodingStore(ManualClock())
    await store.bootstrap_user("admin", [], "t")
    from hq_domain.users import Role

    await store.bootstrap_user("admin", [Role.ADMIN], "t")
    app = create_app(Settings(sweep_interval_s=0), store)
    async with AsyncTestClient(app, raise_server_exceptions=False) as c:
        r = await c.get("/api/v1/admin/projects", headers={"Authorization": "Bearer t"})
    assert r.status_code == 500
    assert error(r) == {
        "code": "internal_error", "message": "internal server error",
        "retryable": False, "retry_after_ms": 0, "details": {},
    }  # fmt: skip
    assert "secret" not in r.text
    assert_headers(r, NO_STORE)


async def test_openapi_schema_is_served_from_the_handlers(client: httpx.AsyncClient) -> None:
    r = await client.get("/schema/openapi.json")
    assert r.status_code == 200
    doc = r.json()
    claim = doc["paths"]["/api/v1/projects/{project_id}/jobs/claim"]["post"]
    assert claim["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/ClaimIn"
    )
    assert "ClaimOut" in doc["components"]["schemas"]
    assert set(doc["components"]["schemas"]["ItemResultOut"]["required"]) == {
        "job_id", "attempt_id", "status", "job_status", "lease_expires_at", "error",
    }  # fmt: skip
    assert "/api/v1/admin/projects/{project_id}/jobs/{job_id}/requeue" in doc["paths"]
