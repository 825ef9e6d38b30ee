"""The worker fast path: claim, complete, fail and extend-lease answered at the edge.

These four routes are nearly all of a fleet's traffic, and at small batches Litestar's routing,
signature model, response object and middleware wrappers were about a fifth of the tracker's
CPU per request (benchmarks/notes/optimisations.md). :class:`WorkerFastPath` recognises exactly
``POST /api/v1/projects/<id>/jobs/<op>`` in canonical form and runs the same
:class:`~hq_apps.api.worker_ops.WorkerOps` method the Litestar handler would, then writes the
response itself. Anything it does not recognise — another method, a non-canonical path, a
``root_path``, an unusual Host header — goes to Litestar, which answers as before. What a
response holds (status, headers and their order, body, log line, metrics route label) is the
Litestar handler's: tests/integration/test_fast_path.py sends the same requests both ways.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from hq_apps.api.errors import logged, retry_after, unexpected
from hq_apps.api.http import JSON_MEDIA_TYPE, encode
from hq_apps.api.one_write import send_whole, whole_response_cycle
from hq_apps.api.requestlog import RequestContext
from hq_apps.api.wire_out import error_envelope
from hq_apps.api.worker_ops import WorkerOps
from hq_domain.errors import HqError

PREFIX = "/api/v1/projects/"
Op = Callable[[Any, str], Awaitable[Any]]
_JSON = (b"content-type", JSON_MEDIA_TYPE.encode())
# Host values Litestar accepts without question; anything else is left for it to judge.
_PLAIN_HOST = re.compile(rb"\A[0-9A-Za-z.\-:\[\]]*\Z")


class RawRequest:
    """The part of a request :mod:`hq_apps.api.http` and ``auth`` read (``Incoming``)."""

    __slots__ = ("receive", "scope")

    def __init__(self, scope: Any, receive: Any) -> None:
        self.scope = scope
        self.receive = receive


class WorkerFastPath:
    def __init__(self, ops: WorkerOps) -> None:
        self._ops: dict[str, tuple[Op, str]] = {
            name: (method, f"{PREFIX}{{project_id}}/jobs/{name}")
            for name, method in (
                ("claim", ops.claim),
                ("complete", ops.complete),
                ("fail", ops.fail),
                ("extend-lease", ops.extend_lease),
            )
        }

    def match(self, scope: Any) -> tuple[Op, str, str] | None:
        """(operation, route template, project ID) for a request this path answers."""
        if scope["method"] != "POST" or scope.get("root_path"):
            return None
        path: str = scope["path"]
        if not path.startswith(PREFIX):
            return None
        project_id, sep, rest = path[len(PREFIX) :].partition("/jobs/")
        if not sep or not project_id or "/" in project_id:
            return None
        found = self._ops.get(rest)
        if found is None:
            return None
        for key, value in scope["headers"]:
            if key == b"host" and _PLAIN_HOST.match(value) is None:
                return None
        return found[0], found[1], project_id

    async def serve(
        self,
        matched: tuple[Op, str, str],
        scope: Any,
        receive: Any,
        send: Any,
        ctx: RequestContext,
        extra: list[tuple[bytes, bytes]],
    ) -> None:
        """Run the operation and send its response with the edge's ``extra`` headers."""
        op, template, project_id = matched
        scope["path_template"] = template
        scope["path_params"] = {"project_id": project_id}
        headers: list[tuple[bytes, bytes]] = []
        try:
            body = encode(await op(RawRequest(scope, receive), project_id))
            status = 200
        except HqError as exc:
            body, status = encode(error_envelope(logged(exc))), exc.status
            if (seconds := retry_after(exc)) is not None:
                headers.append((b"retry-after", seconds.encode()))
        except Exception as exc:  # the same last resort as Litestar's handler
            error = unexpected(exc)
            body, status = encode(error_envelope(error)), error.status
        headers += [_JSON, (b"content-length", str(len(body)).encode()), *extra]
        ctx.status = status
        cycle = whole_response_cycle(send)
        if cycle is not None and await send_whole(cycle, status, headers, body):
            return
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})
