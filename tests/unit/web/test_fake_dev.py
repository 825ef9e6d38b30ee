"""``dev_web`` + ``serve``: what ``tracker dev --fake-github`` starts."""

from __future__ import annotations

import asyncio
import contextlib

import httpx

from tests.fake_github import dev_web, serve


async def test_dev_fake_serves_and_switches_identity() -> None:
    fake, web, sock = dev_web("http://127.0.0.1:8080/")
    assert web.github_url == web.github_api_url and web.github_url.startswith("http://127.0.0.1:")
    assert len(web.web_session_secret) == 32 and web.oauth_admin_team == fake.team
    task = asyncio.create_task(serve(fake, sock))
    try:
        async with httpx.AsyncClient(base_url=web.github_url) as c:
            for _ in range(200):
                try:
                    resp = await c.get("/_fake/identity", params={"login": "ann", "id": "5", "member": "none"})
                    break
                except httpx.ConnectError:
                    await asyncio.sleep(0.02)
            assert resp.status_code == 200
            assert fake.user.login == "ann" and fake.user.id == 5 and "ann" not in fake.memberships
            assert (await c.get("/user")).status_code == 401
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        sock.close()
