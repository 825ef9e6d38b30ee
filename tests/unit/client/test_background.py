"""The background renewer (thread and asyncio task) against the fake tracker in real time."""

from __future__ import annotations

import asyncio
import time

import pytest

from hq_adapters.client import JobState, ProjectQueue, open_async_project_queue
from tests.unit.client.conftest import CONFIG
from tests.unit.client.fakes import FakeTracker, WallClock

pytestmark = pytest.mark.timeout(30)


def test_renewer_thread_keeps_job_alive_and_reports_theft():
    tracker = FakeTracker(WallClock())
    tracker.add_jobs(2)
    lost = []
    with ProjectQueue(CONFIG, "proj", transport=tracker.transport()) as queue:
        keep, steal = queue.claim_jobs(2, lease_seconds=2, on_lost=lost.append)
        tracker.jobs[steal.job_id].attempt_id = "at_thief"
        assert steal.lost_event.wait(2.0)
        time.sleep(2.6)  # past the 2 s lease: only renewals keep it
        assert keep.held and lost == [steal]
        assert keep.complete("success")["status"] == "applied"
        assert tracker.count("extend-lease") >= 4
    assert keep.state is JobState.FINISHED


def test_renewer_thread_stops_on_close():
    tracker = FakeTracker(WallClock())
    tracker.add_jobs(1)
    queue = ProjectQueue(CONFIG, "proj", transport=tracker.transport())
    (job,) = queue.claim_jobs(1, lease_seconds=2)
    queue.close()
    assert job.state is JobState.RELEASED
    assert queue._renewer is not None and not queue._renewer.is_alive()
    count = tracker.count("extend-lease")
    time.sleep(0.5)
    assert tracker.count("extend-lease") == count


async def test_renewer_task_keeps_job_alive_and_reports_theft():
    tracker = FakeTracker(WallClock())
    tracker.add_jobs(2)
    async with open_async_project_queue(
        CONFIG, "proj", transport=tracker.async_transport()
    ) as queue:
        keep, steal = (await queue.claim_jobs(2, lease_seconds=2)).jobs
        tracker.jobs[steal.job_id].attempt_id = "at_thief"
        await asyncio.wait_for(steal.lost_event.wait(), 2.0)
        await asyncio.sleep(2.6)
        assert keep.held
        assert (await keep.complete("success"))["status"] == "applied"
        renewer = queue._renewer
    assert renewer is not None and renewer.done()
