"""The one place where errors become HTTP responses (spec §1.4).

Domain errors carry their status and code; framework exceptions map to the routing fallbacks
of spec §1.1; anything else is a 500 ``internal_error`` that leaks nothing.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from litestar import Request, Response
from litestar.exceptions import HTTPException, MethodNotAllowedException, NotFoundException

from hq_apps.api.http import json_response
from hq_apps.api.wire_out import error_envelope
from hq_domain.errors import HqError, InternalError, InvalidRequest, NotFound

log = logging.getLogger("hq.api")


def hq_error_response(exc: HqError, headers: dict[str, str] | None = None) -> Response[bytes]:
    if exc.status == 429 and exc.retry_after_ms > 0:
        headers = {**(headers or {}), "Retry-After": str(math.ceil(exc.retry_after_ms / 1000))}
    return json_response(error_envelope(exc), exc.status, headers)


def _on_hq_error(_: Request[Any, Any, Any], exc: HqError) -> Response[bytes]:
    if exc.status >= 500:
        log.error("request failed", exc_info=exc)
    return hq_error_response(exc)


def _on_http_exception(_: Request[Any, Any, Any], exc: HTTPException) -> Response[bytes]:
    if isinstance(exc, NotFoundException):
        return hq_error_response(NotFound("route not found"))
    if isinstance(exc, MethodNotAllowedException):
        allow = (exc.headers or {}).get("allow", "")
        return hq_error_response(InvalidRequest("method not allowed", status=405), {"Allow": allow})
    if 400 <= exc.status_code < 500:
        return hq_error_response(InvalidRequest("request rejected", status=exc.status_code))
    log.error("request failed", exc_info=exc)
    return hq_error_response(InternalError("internal server error"))


def _on_unexpected(_: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    log.error("request failed", exc_info=exc)
    return hq_error_response(InternalError("internal server error"))


EXCEPTION_HANDLERS: dict[type[Exception], Any] = {
    HqError: _on_hq_error,
    HTTPException: _on_http_exception,
    Exception: _on_unexpected,
}
