"""Sessions, CSRF, role gates, D3 and worker self-service (spec §5.2, §5.4)."""

from __future__ import annotations

import re

from litestar.testing import AsyncTestClient

from hq_apps.web import security
from hq_domain.projects import ProjectPut
from hq_domain.users import Role, UserStatus
from tests.fake_github import FakeGitHub, flow
from tests.integration.web.conftest import SECRET, WebApp, csrf_of

FORM = {"project_id": "p", "status": "active", "identity_mode": "none"}


async def _worker_client(client: AsyncTestClient, web: WebApp, github: FakeGitHub) -> AsyncTestClient:
    github.set_identity(3003, "worker-bee")
    await flow.login(client)
    await web.store.put_user("gh_3003", UserStatus.ACTIVE, (Role.WORKER,))
    resp = await flow.login(client)
    assert resp.headers["location"] == "/worker"
    return client


async def test_csrf_missing_or_wrong_is_403_and_changes_nothing(admin: AsyncTestClient, web: WebApp) -> None:
    for csrf in (None, "", "x" * 43, security.csrf_token(SECRET, "y" * 43)):
        data = dict(FORM) if csrf is None else {**FORM, "csrf": csrf}
        resp = await admin.post("/admin/projects", data=data)
        assert resp.status_code == 403 and "Invalid CSRF token" in resp.text
    assert await web.store.list_projects() == []
    resp = await admin.post("/logout", data={"csrf": "nope"})
    assert resp.status_code == 403
    assert (await admin.get("/admin")).status_code == 200  # still signed in


async def test_post_without_session_redirects_before_csrf(client: AsyncTestClient, web: WebApp) -> None:
    resp = await client.post("/admin/projects", data={**FORM, "csrf": "whatever"})
    assert resp.status_code == 303 and resp.headers["location"] == "/"
    assert await web.store.list_projects() == []


async def test_unparseable_form_is_400_first(admin: AsyncTestClient) -> None:
    resp = await admin.post(
        "/admin/projects", content=b"--x\r\nbroken", headers={"content-type": "multipart/form-data; boundary=x"}
    )
    assert resp.status_code == 400 and "Invalid form submission" in resp.text
    big = await admin.post("/admin/projects", data={"pad": "x" * (1 << 20), "csrf": "c"})
    assert big.status_code == 400 and "Invalid form submission" in big.text


async def test_worker_session_gets_403_on_admin_pages(
    client: AsyncTestClient, web: WebApp, github: FakeGitHub
) -> None:
    worker = await _worker_client(client, web, github)
    await web.store.put_project("p", ProjectPut(status="active"))
    for path in ("/admin", "/admin/users", "/admin/workers", "/admin/projects/p", "/admin/users/gh_3003/token"):
        resp = await worker.get(path)
        assert resp.status_code == 403 and "Administrator role required" in resp.text, path
    csrf = csrf_of((await worker.get("/worker")).text)
    resp = await worker.post("/admin/projects/p/delete", data={"csrf": csrf})
    assert resp.status_code == 403 and "Administrator role required" in resp.text
    resp = await worker.post("/admin/users", data={"user_id": "gh_3003", "status": "active", "roles": ["admin"], "csrf": csrf})
    assert resp.status_code == 403
    assert (await web.store.get_user("gh_3003")).roles == (Role.WORKER,)  # type: ignore[union-attr]
    assert await web.store.get_project("p") is not None


async def test_admin_without_worker_role_gets_403_on_worker_page(admin: AsyncTestClient) -> None:
    resp = await admin.get("/worker")
    assert resp.status_code == 403 and "Worker role required" in resp.text


