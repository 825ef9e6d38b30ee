"""A live tracker (memory store, real clock) and a fake GitHub on loopback, driven by Debian's
headless Chromium through Playwright. Skipped only when Chromium is absent and ``CI`` is unset."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from hq_adapters.memory import MemoryStore
from hq_apps.api.app import create_app
from hq_apps.settings import Settings, WebSettings
from hq_domain.clock import SystemClock
from tests.fake_github import FakeGitHub, reserve_loopback, serve_asgi_in_thread

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]


def _chromium() -> str | None:
    return CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")


@dataclass
class LiveHQ:
    url: str
    github: FakeGitHub


@pytest.fixture(scope="module")
def live_hq() -> Iterator[LiveHQ]:
    fake = FakeGitHub("browser-client", "browser-secret", org="saveweb", team="hq-admins")
    with serve_asgi_in_thread(fake.app()) as gh_url:
        sock, url = reserve_loopback()
        web = WebSettings(
            public_url=url,
            github_client_id="browser-client",
            github_client_secret="browser-secret",
            web_session_secret=os.urandom(32),
            oauth_admin_org="saveweb",
            oauth_admin_team="hq-admins",
            github_url=gh_url,
            github_api_url=gh_url,
        )
        clock = SystemClock()
        app = create_app(Settings(web=web, sweep_interval_s=0, openapi=False), MemoryStore(clock), clock)
        with serve_asgi_in_thread(app, sock):
            yield LiveHQ(url, fake)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    exe = _chromium()
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is required in CI (apt-get install chromium)")
        pytest.skip("no Chromium installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield b
        b.close()
