"""The GitHub gateway against the fake, in-process through an ASGI transport."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from hq_apps.web.fake_github import FakeGitHub
from hq_apps.web.github import CappedTransport, GitHubError, GitHubGateway, ResponseTooLarge
from hq_apps.web.security import random_token

BASE = "http://gh.test"


def _gateway(fake: FakeGitHub, secret: str = "sec") -> GitHubGateway:
    return GitHubGateway(
        client_id="cid", client_secret=secret, redirect_uri="http://hq.test/auth/github/callback",
        github_url=BASE + "/", api_url=BASE, transport=httpx.ASGITransport(app=fake.app()),
    )


async def _code(fake: FakeGitHub, gw: GitHubGateway, verifier: str) -> str:
    url = gw.authorize_url("st", verifier)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=fake.app()), base_url=BASE) as c:
        resp = await c.get(url)
    return parse_qs(urlsplit(resp.headers["location"]).query)["code"][0]


async def test_sign_in_member_and_non_member() -> None:
    fake = FakeGitHub("cid", "sec", org="o", team="t")
    fake.set_identity(7, "seven", "active")
    gw = _gateway(fake)
    verifier = random_token()
    ident, member = await gw.sign_in(await _code(fake, gw, verifier), verifier, "o", "t")
    assert (ident.id, ident.login, member) == (7, "seven", True)
    fake.set_identity(8, "eight", "pending")
    _, member = await gw.sign_in(await _code(fake, gw, verifier), verifier, "o", "t")
    assert member is False
    fake.set_identity(9, "nine")
    _, member = await gw.sign_in(await _code(fake, gw, verifier), verifier, "o", "t")
    assert member is False


async def test_exchange_failures_are_login_failed() -> None:
    fake = FakeGitHub("cid", "sec")
    gw = _gateway(fake)
    verifier = random_token()
    code = await _code(fake, gw, verifier)
    with pytest.raises(GitHubError, match="GitHub login failed"):
        await gw.sign_in(code, random_token(), "o", "t")
    with pytest.raises(GitHubError, match="GitHub login failed"):
        await gw.sign_in(code, verifier, "o", "t")  # single use
    with pytest.raises(GitHubError, match="GitHub login failed"):
        await _gateway(fake, secret="wrong").sign_in(await _code(fake, gw, verifier), verifier, "o", "t")


def test_authorize_url_parameters() -> None:
    gw = _gateway(FakeGitHub("cid", "sec"))
    url = urlsplit(gw.authorize_url("the-state", "v" * 43))
    q = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert f"{url.scheme}://{url.netloc}{url.path}" == BASE + "/login/oauth/authorize"
    assert q["client_id"] == "cid" and q["scope"] == "read:org" and q["state"] == "the-state"
    assert q["redirect_uri"] == "http://hq.test/auth/github/callback"
    assert q["code_challenge_method"] == "S256" and len(q["code_challenge"]) == 43


async def test_responses_are_capped_at_64_kib() -> None:
    async def big(scope, receive, send):  # type: ignore[no-untyped-def]
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for _ in range(70):
            await send({"type": "http.response.body", "body": b"x" * 1024, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    transport = CappedTransport(httpx.ASGITransport(app=big), owned=True)
    async with httpx.AsyncClient(transport=transport) as c:
        with pytest.raises(ResponseTooLarge):
            await c.get("http://x/")
