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


def _ref(kind: type[Any]) -> dict[str, str]:
    return {"$ref": _REF.format(name=kind.__name__)}


def _content(kind: type[Any]) -> dict[str, Any]:
    return {"application/json": {"schema": _ref(kind)}}


def op(
    summary: str,
    tags: list[str],
    request: type[Any] | None,
    response: type[Any] | None,
    *,
    status: int = 200,
    auth: bool = True,
) -> dict[str, Any]:
    """Route-handler keyword arguments documenting one operation."""
    responses: dict[str, Any] = {
        str(status): {"description": "Success"}
        | ({"content": _content(response)} if response else {}),
        "default": {
            "description": "Error envelope (spec §1.4)",
            "content": _content(ErrorEnvelope),
        },
    }
    body = {"required": True, "content": _content(request)} if request else None

    @dataclass
    class _Operation(Operation):
        def __post_init__(self) -> None:
            self.responses = responses  # type: ignore[assignment]
            self.request_body = body  # type: ignore[assignment]
            self.security = [{"machineToken": []}] if auth else None

    return {"summary": summary, "tags": tags, "operation_class": _Operation}


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
        render_plugins=[_WireSchemaPlugin(components)],
    )
