from __future__ import annotations

import pytest

from hq_adapters.client import Config, ProjectQueue
from tests.unit.client.fakes import FakeClock, FakeTracker, Rng

CONFIG = Config("https://hq.test/base/", "tok-123", "v1.2")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def tracker(clock: FakeClock) -> FakeTracker:
    return FakeTracker(clock)


@pytest.fixture
def rng() -> Rng:
    return Rng(0.5)


@pytest.fixture
def queue(tracker: FakeTracker, clock: FakeClock, rng: Rng):
    q = ProjectQueue(
        CONFIG,
        "proj",
        transport=tracker.transport(),
        clock=clock,
        sleep=clock.sleep,
        rng=rng,
        renew=False,
    )
    yield q
    q.close()
