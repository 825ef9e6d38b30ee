"""Login page, GitHub OAuth start/callback and logout (spec §5.3, §5.4 public routes)."""

from __future__ import annotations

import asyncio
import hmac

from litestar import Request, Response, get, post
from litestar.handlers import HTTPRouteHandler

from hq_apps.web import security
from hq_apps.web.context import FORM_LIMIT, WebContext, current_session, post_session
from hq_apps.web.github import LOGIN_FAILED, GitHubError
from hq_apps.web.render import PAGE_HEADERS, error_page, page, redirect
from hq_domain.errors import PermissionDenied
from hq_domain.users import Role, UserStatus

CALLBACK_TIMEOUT_S = 20.0
TX_MISSING = "Login transaction is missing or expired"
NOT_COMPLETED = "GitHub authorization was not completed"


def auth_handlers(web: WebContext) -> list[HTTPRouteHandler]:
    """Home, GitHub sign-in and logout over one deployment's web state."""

    @get("/")
    async def home(request: Request) -> Response[bytes]:
        session = await current_session(request, web)
        if session is not None and session.is_admin:
            return redirect("/admin")
        if session is not None and session.is_worker:
            return redirect("/worker")
        return page(web.env, "login.html")

    @get("/auth/github/start")
    async def github_start() -> Response[bytes]:
        tx = security.OAuthTransaction(
            state=security.random_token(),
            verifier=security.random_token(),
            expires_at=web.now() + security.OAUTH_SECONDS,
        )
        location = web.github.authorize_url(tx.state, tx.verifier)
        return Response(
            b"",
            status_code=302,
            headers={**PAGE_HEADERS, "Location": location},
            cookies=[web.oauth_cookie(security.seal_transaction(web.secret, tx))],
        )

    @get("/auth/github/callback")
    async def github_callback(request: Request) -> Response[bytes]:
        clear = [web.oauth_cookie("", max_age=0)]
        raw = request.cookies.get(security.OAUTH_COOKIE)
        if not raw:
            return error_page(web.env, 400, TX_MISSING, cookies=clear)
        tx = security.open_transaction(web.secret, raw)
        q = request.query_params
        state, code = q.get("state", ""), q.get("code", "")
        if (
            tx is None
            or tx.expires_at < web.now()
            or not hmac.compare_digest(tx.state.encode(), state.encode("utf-8", "replace"))
            or "error" in q
            or not code
        ):
            return error_page(web.env, 400, NOT_COMPLETED, cookies=clear)
        try:
            async with asyncio.timeout(CALLBACK_TIMEOUT_S):
                identity, member = await web.github.sign_in(code, tx.verifier, web.org, web.team)
        except GitHubError as exc:
            return error_page(web.env, 502, exc.message, cookies=clear)
        except TimeoutError:
            return error_page(web.env, 502, LOGIN_FAILED, cookies=clear)

        try:
            if member:
                user = await web.store.upsert_github_admin(identity.id, identity.login, identity.avatar_url)
                return redirect("/admin", cookies=[*clear, await web.start_session(user.id)])
            user = await web.store.upsert_github_worker(identity.id, identity.login, identity.avatar_url)
        except PermissionDenied as exc:
            return error_page(web.env, 403, f"GitHub sign-in refused: {exc.message}", cookies=clear)
        if user.status is UserStatus.ACTIVE and Role.WORKER in user.roles:
            return redirect("/worker", cookies=[*clear, await web.start_session(user.id)])
        return page(
            web.env, "registration.html", cookies=clear, login=identity.login, registered=user
        )

    @post("/logout", request_max_body_size=FORM_LIMIT)
    async def logout(request: Request) -> Response[bytes]:
        gate = await post_session(request, web, None)
        if isinstance(gate, Response):
            return gate
        session, _ = gate
        await web.store.delete_session(security.session_digest(web.secret, session.token))
        return redirect("/", cookies=[web.clear_session_cookie()])

    return [home, github_start, github_callback, logout]
