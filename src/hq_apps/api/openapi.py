"""OpenAPI at ``/schema``, generated from the real handlers and the wire Structs.

Handlers decode their bodies themselves (for the spec's error messages), so Litestar cannot
infer request/response schemas; each handler names its wire types through :func:`op`, and the
schemas come from msgspec's own JSON-schema generator, so documentation and decoding agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin
from litestar.openapi.spec import Components, Operation, SecurityScheme

from hq_apps.api.wire_in import REQUEST_TYPES
from hq_apps.api.wire_out import RESPONSE_TYPES, ErrorEnvelope

_REF = "#/components/schemas/{name}"

API_ERRORS = (400, 401, 405, 413)
"""Every ``/api/`` route: bad params/body, bad token, wrong method, global body limit."""
ADMIN_ERRORS = (*API_ERRORS, 403)
RESOURCE_ERRORS = (*ADMIN_ERRORS, 404)
WORKER_ERRORS = (*RESOURCE_ERRORS, 409, 426)

_STATUS_TEXT = {
    400: "Malformed request, parameters or body (`invalid_request` / `invalid_job`)",
    401: "Missing, malformed, unknown or revoked machine token",
    403: "Caller lacks the active admin / worker role",
    404: "Unknown resource",
    405: "Method not allowed on this path",
    409: "Conflict (`project_not_active` / `identity_conflict`)",
    413: "Request rejected by the 256 MiB global body limit (no no-store headers)",
    415: "Source body must be application/zstd or application/octet-stream",
    426: "Client version not in the project's allowlist (`client_upgrade_required`)",
    429: "Project dispatch rate limit exceeded (retryable)",
    503: "Database unavailable",
}

ERROR_CODES = (
    "invalid_request", "invalid_job", "invalid_machine_token", "permission_denied",
    "not_found", "client_upgrade_required", "project_dispatch_rate_limited",
    "identity_conflict", "project_not_active", "internal_error",
)  # fmt: skip
"""``ErrorBody.code`` values (spec §1.4); ``stale_attempt`` only occurs in item errors."""

_ID = {"type": "string", "pattern": "^[A-Za-z0-9._:-]+$", "minLength": 1, "maxLength": 128}
_INT64 = {"type": "integer", "format": "int64", "maximum": 2**63 - 1}
PATH_SCHEMAS: dict[str, dict[str, Any]] = {
    "project_id": _ID,
    "user_id": _ID,
    "job_id": {**_INT64, "minimum": 1},
}
"""Documentation only: handlers take path values as strings and answer the spec's 400s
themselves, so these never reach Litestar's own validation."""

CLIENT_VERSION = {
    "name": "X-SavewebHQ-Client-Version",
    "in": "header",
    "required": True,
    "description": "Must equal one of the project's client_versions, else 426 (spec §1.6)",
    "schema": {"type": "string"},
}
_JOB_STATUSES = ["todo", "wip", "done", "failed", "reset_exhausted"]
JOB_QUERY = [
    # An empty value counts as absent, as with the reference's router.
    {"name": name, "in": "query", "required": False, "allowEmptyValue": True, "schema": schema}
    for name, schema in (
        ("status", {"type": "string", "enum": _JOB_STATUSES}),
        ("after_job_id", {**_INT64, "minimum": 0, "default": 0}),
        ("limit", {"type": "integer", "minimum": 1, "maximum": 200, "default": 50}),
    )
]
SOURCE_PATH = {
    "project_id": {
        "type": "string",
        "description": "Checked only when a batch is inserted: a source that decodes to zero "
        "jobs answers 200 for any project id (spec §1.7.5)",
    }
}
SOURCE_BODY = {
    "required": True,
    "content": {
        kind: {"schema": {"type": "string", "format": "binary"}}
        for kind in ("application/zstd", "application/octet-stream")
    },
}


def _header(value: dict[str, Any], *, required: bool = True) -> dict[str, Any]:
    return {"required": required, "schema": value}


def _exact(value: str) -> dict[str, Any]:
    return _header({"type": "string", "enum": [value]})


_REQUEST_ID = {"X-Request-Id": _header({"type": "string"})}
_NO_STORE = {
    "Cache-Control": _exact("no-store, no-cache, max-age=0"),
    "Pragma": _exact("no-cache"),
    "CDN-Cache-Control": _exact("no-store"),
    "Cloudflare-CDN-Cache-Control": _exact("no-store"),
    "Expires": _exact("0"),
}


