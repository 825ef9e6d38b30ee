"""hq_domain.worker_tally: the in-memory per-worker counts the complete/fail routes feed."""

from __future__ import annotations

from hq_domain.jobs import JobStatus
from hq_domain.worker import ItemResult
from hq_domain.worker_tally import WorkerTally


def _r(applied: bool, status: JobStatus | None = None) -> ItemResult:
    return ItemResult(1, "a", applied, status if applied else None)


def test_counts_applied_items_per_project_and_worker() -> None:
    t = WorkerTally()
    t.completed("p", "w1", [_r(True, JobStatus.DONE), _r(False), _r(True, JobStatus.DONE)])
    t.completed("p", "w1", [_r(True, JobStatus.DONE)])
    t.failed("p", "w1", [_r(True, JobStatus.TODO), _r(True, JobStatus.FAILED)])  # retryable too
    t.failed("q", "w2", [_r(True, JobStatus.RESET_EXHAUSTED)])
    t.completed("q", "w3", [_r(False)])  # only stale items: nothing to flush
    assert t.drain() == {("p", "w1"): (3, 2), ("q", "w2"): (0, 1)}
    assert t.drain() == {}


def test_restore_after_a_failed_flush_adds_to_newer_counts() -> None:
    t = WorkerTally()
    t.completed("p", "w", [_r(True, JobStatus.DONE)])
    drained = t.drain()
    t.failed("p", "w", [_r(True, JobStatus.FAILED)])
    t.restore(drained)
    assert t.drain() == {("p", "w"): (1, 1)}
