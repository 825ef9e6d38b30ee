"""The outer middleware stack of spec §1.1, applied before Litestar routes anything.

Litestar middleware runs only for matched routes, so the behaviour that must also cover 404s,
405s and pre-routing rejections lives in :meth:`HqLitestar.__call__`: request ID → global body
limit (413, without the later headers) → trailing-slash 404 → security headers → ``/api/``
no-store headers, plus one log line per request.
"""

from __future__ import annotations

import os
import time
from typing import Any

from litestar import Litestar

from hq_apps.api import requestlog
from hq_apps.api.fast_path import WorkerFastPath
from hq_apps.api.http import encode
from hq_apps.api.wire_out import ErrorBody, ErrorEnvelope

GLOBAL_BODY_LIMIT = 256 * 1024 * 1024
SCHEMA_PREFIX = "/schema/"
SCHEMA_PATHS = frozenset({"/schema/openapi.json"})

_SECURITY = [
    (b"x-xss-protection", b"1; mode=block"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"SAMEORIGIN"),
]
_NO_STORE = [
    (b"cache-control", b"no-store, no-cache, max-age=0"),
    (b"pragma", b"no-cache"),
    (b"cloudflare-cdn-cache-control", b"no-store"),
    (b"cdn-cache-control", b"no-store"),
    (b"expires", b"0"),
]


def _first_header(scope: Any, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


def _error_body(status_code: str, message: str) -> bytes:
    return encode(ErrorEnvelope(ErrorBody(status_code, message, False, 0, {})))


async def _send_json(send: Any, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class HqLitestar(Litestar):
    _allow: dict[str, bytes] | None = None
    worker_fast_path: WorkerFastPath | None = None
    """Set by ``create_app``: answers the four worker operations before Litestar routes."""

    def _allow_header(self, template: str | None) -> bytes | None:
        """Litestar's automatic OPTIONS reply lists only the first handler's methods."""
        if self._allow is None:
            self._allow = {
                r.path_format: ", ".join(sorted(r.methods)).encode()
                for r in self.routes
                if hasattr(r, "methods")
            }
        return self._allow.get(template or "")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        rid_raw = _first_header(scope, b"x-request-id")
        rid = rid_raw.decode("latin-1") if rid_raw else os.urandom(16).hex()
        ctx = requestlog.RequestContext(rid, time.perf_counter())
        scope[requestlog.SCOPE_KEY] = ctx
        rid_header = (b"x-request-id", rid.encode("latin-1"))

        async def send_rejected(message: Any) -> None:
            if message["type"] == "http.response.start":
                ctx.status = message["status"]
                message["headers"] = [*message.get("headers", ()), rid_header]
            await send(message)

        try:
            length = _first_header(scope, b"content-length")
            if length is not None and length.isdigit() and int(length) > GLOBAL_BODY_LIMIT:
                await _send_json(
                    send_rejected, 413, _error_body("invalid_request", "request rejected")
                )
                return
            extra = [rid_header, *_SECURITY]
            path: str = scope["path"]
            if path.startswith("/api/"):
                extra += _NO_STORE

            async def send_with_headers(message: Any) -> None:
                if message["type"] == "http.response.start":
                    ctx.status = message["status"]
                    headers = list(message.get("headers", ()))
                    if scope["method"] == "OPTIONS" and message["status"] == 204:
                        allow = self._allow_header(scope.get("path_template"))
                        if allow is not None:
                            headers = [(k, v) for k, v in headers if bytes(k).lower() != b"allow"]
                            headers.append((b"allow", allow))
                    present = {bytes(k).lower() for k, _ in headers}
                    headers += [(k, v) for k, v in extra if k not in present]
                    message["headers"] = headers
                await send(message)

            if (len(path) > 1 and path.endswith("/")) or (
                path.startswith(SCHEMA_PREFIX) and path not in SCHEMA_PATHS
            ):
                # Litestar would strip the slash; the spec does not normalise (§1.1). Litestar's
                # OpenAPI router answers its other paths with an HTML 404; ours is JSON.
                await _send_json(
                    send_with_headers, 404, _error_body("not_found", "route not found")
                )
                return
            fast = self.worker_fast_path
            if fast is not None and (matched := fast.match(scope)) is not None:
                await fast.serve(matched, scope, receive, send, ctx, extra)
                return
            await super().__call__(scope, receive, send_with_headers)
        finally:
            requestlog.emit(scope, ctx, (time.perf_counter() - ctx.started) * 1000)
