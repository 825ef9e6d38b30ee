"""The server-rendered dashboard with GitHub OAuth (spec §5). ``create_app`` mounts
:func:`web_handlers` when web settings are configured."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import httpx
from litestar import Request, Response, Router, get

from hq_apps.web import (
    auth_pages,
    job_pages,
    project_pages,
    source_upload,
    user_pages,
    worker_pages,
)
from hq_apps.web.context import WebContext
from hq_apps.web.github import GitHubGateway
from hq_apps.web.render import css, error_page, make_environment
from hq_domain.clock import Clock
from hq_domain.ports import Store

if TYPE_CHECKING:  # only for the factory's annotation; handlers never see it
    from hq_apps.settings import WebSettings

__all__ = ["web_handlers"]
log = logging.getLogger(__name__)


@get("/assets/admin.css", sync_to_thread=False)
def admin_css() -> Response[bytes]:
    return Response(
        css(),
        media_type="text/css",
        headers={"Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff"},
    )


def internal_error(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    """Unexpected failures inside a dashboard page render an HTML 500 (spec §5.1)."""
    log.error("web handler failed", exc_info=exc, extra={"path": request.url.path})
    return error_page(make_environment(), 500, "Internal server error")


def web_context(
    settings: WebSettings,
    store: Store,
    clock: Clock,
    github_transport: httpx.AsyncBaseTransport | None = None,
) -> WebContext:
    github = GitHubGateway(
        client_id=settings.github_client_id,
        client_secret=settings.github_client_secret,
        redirect_uri=settings.oauth_redirect_url,
        github_url=settings.github_url,
        api_url=settings.github_api_url,
        transport=github_transport,
    )
    return WebContext(
        store=store,
        clock=clock,
        secret=settings.web_session_secret,
        secure=settings.secure_cookies,
        github=github,
        env=make_environment(),
        org=settings.oauth_admin_org,
        team=settings.oauth_admin_team,
    )


def web_handlers(
    settings: WebSettings,
    store: Store,
    clock: Clock,
    *,
    github_transport: httpx.AsyncBaseTransport | None = None,
) -> list[Router]:
    """One router holding every dashboard route; ``github_transport`` is for tests."""
    web = web_context(settings, store, clock, github_transport)
    return [
        Router(
            path="/",
            route_handlers=[
                admin_css,
                *auth_pages.auth_handlers(web),
                *worker_pages.worker_page_handlers(web),
                *project_pages.project_page_handlers(web),
                *source_upload.source_upload_handlers(web),
                *job_pages.job_page_handlers(web),
                *user_pages.user_page_handlers(web),
            ],
            include_in_schema=False,
            exception_handlers={Exception: internal_error},
        )
    ]
