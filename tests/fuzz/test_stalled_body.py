"""A body that stops arriving must not hold a request forever (spec §1.1: the whole request
body, uploads included, must arrive within the 15 s read timeout).

The timeout constant is shrunk so the default run stays fast; the real-time version against a
``tracker serve`` process is ``test_slow_drip.py`` (``slow``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import zstandard

from hq_apps.web import security
from tests.fuzz.support import ADMIN
from tests.security.matrix import WEB_SECRET, build_app

SHORT = 0.3
BOUND = 2.0


async def _stalled(app: Any, path: str, headers: dict[str, str], first: bytes = b"{") -> int | None:
    """Send ``first``, then nothing; the status the app answers with, None if it hangs."""
    sent = False
    out: dict[str, int] = {}

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": first, "more_body": True}
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            out["status"] = message["status"]

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }  # fmt: skip
    try:
        await asyncio.wait_for(app(scope, receive, send), BOUND)
    except TimeoutError:
        return None
    return out.get("status")


@pytest.fixture
def app(monkeypatch: pytest.MonkeyPatch) -> Any:
    for module in ("hq_apps.api.http", "hq_apps.api.source_upload", "hq_apps.web.context"):
        monkeypatch.setattr(f"{module}.READ_TIMEOUT_S", SHORT, raising=False)
    return build_app()[0]


async def test_stalled_json_body_is_cut_off(app: Any) -> None:
    headers = {"Authorization": "Bearer tok-admin", "content-type": "application/json",
               "content-length": "1000"}  # fmt: skip
    status = await _stalled(app, "/api/v1/admin/projects/p/jobs", headers)
    assert status is not None, f"JSON route still reading after {BOUND}s"
    assert 400 <= status < 500


async def test_stalled_source_upload_is_cut_off(app: Any) -> None:
    headers = {**ADMIN, "Authorization": "Bearer tok-admin", "content-type": "application/zstd",
               "content-length": "100000"}  # fmt: skip
    obj = zstandard.ZstdCompressor().compressobj()
    opening = obj.compress(b'{"id":"z1","value":"v"}\n') + obj.flush(
        zstandard.COMPRESSOBJ_FLUSH_BLOCK
    )
    status = await _stalled(app, "/api/v1/admin/projects/p/source", headers, opening)
    assert status is not None, f"source route still reading after {BOUND}s"


async def test_stalled_dashboard_form_is_cut_off(app: Any) -> None:
    cookie = f"{security.SESSION_COOKIE}={'s' * 43}"
    assert WEB_SECRET  # the matrix app has a valid admin session for this cookie
    headers = {"cookie": cookie, "content-type": "application/x-www-form-urlencoded",
               "content-length": "100000"}  # fmt: skip
    status = await _stalled(app, "/admin/projects/p/jobs", headers)
    assert status is not None, f"dashboard POST still reading after {BOUND}s"
