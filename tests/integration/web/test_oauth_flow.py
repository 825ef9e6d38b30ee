"""The OAuth code flow end to end: app ↔ loopback fake GitHub (spec §5.3)."""

from __future__ import annotations

import base64
from urllib.parse import parse_qs, urlsplit

from litestar.testing import AsyncTestClient

from hq_apps.web import security
from hq_domain.users import Role, UserStatus
from tests.fake_github import FakeGitHub, flow
from tests.integration.web.conftest import CLIENT_ID, SECRET, WebApp


def _has_session(resp) -> bool:
    return any(
        h.startswith(security.SESSION_COOKIE + "=") and "Max-Age=43200" in h
        for h in resp.headers.get_list("set-cookie")
    )


async def test_start_redirects_with_pkce_and_signed_cookie(client: AsyncTestClient, web: WebApp) -> None:
    resp = await client.get("/auth/github/start")
    assert resp.status_code == 302
    url = urlsplit(resp.headers["location"])
    q = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert url.path == "/login/oauth/authorize"
    assert q["client_id"] == CLIENT_ID
    assert q["redirect_uri"] == "http://testserver.local/auth/github/callback"
    assert q["scope"] == "read:org"
    assert q["code_challenge_method"] == "S256"
    assert len(q["state"]) == 43
    cookie = next(h for h in resp.headers.get_list("set-cookie") if h.startswith("saveweb_hq_oauth="))
    assert "Path=/auth/github/callback" in cookie and "Max-Age=600" in cookie
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" not in cookie
    tx = security.open_transaction(SECRET, cookie.split(";")[0].split("=", 1)[1])
    assert tx is not None and tx.state == q["state"]
    assert q["code_challenge"] == security.pkce_challenge(tx.verifier)
    assert tx.expires_at == web.clock.now_ns() // 10**9 + 600


async def test_team_member_becomes_admin(client: AsyncTestClient, web: WebApp, github: FakeGitHub) -> None:
    resp = await flow.login(client)
    assert resp.status_code == 303 and resp.headers["location"] == "/admin"
    cookie = next(h for h in resp.headers.get_list("set-cookie") if h.startswith("saveweb_hq_session="))
    token = cookie.split(";")[0].split("=", 1)[1]
    assert len(token) == 43
    for attr in ("Path=/", "Max-Age=43200", "HttpOnly", "SameSite=Lax"):
        assert attr in cookie
    assert "saveweb_hq_oauth=" in "".join(resp.headers.get_list("set-cookie"))  # cleared
    user = await web.store.get_user("gh_1001")
    assert user is not None and user.roles == (Role.ADMIN,) and user.status is UserStatus.ACTIVE
    assert user.github_login == "octo-admin"
    page = await client.get("/admin")
    assert page.status_code == 200 and "Projects" in page.text
    assert (await client.get("/")).headers["location"] == "/admin"


async def test_non_member_registers_pending_without_session(
    client: AsyncTestClient, web: WebApp, github: FakeGitHub
) -> None:
    github.set_identity(2002, "new-worker")
    resp = await flow.login(client)
    assert resp.status_code == 200
    assert "Worker registration" in resp.text and "new-worker" in resp.text and "pending" in resp.text
    assert not _has_session(resp)
    user = await web.store.get_user("gh_2002")
    assert user is not None and user.status is UserStatus.PENDING and user.roles == (Role.WORKER,)
    assert (await client.get("/worker")).status_code == 303


async def test_pending_team_membership_is_not_admin(client: AsyncTestClient, github: FakeGitHub) -> None:
    github.set_identity(2003, "invited", "pending")
    resp = await flow.login(client)
    assert resp.status_code == 200 and "Worker registration" in resp.text


async def test_activated_worker_signs_in_to_worker_page(
    client: AsyncTestClient, web: WebApp, github: FakeGitHub
) -> None:
    github.set_identity(2004, "helper")
    await flow.login(client)
    await web.store.put_user("gh_2004", UserStatus.ACTIVE, (Role.WORKER,))
    resp = await flow.login(client)
    assert resp.status_code == 303 and resp.headers["location"] == "/worker"
    page = await client.get("/worker")
    assert page.status_code == 200 and "gh_2004" in page.text
    admin = await client.get("/admin")
    assert admin.status_code == 403 and "Administrator role required" in admin.text


async def test_team_removal_gives_no_admin_session(
    client: AsyncTestClient, web: WebApp, github: FakeGitHub
) -> None:
    assert (await flow.login(client)).status_code == 303
    github.set_identity(1001, "octo-admin")  # removed from the team
    async with AsyncTestClient(web.app) as fresh:
        resp = await flow.login(fresh)
        assert resp.status_code == 200 and "Worker registration" in resp.text
        assert not _has_session(resp)
        assert (await fresh.get("/admin", follow_redirects=False)).status_code == 303


