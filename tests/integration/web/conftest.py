"""An app with the dashboard enabled, a memory store, a manual clock and a loopback fake GitHub."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from hq_adapters.memory import MemoryStore
from hq_apps.api.app import create_app
from hq_apps.settings import Settings, WebSettings
from hq_domain.clock import ManualClock
from tests.fake_github import FakeGitHub, serve_asgi_in_thread

CLIENT_ID, CLIENT_SECRET = "hq-test-client", "hq-test-client-secret"
SECRET = b"s" * 32
ORG, TEAM = "saveweb", "hq-admins"


@pytest.fixture(scope="session")
def github_server() -> Iterator[tuple[FakeGitHub, str]]:
    fake = FakeGitHub(CLIENT_ID, CLIENT_SECRET, org=ORG, team=TEAM)
    with serve_asgi_in_thread(fake.app()) as url:
        yield fake, url


@pytest.fixture
def github(github_server: tuple[FakeGitHub, str]) -> FakeGitHub:
    fake, _ = github_server
    fake.memberships.clear()
    fake.token_type = "bearer"
    fake.set_identity(1001, "octo-admin", "active")
    return fake


@dataclass
class WebApp:
    app: Litestar
    store: MemoryStore
    clock: ManualClock
    settings: Settings

    def rebuild(self, **web_changes: object) -> WebApp:
        """A second app over the same store (e.g. after rotating the web secret)."""
        assert self.settings.web is not None
        settings = replace(self.settings, web=replace(self.settings.web, **web_changes))
        return WebApp(create_app(settings, self.store, self.clock), self.store, self.clock, settings)


def web_settings(github_url: str, secret: bytes = SECRET) -> WebSettings:
    return WebSettings(
        public_url="http://testserver.local",
        github_client_id=CLIENT_ID,
        github_client_secret=CLIENT_SECRET,
        web_session_secret=secret,
        oauth_admin_org=ORG,
        oauth_admin_team=TEAM,
        github_url=github_url,
        github_api_url=github_url,
    )


@pytest.fixture
def web(github_server: tuple[FakeGitHub, str]) -> WebApp:
    clock = ManualClock()
    store = MemoryStore(clock)
    settings = Settings(web=web_settings(github_server[1]), sweep_interval_s=0, openapi=False)
    return WebApp(create_app(settings, store, clock), store, clock, settings)


@pytest.fixture
async def client(web: WebApp) -> AsyncIterator[AsyncTestClient]:
    async with AsyncTestClient(web.app) as c:
        c.follow_redirects = False
        yield c


@pytest.fixture
async def admin(client: AsyncTestClient, github: FakeGitHub) -> AsyncTestClient:
    """``client`` signed in as the team member ``gh_1001``."""
    from tests.fake_github import flow

    resp = await flow.login(client)
    assert resp.status_code == 303 and resp.headers["location"] == "/admin"
    return client


def csrf_of(html: str) -> str:
    import re

    match = re.search(r'name="csrf" value="([^"]+)"', html)
    assert match, "page has no CSRF field"
    return match.group(1)
