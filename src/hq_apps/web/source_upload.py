"""Admin source upload: multipart ``source_file`` streamed into the project (spec §5.4).

Litestar spools the file part to a temporary file while parsing the form (the body cap is
257 MiB), then the shared streaming importer decodes it in batches of 1,000 jobs.
"""

from __future__ import annotations

from litestar import Request, Response, post
from litestar.datastructures import UploadFile
from litestar.di import NamedDependency
from litestar.params import FromPath

from hq_apps.cli.source_import import SourceImportFailed, import_source
from hq_apps.web.context import UPLOAD_FORM_LIMIT, WebContext, post_session
from hq_apps.web.project_pages import PROJECT_NOT_FOUND, project_page
from hq_apps.web.render import error_page, redirect
from hq_domain.errors import InvalidJob
from hq_domain.ids import is_id
from hq_domain.users import Role

FILE_REQUIRED = "Source file is required"
IMPORT_REJECTED = "Source import was rejected"
FILE_INVALID = "Source file is invalid"
MAX_SOURCE_JOBS = 10_000_000
MAX_UNCOMPRESSED_BYTES = 4 << 30


@post("/admin/projects/{project_id:str}/source", request_max_body_size=UPLOAD_FORM_LIMIT)
async def upload_source(request: Request, web: NamedDependency[WebContext], project_id: FromPath[str]) -> Response[bytes]:
    gate = await post_session(request, web, Role.ADMIN)
    if isinstance(gate, Response):
        return gate
    session, form = gate
    if not is_id(project_id) or await web.store.get_project(project_id) is None:
        return error_page(web.env, 404, PROJECT_NOT_FOUND, user=session.user, csrf=session.csrf)
    upload = form.get("source_file")
    if not isinstance(upload, UploadFile) or not upload.filename:
        return await project_page(request, web, session, project_id, status=400, error=FILE_REQUIRED)
    try:
        await import_source(
            web.store, project_id, upload.file,
            max_jobs=MAX_SOURCE_JOBS, max_uncompressed=MAX_UNCOMPRESSED_BYTES,
        )
    except SourceImportFailed as exc:
        invalid = isinstance(exc.error, InvalidJob) and exc.error.message.startswith("source format")
        prefix = FILE_INVALID if invalid else IMPORT_REJECTED
        return await project_page(
            request, web, session, project_id, status=400, error=f"{prefix}: {exc}"
        )
    finally:
        await upload.close()
    return redirect(f"/admin/projects/{project_id}")
