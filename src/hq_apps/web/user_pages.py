"""Admin users, machine tokens and the worker-id → user lookup (spec §5.4)."""

from __future__ import annotations

from litestar import Request, Response, get, post
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from hq_apps.web.context import FORM_LIMIT, Session, WebContext, page_session, post_session
from hq_apps.web.progress_view import workers_context
from hq_apps.web.render import error_page, page, redirect
from hq_domain.errors import HqError, NotFound
from hq_domain.ids import is_id, new_machine_token
from hq_domain.users import Role, User, UserStatus, validate_user_put

USER_NOT_FOUND = "User not found"
TOKEN_NOT_FOUND = "Machine token not found"
MAX_MAPPINGS = 200


async def users_page(
    web: WebContext, session: Session, *, selected: User | None = None, status: int = 200,
    error: str | None = None,
) -> Response[bytes]:
    users = await web.store.list_users()
    return page(
        web.env, "users.html", status=status, user=session.user, csrf=session.csrf, users=users,
        selected=selected, error=error, user_statuses=[s.value for s in UserStatus],
        roles=[r.value for r in Role],
    )


def _token_page(
    web: WebContext, session: Session, user_id: str, token: str, *, rotated: bool
) -> Response[bytes]:
    return page(
        web.env, "token.html", user=session.user, csrf=session.csrf, subject_id=user_id,
        token=token, rotated=rotated,
    )


def user_page_handlers(web: WebContext) -> list[HTTPRouteHandler]:
    """Users, machine tokens and the worker-id lookup."""

    @get("/admin/users")
    async def users_index(request: Request) -> Response[bytes]:
        session = await page_session(request, web, Role.ADMIN)
        if isinstance(session, Response):
            return session
        user_id = request.query_params.get("user_id")
        selected = None
        if user_id is not None:
            selected = await web.store.get_user(user_id) if is_id(user_id) else None
            if selected is None:
                return error_page(web.env, 404, USER_NOT_FOUND, user=session.user, csrf=session.csrf)
        return await users_page(web, session, selected=selected)

    @post("/admin/users", request_max_body_size=FORM_LIMIT)
    async def put_user(request: Request) -> Response[bytes]:
        gate = await post_session(request, web, Role.ADMIN)
        if isinstance(gate, Response):
            return gate
        session, form = gate
        user_id = form.get("user_id")
        status = form.get("status")
        roles = [r for r in form.getall("roles", []) if isinstance(r, str)]
        try:
            st, rl = validate_user_put(
                user_id.strip() if isinstance(user_id, str) else "",
                status if isinstance(status, str) else "",
                roles,
            )
            await web.store.put_user(user_id.strip(), st, rl)  # type: ignore[union-attr]
        except HqError as exc:
            return await users_page(
                web, session, status=400, error=f"User update was rejected: {exc.message}"
            )
        return redirect("/admin/users")

    @post("/admin/users/{user_id:str}/delete", request_max_body_size=FORM_LIMIT)
    async def delete_user(request: Request, user_id: FromPath[str]) -> Response[bytes]:
        gate = await post_session(request, web, Role.ADMIN)
        if isinstance(gate, Response):
            return gate
        session, _ = gate
        try:
            if not is_id(user_id):
                raise NotFound("user not found")
            await web.store.delete_user(user_id)
        except HqError as exc:
            return await users_page(web, session, status=400, error=f"Delete was rejected: {exc.message}")
        return redirect("/admin/users")

    @get("/admin/users/{user_id:str}/token")
    async def show_token(request: Request, user_id: FromPath[str]) -> Response[bytes]:
        session = await page_session(request, web, Role.ADMIN)
        if isinstance(session, Response):
            return session
        token = await web.store.get_machine_token(user_id) if is_id(user_id) else None
        if token is None:
            return error_page(web.env, 404, TOKEN_NOT_FOUND, user=session.user, csrf=session.csrf)
        return _token_page(web, session, user_id, token, rotated=False)

    @post("/admin/users/{user_id:str}/token", request_max_body_size=FORM_LIMIT, status_code=200)
    async def rotate_token(request: Request, user_id: FromPath[str]) -> Response[bytes]:
        gate = await post_session(request, web, Role.ADMIN)
        if isinstance(gate, Response):
            return gate
        session, _ = gate
        token = new_machine_token()
        try:
            if not is_id(user_id):
                raise NotFound("user not found")
            await web.store.set_machine_token(user_id, token)
        except HqError as exc:
            return await users_page(web, session, status=400, error=f"Rotation was rejected: {exc.message}")
        return _token_page(web, session, user_id, token, rotated=True)

    @post("/admin/users/{user_id:str}/token/revoke", request_max_body_size=FORM_LIMIT)
    async def revoke_token(request: Request, user_id: FromPath[str]) -> Response[bytes]:
        gate = await post_session(request, web, Role.ADMIN)
        if isinstance(gate, Response):
            return gate
        session, _ = gate
        try:
            if not is_id(user_id):
                raise NotFound("active machine token not found")
            await web.store.revoke_machine_token(user_id)
        except HqError as exc:
            return await users_page(web, session, status=400, error=f"Revocation was rejected: {exc.message}")
        return redirect("/admin/users")

    @get("/admin/workers")
    async def workers(request: Request) -> Response[bytes]:
        session = await page_session(request, web, Role.ADMIN)
        if isinstance(session, Response):
            return session
        worker_id = request.query_params.get("worker_id") or None
        ctx = {"user": session.user, "csrf": session.csrf}
        if worker_id is not None and not is_id(worker_id):
            return error_page(web.env, 400, "Invalid worker ID", **ctx)
        mappings = await web.store.list_worker_mappings(worker_id, 1 if worker_id else MAX_MAPPINGS)
        activity = {} if worker_id else await workers_context(web.store, None, web.now())
        return page(web.env, "workers.html", mappings=mappings, worker_id=worker_id, **activity, **ctx)

    return [users_index, put_user, delete_user, show_token, rotate_token, revoke_token, workers]