async def test_worker_generates_token_that_works_on_the_api(
    client: AsyncTestClient, web: WebApp, github: FakeGitHub
) -> None:
    worker = await _worker_client(client, web, github)
    page = await worker.get("/worker")
    assert "Generate token" in page.text and "<details" not in page.text
    resp = await worker.post("/worker/token", data={"csrf": csrf_of(page.text)})
    assert resp.status_code == 200 and "<details open>" in resp.text
    token = re.search(r'id="token">([^<]+)<', resp.text).group(1)  # type: ignore[union-attr]
    assert token.startswith("hq_") and len(token) == 46
    page = await worker.get("/worker")
    assert "<details>" in page.text and token in page.text and "Rotate token" in page.text
    whoami = await worker.get("/api/v1/whoami", headers={"Authorization": f"Bearer {token}"})
    assert whoami.status_code == 200 and whoami.json() == {"user_id": "gh_3003"}
    rotated = await worker.post("/worker/token", data={"csrf": csrf_of(page.text)})
    new = re.search(r'id="token">([^<]+)<', rotated.text).group(1)  # type: ignore[union-attr]
    assert new != token
    assert (await worker.get("/api/v1/whoami", headers={"Authorization": f"Bearer {token}"})).status_code == 401
    resp = await worker.post("/worker/token/revoke", data={"csrf": csrf_of(page.text)})
    assert resp.status_code == 303 and resp.headers["location"] == "/worker"
    resp = await worker.post("/worker/token/revoke", data={"csrf": csrf_of(page.text)})
    assert resp.status_code == 400
    assert (await worker.get("/api/v1/whoami", headers={"Authorization": f"Bearer {new}"})).status_code == 401


async def test_browser_cookies_never_authorize_the_api(admin: AsyncTestClient) -> None:
    for path in ("/api/v1/whoami", "/api/v1/admin/projects", "/api/v1/admin/users"):
        resp = await admin.get(path)
        assert resp.status_code == 401, path
        assert resp.json()["error"]["code"] == "invalid_machine_token"
        assert "no-store" in resp.headers["cache-control"]


async def test_logout_deletes_the_session(admin: AsyncTestClient, web: WebApp) -> None:
    token = admin.cookies[security.SESSION_COOKIE]
    resp = await admin.post("/logout", data={"csrf": csrf_of((await admin.get("/admin")).text)})
    assert resp.status_code == 303 and resp.headers["location"] == "/"
    assert "saveweb_hq_session=; Path=/; Max-Age=0" in resp.headers["set-cookie"]
    assert await web.store.session_user(security.session_digest(SECRET, token)) is None


async def test_session_expires_after_12_hours(admin: AsyncTestClient, web: WebApp) -> None:
    web.clock.advance(12 * 3600 - 1)
    assert (await admin.get("/admin")).status_code == 200
    web.clock.advance(1)
    assert (await admin.get("/admin")).status_code == 303


async def test_suspended_user_loses_session(admin: AsyncTestClient, web: WebApp) -> None:
    await web.store.put_user("gh_1001", UserStatus.SUSPENDED, (Role.ADMIN,))
    assert (await admin.get("/admin")).status_code == 303


async def test_cookie_of_wrong_length_is_ignored(client: AsyncTestClient) -> None:
    client.cookies.set(security.SESSION_COOKIE, "short")
    assert (await client.get("/admin")).status_code == 303


async def test_rotating_the_web_secret_revokes_sessions(admin: AsyncTestClient, web: WebApp) -> None:
    """D3: the stored digest is keyed by the secret, so a new secret finds no session."""
    cookie = admin.cookies[security.SESSION_COOKIE]
    assert (await admin.get("/admin")).status_code == 200
    rotated = web.rebuild(web_session_secret=b"n" * 32)
    async with AsyncTestClient(rotated.app) as after:
        after.cookies.set(security.SESSION_COOKIE, cookie)
        assert (await after.get("/admin", follow_redirects=False)).status_code == 303
        assert (await after.get("/", follow_redirects=False)).status_code == 200
    same = web.rebuild()
    async with AsyncTestClient(same.app) as unchanged:
        unchanged.cookies.set(security.SESSION_COOKIE, cookie)
        assert (await unchanged.get("/admin", follow_redirects=False)).status_code == 200


async def test_secure_cookies_on_https(github_server: tuple[FakeGitHub, str]) -> None:
    from dataclasses import replace

    from hq_adapters.memory import MemoryStore
    from hq_apps.api.app import create_app
    from hq_apps.settings import Settings
    from hq_domain.clock import ManualClock
    from tests.integration.web.conftest import web_settings

    clock = ManualClock()
    ws = replace(web_settings(github_server[1]), public_url="https://hq.example.org/")
    app = create_app(Settings(web=ws, sweep_interval_s=0, openapi=False), MemoryStore(clock), clock)
    async with AsyncTestClient(app) as c:
        resp = await c.get("/auth/github/start", follow_redirects=False)
        assert "; Secure;" in resp.headers["set-cookie"]
        assert "redirect_uri=https%3A%2F%2Fhq.example.org%2Fauth%2Fgithub%2Fcallback" in resp.headers["location"]
