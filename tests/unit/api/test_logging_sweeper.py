"""The per-request JSON log line (never a token) and the D2 background sweeper."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from litestar.testing import AsyncTestClient

from hq_adapters.memory import MemoryStore
from hq_apps.api.app import create_app
from hq_apps.logging import JsonFormatter
from hq_apps.settings import Settings
from hq_domain.clock import ManualClock
from tests.unit.api.conftest import ADMIN_TOKEN, WORKER, WORKER_TOKEN, Api, seed_users


async def test_one_json_line_per_request_without_tokens(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    await api.put_project("p")
    caplog.set_level(logging.INFO, logger="hq.api.request")
    caplog.clear()
    r = await api.claim("p", worker_id="logw")
    assert r.status_code == 200
    await api.client.get("/nope", headers={"X-Request-Id": "rid-1"})
    records = [r for r in caplog.records if r.name == "hq.api.request"]
    assert len(records) == 2
    lines = [json.loads(JsonFormatter().format(r)) for r in records]
    claim, missing = lines
    assert claim["msg"] == "request" and claim["level"] == "INFO"
    assert {k: claim[k] for k in ("method", "route", "status", "project", "worker_id", "user")} == {
        "method": "POST",
        "route": "/api/v1/projects/{project_id}/jobs/claim",
        "status": 200,
        "project": "p",
        "worker_id": "logw",
        "user": "worker",
    }
    assert isinstance(claim["latency_ms"], float)
    assert missing["status"] == 404 and missing["request_id"] == "rid-1"
    text = "\n".join(JsonFormatter().format(r) for r in caplog.records)
    assert WORKER_TOKEN not in text and ADMIN_TOKEN not in text
    assert WORKER["Authorization"] not in text


async def test_background_sweeper_resets_expired_leases() -> None:
    clock = ManualClock()
    store = MemoryStore(clock)
    await seed_users(store)
    app = create_app(Settings(sweep_interval_s=0.02), store, clock)
    async with AsyncTestClient(app) as client:
        api = Api(client, store, clock)
        await api.put_project("p")
        await api.enqueue("p", [{"id": "a", "value": "v"}])
        assert len((await api.claim("p", lease_seconds=5)).json()["jobs"]) == 1
        await asyncio.sleep(0.1)
        assert (await api.counts())["wip"] == 1
        clock.advance(6)
        for _ in range(100):
            if (await api.counts())["todo"] == 1:
                break
            await asyncio.sleep(0.02)
        assert await api.counts() == {
            "todo": 1, "wip": 0, "done": 0, "failed": 0, "reset_exhausted": 0,
        }  # fmt: skip
