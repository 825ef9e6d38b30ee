"""Admin routes 3–7 and 9–18 on the memory adapter (spec §1.7)."""

from __future__ import annotations

from typing import Any

from tests.unit.api.conftest import ADMIN, Api, error

SUMMARY_KEYS = [
    "id", "status", "identity_mode", "claim_order", "dispatch_qps", "worker_claim_qps",
    "max_jobs_per_claim", "max_resets", "recommended_lease_seconds", "client_versions",
    "policy_version", "job_counts", "created_at", "updated_at",
]  # fmt: skip
ADMIN_JOB_KEYS = {
    "job_id", "value", "type", "random_key", "status", "attempt_id", "worker_id",
    "lease_expires_at", "reset_count", "outcome", "artifact_receipts", "execution_error",
    "created_at", "updated_at", "completed_at",
}  # fmt: skip


async def test_put_get_list_project(api: Api) -> None:
    r = await api.client.put(
        "/api/v1/admin/projects/p", headers=ADMIN,
        json={"status": "active", "client_versions": ["b", "a"], "dispatch_qps": 5},
    )  # fmt: skip
    s = r.json()
    assert list(s) == SUMMARY_KEYS
    assert s["client_versions"] == ["a", "b"]
    assert s["identity_mode"] == "external_id" and s["claim_order"] == "fifo"
    assert s["job_counts"] == {"todo": 0, "wip": 0, "done": 0, "failed": 0, "reset_exhausted": 0}
    r = await api.client.put("/api/v1/admin/projects/p", headers=ADMIN, json={"status": "draining"})
    s = r.json()
    assert s["policy_version"] == 2 and s["client_versions"] == [] and s["dispatch_qps"] is None
    await api.put_project("a")
    r = await api.client.get("/api/v1/admin/projects", headers=ADMIN)
    assert [p["id"] for p in r.json()["projects"]] == ["a", "p"]
    r = await api.client.get("/api/v1/admin/projects/p", headers=ADMIN)
    assert r.json()["status"] == "draining"


async def test_project_errors(api: Api) -> None:
    cases: list[tuple[str, str, Any, int, str]] = [
        ("GET", "/api/v1/admin/projects/a%20b", None, 400, "invalid project ID"),
        ("GET", "/api/v1/admin/projects/nope", None, 404, "project not found"),
        ("DELETE", "/api/v1/admin/projects/nope", None, 404, "project not found"),
        ("DELETE", "/api/v1/admin/projects/a%20b", None, 400, "invalid project ID"),
        ("PUT", "/api/v1/admin/projects/a%20b", {"status": "active"}, 400, "invalid project"),
        ("PUT", "/api/v1/admin/projects/x", {}, 400, "invalid project"),
        (
            "PUT",
            "/api/v1/admin/projects/x",
            {"status": "active", "identity_mode": "x"},
            400,
            "invalid project identity mode",
        ),
        (
            "PUT",
            "/api/v1/admin/projects/x",
            {"status": "active", "claim_order": "x"},
            400,
            "invalid project claim order",
        ),
        (
            "PUT",
            "/api/v1/admin/projects/x",
            {"status": "active", "dispatch_qps": 0},
            400,
            "project QPS must be a positive finite number",
        ),
        (
            "PUT",
            "/api/v1/admin/projects/x",
            {"status": "active", "client_versions": ["a", "a"]},
            400,
            "client_versions must be unique",
        ),
    ]
    for method, path, body, status, message in cases:
        r = await api.client.request(method, path, json=body, headers=ADMIN)
        assert (r.status_code, error(r)["message"]) == (status, message), (method, path, body)
    await api.put_project("p", identity_mode="none")
    r = await api.client.put(
        "/api/v1/admin/projects/p",
        json={"status": "active", "identity_mode": "unique_value"},
        headers=ADMIN,
    )
    assert error(r)["message"] == "project identity mode cannot be changed"


async def test_delete_project(api: Api) -> None:
    await api.put_project("p")
    await api.enqueue("p", [{"id": "a", "value": "v"}])
    await api.claim("p")
    r = await api.client.delete("/api/v1/admin/projects/p", headers=ADMIN)
    assert (r.status_code, error(r)["message"]) == (400, "project has WIP jobs")
    api.clock.advance(120)
    await api.store.sweep_expired(10)
    r = await api.client.delete("/api/v1/admin/projects/p", headers=ADMIN)
    assert r.status_code == 204 and r.content == b""
    assert (await api.client.get("/api/v1/admin/projects/p", headers=ADMIN)).status_code == 404