async def test_missing_transaction_cookie(client: AsyncTestClient, github: FakeGitHub) -> None:
    callback = await flow.authorize(await flow.begin(client))
    client.cookies.clear()
    resp = await client.get(callback)
    assert resp.status_code == 400 and "Login transaction is missing or expired" in resp.text


async def test_tampered_state_is_refused(client: AsyncTestClient, github: FakeGitHub) -> None:
    callback = await flow.authorize(await flow.begin(client))
    resp = await client.get(callback.replace("state=", "state=x"))
    assert resp.status_code == 400 and "GitHub authorization was not completed" in resp.text
    assert github.issued_tokens == 0 or not _has_session(resp)


async def test_forged_cookie_signature_is_refused(client: AsyncTestClient, github: FakeGitHub) -> None:
    callback = await flow.authorize(await flow.begin(client))
    state = parse_qs(urlsplit(callback).query)["state"][0]
    forged = security.seal_transaction(
        b"another-secret-of-32-bytes-xxxxx", security.OAuthTransaction(state, "v" * 43, 2**40)
    )
    client.cookies.clear()
    client.cookies.set(security.OAUTH_COOKIE, forged, path="/auth/github/callback")
    resp = await client.get(callback)
    assert resp.status_code == 400 and "GitHub authorization was not completed" in resp.text


async def test_expired_transaction_is_refused(client: AsyncTestClient, web: WebApp, github: FakeGitHub) -> None:
    callback = await flow.authorize(await flow.begin(client))
    web.clock.advance(601)
    resp = await client.get(callback)
    assert resp.status_code == 400 and "GitHub authorization was not completed" in resp.text


async def test_wrong_pkce_verifier_fails_the_exchange(
    client: AsyncTestClient, web: WebApp, github: FakeGitHub
) -> None:
    callback = await flow.authorize(await flow.begin(client))
    state = parse_qs(urlsplit(callback).query)["state"][0]
    wrong = security.OAuthTransaction(state, security.random_token(), 2**40)
    client.cookies.clear()
    client.cookies.set(
        security.OAUTH_COOKIE, security.seal_transaction(SECRET, wrong), path="/auth/github/callback"
    )
    resp = await client.get(callback)
    assert resp.status_code == 502 and "GitHub login failed" in resp.text
    assert await web.store.get_user("gh_1001") is None


async def test_missing_pkce_verifier_in_cookie_is_refused(client: AsyncTestClient, github: FakeGitHub) -> None:
    callback = await flow.authorize(await flow.begin(client))
    state = parse_qs(urlsplit(callback).query)["state"][0]
    payload = f"{state}..{2**40}".encode()
    import hashlib
    import hmac

    sig = hmac.new(SECRET, b"oauth\x00" + payload, hashlib.sha256).digest()
    b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()  # noqa: E731
    client.cookies.clear()
    client.cookies.set(security.OAUTH_COOKIE, b64(payload) + "." + b64(sig), path="/auth/github/callback")
    resp = await client.get(callback)
    assert resp.status_code == 400 and "GitHub authorization was not completed" in resp.text


async def test_error_param_or_empty_code_is_refused(client: AsyncTestClient, github: FakeGitHub) -> None:
    denied = (await flow.begin(client)) + "&deny=1"
    callback = await flow.authorize(denied)
    assert "error=access_denied" in callback
    resp = await client.get(callback)
    assert resp.status_code == 400 and "GitHub authorization was not completed" in resp.text
    callback = await flow.authorize(await flow.begin(client))
    resp = await client.get(callback.replace("code=", "code=&ignored="))
    assert resp.status_code == 400


async def test_non_bearer_token_type_is_a_login_failure(client: AsyncTestClient, github: FakeGitHub) -> None:
    github.token_type = "mac"
    resp = await flow.login(client)
    assert resp.status_code == 502 and "GitHub login failed" in resp.text


async def test_callback_always_clears_the_transaction_cookie(client: AsyncTestClient) -> None:
    resp = await client.get("/auth/github/callback?code=x&state=y")
    cleared = [h for h in resp.headers.get_list("set-cookie") if h.startswith("saveweb_hq_oauth=")]
    assert cleared and "Max-Age=0" in cleared[0] and "Path=/auth/github/callback" in cleared[0]


async def test_sign_in_refused_when_a_local_user_holds_the_gh_id(
    client: AsyncTestClient, web: WebApp, github: FakeGitHub
) -> None:
    """Issue 13 #7: the local ``gh_1001`` keeps its row and token; no session is created."""
    from hq_domain.users import Role
    from tests.fake_github import flow

    await web.store.bootstrap_user("gh_1001", [Role.WORKER], "hq_local-owner-token")
    resp = await flow.login(client)
    assert resp.status_code == 403 and "GitHub sign-in refused" in resp.text
    assert "saveweb_hq_session=" not in resp.headers.get("set-cookie", "").replace("saveweb_hq_session=;", "")
    user = await web.store.get_user("gh_1001")
    assert user is not None and user.github_user_id is None
    assert await web.store.get_machine_token("gh_1001") == "hq_local-owner-token"
