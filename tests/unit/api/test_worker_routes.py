"""Worker routes 19–23 on the memory adapter: shapes, transitions, pacing, D1."""

from __future__ import annotations

from typing import Any

from tests.unit.api.conftest import WORKER, Api, error

RECEIPT = {
    "id": "r1", "issuer": "s3", "object_id": "obj/1",
    "checksum": "sha1:" + "ab" * 20, "size_bytes": 10, "accepted_at": 1,
}  # fmt: skip
STALE = {
    "code": "stale_attempt", "message": "attempt is stale, expired, or already finalized",
    "retryable": False, "retry_after_ms": 0, "details": None,
}  # fmt: skip


async def _claimed(api: Api, n: int = 2, **project: Any) -> list[dict[str, Any]]:
    await api.put_project("p", **project)
    r = await api.enqueue("p", [{"id": f"j{i}", "value": f"https://e/{i}"} for i in range(n)])
    assert r.status_code == 200, r.text
    r = await api.claim("p", max_jobs=n)
    assert r.status_code == 200, r.text
    return r.json()["jobs"]


async def test_policy(api: Api) -> None:
    await api.put_project("p", dispatch_qps=2.5, max_jobs_per_claim=7, recommended_lease_seconds=42)
    r = await api.client.get("/api/v1/projects/p", headers=WORKER)
    assert r.status_code == 200
    assert r.json() == {
        "project_id": "p", "dispatch_qps": 2.5, "worker_claim_qps": None,
        "max_jobs_per_claim": 7, "recommended_lease_seconds": 42,
        "policy_version": 1, "refresh_after_ms": 60000,
    }  # fmt: skip


async def test_claim_response_keys(api: Api) -> None:
    await api.put_project("p")
    await api.enqueue("p", [
        {"id": "a", "value": "v1"},
        {"id": "b", "value": "v2", "type": "asset", "via": "", "hops": 2, "attr": {"k": [1]}},
    ])  # fmt: skip
    r = await api.claim("p", accept_types=None)
    body = r.json()
    assert list(body) == ["project_id", "jobs", "retry_after_ms", "policy_version"]
    assert body["retry_after_ms"] == 1000
    a, b = body["jobs"]
    assert set(a) == {"job_id", "attempt_id", "lease_expires_at", "id", "value", "type"}
    assert a["type"] == "seed"
    assert a["lease_expires_at"] == api.clock.now_ns() // 10**9 + 60
    assert len(a["attempt_id"]) == 27
    assert {k: b[k] for k in ("id", "type", "via", "hops", "attr")} == {
        "id": "b", "type": "asset", "via": "", "hops": 2, "attr": {"k": [1]},
    }  # fmt: skip


async def test_claim_accept_types_filter_and_empty_queue(api: Api) -> None:
    await api.put_project("p")
    await api.enqueue("p", [{"id": "a", "value": "v", "type": "asset"}])
    r = await api.claim("p", accept_types=["seed"])
    assert r.json()["jobs"] == []
    r = await api.claim("p", accept_types=["asset"])
    assert len(r.json()["jobs"]) == 1
    r = await api.claim("p", accept_types=["other"])
    assert error(r)["message"] == "accept_types may contain only seed or asset"


async def test_dispatch_rate_limit_429(api: Api) -> None:
    await api.put_project("p", dispatch_qps=2.5)
    await api.enqueue("p", [{"id": f"j{i}", "value": "v"} for i in range(3)])
    r = await api.claim("p")
    assert len(r.json()["jobs"]) == 1
    assert r.json()["retry_after_ms"] == 400
    api.clock.advance(0.1)
    r = await api.claim("p")
    assert r.status_code == 429
    assert error(r) == {
        "code": "project_dispatch_rate_limited", "message": "project dispatch rate limit exceeded",
        "retryable": True, "retry_after_ms": 300, "details": {"project_id": "p", "policy_version": 1},
    }  # fmt: skip
    assert r.headers["retry-after"] == "1"
    api.clock.advance(0.3)
    assert len((await api.claim("p")).json()["jobs"]) == 1


