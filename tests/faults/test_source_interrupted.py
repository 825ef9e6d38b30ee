"""A source upload whose client drops the connection mid-stream (spec §1.7.5): the 1,000-job
batches committed before the drop stay, the partial batch is discarded, and re-running the
whole upload in a dedup mode completes the project with no duplicates."""

from __future__ import annotations

import asyncio
import socket
import time

import asyncpg
import httpx
import pytest
import zstandard

from hq_adapters.sourcefile import encode_job_line
from hq_domain.ids import default_job_id
from hq_domain.jobs import JobSpec
from tests.faults.harness import ADMIN, ADMIN_TOKEN, seed
from tests.faults.live import live_pg_server

pytestmark = pytest.mark.postgres

N_JOBS = 5000


def _source(mode: str, n: int) -> bytes:
    """A zstd stream flushed every 250 lines, so any prefix decodes to whole lines."""
    out = bytearray()
    cctx = zstandard.ZstdCompressor(level=1)
    chunker = cctx.chunker(chunk_size=1 << 16)
    for i in range(n):
        value = f"https://example.org/{mode}/{i}/" + "x" * (i % 97)
        spec = JobSpec(value, id=default_job_id("seed", value) if mode == "external_id" else None)
        for chunk in chunker.compress(encode_job_line(spec)):
            out += chunk
        if i % 250 == 249:
            for chunk in chunker.flush():
                out += chunk
    for chunk in chunker.finish():
        out += chunk
    return bytes(out)


def _upload_then_drop(url: str, project: str, body: bytes, sent: int) -> None:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as s:
        head = (
            f"POST /api/v1/admin/projects/{project}/source HTTP/1.1\r\nHost: {host}\r\n"
            f"Authorization: Bearer {ADMIN_TOKEN}\r\nContent-Type: application/zstd\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        s.sendall(head.encode() + body[:sent])
        time.sleep(1.0)  # let the server decode and commit what it has
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    # closed with RST: the server sees the peer vanish mid-body


async def _count(dsn: str, project: str) -> tuple[int, int]:
    conn = await asyncpg.connect(dsn)
    try:
        total = await conn.fetchval(
            "SELECT count(*) FROM tracker_jobs WHERE project_id=$1", project
        )
        distinct = await conn.fetchval(
            "SELECT count(DISTINCT value) FROM tracker_jobs WHERE project_id=$1", project
        )
    finally:
        await conn.close()
    return total, distinct


@pytest.mark.parametrize("mode", ["external_id", "unique_value"])
async def test_dropped_upload_keeps_batches_and_rerun_dedups(pg_dsn: str, mode: str) -> None:
    project = f"src-{mode.replace('_', '-')}"
    await seed(pg_dsn, project, 0, identity_mode=mode)
    body = _source(mode, N_JOBS)
    with live_pg_server(pg_dsn) as url:
        await asyncio.to_thread(_upload_then_drop, url, project, body, int(len(body) * 0.7))
        await asyncio.sleep(0.5)
        committed, distinct = await _count(pg_dsn, project)
        assert committed % 1000 == 0 and committed == distinct, committed
        assert 1000 <= committed < N_JOBS, committed  # some batches landed, not the tail
        async with httpx.AsyncClient(timeout=60) as client:
            r = await client.post(
                f"{url}/api/v1/admin/projects/{project}/source", content=body,
                headers={**ADMIN, "Content-Type": "application/zstd"},
            )  # fmt: skip
            assert r.status_code == 200, r.text
            assert r.json()["jobs"] == N_JOBS
            assert r.json()["inserted"] == N_JOBS - committed
            r = await client.get(f"{url}/api/v1/admin/projects/{project}", headers=ADMIN)
            assert r.json()["job_counts"]["todo"] == N_JOBS
    assert await _count(pg_dsn, project) == (N_JOBS, N_JOBS)
