"""Admin dashboard pages and actions through the real app (spec §5.1, §5.4)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from litestar.testing import AsyncTestClient

from hq_apps.web.render import CSP
from hq_domain.jobs import ExecutionError, JobSpec, JobStatus
from hq_domain.projects import IdentityMode, ProjectPut
from hq_domain.users import Role, UserStatus
from hq_domain.worker import ClaimRequest, FailItem
from tests.integration.web.conftest import WebApp, csrf_of

PROJECT_FORM = {
    "project_id": "demo", "status": "active", "identity_mode": "external_id",
    "claim_order": "fifo", "dispatch_qps": "", "worker_claim_qps": "",
    "max_jobs_per_claim": "256", "max_resets": "3", "recommended_lease_seconds": "300",
    "client_versions": "",
}


async def _csrf(client: AsyncTestClient, path: str = "/admin") -> str:
    return csrf_of((await client.get(path)).text)


async def test_page_headers_and_css(admin: AsyncTestClient) -> None:
    resp = await admin.get("/admin")
    assert resp.headers["content-type"] == "text/html; charset=utf-8"
    assert resp.headers["cache-control"] == "no-store"
    assert resp.headers["content-security-policy"] == CSP
    assert resp.headers["referrer-policy"] == "no-referrer"
    assert resp.headers["x-content-type-options"] == "nosniff"
    css = await admin.get("/assets/admin.css")
    assert css.status_code == 200 and css.headers["content-type"] == "text/css; charset=utf-8"
    assert css.headers["cache-control"] == "public, max-age=3600"
    login = await admin.get("/nope-not-a-page")
    assert login.status_code == 404 and login.json()["error"]["code"] == "not_found"


async def test_login_page_without_session(client: AsyncTestClient) -> None:
    resp = await client.get("/")
    assert resp.status_code == 200 and 'href="/auth/github/start"' in resp.text
    assert "Continue with GitHub" in resp.text
    for path in ("/admin", "/admin/users", "/worker", "/admin/projects/x"):
        r = await client.get(path)
        assert r.status_code == 303 and r.headers["location"] == "/", path


async def test_create_project_shows_it_with_counts(admin: AsyncTestClient, web: WebApp) -> None:
    form = {**PROJECT_FORM, "identity_mode": "unique_value", "claim_order": "random",
            "dispatch_qps": "2.5", "client_versions": " v2 \n\nv1\n", "csrf": await _csrf(admin)}
    resp = await admin.post("/admin/projects", data=form)
    assert resp.status_code == 303 and resp.headers["location"] == "/admin/projects/demo"
    summary = await web.store.get_project("demo")
    assert summary is not None
    p = summary.project
    assert p.identity_mode is IdentityMode.UNIQUE_VALUE and p.claim_order.value == "random"
    assert p.dispatch_qps == 2.5 and p.client_versions == ("v1", "v2")
    await web.store.enqueue("demo", [JobSpec(value="a"), JobSpec(value="b"), JobSpec(value="c")])
    listing = (await admin.get("/admin")).text
    assert "unique_value" in listing and 'href="/admin/projects/demo"' in listing
    assert re.search(r'<rect x="0" y="0" width="100\.0" height="10" class="s-todo">', listing)
    detail = await admin.get("/admin/projects/demo")
    assert detail.status_code == 200 and "unique_value" in detail.text and "(fixed)" in detail.text


async def test_project_form_errors_rerender_with_400(admin: AsyncTestClient, web: WebApp) -> None:
    csrf = await _csrf(admin)
    bad = await admin.post("/admin/projects", data={**PROJECT_FORM, "max_resets": "1001", "csrf": csrf})
    assert bad.status_code == 400 and "Project policy is invalid" in bad.text
    assert 'name="project_id" value="demo"' in bad.text  # the form keeps what was typed
    bad = await admin.post("/admin/projects", data={**PROJECT_FORM, "dispatch_qps": "fast", "csrf": csrf})
    assert bad.status_code == 400 and "Project policy is invalid" in bad.text
    dup = "v1\nv1"
    bad = await admin.post("/admin/projects", data={**PROJECT_FORM, "client_versions": dup, "csrf": csrf})
    assert bad.status_code == 400 and "Client versions are invalid" in bad.text
    assert await web.store.list_projects() == []


async def test_update_keeps_identity_and_rejects_bad_policy(admin: AsyncTestClient, web: WebApp) -> None:
    await web.store.put_project("p1", ProjectPut(status="active", identity_mode="none"))
    csrf = await _csrf(admin)
    form = {k: v for k, v in PROJECT_FORM.items() if k not in ("project_id", "identity_mode")}
    resp = await admin.post("/admin/projects/p1/status", data={**form, "status": "draining", "csrf": csrf})
    assert resp.status_code == 303
    p = (await web.store.get_project("p1")).project  # type: ignore[union-attr]
    assert p.status.value == "draining" and p.identity_mode is IdentityMode.NONE
    resp = await admin.post("/admin/projects/p1/status", data={**form, "recommended_lease_seconds": "0", "csrf": csrf})
    assert resp.status_code == 400 and "Project policy is invalid" in resp.text
    missing = await admin.post("/admin/projects/nope/status", data={**form, "csrf": csrf})
    assert missing.status_code == 404 and "Project not found" in missing.text


async def test_enqueue_json_batch(admin: AsyncTestClient, web: WebApp) -> None:
    await web.store.put_project("p", ProjectPut(status="active"))
    csrf = await _csrf(admin)
    jobs = [{"id": "a", "value": "https://a/", "random_key": -5}, {"id": "b", "value": "https://b/", "type": "asset"}]
    resp = await admin.post("/admin/projects/p/jobs", data={"jobs_json": json.dumps(jobs), "csrf": csrf})
    assert resp.status_code == 303
    page = await web.store.list_jobs("p", None, 0, 10)
    assert next((j.external_id, j.random_key) for j in page.jobs) == ("a", -5)
    for bad, text in [
        ("[]", "Job batch is invalid"),
        ("{}", "Job batch is invalid"),
        ("[not json", "Job batch is invalid"),
        ("\n \n", "expected 1-256 values"),
        ("https://a/\n" + "x" * 9000, "line 2"),
        (json.dumps([{"id": "c", "value": "x", "colour": 1}]), "unknown field"),
        (json.dumps([{"value": "no id"}]), "id is required for external_id projects"),
        (json.dumps([{"id": "z", "value": "x"}] * 257), "1-256"),
    ]:
        r = await admin.post("/admin/projects/p/jobs", data={"jobs_json": bad, "csrf": csrf})
        assert r.status_code == 400 and text in r.text, bad[:40]
        assert "<textarea" in r.text
    conflict = json.dumps([{"id": "a", "value": "different"}])
    r = await admin.post("/admin/projects/p/jobs", data={"jobs_json": conflict, "csrf": csrf})
    assert r.status_code == 400 and "Enqueue was rejected" in r.text
    assert len((await web.store.list_jobs("p", None, 0, 10)).jobs) == 2


async def test_job_page_requeue_and_delete(admin: AsyncTestClient, web: WebApp) -> None:
    await web.store.put_project("p", ProjectPut(status="active", max_resets=0))
    await web.store.put_user("w1", UserStatus.ACTIVE, (Role.WORKER,))
    await web.store.enqueue("p", [JobSpec(value="https://x/", id="x", attr={"k": "<v>"})])
    claim = await web.store.claim("w1", "p", ClaimRequest("worker-7", 1, 60, (), 1))
    job = claim.jobs[0]
    await web.store.fail("w1", "p", "worker-7", [FailItem(job.job_id, job.attempt_id, False, ExecutionError("boom", "bad"))])
    path = f"/admin/projects/p/jobs/{job.job_id}"
    page = await admin.get(path)
    assert page.status_code == 200 and "failed" in page.text and "&lt;v&gt;" in page.text
    iso = datetime.fromtimestamp(web.clock.now_ns() // 10**9, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert iso in page.text and "&lt;nil&gt;" not in page.text
    # Not WIP any more (worker_id is null), but the page says which worker failed it.
    assert '<dt>Failed by</dt><dd><a href="/admin/workers?worker_id=worker-7">worker-7</a>' in page.text
    assert "Requeue" in page.text and "Delete job" in page.text
    csrf = csrf_of(page.text)
    resp = await admin.post(path + "/requeue", data={"csrf": csrf})
    assert resp.status_code == 303 and resp.headers["location"] == path
    assert (await web.store.get_job("p", job.job_id)).status is JobStatus.TODO  # type: ignore[union-attr]
    again = await admin.post(path + "/requeue", data={"csrf": csrf})
    assert again.status_code == 400 and "Requeue was rejected" in again.text
    resp = await admin.post(path + "/delete", data={"csrf": csrf})
    assert resp.status_code == 303 and resp.headers["location"] == "/admin/projects/p"
    assert (await admin.get(path)).status_code == 404
    assert (await admin.get("/admin/projects/p/jobs/abc")).status_code == 404


async def test_wip_job_links_worker_and_project_delete_refused(admin: AsyncTestClient, web: WebApp) -> None:
    await web.store.put_project("p", ProjectPut(status="active"))
    await web.store.put_user("w1", UserStatus.ACTIVE, (Role.WORKER,))
    await web.store.enqueue("p", [JobSpec(value="v", id="x")])
    job = (await web.store.claim("w1", "p", ClaimRequest("worker-7", 1, 60, (), 1))).jobs[0]
    page = await admin.get(f"/admin/projects/p/jobs/{job.job_id}")
    assert 'href="/admin/workers?worker_id=worker-7"' in page.text and "Delete job" not in page.text
    workers = await admin.get("/admin/workers?worker_id=worker-7")
    assert workers.status_code == 200 and "w1" in workers.text
    assert (await admin.get("/admin/workers?worker_id=bad%20id")).status_code == 400
    resp = await admin.post("/admin/projects/p/delete", data={"csrf": csrf_of(page.text)})
    assert resp.status_code == 400 and "project has WIP jobs" in resp.text
    assert await web.store.get_project("p") is not None


async def test_delete_project(admin: AsyncTestClient, web: WebApp) -> None:
    await web.store.put_project("gone", ProjectPut(status="archived"))
    resp = await admin.post("/admin/projects/gone/delete", data={"csrf": await _csrf(admin)})
    assert resp.status_code == 303 and resp.headers["location"] == "/admin"
    assert await web.store.get_project("gone") is None
    assert (await admin.get("/admin/projects/gone")).status_code == 404


async def test_delete_project_asks_for_the_id_then_says_what_it_deleted(
    admin: AsyncTestClient, web: WebApp
) -> None:
    await web.store.put_project("big", ProjectPut(status="active"))
    await web.store.enqueue("big", [JobSpec(value=f"https://x/{i}", id=f"j{i}") for i in range(3)])
    project = await admin.get("/admin/projects/big")
    assert 'href="/admin/projects/big/delete"' in project.text  # a link to a confirm page
    assert 'action="/admin/projects/big/delete"' not in project.text  # no one-click form
    confirm = await admin.get("/admin/projects/big/delete")
    assert confirm.status_code == 200 and "cannot be undone" in confirm.text
    assert 'name="confirm_project_id"' in confirm.text and "<strong>3</strong> jobs" in confirm.text
    assert (await admin.get("/admin/projects/nope/delete")).status_code == 404
    csrf = csrf_of(confirm.text)
    wrong = await admin.post(
        "/admin/projects/big/delete", data={"csrf": csrf, "confirm_project_id": "bi"}
    )
    assert wrong.status_code == 400 and "nothing was deleted" in wrong.text
    assert await web.store.get_project("big") is not None
    done = await admin.post(
        "/admin/projects/big/delete", data={"csrf": csrf, "confirm_project_id": "big"}
    )
    assert done.status_code == 303 and done.headers["location"] == "/admin"
    assert await web.store.get_project("big") is None
    listing = await admin.get("/admin")
    assert "Deleted project big and its 3 jobs." in listing.text
    assert "Deleted project" not in (await admin.get("/admin")).text  # shown once


async def test_jobs_table_pages_and_short_ids(admin: AsyncTestClient, web: WebApp) -> None:
    from hq_apps.web import project_pages

    await web.store.put_project("p", ProjectPut(status="active"))
    long_id = "j1_" + "ab" * 32
    specs = [
        JobSpec(value=f"https://example.org/{i}", id=f"{long_id[:-4]}{i:04d}") for i in range(250)
    ]
    await web.store.enqueue("p", specs)
    first = await admin.get("/admin/projects/p")
    assert f'title="{long_id[:-4]}0000"' in first.text  # full ID in the tooltip ...
    assert f">{long_id[:10]}…" in first.text  # ... its ends in the cell
    assert "‹ Previous</span>" in first.text  # no previous page on page 1
    nxt = re.search(r'href="([^"]+)">Next ›', first.text)
    assert nxt is not None
    second = await admin.get(nxt.group(1).replace("&amp;", "&"))
    prev = re.search(r'href="([^"]+)">‹ Previous', second.text)
    nxt2 = re.search(r'href="([^"]+)">Next ›', second.text)
    assert prev is not None and nxt2 is not None
    assert prev.group(1) == "/admin/projects/p"
    third = await admin.get(nxt2.group(1).replace("&amp;", "&"))
    prev3 = re.search(r'href="([^"]+)">‹ Previous', third.text)
    assert prev3 is not None
    back = await admin.get(prev3.group(1).replace("&amp;", "&"))
    assert back.text.count('class="value"') == project_pages.JOBS_PER_PAGE
    assert ">jobs 101–200<" in back.text
    assert "Next ›</span>" in third.text  # last page


async def test_enqueue_plain_urls_one_per_line(admin: AsyncTestClient, web: WebApp) -> None:
    from hq_domain.ids import default_job_id

    await web.store.put_project("p", ProjectPut(status="active", identity_mode="external_id"))
    csrf = await _csrf(admin)
    text = "https://a.example/\r\n\n  https://b.example/  \n"
    resp = await admin.post("/admin/projects/p/jobs", data={"jobs_json": text, "csrf": csrf})
    assert resp.status_code == 303
    jobs = (await web.store.list_jobs("p", None, 0, 10)).jobs
    assert [(j.value, j.external_id) for j in jobs] == [
        ("https://a.example/", default_job_id(None, "https://a.example/")),
        ("https://b.example/", default_job_id(None, "https://b.example/")),
    ]


async def test_users_and_tokens(admin: AsyncTestClient, web: WebApp) -> None:
    csrf = await _csrf(admin, "/admin/users")
    resp = await admin.post(
        "/admin/users", data={"user_id": "bob", "status": "active", "roles": ["worker", "admin"], "csrf": csrf}
    )
    assert resp.status_code == 303
    bob = await web.store.get_user("bob")
    assert bob is not None and bob.roles == (Role.ADMIN, Role.WORKER)
    bad = await admin.post("/admin/users", data={"user_id": "bob", "status": "boss", "csrf": csrf})
    assert bad.status_code == 400 and "invalid user" in bad.text
    assert (await admin.get("/admin/users?user_id=bob")).status_code == 200
    assert (await admin.get("/admin/users?user_id=nobody")).status_code == 404
    assert (await admin.get("/admin/users/bob/token")).status_code == 404
    rotated = await admin.post("/admin/users/bob/token", data={"csrf": csrf})
    assert rotated.status_code == 200
    token = re.search(r'id="token">([^<]+)<', rotated.text).group(1)  # type: ignore[union-attr]
    assert token.startswith("hq_") and len(token) == 46
    assert (await web.store.principal_for_token(token)).user_id == "bob"  # type: ignore[union-attr]
    shown = await admin.get("/admin/users/bob/token")
    assert token in shown.text
    resp = await admin.post("/admin/users/bob/token/revoke", data={"csrf": csrf})
    assert resp.status_code == 303 and await web.store.principal_for_token(token) is None
    again = await admin.post("/admin/users/bob/token/revoke", data={"csrf": csrf})
    assert again.status_code == 400
    resp = await admin.post("/admin/users/bob/delete", data={"csrf": csrf})
    assert resp.status_code == 303 and await web.store.get_user("bob") is None


async def test_workers_listing(admin: AsyncTestClient, web: WebApp) -> None:
    resp = await admin.get("/admin/workers")
    assert resp.status_code == 200 and "No worker has reported yet" in resp.text


async def test_unexpected_errors_render_an_html_500(admin: AsyncTestClient, web: WebApp) -> None:
    async def broken() -> list[object]:
        raise RuntimeError("database on fire")

    web.store.list_projects = broken  # type: ignore[method-assign]
    async with AsyncTestClient(web.app, raise_server_exceptions=False) as c:
        c.cookies = admin.cookies
        resp = await c.get("/admin")
    assert resp.status_code == 500 and "Internal server error" in resp.text
    assert resp.headers["content-type"] == "text/html; charset=utf-8"
    assert "database on fire" not in resp.text
