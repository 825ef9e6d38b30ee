"""A tiny local stand-in for GitHub's OAuth and the two API endpoints HQ uses.

For tests and ``tracker dev --fake-github`` only: it auto-approves every authorization as the
configured identity and never talks to the network. Endpoints:

* ``GET /login/oauth/authorize`` — 302 back to ``redirect_uri`` with ``code`` and ``state``
  (``?deny=1`` sends ``error=access_denied`` instead);
* ``POST /login/oauth/access_token`` — checks client credentials, code, redirect URI and the
  PKCE verifier against the S256 challenge; GitHub-style ``{"error": ...}`` bodies on failure;
* ``GET /user`` and ``GET /orgs/{org}/teams/{team}/memberships/{login}`` (bearer token);
* ``GET /_fake/identity?login=&id=&member=active|pending|none`` — switch the identity the next
  authorization approves as (handy from a browser in dev mode).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import secrets
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import urlencode

from litestar import Litestar, Request, Response, get, post
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from hq_apps.settings import WebSettings
from hq_domain.ids import b64url


@dataclass
class FakeUser:
    id: int
    login: str
    avatar_url: str = ""


@dataclass
class _Grant:
    user: FakeUser
    challenge: str
    redirect_uri: str


@dataclass
class FakeGitHub:
    """Mutable fake state; tests change ``user`` and ``memberships`` between logins."""

    client_id: str
    client_secret: str
    org: str = "saveweb"
    team: str = "hq-admins"
    user: FakeUser = field(default_factory=lambda: FakeUser(1001, "octo-admin"))
    memberships: dict[str, str] = field(default_factory=dict)  # login -> "active" | "pending"
    token_type: str = "bearer"
    _grants: dict[str, _Grant] = field(default_factory=dict)
    _tokens: dict[str, FakeUser] = field(default_factory=dict)

    def set_identity(self, user_id: int, login: str, membership: str | None = None) -> None:
        self.user = FakeUser(user_id, login, f"https://avatars.example/{user_id}")
        if membership:
            self.memberships[login] = membership
        else:
            self.memberships.pop(login, None)

    @property
    def issued_tokens(self) -> int:
        return len(self._tokens)

    def app(self) -> Litestar:
        return Litestar(
            route_handlers=_handlers(self),
            logging_config=None,
        )


def _json_error(error: str, description: str) -> dict[str, str]:
    return {"error": error, "error_description": description}


def _bearer_user(request: Request, fake: FakeGitHub) -> FakeUser | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() not in ("bearer", "token"):
        return None
    return fake._tokens.get(token)


_UNAUTHORIZED = Response({"message": "Bad credentials"}, status_code=401)
_NOT_FOUND = Response({"message": "Not Found"}, status_code=404)


def _handlers(fake: FakeGitHub) -> list[HTTPRouteHandler]:
    """The fake's five routes over one fake."""

    @get("/login/oauth/authorize", sync_to_thread=False)
    def _authorize(request: Request) -> Response[str]:
        q = request.query_params
        redirect_uri = q.get("redirect_uri", "")
        if q.get("client_id") != fake.client_id or not redirect_uri:
            return Response("unknown client", status_code=400, media_type="text/plain")
        if q.get("deny"):
            params = {"error": "access_denied", "state": q.get("state", "")}
        elif q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            return Response("PKCE S256 required", status_code=400, media_type="text/plain")
        else:
            code = b64url(secrets.token_bytes(15))
            fake._grants[code] = _Grant(fake.user, q["code_challenge"], redirect_uri)
            params = {"code": code, "state": q.get("state", "")}
        sep = "&" if "?" in redirect_uri else "?"
        return Response(
            "", status_code=302, headers={"Location": redirect_uri + sep + urlencode(params)}
        )

    @post("/login/oauth/access_token", status_code=200)
    async def _access_token(request: Request) -> dict[str, str]:
        form = await request.form()
        if form.get("client_id") != fake.client_id or form.get("client_secret") != fake.client_secret:
            return _json_error("incorrect_client_credentials", "bad client")
        grant = fake._grants.pop(str(form.get("code", "")), None)
        if grant is None or form.get("redirect_uri") != grant.redirect_uri:
            return _json_error("bad_verification_code", "unknown code or redirect_uri")
        verifier = str(form.get("code_verifier", ""))
        challenge = b64url(hashlib.sha256(verifier.encode()).digest())
        if not verifier or challenge != grant.challenge:
            return _json_error("bad_verification_code", "PKCE verification failed")
        token = "gho_" + b64url(secrets.token_bytes(24))
        fake._tokens[token] = grant.user
        return {"access_token": token, "token_type": fake.token_type, "scope": "read:org"}

    @get("/user", sync_to_thread=False)
    def _user(request: Request) -> Response[dict[str, object]]:
        user = _bearer_user(request, fake)
        if user is None:
            return _UNAUTHORIZED
        return Response({"id": user.id, "login": user.login, "avatar_url": user.avatar_url})

    @get("/orgs/{org:str}/teams/{team:str}/memberships/{login:str}", sync_to_thread=False)
    def _membership(
        request: Request,
        org: FromPath[str],
        team: FromPath[str],
        login: FromPath[str],
    ) -> Response[dict[str, object]]:
        if _bearer_user(request, fake) is None:
            return _UNAUTHORIZED
        state = fake.memberships.get(login)
        if org != fake.org or team != fake.team or state is None:
            return _NOT_FOUND
        return Response({"state": state, "role": "member"})

    @get("/_fake/identity", sync_to_thread=False)
    def _identity(request: Request) -> Response[str]:
        q = request.query_params
        login = q.get("login") or fake.user.login
        try:
            uid = int(q.get("id") or fake.user.id)
        except ValueError:
            return Response("id must be an integer", status_code=400, media_type="text/plain")
        member = q.get("member", "none")
        fake.set_identity(uid, login, None if member == "none" else member)
        return Response(f"next login: {login} (id {uid}, team {member})\n", media_type="text/plain")

    return [_authorize, _access_token, _user, _membership, _identity]


