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


def retry_after(exc: HqError) -> str | None:
    """The ``Retry-After`` seconds of a 429 that carries a delay (spec §1.4), else None."""
    if exc.status == 429 and exc.retry_after_ms > 0:
        return str(math.ceil(exc.retry_after_ms / 1000))
    return None


def hq_error_response(exc: HqError, headers: dict[str, str] | None = None) -> Response[bytes]:
    if (seconds := retry_after(exc)) is not None:
        headers = {**(headers or {}), "Retry-After": seconds}
    return json_response(error_envelope(exc), exc.status, headers)


def unexpected(exc: BaseException) -> InternalError:
    """What a request that failed in an unforeseen way answers (logged, nothing leaked)."""
    log.error("request failed", exc_info=exc)
    return InternalError("internal server error")


def logged(exc: HqError) -> HqError:
    """A domain error on its way out: a 5xx is logged with its traceback."""
    if exc.status >= 500:
        log.error("request failed", exc_info=exc)
    return exc


def _on_hq_error(_: Request[Any, Any, Any], exc: HqError) -> Response[bytes]:
    return hq_error_response(logged(exc))


def _on_http_exception(_: Request[Any, Any, Any], exc: HTTPException) -> Response[bytes]:
    if isinstance(exc, NotFoundException):
        return hq_error_response(NotFound("route not found"))
    if isinstance(exc, MethodNotAllowedException):
        allow = (exc.headers or {}).get("allow", "")
        return hq_error_response(InvalidRequest("method not allowed", status=405), {"Allow": allow})
    if 400 <= exc.status_code < 500:
        return hq_error_response(InvalidRequest("request rejected", status=exc.status_code))
    return hq_error_response(unexpected(exc))


def _on_unexpected(_: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    return hq_error_response(unexpected(exc))


EXCEPTION_HANDLERS: dict[type[Exception], Any] = {
    HqError: _on_hq_error,
    HTTPException: _on_http_exception,
    Exception: _on_unexpected,
}