async def test_slow_dispatch_retry_after_header(api: Api) -> None:
    await api.put_project("p", dispatch_qps=0.001)
    await api.enqueue("p", [{"id": "a", "value": "v"}, {"id": "b", "value": "v"}])
    assert (await api.claim("p")).json()["retry_after_ms"] == 1_000_000
    r = await api.claim("p")
    assert r.status_code == 429
    assert r.headers["retry-after"] == "1000"


async def test_complete_applied_and_rejected(api: Api) -> None:
    a, b = await _claimed(api)
    items = [
        {
            "job_id": a["job_id"],
            "attempt_id": a["attempt_id"],
            "outcome": {"kind": "success", "code": 200, "uri": "u", "meta": {"x": 1}},
            "artifact_receipts": [RECEIPT],
        },
        {"job_id": a["job_id"], "attempt_id": a["attempt_id"], "outcome": {"kind": "success"}},
        {"job_id": b["job_id"], "attempt_id": "at_wrong", "outcome": {"kind": "skipped"}},
    ]
    r = await api.post_worker("p", "complete", {"worker_id": "w1", "items": items})
    assert r.status_code == 200
    results = r.json()["results"]
    assert results[0] == {
        "job_id": a["job_id"], "attempt_id": a["attempt_id"], "status": "applied",
        "job_status": "done", "lease_expires_at": None, "error": None,
    }  # fmt: skip
    assert results[1]["status"] == "rejected" and results[1]["error"] == STALE
    assert results[2] == {
        "job_id": b["job_id"], "attempt_id": "at_wrong", "status": "rejected",
        "job_status": None, "lease_expires_at": None, "error": STALE,
    }  # fmt: skip
    job = await api.job("p", a["job_id"])
    assert job["outcome"] == {"kind": "success", "code": 200, "uri": "u", "meta": {"x": 1}}
    assert job["artifact_receipts"] == [RECEIPT]
    assert job["status"] == "done" and job["completed_at"] is not None


async def test_complete_null_receipts_read_back_null(api: Api) -> None:
    (a,) = await _claimed(api, 1)
    item = {
        "job_id": a["job_id"],
        "attempt_id": a["attempt_id"],
        "outcome": {"kind": "skipped"},
        "artifact_receipts": None,
    }
    await api.post_worker("p", "complete", {"worker_id": "w1", "items": [item]})
    job = await api.job("p", a["job_id"])
    assert job["artifact_receipts"] is None
    assert job["outcome"] == {"kind": "skipped", "code": None, "uri": None, "meta": None}


async def test_other_worker_id_is_rejected(api: Api) -> None:
    (a,) = await _claimed(api, 1)
    item = {"job_id": a["job_id"], "attempt_id": a["attempt_id"], "outcome": {"kind": "success"}}
    r = await api.post_worker("p", "complete", {"worker_id": "other", "items": [item]})
    assert r.json()["results"][0]["status"] == "rejected"


async def test_fail_transitions(api: Api) -> None:
    a, b = await _claimed(api, 2, max_resets=0)
    items = [
        {
            "job_id": a["job_id"],
            "attempt_id": a["attempt_id"],
            "retryable": False,
            "error": {"code": "e1", "message": "boom", "details": {"d": 1}},
        },
        {
            "job_id": b["job_id"],
            "attempt_id": b["attempt_id"],
            "retryable": True,
            "error": {"code": "e2"},
        },
    ]
    r = await api.post_worker("p", "fail", {"worker_id": "w1", "items": items})
    assert [x["job_status"] for x in r.json()["results"]] == ["failed", "reset_exhausted"]
    job = await api.job("p", a["job_id"])
    assert job["execution_error"] == {"code": "e1", "message": "boom", "details": {"d": 1}}
    job_b = await api.job("p", b["job_id"])
    assert job_b["reset_count"] == 1


async def test_retryable_fail_returns_to_todo(api: Api) -> None:
    (a,) = await _claimed(api, 1)
    item = {
        "job_id": a["job_id"],
        "attempt_id": a["attempt_id"],
        "retryable": True,
        "error": {"code": "e"},
    }
    r = await api.post_worker("p", "fail", {"worker_id": "w1", "items": [item]})
    assert r.json()["results"][0]["job_status"] == "todo"
    assert (await api.counts())["todo"] == 1


