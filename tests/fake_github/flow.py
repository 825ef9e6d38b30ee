"""Drive the browser side of the OAuth dance with plain HTTP: start → fake authorize →
callback, carrying the app's cookies in an in-process test client."""

from __future__ import annotations

import ssl
from urllib.parse import urlsplit

import httpx

_TLS = ssl.create_default_context()  # once: building it costs ~50 ms


async def begin(client: httpx.AsyncClient) -> str:
    """``GET /auth/github/start``; returns the authorize URL it redirects to."""
    resp = await client.get("/auth/github/start", follow_redirects=False)
    assert resp.status_code == 302, resp.text
    return resp.headers["location"]


async def authorize(authorize_url: str) -> str:
    """What the fake GitHub redirects the browser to: the callback path with its query."""
    async with httpx.AsyncClient(verify=_TLS) as gh:
        resp = await gh.get(authorize_url)
    assert resp.status_code == 302, resp.text
    parts = urlsplit(resp.headers["location"])
    return f"{parts.path}?{parts.query}"


async def login(client: httpx.AsyncClient) -> httpx.Response:
    """The whole flow for the fake's current identity; returns the callback response."""
    callback = await authorize(await begin(client))
    return await client.get(callback, follow_redirects=False)
