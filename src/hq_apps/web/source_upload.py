"""Admin source upload: multipart ``source_file`` streamed into the project (spec §5.4).

The body is parsed as it arrives (:class:`~hq_apps.web.form_reader.FormStream`). When the
session, CSRF field and role are already known good by the time the file part starts (the
dashboard's form sends ``csrf`` first), the file's bytes go straight into the streaming decoder,
which imports them in batches of 1,000 jobs: nothing is spooled. A file part that arrives before
the CSRF field is spooled to a temporary file only for a request whose cookie is a valid admin
session; for anyone else its bytes are parsed and dropped, so an anonymous upload costs bounded
memory and no disk.
"""

from __future__ import annotations

import asyncio
import tempfile
from typing import IO

from litestar import Request, Response, post
from litestar.exceptions import HTTPException
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from hq_apps.services.source_import import (
    SourceFileInvalid,
    SourceImportRejected,
    SourceInput,
    import_upload,
)
from hq_apps.web.context import (
    READ_TIMEOUT_S,
    UPLOAD_FORM_LIMIT,
    Session,
    WebContext,
    current_session,
    form_gates,
    read_form,
)
from hq_apps.web.form_reader import FormRejected, FormStream
from hq_apps.web.project_pages import PROJECT_NOT_FOUND, project_page
from hq_apps.web.render import error_page, redirect
from hq_domain.ids import is_id
from hq_domain.users import Role

FILE_REQUIRED = "Source file is required"
IMPORT_REJECTED = "Source import was rejected"
FILE_INVALID = "Source file is invalid"
FORM_INVALID = "Invalid form submission"
_SPOOL_MEMORY = 1 << 20


async def _spool(stream: FormStream) -> IO[bytes]:
    spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_MEMORY)  # noqa: SIM115 - closed by caller
    try:
        async for chunk in stream.file_chunks():
            await asyncio.to_thread(spool.write, chunk)
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool


async def _import(
    request: Request, web: WebContext, session: Session, project_id: str, source: SourceInput
) -> Response[bytes] | None:
    try:
        await import_upload(web.store, project_id, source)
    except SourceFileInvalid as exc:
        error = f"{FILE_INVALID}: {exc}"
    except SourceImportRejected as exc:
        error = f"{IMPORT_REJECTED}: {exc}"
    else:
        return None
    return await project_page(request, web, session, project_id, status=400, error=error)


def source_upload_handlers(web: WebContext) -> list[HTTPRouteHandler]:
    """The upload route over one deployment's web state."""

    @post("/admin/projects/{project_id:str}/source", request_max_body_size=UPLOAD_FORM_LIMIT)
    async def upload(request: Request, project_id: FromPath[str]) -> Response[bytes]:
        return await upload_source(request, web, project_id)

    return [upload]


async def upload_source(request: Request, web: WebContext, project_id: str) -> Response[bytes]:
    session = await current_session(request, web)  # from the cookie alone; acted on in spec order
    stream = FormStream(request, body_limit=UPLOAD_FORM_LIMIT)
    try:
        async with asyncio.timeout(READ_TIMEOUT_S):
            fields = await stream.fields_before("source_file")
    except (FormRejected, TimeoutError, HTTPException):
        return error_page(web.env, 400, FORM_INVALID)
    spool: IO[bytes] | None = None
    if stream.at_file and stream.file_name:
        gate = form_gates(web, Role.ADMIN, fields, session)
        known = isinstance(gate, tuple)
        if known and is_id(project_id) and await web.store.get_project(project_id) is not None:
            assert session is not None
            try:
                failed = await _import(request, web, session, project_id, stream.file_chunks())
            except (FormRejected, HTTPException):  # malformed, oversized, or the client left
                return error_page(web.env, 400, FORM_INVALID)
            if failed is not None:
                return failed
            if await read_form(request, stream) is None:
                return error_page(web.env, 400, FORM_INVALID)
            return redirect(f"/admin/projects/{project_id}")
        if not known and session is not None and session.has(Role.ADMIN):
            try:
                spool = await _spool(stream)  # the CSRF field may still follow the file
            except (FormRejected, HTTPException):
                return error_page(web.env, 400, FORM_INVALID)
    try:
        form = await read_form(request, stream)
        if form is None:
            return error_page(web.env, 400, FORM_INVALID)
        gate = form_gates(web, Role.ADMIN, form, session)
        if isinstance(gate, Response):
            return gate
        if not is_id(project_id) or await web.store.get_project(project_id) is None:
            return error_page(web.env, 404, PROJECT_NOT_FOUND, user=gate[0].user, csrf=gate[0].csrf)
        if spool is None:
            return await project_page(request, web, gate[0], project_id, status=400, error=FILE_REQUIRED)
        failed = await _import(request, web, gate[0], project_id, spool)
        return failed or redirect(f"/admin/projects/{project_id}")
    finally:
        if spool is not None:
            spool.close()
