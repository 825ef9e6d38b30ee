"""GitHub sign-in: the OAuth code exchange (authlib, PKCE S256) and the two API lookups
(spec §5.3 steps 3–5). Base URLs come from settings (D4) so Enterprise and a local fake work.

The access token lives only inside :meth:`GitHubGateway.sign_in` and is never returned.
"""

from __future__ import annotations

import functools
import ssl
import warnings
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import authlib.deprecate  # noqa: F401  (installs authlib's "always" filter first, so ours wins)
import httpx
import msgspec

with warnings.catch_warnings():
    # authlib >= 1.6 announces, at import, a move of its httpx integration to "httpx2"; the
    # API used here is unchanged, and every `tracker serve` start printed the notice.
    warnings.filterwarnings("ignore", message=".*httpx module is deprecated")
    from authlib.integrations.httpx_client import AsyncOAuth2Client

RESPONSE_LIMIT = 64 * 1024
CLIENT_TIMEOUT_S = 15.0
API_HEADERS = {
    "Accept": "application/vnd.github+json",
    "X-GitHub-Api-Version": "2022-11-28",
    "User-Agent": "SavewebHQ",
}
LOGIN_FAILED = "GitHub login failed"
IDENTITY_FAILED = "GitHub identity lookup failed"
MEMBERSHIP_FAILED = "GitHub team membership lookup failed"


class GitHubError(Exception):
    """An upstream failure; ``message`` is the text of the 502 page."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ResponseTooLarge(httpx.TransportError):
    pass


@dataclass(frozen=True, slots=True)
class GitHubIdentity:
    id: int
    login: str
    avatar_url: str


class _CappedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, limit: int) -> None:
        self._inner, self._limit = inner, limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise ResponseTooLarge("upstream response exceeds 64 KiB")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class CappedTransport(httpx.AsyncBaseTransport):
    """Limits every upstream response body to ``limit`` bytes (spec: 64 KiB)."""

    def __init__(
        self, inner: httpx.AsyncBaseTransport, *, owned: bool, limit: int = RESPONSE_LIMIT
    ):
        self._inner, self._owned, self._limit = inner, owned, limit

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        resp = await self._inner.handle_async_request(request)
        assert isinstance(resp.stream, httpx.AsyncByteStream)
        return httpx.Response(
            resp.status_code,
            headers=resp.headers,
            stream=_CappedStream(resp.stream, self._limit),
            extensions=resp.extensions,
        )

    async def aclose(self) -> None:
        if self._owned:
            await self._inner.aclose()


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """Built once: loading the CA bundle costs more than the sign-in requests themselves."""
    return ssl.create_default_context()


class GitHubGateway:
    """Talks to GitHub for one deployment; ``transport`` lets tests route to a fake in-process."""

    def __init__(
        self,
        *,
        client_id: str,
        client_secret: str,
        redirect_uri: str,
        github_url: str,
        api_url: str,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.client_id = client_id
        self._client_secret = client_secret
        self.redirect_uri = redirect_uri
        self._github = github_url.rstrip("/")
        self._api = api_url.rstrip("/")
        self._transport = transport

    def _client(self) -> AsyncOAuth2Client:
        inner = self._transport
        transport = CappedTransport(
            inner or httpx.AsyncHTTPTransport(verify=_tls_context()), owned=inner is None
        )
        return AsyncOAuth2Client(
            client_id=self.client_id,
            client_secret=self._client_secret,
            token_endpoint_auth_method="client_secret_post",
            scope="read:org",
            redirect_uri=self.redirect_uri,
            code_challenge_method="S256",
            transport=transport,
            timeout=CLIENT_TIMEOUT_S,
            follow_redirects=False,
            verify=_tls_context(),
        )

    def authorize_url(self, state: str, verifier: str) -> str:
        client = AsyncOAuth2Client(
            client_id=self.client_id,
            scope="read:org",
            redirect_uri=self.redirect_uri,
            code_challenge_method="S256",
        )
        url, _ = client.create_authorization_url(
            self._github + "/login/oauth/authorize", state=state, code_verifier=verifier
        )
        return url

    async def sign_in(
        self, code: str, verifier: str, org: str, team: str
    ) -> tuple[GitHubIdentity, bool]:
        """Exchange the code, read the user and their team membership; forget the token."""
        async with self._client() as client:
            await self._exchange(client, code, verifier)
            identity = await self._identity(client)
            member = await self._membership(client, org, team, identity.login)
            client.token = None
            return identity, member

    async def _exchange(self, client: AsyncOAuth2Client, code: str, verifier: str) -> None:
        try:
            token = await client.fetch_token(
                self._github + "/login/oauth/access_token",
                grant_type="authorization_code",
                code=code,
                code_verifier=verifier,
                headers={"Accept": "application/json", "User-Agent": "SavewebHQ"},
            )
        except Exception as exc:  # authlib/httpx/JSON errors all mean the same to the user
            raise GitHubError(LOGIN_FAILED) from exc
        access = token.get("access_token")
        if (
            str(token.get("token_type", "")).lower() != "bearer"
            or not isinstance(access, str)
            or not 0 < len(access) <= 4096
        ):
            raise GitHubError(LOGIN_FAILED)

    async def _get_json(self, client: AsyncOAuth2Client, url: str, failure: str) -> tuple[int, Any]:
        try:
            resp = await client.get(url, headers=API_HEADERS)
            body = resp.content
        except Exception as exc:
            raise GitHubError(failure) from exc
        if resp.status_code == 404 or not 200 <= resp.status_code < 300:
            return resp.status_code, None
        try:
            return resp.status_code, msgspec.json.decode(body)
        except msgspec.DecodeError as exc:
            raise GitHubError(failure) from exc

    async def _identity(self, client: AsyncOAuth2Client) -> GitHubIdentity:
        _status, doc = await self._get_json(client, self._api + "/user", IDENTITY_FAILED)
        if not isinstance(doc, dict):
            raise GitHubError(IDENTITY_FAILED)
        uid, login, avatar = doc.get("id"), doc.get("login"), doc.get("avatar_url") or ""
        if (
            not isinstance(uid, int)
            or isinstance(uid, bool)
            or uid < 1
            or not isinstance(login, str)
            or not 1 <= len(login) <= 255
            or not isinstance(avatar, str)
            or len(avatar) > 2048
        ):
            raise GitHubError(IDENTITY_FAILED)
        return GitHubIdentity(uid, login, avatar)

    async def _membership(self, client: AsyncOAuth2Client, org: str, team: str, login: str) -> bool:
        url = (
            f"{self._api}/orgs/{quote(org, safe='')}/teams/{quote(team, safe='')}"
            f"/memberships/{quote(login, safe='')}"
        )
        status, doc = await self._get_json(client, url, MEMBERSHIP_FAILED)
        if status == 404:
            return False
        if not 200 <= status < 300 or not isinstance(doc, dict):
            raise GitHubError(MEMBERSHIP_FAILED)
        return doc.get("state") == "active"
