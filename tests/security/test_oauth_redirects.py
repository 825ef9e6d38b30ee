"""OAuth transaction tampering is refused (spec §5.3) and nothing redirects off-site.

Runs the app on the memory store against the loopback fake GitHub, which really checks the
client secret, the code, the redirect URI and the PKCE verifier."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from litestar.testing import AsyncTestClient

from hq_adapters.memory import MemoryStore
from hq_apps.api.app import create_app
from hq_apps.settings import Settings, WebSettings
from hq_apps.web import security
from hq_domain.clock import ManualClock
from tests.fake_github import FakeGitHub, flow, serve_asgi_in_thread

SECRET = b"r" * 32
PUBLIC = "https://hq.example.org"
CALLBACK = PUBLIC + "/auth/github/callback"
EVIL = ["//evil.example", "https://evil.example/x", "/\\evil.example", "http:evil.example",
        "%2F%2Fevil.example", "javascript:alert(1)"]  # fmt: skip


@pytest.fixture(scope="module")
def github() -> Iterator[tuple[FakeGitHub, str]]:
    fake = FakeGitHub("cid", "c-secret", org="o", team="t")
    fake.set_identity(7, "octo", "active")
    with serve_asgi_in_thread(fake.app()) as url:
        yield fake, url


@dataclasses.dataclass
class Web:
    client: AsyncTestClient[Any]
    store: MemoryStore
    clock: ManualClock
    github_url: str

    def fresh(self) -> AsyncTestClient[Any]:
        """Another browser (own cookie jar) on the same app."""
        c = AsyncTestClient(self.client.app)
        c.follow_redirects = False
        return c


@pytest.fixture
async def web(github: tuple[FakeGitHub, str]) -> AsyncIterator[Web]:
    fake, url = github
    fake.set_identity(7, "octo", "active")
    clock = ManualClock()
    store = MemoryStore(clock)
    settings = WebSettings(PUBLIC, "cid", "c-secret", SECRET, "o", "t", url, url)
    app = create_app(Settings(web=settings, sweep_interval_s=0, openapi=False), store, clock)
    async with AsyncTestClient(app, base_url=PUBLIC) as client:
        client.follow_redirects = False
        yield Web(client, store, clock, url)


def _set_cookie(resp: httpx.Response, name: str) -> str | None:
    for header in resp.headers.get_list("set-cookie"):
        if header.startswith(name + "="):
            return header.split(";")[0].split("=", 1)[1]
    return None


def _no_session(resp: httpx.Response) -> None:
    assert not _set_cookie(resp, security.SESSION_COOKIE), resp.headers.get_list("set-cookie")


async def _callback(client: Any, query: str, cookie: str | None) -> httpx.Response:
    client.cookies.clear()
    headers = {"Cookie": f"{security.OAUTH_COOKIE}={cookie}"} if cookie is not None else {}
    return await client.get("/auth/github/callback?" + query, headers=headers)


async def _start(client: Any) -> tuple[str, str, str]:
    """(authorize URL, state, sealed cookie) of a fresh login transaction."""
    resp = await client.get("/auth/github/start")
    assert resp.status_code == 302
    location = resp.headers["location"]
    state = parse_qs(urlsplit(location).query)["state"][0]
    cookie = _set_cookie(resp, security.OAUTH_COOKIE)
    assert cookie
    return location, state, cookie


async def test_missing_transaction(web: Web) -> None:
    resp = await _callback(web.client, "code=x&state=y", None)
    assert resp.status_code == 400 and "Login transaction is missing or expired" in resp.text
    _no_session(resp)


@pytest.mark.parametrize("tamper", ["signature", "payload", "other_secret", "garbage", "state"])
async def test_tampered_transaction(web: Web, github: Any, tamper: str) -> None:
    fake, _ = github
    location, _, cookie = await _start(web.client)
    callback = await flow.authorize(location)
    query = urlsplit(callback).query
    payload, sig = cookie.split(".")
    tx = security.open_transaction(SECRET, cookie)
    assert tx is not None
    forged = {
        "signature": payload + "." + ("A" if sig[0] != "A" else "B") + sig[1:],
        "payload": security.seal_transaction(SECRET, tx).split(".")[0][:-2] + "AA." + sig,
        "other_secret": security.seal_transaction(b"x" * 32, tx),
        "garbage": "not-a-cookie",
        "state": security.seal_transaction(
            SECRET, dataclasses.replace(tx, state=security.random_token())
        ),
    }[tamper]
    tokens_before = fake.issued_tokens
    resp = await _callback(web.client, query, forged)
    assert resp.status_code == 400 and "GitHub authorization was not completed" in resp.text
    assert fake.issued_tokens == tokens_before  # the code was never even redeemed
    _no_session(resp)
    assert web.store.state.users == {}


async def test_expired_transaction(web: Web) -> None:
    location, _, cookie = await _start(web.client)
    query = urlsplit(await flow.authorize(location)).query
    web.clock.advance(security.OAUTH_SECONDS + 1)
    resp = await _callback(web.client, query, cookie)
    assert resp.status_code == 400
    _no_session(resp)


async def test_injected_code_fails_pkce(web: Web) -> None:
    """A victim's code replayed in the attacker's own login transaction: the state matches the
    attacker's cookie, but GitHub rejects the attacker's PKCE verifier → no session."""
    victim_location, _, _ = await _start(web.fresh())
    victim_code = parse_qs(urlsplit(await flow.authorize(victim_location)).query)["code"][0]
    _, attacker_state, attacker_cookie = await _start(web.client)
    resp = await _callback(
        web.client, f"code={victim_code}&state={attacker_state}", attacker_cookie
    )
    assert resp.status_code == 502 and "GitHub login failed" in resp.text
    _no_session(resp)
    assert web.store.state.users == {}


async def test_replayed_callback_is_refused(web: Web) -> None:
    location, _, cookie = await _start(web.client)
    query = urlsplit(await flow.authorize(location)).query
    first = await _callback(web.client, query, cookie)
    assert first.status_code == 303 and _set_cookie(first, security.SESSION_COOKIE)
    again = await _callback(web.client, query, cookie)
    assert again.status_code == 502
    _no_session(again)


async def test_login_start_never_takes_a_destination_from_the_request(web: Web) -> None:
    for evil in EVIL:
        for param in ("next", "redirect", "redirect_uri", "return_to", "url"):
            resp = await web.client.get(
                "/auth/github/start", params={param: evil}, headers={"Host": "evil.example"}
            )
            parts = urlsplit(resp.headers["location"])
            assert f"{parts.scheme}://{parts.netloc}" == web.github_url
            assert parts.path == "/login/oauth/authorize"
            q = parse_qs(parts.query)
            assert q["redirect_uri"] == [CALLBACK], q
            assert "evil" not in resp.headers["location"]


def _safe_location(location: str, github_url: str) -> bool:
    if location.startswith(github_url + "/login/oauth/authorize?"):
        return True
    return location.startswith("/") and not location.startswith(("//", "/\\"))


async def test_no_redirect_leaves_the_site(web: Web) -> None:
    login = await flow.login(web.client)  # a real session (team member → admin)
    assert login.status_code == 303 and login.headers["location"] == "/admin"
    anonymous = web.fresh()
    pages = ["/", "/admin", "/worker", "/admin/users", "/admin/projects/x", "/auth/github/start"]
    for client in (web.client, anonymous):
        for page in pages:
            for evil in EVIL:
                resp = await client.get(page, params={"next": evil, "redirect": evil,
                                                      "return_to": evil})  # fmt: skip
                if 300 <= resp.status_code < 400:
                    loc = resp.headers["location"]
                    assert _safe_location(loc, web.github_url), (page, evil, loc)
        for evil in EVIL:
            resp = await client.get("/" + evil.lstrip("/"))
            assert not (300 <= resp.status_code < 400) or _safe_location(
                resp.headers["location"], web.github_url
            )
    callback_next = await _callback_with_next(web)
    assert callback_next == "/admin"


async def _callback_with_next(web: Web) -> str:
    location, _, cookie = await _start(web.client)
    query = urlsplit(await flow.authorize(location)).query
    resp = await _callback(web.client, query + "&next=https%3A%2F%2Fevil.example", cookie)
    assert resp.status_code == 303
    return str(resp.headers["location"])