# -- running it ---------------------------------------------------------------------------


async def serve(fake: FakeGitHub, sock: socket.socket) -> None:
    """Serve the fake on ``sock`` until cancelled (for ``tracker dev --fake-github``)."""
    import uvicorn

    config = uvicorn.Config(fake.app(), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    try:
        await server.serve(sockets=[sock])
    finally:
        # Cancelled, uvicorn skips its shutdown and leaves the listening socket registered
        # with the event loop; once the caller closes it, a later socket reusing the fd
        # number made the loop fail (epoll ENOENT). Closing the server unregisters it.
        for listener in getattr(server, "servers", []):
            listener.close()


DEV_GITHUB_ID = 1  # signs in as user gh_1
DEV_GITHUB_LOGIN = "dev-github-user"


def dev_web(public_url: str) -> tuple[FakeGitHub, WebSettings, socket.socket]:
    """Everything ``tracker dev --fake-github`` needs: a fake whose next login is a team
    member, matching web settings (fresh random session secret), and the fake's socket::

        fake, web, sock = dev_web("http://127.0.0.1:8080")
        settings = replace(settings, web=web)
        asyncio.create_task(serve(fake, sock))  # next to the tracker's own server
    """
    sock, url = reserve_loopback()
    fake = FakeGitHub("hq-dev-client", "hq-dev-secret")
    fake.set_identity(DEV_GITHUB_ID, DEV_GITHUB_LOGIN, "active")
    web = WebSettings(
        public_url=public_url,
        github_client_id=fake.client_id,
        github_client_secret=fake.client_secret,
        web_session_secret=secrets.token_bytes(32),
        oauth_admin_org=fake.org,
        oauth_admin_team=fake.team,
        github_url=url,
        github_api_url=url,
    )
    return fake, web, sock


def reserve_loopback(host: str = "127.0.0.1") -> tuple[socket.socket, str]:
    """A listening socket on a free port and its base URL (so an app can know its own URL)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Small responses on kept-alive connections otherwise wait ~40 ms for a delayed ACK.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, 0))
    return sock, f"http://{host}:{sock.getsockname()[1]}"


@contextlib.contextmanager
def serve_asgi_in_thread(app: object, sock: socket.socket | None = None) -> Iterator[str]:
    """Run an ASGI app under uvicorn in a daemon thread on ``sock`` (default: a free loopback
    port); yields the base URL and stops the server on exit."""
    import uvicorn

    if sock is None:
        sock, url = reserve_loopback()
    else:
        host, port = sock.getsockname()[:2]
        url = f"http://{host}:{port}"
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="auto")  # type: ignore[arg-type]
    )
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    for _ in range(1000):
        if server.started or not thread.is_alive():
            break
        threading.Event().wait(0.01)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()

