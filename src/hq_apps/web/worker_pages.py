"""Worker self-service: view, generate/rotate and revoke one's own machine token (spec §5.4)."""

from __future__ import annotations

from litestar import Request, Response, get, post
from litestar.handlers import HTTPRouteHandler

from hq_apps.web.context import FORM_LIMIT, Session, WebContext, page_session, post_session
from hq_apps.web.render import page, redirect
from hq_domain.errors import NotFound
from hq_domain.ids import new_machine_token
from hq_domain.users import Role


async def _worker_page(
    web: WebContext, session: Session, *, status: int = 200, new_token: bool = False,
    error: str | None = None,
) -> Response[bytes]:
    token = await web.store.get_machine_token(session.user.id)
    return page(
        web.env, "worker.html", status=status, user=session.user, csrf=session.csrf,
        token=token, new_token=new_token, error=error,
    )


def worker_page_handlers(web: WebContext) -> list[HTTPRouteHandler]:
    """The worker's own token page and its two actions."""

    @get("/worker")
    async def worker_home(request: Request) -> Response[bytes]:
        session = await page_session(request, web, Role.WORKER)
        if isinstance(session, Response):
            return session
        return await _worker_page(web, session)

    @post("/worker/token", request_max_body_size=FORM_LIMIT, status_code=200)
    async def worker_rotate(request: Request) -> Response[bytes]:
        gate = await post_session(request, web, Role.WORKER)
        if isinstance(gate, Response):
            return gate
        session, _ = gate
        await web.store.set_machine_token(session.user.id, new_machine_token())
        return await _worker_page(web, session, new_token=True)

    @post("/worker/token/revoke", request_max_body_size=FORM_LIMIT)
    async def worker_revoke(request: Request) -> Response[bytes]:
        gate = await post_session(request, web, Role.WORKER)
        if isinstance(gate, Response):
            return gate
        session, _ = gate
        try:
            await web.store.revoke_machine_token(session.user.id)
        except NotFound:
            return await _worker_page(web, session, status=400, error="No active machine token to revoke")
        return redirect("/worker")

    return [worker_home, worker_rotate, worker_revoke]
