"""What the project page's progress panel shows (issue 14): rate, ETA, charts, failures and
workers, computed here so the template only places numbers (no scripts: the CSP forbids them,
so the charts are server-rendered SVG)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hq_apps.durations import two_units
from hq_domain.ports import Store
from hq_domain.progress import (
    ACTIVE_WORKER_WINDOW_S,
    FAILURE_SAMPLE,
    HOUR_S,
    MINUTE_S,
    RATE_WINDOW_S,
    SeriesPoint,
    progress,
    series,
)
from hq_domain.projects import ProjectSummary

CHART_W, CHART_H = 600, 120


@dataclass(frozen=True, slots=True)
class Chart:
    title: str
    bars: list[dict[str, Any]]
    depth_points: str
    max_rate: int
    max_depth: int
    empty: bool


def chart(title: str, points: list[SeriesPoint], since_s: int, span_s: int, step_s: int) -> Chart:
    """Stacked done/failed/reset bars per step and the queue depth as a polyline."""
    slots = max(1, span_s // step_s)
    w = CHART_W / slots
    max_rate = max([p.done + p.failed + p.resets for p in points] + [1])
    max_depth = max([p.todo for p in points] + [1])
    bars, depth = [], []
    for p in points:
        i = (p.start_s - since_s) // step_s
        if not 0 <= i < slots:
            continue
        x = round(i * w, 2)
        hd = round(CHART_H * p.done / max_rate, 2)
        hf = round(CHART_H * p.failed / max_rate, 2)
        hr = round(CHART_H * p.resets / max_rate, 2)
        bars.append({"x": x, "w": max(0.5, round(w * 0.8, 2)), "done_y": round(CHART_H - hd, 2),
                     "done_h": hd, "failed_y": round(CHART_H - hd - hf, 2), "failed_h": hf,
                     "reset_y": round(CHART_H - hd - hf - hr, 2), "reset_h": hr,
                     "done": p.done, "failed": p.failed, "resets": p.resets, "todo": p.todo,
                     "start": p.start_s})
        depth.append(f"{round(x + w / 2, 2)},{round(CHART_H - CHART_H * p.todo / max_depth, 2)}")
    return Chart(title, bars, " ".join(depth), max_rate, max_depth, not bars)


REFRESH_CHOICES = (10, 30, 60)


def refresh_seconds(raw: str | None) -> int | None:
    """Optional auto-refresh of the project page (``?refresh=30``): a meta refresh, which the
    CSP allows (it governs fetches and scripts, not navigation); other values mean off."""
    return int(raw) if raw in {str(c) for c in REFRESH_CHOICES} else None


def eta_text(seconds_: int | None) -> str:
    if seconds_ is None:
        return "unknown"
    words = {"d": "d", "h": "h", "m": "min", "s": "s"}
    return " ".join(f"{n} {words[unit]}" for n, unit in two_units(seconds_))


async def progress_context(store: Store, summary: ProjectSummary, now_s: int) -> dict[str, Any]:
    pid = summary.project.id
    points = await store.project_history(pid, now_s - 25 * HOUR_S)
    prog = progress(points, summary.job_counts, now_s)
    # 60 minute slots and 24 hour slots, the current (partial) one last
    hour_since = now_s - now_s % MINUTE_S - (HOUR_S - MINUTE_S)
    day_since = now_s - now_s % HOUR_S - 23 * HOUR_S
    charts = [
        chart("Last hour (per minute)", series(points, hour_since, MINUTE_S), hour_since,
              HOUR_S, MINUTE_S),
        chart("Last day (per hour)", series(points, day_since, HOUR_S), day_since, 24 * HOUR_S,
              HOUR_S),
    ]
    return {
        "progress": prog,
        "eta_text": eta_text(prog.eta_seconds),
        "charts": charts,
        "chart_w": CHART_W,
        "chart_h": CHART_H,
        "failures": await store.recent_failures(pid, FAILURE_SAMPLE),
        "failure_sample": FAILURE_SAMPLE,
        "refresh_choices": REFRESH_CHOICES,
        **await workers_context(store, pid, now_s),
    }


async def workers_context(store: Store, project_id: str | None, now_s: int) -> dict[str, Any]:
    """Active workers of one project (or all) and a leaderboard by user (most jobs done in
    the window first)."""
    workers = await store.worker_activity(project_id, now_s - ACTIVE_WORKER_WINDOW_S)
    board: dict[str, dict[str, int]] = {}
    for w in workers:
        row = board.setdefault(w.user_id or "(unknown)", dict.fromkeys(
            ("workers", "done", "failed", "claimed", "in_hand"), 0))
        row["workers"] += 1
        row["done"] += w.jobs_done
        row["failed"] += w.jobs_failed
        row["claimed"] += w.jobs_claimed
        row["in_hand"] += w.jobs_in_hand
    leaderboard = sorted(board.items(), key=lambda kv: (
        -kv[1]["done"], -kv[1]["claimed"], -kv[1]["in_hand"], kv[0]))
    return {
        "active_workers": workers,
        "leaderboard": leaderboard,
        "worker_window_min": ACTIVE_WORKER_WINDOW_S // 60,
        "project_scope": project_id,
    }


async def projects_progress(
    store: Store, summaries: list[ProjectSummary], now_s: int
) -> list[dict[str, Any]]:
    """One row per project for the projects page: percent done, rate, ETA."""
    history = await store.all_history(now_s - RATE_WINDOW_S)
    rows = []
    for s in summaries:
        p = progress(history.get(s.project.id, []), s.job_counts, now_s)
        rows.append({"id": s.project.id, "progress": p, "eta_text": eta_text(p.eta_seconds)})
    return rows
