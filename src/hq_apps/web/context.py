"""Per-deployment web state and the session/CSRF/role gates every page goes through.

POST order (spec §5.2): body cap → form parse (400) → session (303 ``/``) → CSRF (403) →
role (403). GET pages: session (303 ``/``) → role (403).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment
from litestar import Request, Response
from litestar.datastructures import Cookie, FormMultiDict
from litestar.exceptions import HTTPException

from hq_apps.services.source_import import UPLOAD_MAX_COMPRESSED_BYTES
from hq_apps.web import security
from hq_apps.web.form_reader import FormRejected, FormStream
from hq_apps.web.github import GitHubGateway
from hq_apps.web.render import error_page, redirect
from hq_domain.clock import Clock, seconds
from hq_domain.ports import Store
from hq_domain.users import Role, User

ROLE_REQUIRED = {Role.ADMIN: "Administrator role required", Role.WORKER: "Worker role required"}
FORM_LIMIT = 1 << 20
UPLOAD_FORM_LIMIT = UPLOAD_MAX_COMPRESSED_BYTES + FORM_LIMIT
"""A source upload form: the upload's compressed limit plus room for the other fields."""


@dataclass
class GoCookie(Cookie):
    """A cookie serialised like Go's ``http.Cookie`` (``SameSite=Lax``, ``Max-Age=0`` to clear)."""

    def to_header(self, **kwargs: Any) -> str:
        parts = [f"{self.key}={self.value or ''}", f"Path={self.path}"]
        if self.max_age is not None:
            parts.append(f"Max-Age={max(self.max_age, 0)}")
        if self.httponly:
            parts.append("HttpOnly")
        if self.secure:
            parts.append("Secure")
        parts.append("SameSite=Lax")
        return "; ".join(parts)


@dataclass
class WebContext:
    store: Store
    clock: Clock
    secret: bytes
    secure: bool
    github: GitHubGateway
    env: Environment
    org: str
    team: str

    def now(self) -> int:
        return seconds(self.clock.now_ns())

    def session_cookie(self, token: str) -> GoCookie:
        return GoCookie(
            key=security.SESSION_COOKIE,
            value=token,
            path="/",
            max_age=security.SESSION_SECONDS,
            httponly=True,
            samesite="lax",
            secure=self.secure,
        )

    def clear_session_cookie(self) -> GoCookie:
        return GoCookie(
            key=security.SESSION_COOKIE, value="", path="/", max_age=0,
            httponly=True, samesite="lax", secure=self.secure,
        )

    def oauth_cookie(self, value: str, max_age: int = security.OAUTH_SECONDS) -> GoCookie:
        return GoCookie(
            key=security.OAUTH_COOKIE,
            value=value,
            path=security.OAUTH_COOKIE_PATH,
            max_age=max_age,
            httponly=True,
            samesite="lax",
            secure=self.secure,
        )

    async def start_session(self, user_id: str) -> GoCookie:
        token = security.random_token()
        digest = security.session_digest(self.secret, token)
        await self.store.create_session(digest, user_id, self.now() + security.SESSION_SECONDS)
        return self.session_cookie(token)


@dataclass(frozen=True, slots=True)
class Session:
    token: str
    user: User
    csrf: str

    @property
    def is_admin(self) -> bool:
        return Role.ADMIN in self.user.roles

    @property
    def is_worker(self) -> bool:
        return Role.WORKER in self.user.roles

    def has(self, role: Role) -> bool:
        return role in self.user.roles


async def current_session(request: Request, web: WebContext) -> Session | None:
    token = request.cookies.get(security.SESSION_COOKIE, "")
    if len(token) != security.SESSION_TOKEN_CHARS or not token.isascii():
        return None
    user = await web.store.session_user(security.session_digest(web.secret, token))
    if user is None:
        return None
    return Session(token, user, security.csrf_token(web.secret, token))


async def page_session(request: Request, web: WebContext, role: Role) -> Session | Response[bytes]:
    """The session of a GET page, or the redirect/403 response to send instead."""
    session = await current_session(request, web)
    if session is None:
        return redirect("/")
    if not session.has(role):
        return error_page(web.env, 403, ROLE_REQUIRED[role], user=session.user, csrf=session.csrf)
    return session


READ_TIMEOUT_S = 15.0


async def read_form(request: Request, stream: FormStream | None = None) -> FormMultiDict | None:
    """The parsed form (bounded: see :mod:`hq_apps.web.form_reader`), or None when the body is
    too large, malformed, or does not arrive within the server's read timeout (spec §1.1: 15 s
    for the whole body)."""
    try:
        async with asyncio.timeout(READ_TIMEOUT_S):
            return await (stream or FormStream(request, body_limit=FORM_LIMIT)).finish()
    except (FormRejected, TimeoutError, HTTPException):
        return None


async def post_session(
    request: Request, web: WebContext, role: Role | None
) -> tuple[Session, FormMultiDict] | Response[bytes]:
    """Run the POST gates; returns the session and form, or the response to send instead."""
    form = await read_form(request)
    if form is None:
        return error_page(web.env, 400, "Invalid form submission")
    return form_gates(web, role, form, await current_session(request, web))


def form_gates(
    web: WebContext, role: Role | None, form: FormMultiDict, session: Session | None
) -> tuple[Session, FormMultiDict] | Response[bytes]:
    """Session (303) → CSRF (403) → role (403) for an already parsed form."""
    if session is None:
        return redirect("/")
    submitted = form.get("csrf")
    if not isinstance(submitted, str) or not security.csrf_ok(web.secret, session.token, submitted):
        return error_page(web.env, 403, "Invalid CSRF token")
    if role is not None and not session.has(role):
        return error_page(web.env, 403, ROLE_REQUIRED[role], user=session.user, csrf=session.csrf)
    return session, form
