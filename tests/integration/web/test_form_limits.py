"""What a dashboard POST may make the server parse before the session is known (issue 13 #1).

The spec orders the form parse before the session check (§5.2), so these bounds are what an
anonymous client can cost: url-encoded bodies ≤ 1 MiB and ≤ 1,000 fields on every route (the
source-upload route included), multipart text parts ≤ 1 MiB together, and a source file that is
never spooled when the CSRF field comes first.
"""

from __future__ import annotations

import json

import pytest
import zstandard
from litestar.testing import AsyncTestClient

from hq_apps.web import form_reader
from hq_domain.projects import ProjectPut
from tests.integration.web.conftest import WebApp, csrf_of

FORM = {"content-type": "application/x-www-form-urlencoded"}


def _source(n: int) -> bytes:
    text = "".join(json.dumps({"value": f"https://e/{i}"}) + "\n" for i in range(n))
    return zstandard.ZstdCompressor().compress(text.encode())


async def test_oversized_urlencoded_form_on_the_upload_route_is_refused(client: AsyncTestClient) -> None:
    body = b"a&" * (form_reader.FORM_BYTES // 2 + 1)
    resp = await client.post("/admin/projects/x/source", content=body, headers=FORM)
    assert resp.status_code == 400 and "Invalid form submission" in resp.text


async def test_too_many_fields_are_refused(client: AsyncTestClient) -> None:
    body = b"&".join([b"a"] * (form_reader.FORM_FIELDS + 1))
    resp = await client.post("/admin/projects", content=body, headers=FORM)
    assert resp.status_code == 400 and "Invalid form submission" in resp.text
    ok = b"&".join([b"a"] * form_reader.FORM_FIELDS)
    assert (await client.post("/admin/projects", content=ok, headers=FORM)).status_code == 303


async def test_big_multipart_text_field_is_refused(client: AsyncTestClient) -> None:
    big = "x" * (form_reader.FORM_BYTES + 1)
    resp = await client.post("/admin/projects/x/source", data={"csrf": big}, files={"f": ("a", b"1")})
    assert resp.status_code == 400 and "Invalid form submission" in resp.text


class _NoSpool:
    def __init__(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("the upload was spooled")


async def test_upload_streams_into_the_decoder_without_spooling(
    admin: AsyncTestClient, web: WebApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    import litestar.datastructures.upload_file as upload_file

    monkeypatch.setattr(tempfile, "SpooledTemporaryFile", _NoSpool)
    monkeypatch.setattr(upload_file, "SpooledTemporaryFile", _NoSpool)
    await web.store.put_project("src", ProjectPut(status="active", identity_mode="unique_value"))
    csrf = csrf_of((await admin.get("/admin/projects/src")).text)
    files = {"source_file": ("jobs.jsonl.zst", _source(2500), "application/zstd")}
    resp = await admin.post("/admin/projects/src/source", data={"csrf": csrf}, files=files)
    assert resp.status_code == 303
    summary = await web.store.get_project("src")
    assert summary is not None and summary.job_counts.todo == 2500


async def test_anonymous_upload_is_parsed_and_dropped(
    client: AsyncTestClient, web: WebApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    import litestar.datastructures.upload_file as upload_file

    monkeypatch.setattr(tempfile, "SpooledTemporaryFile", _NoSpool)
    monkeypatch.setattr(upload_file, "SpooledTemporaryFile", _NoSpool)
    await web.store.put_project("src", ProjectPut(status="active"))
    files = {"source_file": ("jobs.jsonl.zst", b"\0" * (4 << 20), "application/zstd")}
    resp = await client.post("/admin/projects/src/source", data={"csrf": "x"}, files=files)
    assert resp.status_code == 303 and resp.headers["location"] == "/"


async def test_csrf_after_the_file_still_imports(admin: AsyncTestClient, web: WebApp) -> None:
    await web.store.put_project("src", ProjectPut(status="active", identity_mode="unique_value"))
    csrf = csrf_of((await admin.get("/admin/projects/src")).text)
    boundary = "hqboundary"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="source_file"; filename="j.zst"\r\n'
        "Content-Type: application/zstd\r\n\r\n"
    ).encode() + _source(3) + (
        f'\r\n--{boundary}\r\nContent-Disposition: form-data; name="csrf"\r\n\r\n{csrf}\r\n'
        f"--{boundary}--\r\n"
    ).encode()
    resp = await admin.post(
        "/admin/projects/src/source", content=body,
        headers={"content-type": f"multipart/form-data; boundary={boundary}"},
    )
    assert resp.status_code == 303
    assert (await web.store.get_project("src")).job_counts.todo == 3  # type: ignore[union-attr]


async def test_truncated_multipart_is_invalid(admin: AsyncTestClient) -> None:
    body = b'--b\r\nContent-Disposition: form-data; name="csrf"\r\n\r\nabc'
    resp = await admin.post(
        "/admin/projects/src/source", content=body,
        headers={"content-type": "multipart/form-data; boundary=b"},
    )
    assert resp.status_code == 400 and "Invalid form submission" in resp.text
