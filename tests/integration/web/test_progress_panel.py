"""The project page's progress panel (issue 14): rate, ETA, SVG charts, failures, workers."""

from __future__ import annotations

import re

from litestar.testing import AsyncTestClient

from hq_domain.jobs import ExecutionError, JobSpec, Outcome
from hq_domain.projects import ProjectPut
from hq_domain.users import Role, UserStatus
from hq_domain.worker import ClaimRequest, CompleteItem, FailItem
from tests.integration.web.conftest import WebApp


async def test_progress_panel(admin: AsyncTestClient, web: WebApp) -> None:
    store, clock = web.store, web.clock
    await store.put_project("p", ProjectPut(status="active", worker_claim_qps=100.0))
    await store.put_user("alice", UserStatus.ACTIVE, (Role.WORKER,))
    await store.enqueue("p", [JobSpec(value=f"v{i}", id=f"j{i}") for i in range(20)])
    page = (await admin.get("/admin/projects/p")).text
    assert "No history yet" in page and "No failed jobs." in page and "No worker activity." in page
    clock.advance(60 - clock.now_ns() // 10**9 % 60)
    await store.record_history()
    for _ in range(3):
        clock.advance(60)
        jobs = (await store.claim("alice", "p", ClaimRequest("w-a", 5, 600, (), 1))).jobs
        await store.complete("alice", "p", "w-a", [
            CompleteItem(j.job_id, j.attempt_id, Outcome("success"), None) for j in jobs[:3]])
        await store.fail("alice", "p", "w-a", [
            FailItem(jobs[3].job_id, jobs[3].attempt_id, False, ExecutionError("http_500", "boom")),
            FailItem(jobs[4].job_id, jobs[4].attempt_id, True, ExecutionError("http_503", "again"))])
        await store.record_history()
    page = (await admin.get("/admin/projects/p")).text
    assert "45.0 %" in page  # 9 of 20 done
    assert "3.0 jobs/min" in page and "2 min 40 s" in page  # 8 todo left at 3/min
    assert "1.0 /min" in page  # one retryable failure (a reset) a minute
    assert len(re.findall(r'<rect [^>]*class="s-done"', page)) >= 3
    assert len(re.findall(r'<rect [^>]*class="s-reset"', page)) >= 3
    assert re.search(r"<title>[^<]*: 3 done, 1 failed, 1 reset, \d+ todo</title>", page)
    assert "<polyline" in page
    assert "<code>http_500</code></td><td>3</td>" in page
    assert "<code>w-a</code></td><td>alice</td>" in page
    assert "<script" not in page and "style=" not in page


async def test_projects_page_and_workers_page(admin: AsyncTestClient, web: WebApp) -> None:
    store, clock = web.store, web.clock
    await store.put_project("p", ProjectPut(status="active"))
    await store.put_project("q", ProjectPut(status="active"))
    await store.put_user("bob", UserStatus.ACTIVE, (Role.WORKER,))
    await store.enqueue("p", [JobSpec(value=f"v{i}", id=f"j{i}") for i in range(4)])
    clock.advance(60 - clock.now_ns() // 10**9 % 60)
    await store.record_history()
    clock.advance(60)
    jobs = (await store.claim("bob", "p", ClaimRequest("w-b", 3, 600, (), 1))).jobs
    await store.complete("bob", "p", "w-b", [
        CompleteItem(jobs[0].job_id, jobs[0].attempt_id, Outcome("success"), None)])
    home = (await admin.get("/admin")).text
    assert "Throughput" in home
    assert re.search(r'<tr><td>p</td>\s*<td class="num">25.0 %</td>\s*'
                     r'<td class="num">1.0</td>\s*<td class="num">3 min 0 s</td>', home)
    assert re.search(r'<tr><td>q</td>\s*<td class="num"><span class="muted">–', home)
    workers = (await admin.get("/admin/workers")).text
    assert "Active workers" in workers
    assert re.search(r'<code>w-b</code></td><td>bob</td>\s*<td><a href="/admin/projects/p">p</a>', workers)
    # user, workers, done, failed, claimed, in hand (done comes from the servers' tallies,
    # which direct store calls do not feed: see test_jobs_done_per_worker_through_the_api)
    assert re.search(r'<td>bob</td><td class="num">1</td><td class="num">0</td><td class="num">0</td>'
                     r'<td class="num">0</td><td class="num">2</td>', workers)


async def test_optional_auto_refresh(admin: AsyncTestClient, web: WebApp) -> None:
    await web.store.put_project("p", ProjectPut(status="active"))
    page = (await admin.get("/admin/projects/p")).text
    assert 'http-equiv="refresh"' not in page and 'href="/admin/projects/p?refresh=30"' in page
    page = (await admin.get("/admin/projects/p?refresh=30")).text
    assert '<meta http-equiv="refresh" content="30">' in page
    for bad in ("5", "30;url=https://evil.example", "x"):
        page = (await admin.get("/admin/projects/p", params={"refresh": bad})).text
        assert 'http-equiv="refresh"' not in page


async def test_jobs_done_per_worker_through_the_api(web: WebApp, github: object) -> None:
    """Issue 14: completions and failures applied through the worker API are counted per
    worker by the process and flushed by the history loop; the workers panel of the project
    page and /admin/workers show them, per worker and per user."""
    import asyncio
    from dataclasses import replace

    from hq_apps.api.app import create_app
    from tests.fake_github import flow

    store, clock = web.store, web.clock
    settings = replace(web.settings, sweep_interval_s=3600.0, history_interval_s=0.05)
    await store.bootstrap_user("carol", [Role.WORKER], "carol-token")
    await store.put_project("p", ProjectPut(status="active", client_versions=("v1",)))
    await store.enqueue("p", [JobSpec(value=f"v{i}", id=f"j{i}") for i in range(6)])
    headers = {"Authorization": "Bearer carol-token", "X-SavewebHQ-Client-Version": "v1"}
    async with AsyncTestClient(create_app(settings, store, clock)) as c:
        c.follow_redirects = False
        assert (await flow.login(c)).status_code == 303
        r = await c.post("/api/v1/projects/p/jobs/claim", headers=headers, json={
            "worker_id": "w-c", "max_jobs": 6, "lease_seconds": 600, "policy_version": 1})
        jobs = r.json()["jobs"]
        ref = [{"job_id": j["job_id"], "attempt_id": j["attempt_id"]} for j in jobs]
        r = await c.post("/api/v1/projects/p/jobs/complete", headers=headers, json={
            "worker_id": "w-c", "items": [{**x, "outcome": {"kind": "success"}} for x in ref[:4]]})
        assert r.status_code == 200, r.text
        r = await c.post("/api/v1/projects/p/jobs/fail", headers=headers, json={
            "worker_id": "w-c", "items": [{**ref[4], "retryable": False,
                                           "error": {"code": "x", "message": "m"}}]})
        assert r.status_code == 200, r.text
        # a stale item (already completed) is not counted
        await c.post("/api/v1/projects/p/jobs/complete", headers=headers, json={
            "worker_id": "w-c", "items": [{**ref[0], "outcome": {"kind": "success"}}]})
        row = r'<code>w-c</code></td><td>carol</td>\s*{}<td>[^<]*</td>\s*<td class="num">4</td><td class="num">1</td>'
        for _ in range(200):  # the loop flushes every 0.05 s
            workers = (await c.get("/admin/workers")).text
            if re.search(row.format(r'<td><a href="/admin/projects/p">p</a></td>\s*'), workers):
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the flushed counts never showed on /admin/workers")
        assert re.search(r'<td>carol</td><td class="num">1</td><td class="num">4</td>'
                         r'<td class="num">1</td>', workers)
        page = (await c.get("/admin/projects/p")).text
        assert re.search(row.format(""), page)
