"""Route 8, ``POST /api/v1/admin/projects/{p}/source`` (spec §1.7.5).

The body is streamed: ASGI chunks go straight into the incremental source decoder, so memory
stays bounded whatever the upload size. Every 1,000 decoded jobs are one ``store.enqueue``
transaction (the same path as route 7); batches committed before an error stay committed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from litestar import Request, Response, post
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from hq_apps.api.auth import admin_principal
from hq_apps.api.http import header, json_response, media_type
from hq_apps.api.openapi import RESOURCE_ERRORS, SOURCE_BODY, SOURCE_PATH, op
from hq_apps.api.wire_out import SourceOut
from hq_apps.services.source_import import (
    UPLOAD_MAX_COMPRESSED_BYTES,
    SourceImportFailed,
    import_upload,
)
from hq_domain.clock import Clock
from hq_domain.errors import InvalidRequest, SourceFormatError
from hq_domain.ids import is_id
from hq_domain.jobs import JobSpec
from hq_domain.ports import CommitTurn, Store

SOURCE_MEDIA_TYPES = ("application/zstd", "application/octet-stream")


READ_TIMEOUT_S = 15.0


async def body_chunks(request: Request[Any, Any, Any], limit: int) -> AsyncIterator[bytes]:
    """The request body as it arrives; more than ``limit`` bytes fails the read.

    Spec §1.1 gives the whole body 15 s. Only the time spent *waiting for the client* counts
    against that budget: time this server spends importing earlier batches does not, so a
    large upload that is slow because the database is busy still completes, while a client
    that stalls or drips bytes is cut off.
    """
    received = 0
    waited = 0.0
    loop = asyncio.get_running_loop()
    while True:
        started = loop.time()
        try:
            async with asyncio.timeout(max(0.0, READ_TIMEOUT_S - waited)):
                message = await request.receive()
        except TimeoutError:
            raise SourceFormatError("http: request body read timeout") from None
        waited += loop.time() - started
        if message["type"] == "http.disconnect":
            raise SourceFormatError("unexpected EOF")
        chunk = message.get("body", b"")
        received += len(chunk)
        if received > limit:
            raise SourceFormatError("http: request body too large")
        if chunk:
            yield chunk
        if not message.get("more_body", False):
            return


class _Route7Path:
    """Each batch goes through route 7's checks: project ID shape first, then the store's
    project, archived, identity-id and identity-conflict rules."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def enqueue(self, project_id: str, jobs: Sequence[JobSpec]) -> int:
        if not is_id(project_id):
            raise InvalidRequest("invalid project or job batch")
        return await self._store.enqueue(project_id, jobs)

    async def enqueue_batches(
        self,
        project_id: str,
        batches: Sequence[Sequence[JobSpec]],
        turn: CommitTurn | None = None,
    ) -> list[int]:
        if not is_id(project_id):
            raise InvalidRequest("invalid project or job batch")
        return await self._store.enqueue_batches(project_id, batches, turn)


def source_handlers(store: Store, clock: Clock | None = None) -> list[HTTPRouteHandler]:
    del clock  # the store reads its own clock; kept for a uniform factory signature

    @post(
        "/api/v1/admin/projects/{project_id:str}/source",
        status_code=200,
        **op(
            "Enqueue a jobs-jsonl-zstd-v1 source",
            ["admin: projects"],
            None,
            SourceOut,
            errors=(*RESOURCE_ERRORS, 409, 415),
            body=SOURCE_BODY,
            path=SOURCE_PATH,
        ),
    )
    async def enqueue_source(
        request: Request[Any, Any, Any], project_id: FromPath[str]
    ) -> Response[bytes]:
        await admin_principal(request, store)
        if media_type(header(request, b"content-type")) not in SOURCE_MEDIA_TYPES:
            raise InvalidRequest("source body must be application/zstd", status=415)
        try:
            result = await import_upload(
                _Route7Path(store), project_id, body_chunks(request, UPLOAD_MAX_COMPRESSED_BYTES)
            )
        except SourceImportFailed as exc:
            raise exc.error from None
        return json_response(
            SourceOut(project_id, result.jobs, result.inserted, result.uncompressed_bytes)
        )

    return [enqueue_source]
