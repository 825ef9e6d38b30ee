"""Progress of a project: history points, rate, ETA, failure groups and worker activity.

The history is a series of per-minute snapshots of a project's five job counts (written by the
background loop, never by a request). Rates are differences of snapshots: ``done`` only ever
grows except when an operator deletes done jobs, so Δdone over a window is the number of jobs
finished in it; failures are Δ(failed + reset_exhausted), clipped at zero (a requeue moves
failed jobs back to todo). Resets (a retryable failure or a lease expiry, :mod:`hq_domain.lifecycle`)
leave no trace in the five counts, so each snapshot also carries the project's running total
of resets, and resets per step are differences of it like the others. Keeping snapshots instead of event counters costs the claim path
nothing and makes the hourly rollup trivial: the snapshot at the top of each hour is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hq_domain.projects import JobCounts

MINUTE_S = 60
HOUR_S = 3600
MINUTE_RETENTION_S = 7 * 86400
"""Per-minute snapshots are kept this long; after that only the top-of-hour ones remain."""
HOUR_RETENTION_S = 400 * 86400
RATE_WINDOW_S = 15 * MINUTE_S
"""The "current rate" is the average over the last quarter of an hour."""
ACTIVE_WORKER_WINDOW_S = 15 * MINUTE_S
WORKER_MINUTE_RETENTION_S = 2 * 86400
"""Jobs done/failed per worker and minute (hq_domain.worker_tally) are kept this long."""
FAILURE_SAMPLE = 1000
"""Recent failures are grouped over at most this many most recent failed jobs."""


@dataclass(frozen=True, slots=True)
class HistoryPoint:
    minute_s: int
    counts: JobCounts
    resets: int = 0
    """The project's running total of resets at the snapshot (only differences mean anything:
    it starts at 0 with the project, or again after a TRUNCATE of the jobs)."""


@dataclass(frozen=True, slots=True)
class Progress:
    counts: JobCounts
    percent_done: float | None
    """done / all jobs × 100, or None for a project without jobs."""
    rate_per_minute: float | None
    """Jobs done per minute over the last RATE_WINDOW_S, or None without enough history."""
    eta_seconds: int | None
    """todo + wip at the current rate, or None when there is no rate (or nothing left: 0)."""
    resets_per_minute: float | None = None
    """Resets per minute between the snapshots of the last RATE_WINDOW_S, or None."""


@dataclass(frozen=True, slots=True)
class FailureGroup:
    code: str
    jobs: int
    last_job_id: int
    last_message: str


@dataclass(frozen=True, slots=True)
class WorkerActivity:
    worker_id: str
    user_id: str | None
    project_id: str
    last_seen_s: int
    claim_requests: int
    jobs_claimed: int
    jobs_in_hand: int
    jobs_done: int = 0
    """Completions this worker reported in the window (counted by the servers' processes)."""
    jobs_failed: int = 0


def total(c: JobCounts) -> int:
    return c.todo + c.wip + c.done + c.failed + c.reset_exhausted


def percent_done(c: JobCounts) -> float | None:
    n = total(c)
    return None if n == 0 else 100.0 * c.done / n


def minute_of(now_s: int) -> int:
    return now_s - now_s % MINUTE_S


def keep_point(minute_s: int, now_s: int) -> bool:
    """Retention: every minute for a week, the top-of-hour snapshot for HOUR_RETENTION_S."""
    age = now_s - minute_s
    if age <= MINUTE_RETENTION_S:
        return True
    return minute_s % HOUR_S == 0 and age <= HOUR_RETENTION_S


def rate_per_minute(
    points: Sequence[HistoryPoint], now_counts: JobCounts, now_s: int, window_s: int = RATE_WINDOW_S
) -> float | None:
    """Done per minute between the oldest snapshot inside the window and now."""
    inside = [p for p in points if now_s - window_s <= p.minute_s < now_s]
    if not inside:
        return None
    first = min(inside, key=lambda p: p.minute_s)
    elapsed = now_s - first.minute_s
    if elapsed < MINUTE_S:
        return None
    return max(0, now_counts.done - first.counts.done) * MINUTE_S / elapsed


def resets_per_minute(
    points: Sequence[HistoryPoint], now_s: int, window_s: int = RATE_WINDOW_S
) -> float | None:
    """Resets per minute between the oldest and the newest snapshot inside the window (the
    current total is not read on a request: it is only in the snapshots)."""
    inside = sorted((p for p in points if now_s - window_s <= p.minute_s <= now_s),
                    key=lambda p: p.minute_s)
    if len(inside) < 2:
        return None
    first, last = inside[0], inside[-1]
    return max(0, last.resets - first.resets) * MINUTE_S / (last.minute_s - first.minute_s)


def progress(points: Sequence[HistoryPoint], now_counts: JobCounts, now_s: int) -> Progress:
    rate = rate_per_minute(points, now_counts, now_s)
    left = now_counts.todo + now_counts.wip
    if left == 0:
        eta: int | None = 0
    elif rate:
        eta = round(left / rate * MINUTE_S)
    else:
        eta = None
    return Progress(now_counts, percent_done(now_counts), rate, eta, resets_per_minute(points, now_s))


@dataclass(frozen=True, slots=True)
class SeriesPoint:
    """One bar of a chart: what happened in [start_s, start_s + step_s)."""

    start_s: int
    done: int
    failed: int
    todo: int
    resets: int = 0


def series(points: Sequence[HistoryPoint], since_s: int, step_s: int) -> list[SeriesPoint]:
    """Per-step done/failed/resets (snapshot differences) and queue depth, oldest first.

    A step [b, b + step) runs from its first snapshot to the first snapshot of the next step
    (the last step: to the newest snapshot), so partial steps at either end still show; a
    step whose next step has no snapshot (a gap in the history) is left out, not guessed."""
    pts = sorted(points, key=lambda p: p.minute_s)
    first_in: dict[int, HistoryPoint] = {}
    for p in pts:
        if p.minute_s >= since_s - since_s % step_s:
            first_in.setdefault(p.minute_s - p.minute_s % step_s, p)
    if not first_in:
        return []
    newest = pts[-1]
    last_step = max(first_in)
    out = []
    for b in sorted(first_in):
        lo = first_in[b]
        hi = newest if b == last_step else first_in.get(b + step_s)
        if hi is None or hi.minute_s <= lo.minute_s:
            continue
        cur, nxt = lo.counts, hi.counts
        failed = (nxt.failed + nxt.reset_exhausted) - (cur.failed + cur.reset_exhausted)
        out.append(SeriesPoint(b, max(0, nxt.done - cur.done), max(0, failed), nxt.todo,
                               max(0, hi.resets - lo.resets)))
    return out


def group_failures(rows: Sequence[tuple[int, dict | None]]) -> list[FailureGroup]:
    """Group (job_id, execution_error) by error code, most frequent first."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for job_id, err in rows:
        err = err or {}
        code = str(err.get("code") or "unknown")
        groups.setdefault(code, []).append((job_id, str(err.get("message") or "")))
    out = []
    for code, items in groups.items():
        last_id, last_msg = max(items)
        out.append(FailureGroup(code, len(items), last_id, last_msg))
    return sorted(out, key=lambda g: (-g.jobs, g.code))
