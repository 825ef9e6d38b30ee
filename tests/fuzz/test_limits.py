"""Oversize and hostile bodies are refused with bounded memory and time (spec §1.1, §1.2.7,
§1.3, §1.7.5): > 8 MiB JSON (declared or streamed), > 256 MiB Content-Length, zstd bombs on
the source route, and (slow) a slow-drip upload against a real ``tracker serve``.

The raw-ASGI tests count how many body bytes the app pulls, which is what bounds memory: an
app that buffered the whole upload first would read every chunk we offer."""

from __future__ import annotations

import asyncio
import json
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
import zstandard
from litestar.testing import TestClient

from hq_adapters.memory import MemoryStore
from hq_apps.api.app import create_app
from hq_apps.settings import Settings
from hq_domain.clock import ManualClock
from hq_domain.users import Role
from tests.faults.live import ensure_optional_routes
from tests.fuzz.support import ADMIN, ADMIN_TOKEN, check_response

MIB = 1 << 20
JSON_ROUTE = "/api/v1/admin/projects/lim/jobs"
SOURCE_ROUTE = "/api/v1/admin/projects/lim/source"


@pytest.fixture(scope="module")
def app_store() -> Iterator[tuple[Any, MemoryStore]]:
    store = MemoryStore(ManualClock())
    asyncio.run(store.bootstrap_user("admin", [Role.ADMIN], ADMIN_TOKEN))
    from hq_domain.projects import ProjectPut

    asyncio.run(store.put_project("lim", ProjectPut(status="active", identity_mode="none")))
    app = create_app(Settings(sweep_interval_s=0, openapi=False), store)
    yield ensure_optional_routes(app, store), store


async def _asgi(
    app: Any, path: str, headers: dict[str, str], chunks: Iterator[bytes]
) -> tuple[int, bytes, int]:
    """One request straight through ASGI; returns (status, body, body bytes the app pulled)."""
    pulled = 0

    async def receive() -> dict[str, Any]:
        nonlocal pulled
        chunk = next(chunks, None)
        if chunk is None:
            return {"type": "http.request", "body": b"", "more_body": False}
        pulled += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": True}

    out: dict[str, Any] = {"body": b""}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            out["status"] = message["status"]
        elif message["type"] == "http.response.body":
            out["body"] += message.get("body", b"")

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }  # fmt: skip
    await app(scope, receive, send)
    return out["status"], out["body"], pulled


def _forever(chunk: bytes) -> Iterator[bytes]:
    while True:
        yield chunk


def _error(body: bytes) -> dict[str, Any]:
    err = json.loads(body)["error"]
    assert set(err) == {"code", "message", "retryable", "retry_after_ms", "details"}
    return err


async def test_declared_json_over_8_mib_is_refused_unread(app_store: Any) -> None:
    app, _ = app_store
    headers = {**ADMIN, "content-type": "application/json", "content-length": str(8 * MIB + 1)}
    status, body, pulled = await _asgi(app, JSON_ROUTE, headers, _forever(b" " * MIB))
    assert status == 400 and _error(body)["message"] == "request body exceeds 8388608 bytes"
    assert pulled == 0


async def test_streamed_json_over_8_mib_stops_reading(app_store: Any) -> None:
    app, _ = app_store
    headers = {**ADMIN, "content-type": "application/json"}  # no Content-Length
    status, body, pulled = await _asgi(app, JSON_ROUTE, headers, _forever(b" " * MIB))
    assert status == 400 and _error(body)["message"] == "request body exceeds 8388608 bytes"
    assert pulled <= 9 * MIB


def test_exactly_8_mib_is_still_decoded(app_store: Any) -> None:
    app, _ = app_store
    jobs = json.dumps({"jobs": [{"value": "v"}]}).encode()
    body = jobs + b" " * (8 * MIB - len(jobs))
    with TestClient(app) as client:
        r = client.post(
            JSON_ROUTE, content=body, headers={**ADMIN, "content-type": "application/json"}
        )
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("path", [JSON_ROUTE, SOURCE_ROUTE, "/api/v1/whoami", "/nowhere"])
async def test_content_length_over_256_mib_is_413_before_routing(app_store: Any, path: str) -> None:
    app, _ = app_store
    headers = {**ADMIN, "content-type": "application/zstd", "content-length": str(256 * MIB + 1)}
    status, body, pulled = await _asgi(app, path, headers, _forever(b"\0" * MIB))
    assert status == 413 and pulled == 0
    assert _error(body) == {"code": "invalid_request", "message": "request rejected",
                            "retryable": False, "retry_after_ms": 0, "details": {}}  # fmt: skip


