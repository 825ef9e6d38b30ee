"""Smoke tests of the benchmark helpers (the benchmarks themselves run on demand only)."""

from __future__ import annotations

import asyncio
import struct
import zlib

import pytest
from benchmarks import ceiling, findings, plot, profile, scale
from benchmarks import internals as run
from benchmarks import internals_report as report
from benchmarks.loadgen.http import Connection, HttpError
from benchmarks.loadgen.stats import Latencies, percentile


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile(values, 100) == 100.0
    assert percentile([7.0], 99) == 7.0
    assert percentile([], 50) != percentile([], 50)  # NaN


def test_latencies_summary_in_milliseconds() -> None:
    lat = Latencies()
    for ms in (1, 2, 3, 4):
        lat.add("claim", ms / 1000)
    lat.add("complete", 0.010)
    summary = lat.summary_ms()
    assert lat.requests == 5
    assert summary["claim"]["n"] == 4
    assert summary["claim"]["p50"] == pytest.approx(2.0)
    assert summary["complete"]["p99"] == pytest.approx(10.0)


def _png_pixels(data: bytes) -> tuple[int, int, bytes]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, size = 8, b"", (0, 0)
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        if kind == b"IHDR":
            size = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return size[0], size[1], zlib.decompress(idat)


def test_chart_is_a_valid_png_with_the_lines_drawn() -> None:
    red = (214, 39, 40)
    data = plot.chart(
        [
            plot.Series("HTTP W=1", [(16, 500.0), (64, 2000.0)], red),
            plot.Series("SQL W=1", [(16, 900.0), (64, 4000.0)], (31, 119, 180), dashed=True),
        ],
        "TEST",
        width=400,
        height=300,
    )
    width, height, raw = _png_pixels(data)
    assert (width, height) == (400, 300)
    assert len(raw) == height * (1 + 3 * width)
    assert bytes(red) in raw  # the solid series was drawn


def test_canvas_text_sets_pixels() -> None:
    c = plot.Canvas(20, 10)
    c.text(1, 1, "B=1")
    assert bytes((0, 0, 0)) in bytes(c.pixels)


async def _serve_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    for _ in range(2):  # two requests on one keep-alive connection
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        body = await reader.readexactly(length) if length else b""
        status = b"200 OK" if b"POST" in head else b"404 Not Found"
        payload = b'{"echo":' + (body or b"null") + b"}\n"
        writer.write(
            b"HTTP/1.1 " + status + b"\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n" % len(payload) + payload
        )
        await writer.drain()
    writer.close()


async def test_http_client_keeps_the_connection_and_decodes_json() -> None:
    server = await asyncio.start_server(_serve_once, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    conn = Connection("127.0.0.1", port, {"Authorization": "Bearer t"})
    try:
        status, doc = await conn.json("POST", "/x", {"a": 1})
        assert (status, doc) == (200, {"echo": {"a": 1}})
        with pytest.raises(HttpError) as err:
            await conn.json("GET", "/missing")
        assert err.value.status == 404
    finally:
        await conn.close()
        server.close()
        await server.wait_closed()


def test_ceiling_runs_the_adapters_own_statements() -> None:
    from hq_adapters.postgres.queries import q

    sql = ceiling.adapter_statements()
    assert sql == {
        "gate": q("worker_gate"),
        "claim": q("claim_op_fifo"),
        "complete": q("complete_op"),
    }
    assert "SKIP LOCKED" in sql["claim"]


def test_ceiling_binds_what_the_adapter_binds() -> None:
    from hq_adapters.postgres import store, worker
    from hq_domain.projects import WorkerOp

    for op in WorkerOp:
        assert ceiling.allowed(op) == worker.ALLOWED_STATUSES[op]
    # The direct-mode pool's plan setting lives in store.py; the ceiling must use the same one.
    assert ceiling.SERVER_SETTINGS == {"plan_cache_mode": store.PLAN_CACHE_MODE}


def test_scale_sql_blocks_exist() -> None:
    assert {"insert_finished", "insert_expired", "count_expired"} <= set(scale.SQL)


def test_profile_categories() -> None:
    assert profile.category("/x/site-packages/asyncpg/connection.py", "fetch").startswith("asyncpg")
    assert profile.category("~", "<method 'decode' of 'msgspec.json.Decoder' objects>").startswith(
        "msgspec"
    )
    assert profile.category("/repo/src/hq_domain/ids.py", "new_attempt_id").startswith("hq_domain")


def test_plan_job_counts_are_clamped() -> None:
    assert run.QUICK.jobs(16, 1) == run.QUICK.min_jobs
    assert run.QUICK.jobs(256, 4) == run.QUICK.max_jobs
    assert run.QUICK.batches == (16, 64, 256) and run.QUICK.workers == (1, 4)


def _result(level: str, batch: int, workers: int, jobs_per_s: float) -> dict:
    return {
        "level": level,
        "batch": batch,
        "workers": workers,
        "jobs": 1000,
        "jobs_per_s": jobs_per_s,
        "requests_per_s": 10.0,
        "client_cpu_us_per_request": 100.0,
        "server_cpu_s": 1.0,
        "wall_s": 2.0,
        "latency_ms": {"claim": {"n": 1, "p50": 1.0, "p99": 2.0}},
        "ok": True,
        "name": f"{level}-{batch}-{workers}",
    }


def test_report_computes_ratios_and_verdicts(tmp_path) -> None:
    results = {
        "throughput": [
            _result("sql", 64, 4, 1000.0),
            _result("http", 64, 4, 400.0),
            _result("sql", 256, 1, 1000.0),
            _result("http", 256, 1, 700.0),
        ]
    }
    doc = tmp_path / "performance.md"
    report.write(results, doc)
    text = doc.read_text()
    assert "| 40.0% | ≥ 50%: NOT met |" in text
    assert "| 70.0% | ≥ 60%: met |" in text
    assert "## What each optimisation bought" in text and "## Source import" in text
    assert "asgi-server.md" in text.rstrip().splitlines()[-1]
    assert (tmp_path / "performance.png").read_bytes().startswith(b"\x89PNG")
    notes = "\n".join(findings.throughput_notes(results))
    assert "Targets met: 1 of 2" in notes
    assert "1,000 µs of CPU per job and was 50% busy" in notes


def test_plans_probe_runs_the_ceiling_statements() -> None:
    from benchmarks import plans

    assert plans.adapter_statements is ceiling.adapter_statements
    assert plans.SERVER_SETTINGS is ceiling.SERVER_SETTINGS


def test_counts_finding_says_whether_summaries_grow() -> None:
    from benchmarks.findings import _counts_finding

    def scale(rows: int, ms: float) -> dict:
        return {"finished_rows": rows, "latency_ms": {"admin_get_project": {"p50": ms}}}

    flat = _counts_finding({"scale": [scale(0, 1.2), scale(10_000_000, 1.5)]})
    assert "do not grow" in flat[0] and "1.5 ms at 10,000,000" in flat[0]
    grows = _counts_finding({"scale": [scale(0, 81), scale(10_000_000, 1953)]})
    assert "grow with the project" in grows[0] and "1,953 ms" in grows[0]
    assert _counts_finding({"scale": [scale(0, 1.0)]}) == []