def _headers(status: int, api: bool) -> dict[str, Any]:
    """Spec §1.1: ``X-Request-Id`` everywhere; the no-store set on ``/api/`` responses except
    the global-limit 413, which short-circuits before those middlewares."""
    headers = dict(_REQUEST_ID)
    if api and status != 413:
        headers |= _NO_STORE
    if status == 405:
        headers["Allow"] = _header({"type": "string"})
    if status == 429:
        headers["Retry-After"] = _header({"type": "integer", "minimum": 1})
    return headers


def _ref(kind: type[Any]) -> dict[str, str]:
    return {"$ref": _REF.format(name=kind.__name__)}


def _content(kind: type[Any]) -> dict[str, Any]:
    return {"application/json": {"schema": _ref(kind)}}


def _parameter(param: Any, path: dict[str, dict[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = param.to_schema()
    if data.get("in") == "path" and data.get("name") in path:
        data["schema"] = path[data["name"]]
    return data


def op(
    summary: str,
    tags: list[str],
    request: type[Any] | None,
    response: type[Any] | None,
    *,
    status: int = 200,
    auth: bool = True,
    errors: tuple[int, ...] = API_ERRORS,
    params: list[dict[str, Any]] | None = None,
    body: dict[str, Any] | None = None,
    path: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Route-handler keyword arguments documenting one operation.

    ``auth`` routes are exactly the ``/api/`` routes (they get the no-store headers);
    ``errors`` lists the error statuses the operation can answer with an ``ErrorEnvelope``;
    ``params`` are extra parameters, ``body`` a non-JSON request body and ``path`` overrides
    :data:`PATH_SCHEMAS` for this operation.
    """
    success: dict[str, Any] = {"description": "Success", "headers": _headers(status, auth)}
    if response:
        success["content"] = _content(response)
    responses = {str(status): success} | {
        str(code): {
            "description": _STATUS_TEXT[code],
            "headers": _headers(code, auth),
            "content": _content(ErrorEnvelope),
        }
        for code in errors
    }
    if body is None and request is not None:
        body = {"required": True, "content": _content(request)}
    extra = list(params or ())
    path_schemas = PATH_SCHEMAS | (path or {})

    @dataclass
    class _Operation(Operation):
        def __post_init__(self) -> None:
            self.responses = responses  # type: ignore[assignment]
            self.request_body = body  # type: ignore[assignment]
            self.security = [{"machineToken": []}] if auth else None
            own = [_parameter(p, path_schemas) for p in self.parameters or ()]
            self.parameters = (own + extra) or None  # type: ignore[assignment]

    return {"summary": summary, "tags": tags, "operation_class": _Operation}


def _tighten(schemas: dict[str, Any]) -> dict[str, Any]:
    """Spec §1.1: responses carry exactly the documented keys; §1.4/§1.7.15: the error codes."""
    for name, schema in schemas.items():
        if name.endswith("Out") or name in {"ErrorEnvelope", "ErrorBody", "ItemError"}:
            schema["additionalProperties"] = False
    schemas["ErrorBody"]["properties"]["code"] = {"type": "string", "enum": list(ERROR_CODES)}
    schemas["ItemError"]["properties"]["code"] = {"type": "string", "enum": ["stale_attempt"]}
    return schemas


class _WireSchemaPlugin(JsonRenderPlugin):
    """Serves the JSON document with the wire Structs' schemas added to ``components``.

    Litestar rebuilds ``components.schemas`` from its own registry, which knows nothing of
    types it did not decode, so they are merged in at render time.
    """

    def __init__(self, schemas: dict[str, Any]) -> None:
        super().__init__()
        self._schemas = schemas

    def render(self, request: Any, openapi_schema: dict[str, Any]) -> bytes:
        components = openapi_schema.setdefault("components", {})
        components["schemas"] = {**self._schemas, **components.get("schemas", {})}
        return super().render(request, openapi_schema)


def openapi_config() -> OpenAPIConfig:
    _, components = msgspec.json.schema_components(
        (*REQUEST_TYPES, *RESPONSE_TYPES), ref_template=_REF
    )
    return OpenAPIConfig(
        title="SavewebHQ tracker API",
        version="1",
        path="/schema",
        components=Components(
            security_schemes={
                "machineToken": SecurityScheme(type="http", scheme="bearer"),
            },
        ),
        render_plugins=[_WireSchemaPlugin(_tighten(components))],
    )
