"""Admin user and machine-token routes 13–18 (spec §1.7.9)."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, delete, get, post, put
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from hq_apps.api import wire_in as w
from hq_apps.api.auth import admin_principal
from hq_apps.api.http import json_response, no_content, read_json
from hq_apps.api.openapi import ADMIN_ERRORS, RESOURCE_ERRORS, op
from hq_apps.api.wire_out import TokenOut, UserListOut, user_out
from hq_domain.errors import InvalidRequest, NotFound
from hq_domain.ids import is_id, new_machine_token
from hq_domain.ports import Store
from hq_domain.users import validate_user_put

_Req = Request[Any, Any, Any]
TAGS = ["admin: users"]
USER = "/api/v1/admin/users/{user_id:str}"
TOKEN = USER + "/machine-token"


def _user_id(user_id: str) -> str:
    if not is_id(user_id):
        raise InvalidRequest("invalid user ID")
    return user_id


def user_handlers(store: Store) -> list[HTTPRouteHandler]:
    @get("/api/v1/admin/users", **op("List users", TAGS, None, UserListOut, errors=ADMIN_ERRORS))
    async def list_users(request: _Req) -> Response[bytes]:
        await admin_principal(request, store)
        return json_response(UserListOut([user_out(u) for u in await store.list_users()]))

    @put(
        USER,
        status_code=204,
        **op("Create or update user", TAGS, w.PutUserIn, None, status=204, errors=ADMIN_ERRORS),
    )
    async def put_user(request: _Req, user_id: FromPath[str]) -> Response[None]:
        await admin_principal(request, store)
        body = await read_json(request, w.PutUserIn)
        status, roles = validate_user_put(user_id, body.status or "", body.roles)
        await store.put_user(user_id, status, roles)
        return no_content()

    @delete(
        USER,
        status_code=204,
        **op("Delete user", TAGS, None, None, status=204, errors=RESOURCE_ERRORS),
    )
    async def delete_user(request: _Req, user_id: FromPath[str]) -> Response[None]:
        await admin_principal(request, store)
        await store.delete_user(_user_id(user_id))
        return no_content()

    @get(TOKEN, **op("Show machine token", TAGS, None, TokenOut, errors=RESOURCE_ERRORS))
    async def get_token(request: _Req, user_id: FromPath[str]) -> Response[bytes]:
        await admin_principal(request, store)
        token = await store.get_machine_token(_user_id(user_id))
        if token is None:
            raise NotFound("machine token not found")
        return json_response(TokenOut(user_id, token))

    @post(
        TOKEN,
        status_code=201,
        **op("Rotate machine token", TAGS, None, TokenOut, status=201, errors=RESOURCE_ERRORS),
    )
    async def rotate_token(request: _Req, user_id: FromPath[str]) -> Response[bytes]:
        await admin_principal(request, store)
        token = new_machine_token()
        await store.set_machine_token(_user_id(user_id), token)
        return json_response(TokenOut(user_id, token), 201)

    @delete(
        TOKEN,
        status_code=204,
        **op("Revoke machine token", TAGS, None, None, status=204, errors=RESOURCE_ERRORS),
    )
    async def revoke_token(request: _Req, user_id: FromPath[str]) -> Response[None]:
        await admin_principal(request, store)
        await store.revoke_machine_token(_user_id(user_id))
        return no_content()

    return [list_users, put_user, delete_user, get_token, rotate_token, revoke_token]
