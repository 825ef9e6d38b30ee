"""Route 8 runs the app's one source-import service, with its upload limits."""

from __future__ import annotations

import zstandard

from hq_adapters.sourcefile import SourceLimits
from hq_apps.services import source_import
from tests.unit.api.conftest import ADMIN, Api, error


async def test_route_8_uses_the_services_upload_limits(api: Api, monkeypatch) -> None:
    await api.put_project("p")
    monkeypatch.setattr(source_import, "UPLOAD_LIMITS", SourceLimits(2, 1 << 30))
    body = zstandard.ZstdCompressor().compress(b'{"value":"a"}\n{"value":"b"}\n{"value":"c"}\n')
    r = await api.client.post(
        "/api/v1/admin/projects/p/source",
        content=body,
        headers={**ADMIN, "Content-Type": "application/zstd"},
    )
    assert r.status_code == 400
    assert error(r)["code"] == "invalid_job"
    assert error(r)["message"] == "source format: source exceeds job limit"
    assert (await api.counts("p"))["todo"] == 0
