"""Multipart source upload on the project page (spec §5.4)."""

from __future__ import annotations

import json

import zstandard
from litestar.testing import AsyncTestClient

from hq_domain.projects import ProjectPut
from tests.integration.web.conftest import WebApp, csrf_of


def _source(lines: list[dict[str, object]] | list[str]) -> bytes:
    text = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
    return zstandard.ZstdCompressor().compress(text.encode())


async def _upload(admin: AsyncTestClient, project: str, body: bytes | None, csrf: str):
    files = {"source_file": ("jobs.jsonl.zst", body, "application/zstd")} if body is not None else None
    return await admin.post(f"/admin/projects/{project}/source", data={"csrf": csrf}, files=files)


async def test_upload_imports_jobs(admin: AsyncTestClient, web: WebApp) -> None:
    await web.store.put_project("src", ProjectPut(status="active", identity_mode="unique_value"))
    csrf = csrf_of((await admin.get("/admin/projects/src")).text)
    resp = await _upload(admin, "src", _source([{"value": f"https://e/{i}"} for i in range(1500)]), csrf)
    assert resp.status_code == 303 and resp.headers["location"] == "/admin/projects/src"
    summary = await web.store.get_project("src")
    assert summary is not None and summary.job_counts.todo == 1500


async def test_upload_errors_are_shown_on_the_page(admin: AsyncTestClient, web: WebApp) -> None:
    await web.store.put_project("src", ProjectPut(status="active", identity_mode="external_id"))
    csrf = csrf_of((await admin.get("/admin/projects/src")).text)
    missing = await _upload(admin, "src", None, csrf)
    assert missing.status_code == 400 and "Source file is required" in missing.text
    invalid = await _upload(admin, "src", b"not zstd at all", csrf)
    assert invalid.status_code == 400 and "Source file is invalid" in invalid.text
    no_id = await _upload(admin, "src", _source([{"value": "x"}]), csrf)
    assert no_id.status_code == 400 and "Source import was rejected" in no_id.text
    assert "id is required for external_id projects" in no_id.text
    bad_key = await _upload(admin, "src", _source([{"id": "a", "value": "x", "random_key": 1}]), csrf)
    assert bad_key.status_code == 400 and "Source file is invalid" in bad_key.text
    assert (await web.store.get_project("src")).job_counts.todo == 0  # type: ignore[union-attr]
    archived = await web.store.put_project("src", ProjectPut(status="archived"))
    assert archived.project.status.value == "archived"
    rejected = await _upload(admin, "src", _source([{"id": "a", "value": "x"}]), csrf)
    assert rejected.status_code == 400 and "Source import was rejected" in rejected.text


async def test_upload_needs_csrf_and_project(admin: AsyncTestClient, web: WebApp) -> None:
    await web.store.put_project("src", ProjectPut(status="active"))
    resp = await _upload(admin, "src", _source([{"id": "a", "value": "x"}]), "bad")
    assert resp.status_code == 403
    csrf = csrf_of((await admin.get("/admin")).text)
    resp = await _upload(admin, "nope", _source([{"id": "a", "value": "x"}]), csrf)
    assert resp.status_code == 404 and "Project not found" in resp.text


async def test_upload_uses_the_import_services_limits(
    admin: AsyncTestClient, web: WebApp, monkeypatch
) -> None:
    from hq_adapters.sourcefile import SourceLimits
    from hq_apps.services import source_import

    await web.store.put_project("src", ProjectPut(status="active"))
    monkeypatch.setattr(source_import, "UPLOAD_LIMITS", SourceLimits(2, 1 << 30))
    csrf = csrf_of((await admin.get("/admin/projects/src")).text)
    resp = await _upload(admin, "src", _source([{"value": v} for v in "abc"]), csrf)
    assert resp.status_code == 400 and "Source file is invalid" in resp.text
    assert "source exceeds job limit" in resp.text
