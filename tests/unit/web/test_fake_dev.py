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


def _stale_selector_fds() -> list[int]:
    import os

    selector = getattr(asyncio.get_running_loop(), "_selector", None)
    stale = []
    for fd in list(selector.get_map()) if selector is not None else []:
        try:
            os.fstat(fd)
        except OSError:
            stale.append(fd)
    return stale


async def test_cancelled_fake_leaves_no_socket_registered_with_the_loop() -> None:
    """Issue 13 finding 9: a cancelled ``serve`` left its listener registered; once the socket
    was closed, a later connection reusing the descriptor died in the selector."""
    fake, _web, sock = dev_web("http://127.0.0.1:8080/")
    task = asyncio.create_task(serve(fake, sock))
    async with httpx.AsyncClient(base_url=_web.github_url) as c:
        for _ in range(200):
            try:
                await c.get("/user")
                break
            except httpx.ConnectError:
                await asyncio.sleep(0.02)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    sock.close()
    assert _stale_selector_fds() == []
