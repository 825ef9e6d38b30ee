"""hq_domain.progress: rate, ETA, series, retention and failure grouping (issue 14)."""

from __future__ import annotations

from hq_domain.progress import (
    HOUR_RETENTION_S,
    HOUR_S,
    MINUTE_RETENTION_S,
    HistoryPoint,
    group_failures,
    keep_point,
    minute_of,
    percent_done,
    progress,
    rate_per_minute,
    resets_per_minute,
    series,
)
from hq_domain.projects import JobCounts

T0 = 1_000_020  # a minute boundary (1_000_020 % 60 == 0)


def pt(minute: int, todo: int = 0, done: int = 0, failed: int = 0, exhausted: int = 0) -> HistoryPoint:
    return HistoryPoint(T0 + 60 * minute, JobCounts(todo=todo, done=done, failed=failed,
                                                    reset_exhausted=exhausted))


def test_minute_of_and_percent() -> None:
    assert T0 % 60 == 0 and minute_of(T0 + 59) == T0
    assert percent_done(JobCounts()) is None
    assert percent_done(JobCounts(todo=3, done=1)) == 25.0


def test_rate_uses_the_oldest_snapshot_in_the_window() -> None:
    points = [pt(0, done=0), pt(5, done=50), pt(10, done=60)]
    now = T0 + 600
    assert rate_per_minute(points, JobCounts(done=100), now) == 10.0  # 100 in 10 min
    assert rate_per_minute(points, JobCounts(done=100), now, window_s=300) == 10.0  # (100-50)/5
    assert rate_per_minute([], JobCounts(done=5), now) is None
    assert rate_per_minute([pt(10)], JobCounts(done=5), T0 + 630) is None  # < a minute of history
    # done rows deleted by an operator never make the rate negative
    assert rate_per_minute([pt(0, done=10)], JobCounts(done=2), T0 + 120) == 0.0


def test_eta() -> None:
    now = T0 + 600
    p = progress([pt(0, todo=100)], JobCounts(todo=50, wip=10, done=40), now)
    assert (p.rate_per_minute, p.eta_seconds) == (4.0, 900)  # 60 left at 4/min
    assert progress([pt(0)], JobCounts(done=5), now).eta_seconds == 0  # nothing left
    assert progress([pt(0, done=5)], JobCounts(todo=1, done=5), now).eta_seconds is None  # stalled
    assert progress([], JobCounts(todo=1), now).eta_seconds is None


def test_series_per_step_skips_gaps_and_clips_requeues() -> None:
    points = [pt(0, todo=9, done=0, failed=2), pt(1, todo=7, done=1, failed=3),
              pt(2, todo=7, done=1, failed=0), pt(4, todo=1, done=8), pt(5, todo=0, done=9)]
    s = series(points, T0, 60)
    assert [(x.start_s - T0, x.done, x.failed, x.todo) for x in s] == [
        (0, 1, 1, 7),    # minute 0→1
        (60, 0, 0, 7),   # a requeue of 3 failed jobs: failures clipped at 0
        (240, 1, 0, 0),  # minute 4→5; minute 2 is left out (no snapshot in minute 3)
    ]
    assert [x.start_s - T0 for x in series(points, T0 + 120, 60)] == [240]


def test_series_by_hour_shows_partial_hours_at_both_ends() -> None:
    h0 = 1000 * HOUR_S
    pts = [HistoryPoint(h0 + 1800, JobCounts(done=0)),         # 00:30, the first snapshot
           HistoryPoint(h0 + 1860, JobCounts(done=10)),
           HistoryPoint(h0 + HOUR_S, JobCounts(done=300)),     # 01:00
           HistoryPoint(h0 + HOUR_S + 1200, JobCounts(done=500))]  # 01:20, the newest
    assert [(x.start_s - h0, x.done) for x in series(pts, h0, HOUR_S)] == [
        (0, 300), (HOUR_S, 200)]


def test_retention_keeps_a_week_of_minutes_then_hours() -> None:
    now = 100 * 86400
    assert keep_point(now - MINUTE_RETENTION_S, now)
    assert not keep_point(now - MINUTE_RETENTION_S - 60, now)
    top = now - MINUTE_RETENTION_S - HOUR_S - now % HOUR_S
    assert keep_point(top, now)
    assert not keep_point(now - HOUR_RETENTION_S - HOUR_S - now % HOUR_S, now)


def test_group_failures_by_code_most_frequent_first() -> None:
    rows = [(5, {"code": "http_500", "message": "a"}), (9, {"code": "http_500", "message": "b"}),
            (7, {"code": "dns", "message": "c"}), (3, None)]
    groups = group_failures(rows)
    assert [(g.code, g.jobs, g.last_job_id, g.last_message) for g in groups] == [
        ("http_500", 2, 9, "b"), ("dns", 1, 7, "c"), ("unknown", 1, 3, "")]


def test_resets_per_step_and_per_minute() -> None:
    """Resets are a running total per snapshot: per step and per minute they are differences,
    clipped at 0 (a TRUNCATE starts the total again)."""
    points = [HistoryPoint(T0, JobCounts(todo=5), resets=2),
              HistoryPoint(T0 + 60, JobCounts(todo=5), resets=6),
              HistoryPoint(T0 + 120, JobCounts(todo=5), resets=1),
              HistoryPoint(T0 + 180, JobCounts(todo=5), resets=4)]
    assert [(x.start_s - T0, x.resets) for x in series(points, T0, 60)] == [
        (0, 4), (60, 0), (120, 3)]
    assert HistoryPoint(T0, JobCounts()).resets == 0
    assert resets_per_minute(points[:2], T0 + 90) == 4.0  # 4 between the snapshots 1 min apart
    assert resets_per_minute(points[:1], T0 + 90) is None  # one snapshot: no rate
    assert resets_per_minute([], T0) is None
    p = progress(points[:2], JobCounts(todo=5), T0 + 90)
    assert p.resets_per_minute == 4.0