async def test_enqueue_check_order(api: Api) -> None:
    r = await api.enqueue("p", [])
    assert error(r)["message"] == "jobs must contain at least one item"
    r = await api.enqueue("bad%20id", [{"value": "v"}])
    assert error(r)["message"] == "invalid project or job batch"
    r = await api.enqueue("p", [{"value": "v"}])
    assert (r.status_code, error(r)["message"]) == (404, "project not found")
    await api.put_project("p", status="archived")
    r = await api.enqueue("p", [{"value": ""}])
    assert (r.status_code, error(r)["message"]) == (409, "archived project cannot accept jobs")
    await api.put_project("p", status="draining")
    r = await api.enqueue("p", [{"id": "a", "value": "v"}, {"value": "no id"}])
    assert (r.status_code, error(r)["code"], error(r)["message"]) == (
        400,
        "invalid_job",
        "id is required for external_id projects",
    )
    r = await api.enqueue("p", [{"id": "a", "value": "v"}, {"id": "a", "value": "w"}])
    assert (r.status_code, error(r)["code"]) == (409, "identity_conflict")
    assert (await api.counts())["todo"] == 0
    r = await api.enqueue(
        "p", [{"id": "a", "value": "v"}, {"id": "a", "value": "v"}, {"id": "b", "value": "v"}]
    )
    assert r.json() == {"project_id": "p", "submitted": 3, "inserted": 2}
    r = await api.enqueue("p", [{"id": "a", "value": "v", "random_key": 5}])
    assert r.json() == {"project_id": "p", "submitted": 1, "inserted": 0}


async def test_enqueue_identity_modes(api: Api) -> None:
    await api.put_project("n", identity_mode="none")
    r = await api.enqueue("n", [{"value": "v"}, {"value": "v"}])
    assert r.json()["inserted"] == 2
    r = await api.enqueue("n", [{"id": "x", "value": "v"}])
    assert error(r)["message"] == "id is allowed only for external_id projects"
    await api.put_project("u", identity_mode="unique_value")
    r = await api.enqueue("u", [{"value": "v"}, {"value": "v"}])
    assert r.json()["inserted"] == 1


async def test_job_list_and_get(api: Api) -> None:
    await api.put_project("p")
    await api.enqueue("p", [{"id": f"j{i}", "value": "v", "random_key": i} for i in range(5)])
    r = await api.client.get("/api/v1/admin/projects/p/jobs?limit=2", headers=ADMIN)
    page = r.json()
    assert [j["id"] for j in page["jobs"]] == ["j0", "j1"]
    assert page["next_after_job_id"] == page["jobs"][-1]["job_id"]
    job = page["jobs"][0]
    assert set(job) == ADMIN_JOB_KEYS | {"id"}
    assert job["random_key"] == 0 and job["artifact_receipts"] == []
    r = await api.client.get(
        f"/api/v1/admin/projects/p/jobs?after_job_id={page['next_after_job_id']}&limit=3",
        headers=ADMIN,
    )
    assert len(r.json()["jobs"]) == 3 and r.json()["next_after_job_id"] is None
    r = await api.client.get("/api/v1/admin/projects/p/jobs?status=done", headers=ADMIN)
    assert r.json() == {"jobs": [], "next_after_job_id": None}
    r = await api.client.get(f"/api/v1/admin/projects/p/jobs/{job['job_id']}", headers=ADMIN)
    assert r.json() == job


async def test_job_query_errors(api: Api) -> None:
    await api.put_project("p")
    cases = [
        ("/jobs?after_job_id=x", 400, "invalid after_job_id"),
        ("/jobs?after_job_id=1.0", 400, "invalid after_job_id"),
        ("/jobs?limit=abc", 400, "invalid limit"),
        ("/jobs?limit=0", 400, "invalid job query"),
        ("/jobs?limit=201", 400, "invalid job query"),
        ("/jobs?after_job_id=-1", 400, "invalid job query"),
        ("/jobs?status=nope", 400, "invalid job query"),
        ("/jobs/x", 400, "invalid job_id"),
        ("/jobs/0", 400, "invalid job"),
        ("/jobs/99", 404, "job not found"),
    ]
    for suffix, status, message in cases:
        r = await api.client.get("/api/v1/admin/projects/p" + suffix, headers=ADMIN)
        assert (r.status_code, error(r)["message"]) == (status, message), suffix
    r = await api.client.get("/api/v1/admin/projects/nope/jobs", headers=ADMIN)
    assert (r.status_code, error(r)["message"]) == (404, "project not found")


