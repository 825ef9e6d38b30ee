"""No framework cache a stranger can fill (issue 13 #2): distinct large queries, cookies and
paths sent through the real app leave nothing behind once answered."""

from __future__ import annotations

import gc
import tracemalloc

from hq_adapters.memory import MemoryStore
from hq_apps.api import framework_caches
from hq_apps.api.app import create_app
from hq_apps.settings import Settings, WebSettings
from hq_domain.clock import ManualClock

REQUESTS = 80
PAD = 16 * 1024


async def _get(app: object, path: str, query: bytes, cookie: bytes) -> int:
    """One GET through the ASGI app directly (no client-side caches in the measurement)."""
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
        "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
        "query_string": query, "headers": [(b"host", b"t"), (b"cookie", cookie)],
        "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80), "state": {},
    }  # fmt: skip
    await app(scope, receive, send)  # type: ignore[operator]
    return sent[0]["status"]


async def test_large_inputs_are_not_remembered() -> None:
    web = WebSettings(
        public_url="http://t", github_client_id="i", github_client_secret="s",
        web_session_secret=b"s" * 32, oauth_admin_org="o", oauth_admin_team="t",
    )  # fmt: skip
    app = create_app(Settings(web=web, sweep_interval_s=0, openapi=False), MemoryStore(ManualClock()))
    await _get(app, "/healthz", b"", b"")
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(REQUESTS):
            query = f"n={i}&".encode() + b"a&" * (PAD // 2)
            cookie = f"c{i}=".encode() + b"b;" * (PAD // 2)
            await _get(app, "/", query, cookie)
            await _get(app, f"/admin/projects/p{i}{'x' * PAD}", query, cookie)
            await _get(app, f"/api/v1/projects/p{i}{'x' * PAD}/policy", query, cookie)
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert retained < 2 << 20, f"{retained / 2**20:.1f} MiB retained after {REQUESTS} requests"


def test_installed_caches_skip_large_keys() -> None:
    framework_caches.install()
    import litestar._parsers as parsers
    import litestar.connection.base as base

    assert base.parse_query_string is parsers.parse_query_string
    parsers.parse_query_string.cache_clear()
    parsers.parse_query_string(b"a=1")
    parsers.parse_query_string(b"a&" * 1000)
    assert parsers.parse_query_string.cache_info().currsize == 1
