"""The progress views in a real browser (issue 14): a project with an hour of history, failures
and workers; the projects page's throughput table; /admin/workers. Screenshots as in
test_walkthrough (docs/screenshots only with HQ_UPDATE_SCREENSHOTS=1)."""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from hq_adapters.memory import MemoryStore
from hq_apps.api.app import create_app
from hq_apps.settings import Settings, WebSettings
from hq_domain.clock import ManualClock
from hq_domain.jobs import ExecutionError, JobSpec, Outcome
from hq_domain.projects import ProjectPut
from hq_domain.users import Role, UserStatus
from hq_domain.worker import ClaimRequest, CompleteItem, FailItem
from tests.browser.conftest import LiveHQ
from tests.browser.test_walkthrough import SHOTS, _shot, _sign_in
from tests.fake_github import FakeGitHub, reserve_loopback, serve_asgi_in_thread

pytestmark = pytest.mark.browser
CODES = ["http_500", "http_500", "http_500", "dns_error", "timeout", "http_404"]


async def _history(store: MemoryStore, clock: ManualClock) -> None:
    """90 minutes of a crawl: a steady rate with a slow patch, failures, several workers."""
    await store.put_project("crawl-2025", ProjectPut(status="active", worker_claim_qps=50.0,
                                                     max_resets=2))
    await store.put_project("small", ProjectPut(status="active"))
    for user in ("alice", "bob", "carol"):
        await store.put_user(user, UserStatus.ACTIVE, (Role.WORKER,))
    await store.enqueue("crawl-2025", [JobSpec(value=f"https://e.org/{i}", id=f"j{i}")
                                       for i in range(12000)])
    await store.enqueue("small", [JobSpec(value=f"v{i}", id=f"s{i}") for i in range(40)])
    rng = random.Random(7)
    clock.advance(60 - clock.now_ns() // 10**9 % 60)
    workers = [("alice", "alice-1"), ("alice", "alice-2"), ("bob", "bob-box"), ("carol", "c-7")]
    for minute in range(90):
        await store.record_history()
        per = 20 if 30 <= minute < 40 else 60 + rng.randint(0, 30)
        for user, wid in workers:
            jobs = (await store.claim(user, "crawl-2025",
                                      ClaimRequest(wid, per // len(workers), 900, (), 1))).jobs
            ok = [j for j in jobs if rng.random() > 0.05]
            bad = [j for j in jobs if j not in ok]
            await store.complete(user, "crawl-2025", wid, [
                CompleteItem(j.job_id, j.attempt_id, Outcome("success"), None) for j in ok])
            await store.fail(user, "crawl-2025", wid, [
                FailItem(j.job_id, j.attempt_id, rng.random() < 0.4,
                         ExecutionError(rng.choice(CODES), "fetch failed"))
                for j in bad])
            # what the server's complete/fail routes would have counted for this worker
            await store.record_worker_minutes({("crawl-2025", wid): (len(ok), len(bad))})
        if 50 <= minute < 56:  # a worker that vanishes with its leases: the sweep resets them
            await store.claim("bob", "crawl-2025", ClaimRequest("bob-old", 6, 30, (), 1))
        clock.advance(60)
        await store.sweep_expired(1000)
    await store.claim("carol", "crawl-2025", ClaimRequest("c-7", 5, 900, (), 1))  # jobs in hand
    await store.record_history()


@pytest.fixture(scope="module")
def progress_hq() -> Iterator[LiveHQ]:
    fake = FakeGitHub("browser-client", "browser-secret", org="saveweb", team="hq-admins")
    with serve_asgi_in_thread(fake.app()) as gh_url:
        sock, url = reserve_loopback()
        web = WebSettings(
            public_url=url, github_client_id="browser-client",
            github_client_secret="browser-secret", web_session_secret=os.urandom(32),
            oauth_admin_org="saveweb", oauth_admin_team="hq-admins",
            github_url=gh_url, github_api_url=gh_url,
        )
        clock = ManualClock()
        store = MemoryStore(clock)
        with ThreadPoolExecutor(1) as pool:  # a fresh loop: the session's may be running here
            pool.submit(asyncio.run, _history(store, clock)).result()
        app = create_app(Settings(web=web, sweep_interval_s=0, openapi=False), store, clock)
        with serve_asgi_in_thread(app, sock):
            yield LiveHQ(url, fake)


def test_progress_views(browser, progress_hq: LiveHQ) -> None:  # type: ignore[no-untyped-def]
    hq = progress_hq
    page = browser.new_context(viewport={"width": 1280, "height": 860}).new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text)
            if m.type == "error" and not m.text.startswith("Failed to load resource") else None)
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}")
            if r.status >= 400 and not r.url.endswith("/favicon.ico") else None)
    hq.github.set_identity(1001, "octo-admin", "active")
    _sign_in(page, hq)
    assert page.url == hq.url + "/admin"
    table = page.inner_text("table.throughput")
    assert "crawl-2025" in table and "jobs/min" not in table
    _shot(page, "admin-projects-throughput")

    page.goto(hq.url + "/admin/projects/crawl-2025")
    body = page.inner_text("body")
    assert "Progress" in body and "jobs/min" in body and "http_500" in body
    assert page.locator("svg.chart").count() == 2
    assert page.locator("svg.chart rect.s-done").count() >= 60
    assert page.locator("svg.chart rect.s-reset").count() >= 6
    assert " /min" in page.inner_text("section.progress dl.kv")  # resets per minute
    assert page.locator("svg.chart polyline.depth").count() == 2
    assert page.locator("table.workers-activity tbody tr").count() == 4
    SHOTS.mkdir(parents=True, exist_ok=True)  # the top of the page: the jobs list follows
    bottom = page.locator("table.leaderboard").bounding_box()
    page.screenshot(path=str(SHOTS / "project-progress.png"), full_page=True,
                    clip={"x": 0, "y": 0, "width": 1280, "height": bottom["y"] + bottom["height"] + 60})

    page.goto(hq.url + "/admin/workers")
    assert page.locator("table.leaderboard tbody tr").count() == 3
    _shot(page, "workers-activity")
    assert not errors, errors  # no CSP violations or script errors
