"""GET /api/v1/admin/projects/{id}/progress (issue 14), through the real app."""

from __future__ import annotations

from tests.unit.api.conftest import ADMIN, WORKER, Api, error


async def test_progress_reports_percent_rate_and_eta(api: Api, store, clock) -> None:
    await api.put_project("p")
    await api.enqueue("p", [{"id": f"j{i}", "value": f"v{i}"} for i in range(10)])
    r = await api.client.get("/api/v1/admin/projects/p/progress", headers=ADMIN)
    assert r.status_code == 200
    body = r.json()
    assert list(body) == ["project_id", "job_counts", "percent_done", "rate_per_minute",
                          "eta_seconds", "history_minutes", "resets_per_minute"]
    assert body["percent_done"] == 0 and body["rate_per_minute"] is None
    assert body["resets_per_minute"] is None
    assert body["eta_seconds"] is None
    clock.advance(60 - clock.now_ns() // 10**9 % 60)  # snapshots are labelled by minute
    await store.record_history()
    clock.advance(120)
    jobs = (await api.claim("p", max_jobs=4)).json()["jobs"]
    items = [{"job_id": j["job_id"], "attempt_id": j["attempt_id"], "outcome": {"kind": "success"}}
             for j in jobs]
    assert (await api.post_worker("p", "complete", {"worker_id": "w1", "items": items})).status_code == 200
    body = (await api.client.get("/api/v1/admin/projects/p/progress", headers=ADMIN)).json()
    assert body["job_counts"]["done"] == 4 and body["percent_done"] == 40.0
    assert body["rate_per_minute"] == 2.0  # 4 done in the 2 minutes since the snapshot
    assert body["eta_seconds"] == 180  # 6 left at 2 per minute
    assert body["history_minutes"] == 1
    assert body["resets_per_minute"] is None  # one snapshot: no reset rate yet


async def test_progress_errors(api: Api) -> None:
    r = await api.client.get("/api/v1/admin/projects/nope/progress", headers=ADMIN)
    assert r.status_code == 404 and error(r)["code"] == "not_found"
    r = await api.client.get("/api/v1/admin/projects/p/progress", headers=WORKER)
    assert r.status_code == 403
    r = await api.client.get("/api/v1/admin/projects/p/progress")
    assert r.status_code == 401


async def test_progress_reports_resets_per_minute(api: Api, store, clock) -> None:
    """Issue 14: resets (here retryable failures) per minute between the history snapshots."""
    await api.put_project("p", max_resets=5)
    await api.enqueue("p", [{"id": f"j{i}", "value": f"v{i}"} for i in range(4)])
    clock.advance(60 - clock.now_ns() // 10**9 % 60)
    await store.record_history()
    clock.advance(120)
    jobs = (await api.claim("p", max_jobs=4)).json()["jobs"]
    items = [{"job_id": j["job_id"], "attempt_id": j["attempt_id"], "retryable": True,
              "error": {"code": "e"}} for j in jobs]
    assert (await api.post_worker("p", "fail", {"worker_id": "w1", "items": items})).status_code == 200
    await store.record_history()
    body = (await api.client.get("/api/v1/admin/projects/p/progress", headers=ADMIN)).json()
    assert body["resets_per_minute"] == 2.0  # 4 resets between snapshots 2 minutes apart