async def test_extend_reports_now_plus_seconds(api: Api) -> None:
    (a,) = await _claimed(api, 1)
    api.clock.advance(5)
    now = api.clock.now_ns() // 10**9
    body = {
        "worker_id": "w1",
        "extend_seconds": 10,
        "items": [{"job_id": a["job_id"], "attempt_id": a["attempt_id"]}],
    }
    r = await api.post_worker("p", "extend-lease", body)
    result = r.json()["results"][0]
    assert result["status"] == "applied" and result["job_status"] == "wip"
    assert result["lease_expires_at"] == now + 10
    assert (await api.job("p", a["job_id"]))["lease_expires_at"] == a["lease_expires_at"]


async def test_expired_lease_rejects_mutations(api: Api) -> None:
    (a,) = await _claimed(api, 1)
    api.clock.advance(61)
    body = {
        "worker_id": "w1",
        "extend_seconds": 10,
        "items": [{"job_id": a["job_id"], "attempt_id": a["attempt_id"]}],
    }
    r = await api.post_worker("p", "extend-lease", body)
    assert r.json()["results"][0]["status"] == "rejected"


async def test_invalid_item_rejects_whole_batch(api: Api) -> None:
    a, b = await _claimed(api)
    items = [
        {"job_id": a["job_id"], "attempt_id": a["attempt_id"], "outcome": {"kind": "success"}},
        {"job_id": b["job_id"], "attempt_id": b["attempt_id"], "outcome": {"kind": "nope"}},
    ]
    r = await api.post_worker("p", "complete", {"worker_id": "w1", "items": items})
    assert (r.status_code, error(r)["message"]) == (
        400,
        "outcome kind must be success, http_error, or skipped",
    )
    assert (await api.counts())["wip"] == 2


async def test_draining_allows_finishing_but_not_claiming(api: Api) -> None:
    """D1."""
    a, _ = await _claimed(api)
    await api.put_project("p", status="draining")
    r = await api.client.get("/api/v1/projects/p", headers=WORKER)
    assert r.status_code == 200
    r = await api.claim("p")
    assert (r.status_code, error(r)["code"]) == (409, "project_not_active")
    item = {"job_id": a["job_id"], "attempt_id": a["attempt_id"], "outcome": {"kind": "success"}}
    r = await api.post_worker("p", "complete", {"worker_id": "w1", "items": [item]})
    assert r.json()["results"][0]["status"] == "applied"


async def test_inactive_project_beats_item_validation(api: Api) -> None:
    """Item validation runs after the project-status check (inside the transaction)."""
    await _claimed(api, 1)
    await api.put_project("p", status="archived")
    bad = {
        "worker_id": "w1",
        "items": [{"job_id": 0, "attempt_id": "x", "outcome": {"kind": "success"}}],
    }
    r = await api.post_worker("p", "complete", bad)
    assert r.status_code == 409
    r = await api.post_worker("p", "complete", {"worker_id": "w1", "items": []})
    assert (r.status_code, error(r)["message"]) == (400, "invalid completion batch")


async def test_batch_messages(api: Api) -> None:
    await api.put_project("p")
    cases = [
        ("complete", {"worker_id": "w", "items": []}, "invalid completion batch"),
        ("fail", {"worker_id": "bad id", "items": [{}]}, "invalid failure batch"),
        (
            "extend-lease",
            {"worker_id": "w", "extend_seconds": 0, "items": [{"job_id": 1, "attempt_id": "a"}]},
            "invalid lease extension batch",
        ),
        (
            "extend-lease",
            {"worker_id": "w", "extend_seconds": 5, "items": [{"job_id": 0, "attempt_id": "a"}]},
            "invalid job or attempt ID",
        ),
        (
            "fail",
            {
                "worker_id": "w",
                "items": [{"job_id": 1, "attempt_id": "a", "error": {"code": "x" * 65}}],
            },
            "execution error code is invalid",
        ),
    ]
    for op, body, message in cases:
        r = await api.post_worker("p", op, body)
        assert (r.status_code, error(r)["message"]) == (400, message), (op, body)
