"""Request-log figures for ``tracker monitor --log-file``.

HQ keeps no request metrics in PostgreSQL (the runbook: structured logs and direct queries
are enough for a first pilot), so the 429 rate, the ``retry_after_ms`` distribution and
claim/mutation latency come from the tracker's JSON request log: one object per line with
``method``, ``route``, ``status``, ``latency_ms``, ``project`` and ``worker_id``, plus
``retry_after_ms`` on 429 lines. Lines that are not such objects (startup messages, other
loggers) are skipped. A ``time`` field (RFC 3339 string or UNIX seconds/milliseconds), when
present, limits the figures to the monitoring window; lines without one are always counted.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

ROUTE_KINDS = ("claim", "complete", "fail", "extend-lease")


def route_kind(route: str) -> str | None:
    """``claim``/``complete``/``fail``/``extend-lease`` for the worker job routes, else None.
    Works for a route template or a concrete path."""
    for kind in ROUTE_KINDS:
        if route.endswith(f"/jobs/{kind}"):
            return kind
    return None


def percentile(sorted_values: list[float], p: float) -> float | None:
    """Nearest-rank percentile of an ascending list (None when empty)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def summarize(values: list[float]) -> dict[str, Any]:
    ordered = sorted(values)
    return {
        "count": len(ordered),
        "min": ordered[0] if ordered else None,
        "p50": percentile(ordered, 50),
        "p90": percentile(ordered, 90),
        "p99": percentile(ordered, 99),
        "max": ordered[-1] if ordered else None,
    }


def _line_time(entry: dict[str, Any]) -> float | None:
    value = entry.get("time", entry.get("ts"))
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value / 1000 if value > 1e11 else float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            return None
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def log_stats(lines: Iterable[str], since_s: int | None = None) -> dict[str, Any]:
    """Per-project claim counts, 429 counts and ``retry_after_ms`` distribution, and latency
    by worker route kind, from JSON request-log lines."""
    request_lines = 0
    projects: dict[str, dict[str, Any]] = {}
    latency: dict[str, list[float]] = {kind: [] for kind in ROUTE_KINDS}
    for raw in lines:
        raw = raw.strip()
        if not raw.startswith("{"):
            continue
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("route"), str):
            continue
        status = _number(entry.get("status"))
        if status is None:
            continue
        stamp = _line_time(entry)
        if since_s is not None and stamp is not None and stamp < since_s:
            continue
        request_lines += 1
        kind = route_kind(entry["route"])
        if kind is None:
            continue
        elapsed = _number(entry.get("latency_ms"))
        if elapsed is not None:
            latency[kind].append(elapsed)
        if kind != "claim":
            continue
        project = str(entry.get("project") or entry.get("project_id") or "-")
        stats = projects.setdefault(project, {"claims": 0, "rate_limited": 0, "retry": []})
        stats["claims"] += 1
        if status == 429:
            stats["rate_limited"] += 1
            retry = _number(entry.get("retry_after_ms"))
            if retry is not None:
                stats["retry"].append(retry)
    return {
        "lines": request_lines,
        "projects": [
            {
                "project_id": pid,
                "claims": s["claims"],
                "rate_limited": s["rate_limited"],
                "rate_limited_ratio": round(s["rate_limited"] / s["claims"], 4),
                "retry_after_ms": summarize(s["retry"]),
            }
            for pid, s in sorted(projects.items())
        ],
        "latency_ms": {kind: summarize(values) for kind, values in latency.items()},
    }


def read_log_stats(path: Path, since_s: int | None = None) -> dict[str, Any]:
    """:func:`log_stats` over a file, or standard input when ``path`` is ``-``."""
    if str(path) == "-":
        return log_stats(sys.stdin, since_s)
    with open(path, encoding="utf-8", errors="replace") as handle:
        return log_stats(handle, since_s)