def _bomb_no_newline(size: int) -> bytes:
    cctx = zstandard.ZstdCompressor(level=3)
    chunker = cctx.chunker(chunk_size=MIB)
    out = bytearray()
    block = b"a" * MIB
    for _ in range(size // MIB):
        for c in chunker.compress(block):
            out += c
    for c in chunker.finish():
        out += c
    return bytes(out)


def _big_window_frame() -> bytes:
    """A frame declaring a 128 MiB window (unknown content size, so the encoder keeps it)."""
    params = zstandard.ZstdCompressionParameters(
        window_log=27, compression_level=3, write_content_size=False
    )
    obj = zstandard.ZstdCompressor(compression_params=params).compressobj()
    frame = obj.compress(b'{"value":"x"}\n' * 10) + obj.flush()
    assert zstandard.get_frame_parameters(frame).window_size == 128 * MIB
    return frame


def _blank_lines(size: int) -> bytes:
    """``size`` bytes of whitespace-only 32 KiB lines (skipped, but counted as expanded)."""
    cctx = zstandard.ZstdCompressor(level=3)
    chunker = cctx.chunker(chunk_size=MIB)
    block = (b" " * (32 * 1024 - 1) + b"\n") * 512  # 16 MiB
    out = bytearray()
    for _ in range(size // len(block)):
        for c in chunker.compress(block):
            out += c
    for c in chunker.finish():
        out += c
    return bytes(out)


async def _source(app: Any, payload: bytes) -> tuple[int, dict[str, Any], float, int]:
    headers = {**ADMIN, "content-type": "application/zstd", "content-length": str(len(payload))}
    chunks = iter([payload[i : i + 64 * 1024] for i in range(0, len(payload), 64 * 1024)])
    tracemalloc.start()
    t0 = time.monotonic()
    try:
        status, body, _ = await _asgi(app, SOURCE_ROUTE, headers, chunks)
        took = time.monotonic() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return status, json.loads(body), took, peak


async def test_zstd_bomb_without_newlines_fails_fast(app_store: Any) -> None:
    app, store = app_store
    payload = _bomb_no_newline(1024 * MIB)  # 1 GiB of "a" in ~100 KiB
    assert len(payload) < MIB
    before = (await store.get_project("lim")).job_counts.todo  # type: ignore[union-attr]
    status, body, took, peak = await _source(app, payload)
    assert status == 400 and body["error"]["code"] == "invalid_job", body
    assert "too long" in body["error"]["message"], body
    assert took < 10 and peak < 256 * MIB, (took, peak)
    assert (await store.get_project("lim")).job_counts.todo == before  # type: ignore[union-attr]


async def test_zstd_window_over_64_mib_is_refused(app_store: Any) -> None:
    app, _ = app_store
    status, body, took, _ = await _source(app, _big_window_frame())
    assert status == 400 and body["error"]["code"] == "invalid_job", body
    assert took < 5


async def test_garbage_that_is_not_zstd(app_store: Any) -> None:
    app, _ = app_store
    status, body, _, _ = await _source(app, b"\x28\xb5\x2f\xfd" + b"\xff" * 4096)
    assert status == 400 and body["error"]["code"] == "invalid_job", body


@pytest.mark.slow
async def test_zstd_bomb_over_4_gib_expanded_is_cut(app_store: Any) -> None:
    app, _ = app_store
    payload = _blank_lines(4 * 1024 * MIB + 16 * MIB)
    status, body, took, peak = await _source(app, payload)
    assert status == 400, body
    assert body["error"]["message"] == "source format: source exceeds uncompressed size limit"
    assert peak < 256 * MIB, peak
    print(f"4 GiB bomb: {len(payload)} compressed bytes refused in {took:.1f}s, peak {peak}")


def test_check_response_rejects_a_bare_500() -> None:
    """The invariant helper itself must be able to fail."""
    import httpx

    with pytest.raises(AssertionError):
        check_response(httpx.Response(500, json={"error": {}}))
    with pytest.raises(AssertionError):
        check_response(httpx.Response(400, json={"error": {"code": "invalid_request"}},
                                      headers={"cache-control": "no-store"}))  # fmt: skip