async def test_requeue_and_delete_job(api: Api) -> None:
    await api.put_project("p")
    await api.enqueue("p", [{"id": "a", "value": "v"}])
    (job,) = (await api.claim("p")).json()["jobs"]
    base = f"/api/v1/admin/projects/p/jobs/{job['job_id']}"
    r = await api.client.post(base + "/requeue", headers=ADMIN)
    assert (r.status_code, error(r)["message"]) == (400, "job is not failed or reset_exhausted")
    r = await api.client.delete(base, headers=ADMIN)
    assert (r.status_code, error(r)["message"]) == (400, "job not found or is WIP")
    item = {
        "job_id": job["job_id"],
        "attempt_id": job["attempt_id"],
        "retryable": False,
        "error": {"code": "x"},
    }
    await api.post_worker("p", "fail", {"worker_id": "w1", "items": [item]})
    r = await api.client.post(base + "/requeue", headers=ADMIN)
    assert r.status_code == 204 and r.content == b""
    requeued = await api.job("p", job["job_id"])
    assert requeued["status"] == "todo" and requeued["execution_error"] is None
    assert requeued["artifact_receipts"] == []
    r = await api.client.delete(base, headers=ADMIN)
    assert r.status_code == 204
    r = await api.client.post("/api/v1/admin/projects/p/jobs/99/requeue", headers=ADMIN)
    assert (r.status_code, error(r)["message"]) == (400, "job is not failed or reset_exhausted")
    r = await api.client.post("/api/v1/admin/projects/p/jobs/x/requeue", headers=ADMIN)
    assert error(r)["message"] == "invalid job_id"


async def test_users_and_tokens(api: Api) -> None:
    r = await api.client.put(
        "/api/v1/admin/users/bob",
        json={"status": "active", "roles": ["worker", "admin"]},
        headers=ADMIN,
    )
    assert r.status_code == 204 and r.content == b""
    r = await api.client.get("/api/v1/admin/users", headers=ADMIN)
    users = r.json()["users"]
    assert [u["id"] for u in users] == ["admin", "bob", "worker"]
    bob = users[1]
    assert bob["roles"] == ["admin", "worker"]
    assert set(bob) == {
        "id",
        "status",
        "roles",
        "machine_token_active",
        "machine_token_viewable",
        "created_at",
        "updated_at",
    }
    assert bob["machine_token_active"] is False
    base = "/api/v1/admin/users/bob/machine-token"
    r = await api.client.get(base, headers=ADMIN)
    assert (r.status_code, error(r)["message"]) == (404, "machine token not found")
    r = await api.client.post(base, headers=ADMIN)
    assert r.status_code == 201
    token = r.json()["token"]
    assert (
        r.json() == {"user_id": "bob", "token": token}
        and len(token) == 46
        and token.startswith("hq_")
    )
    assert (await api.client.get(base, headers=ADMIN)).json()["token"] == token
    who = await api.client.get("/api/v1/whoami", headers={"Authorization": f"Bearer {token}"})
    assert who.json() == {"user_id": "bob"}
    assert (await api.client.post(base, headers=ADMIN)).json()["token"] != token
    who = await api.client.get("/api/v1/whoami", headers={"Authorization": f"Bearer {token}"})
    assert who.status_code == 401
    assert (await api.client.delete(base, headers=ADMIN)).status_code == 204
    r = await api.client.delete(base, headers=ADMIN)
    assert (r.status_code, error(r)["message"]) == (404, "active machine token not found")
    assert (await api.client.delete("/api/v1/admin/users/bob", headers=ADMIN)).status_code == 204
    r = await api.client.delete("/api/v1/admin/users/bob", headers=ADMIN)
    assert (r.status_code, error(r)["message"]) == (404, "user not found")
    r = await api.client.post("/api/v1/admin/users/bob/machine-token", headers=ADMIN)
    assert (r.status_code, error(r)["message"]) == (404, "user not found")


async def test_user_errors(api: Api) -> None:
    cases = [
        ("PUT", "/api/v1/admin/users/a%20b", {"status": "active"}, "invalid user"),
        ("PUT", "/api/v1/admin/users/x", {"status": "gone"}, "invalid user"),
        (
            "PUT",
            "/api/v1/admin/users/x",
            {"status": "active", "roles": ["root"]},
            "invalid user roles",
        ),
        (
            "PUT",
            "/api/v1/admin/users/x",
            {"status": "active", "roles": ["admin", "admin"]},
            "invalid user roles",
        ),
        ("GET", "/api/v1/admin/users/a%20b/machine-token", None, "invalid user ID"),
    ]
    for method, path, body, message in cases:
        r = await api.client.request(method, path, json=body, headers=ADMIN)
        assert (r.status_code, error(r)["message"]) == (400, message), (path, body)
    r = await api.client.put(
        "/api/v1/admin/users/x", json={"status": "pending", "roles": None}, headers=ADMIN
    )
    assert r.status_code == 204


async def test_admin_may_delete_itself(api: Api) -> None:
    assert (await api.client.delete("/api/v1/admin/users/admin", headers=ADMIN)).status_code == 204
    assert (await api.client.get("/api/v1/whoami", headers=ADMIN)).status_code == 401
