"""Plain-text tables and JSON output for the admin commands.

One style everywhere: timestamps as ISO-8601 UTC (``2026-12-01T05:12:36Z``), an absent value
as ``-``, booleans as ``yes``/``no``, lists comma-separated.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec

from hq_adapters.admin_client import wire
from hq_apps.durations import two_units


def print_json(value: Any) -> None:
    sys.stdout.write(msgspec.json.encode(wire.to_builtins(value)).decode() + "\n")


EMPTY = "-"
TIME_FIELDS = frozenset(
    {"created_at", "updated_at", "lease_expires_at", "completed_at", "last_login_at"}
)


def when(ts: int | None) -> str:
    """Unix seconds as ISO-8601 UTC."""
    if ts is None or ts is msgspec.UNSET:
        return EMPTY
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def cell(value: Any, width: int = 60) -> str:
    if value is None or value is msgspec.UNSET:
        return EMPTY
    if isinstance(value, str | list | tuple | dict) and not value:
        return EMPTY
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        value = ",".join(value)
    text = str(value).replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 1] + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.upper().ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines) + "\n"


def pairs(items: Sequence[tuple[str, Any]]) -> str:
    width = max(len(k) for k, _ in items)
    return "".join(f"{k.ljust(width)}  {cell(v, 200)}\n" for k, v in items)


def qps(value: float | None) -> str:
    return "unlimited" if value is None else f"{value:g}"


def project_rows(projects: Sequence[wire.ProjectSummary]) -> str:
    headers = ["id", "status", "identity", "order", "dispatch_qps", "todo", "wip", "done",
               "failed", "exhausted", "policy"]  # fmt: skip
    rows = [
        [
            p.id,
            p.status,
            p.identity_mode,
            p.claim_order,
            qps(p.dispatch_qps),
            p.job_counts.todo,
            p.job_counts.wip,
            p.job_counts.done,
            p.job_counts.failed,
            p.job_counts.reset_exhausted,
            p.policy_version,
        ]
        for p in projects
    ]
    return table(headers, rows)


def project_detail(p: wire.ProjectSummary) -> str:
    c = p.job_counts
    return pairs([
        ("id", p.id), ("status", p.status), ("identity_mode", p.identity_mode),
        ("claim_order", p.claim_order), ("dispatch_qps", qps(p.dispatch_qps)),
        ("worker_claim_qps", qps(p.worker_claim_qps)),
        ("max_jobs_per_claim", p.max_jobs_per_claim), ("max_resets", p.max_resets),
        ("recommended_lease_seconds", p.recommended_lease_seconds),
        ("client_versions", ",".join(p.client_versions) or EMPTY),
        ("policy_version", p.policy_version),
        ("job_counts", counts_text(c)),
        ("created_at", when(p.created_at)), ("updated_at", when(p.updated_at)),
    ])  # fmt: skip


def short_id(value: Any) -> Any:
    """A 67-character j1_ ID shortened to its ends for tables (``jobs get`` or ``--json`` show
    it whole), so VALUE keeps the width."""
    if isinstance(value, str) and len(value) > 24:
        return f"{value[:12]}…{value[-6:]}"
    return value


def counts_text(c: wire.JobCounts) -> str:
    total = c.todo + c.wip + c.done + c.failed + c.reset_exhausted
    return (f"{total} jobs: todo={c.todo} wip={c.wip} done={c.done} failed={c.failed} "
            f"reset_exhausted={c.reset_exhausted}")  # fmt: skip


def job_rows(jobs: Sequence[wire.AdminJob]) -> str:
    headers = ["job_id", "status", "type", "resets", "value", "id", "updated_at"]
    rows = [[j.job_id, j.status, j.type, j.reset_count, j.value, short_id(j.id),
             when(j.updated_at)] for j in jobs]  # fmt: skip
    return table(headers, rows)


def job_detail(j: wire.AdminJob) -> str:
    builtins = wire.to_builtins(j)
    items = [(k, _detail_value(k, v)) for k, v in builtins.items()]
    return pairs(items)


def _detail_value(key: str, value: Any) -> Any:
    if key in TIME_FIELDS and isinstance(value, int):
        return when(value)
    if isinstance(value, dict | list) and value:
        return msgspec.json.encode(value).decode()
    return value


def user_rows(users: Sequence[wire.User]) -> str:
    headers = ["id", "status", "roles", "github_login", "token_active", "token_viewable"]
    rows = [[u.id, u.status, ",".join(u.roles), u.github_login, u.machine_token_active,
             u.machine_token_viewable] for u in users]  # fmt: skip
    return table(headers, rows)


def duration(seconds_: int | None) -> str:
    if seconds_ is None:
        return "unknown"
    return "".join(f"{n}{unit}" for n, unit in two_units(seconds_))


def progress_lines(p: wire.Progress | None) -> str:
    """Percent done, rate and ETA under ``projects get`` (issue 14); nothing from a server
    without the progress route."""
    if p is None:
        return ""
    pct = "n/a (no jobs)" if p.percent_done is None else f"{p.percent_done:.1f}%"
    rate = ("unknown (needs a minute of history)" if p.rate_per_minute is None
            else f"{p.rate_per_minute:.1f} jobs/min (last 15 min)")
    resets = ("unknown" if p.resets_per_minute is None
              else f"{p.resets_per_minute:.1f}/min (expired leases and retryable failures)")
    return pairs([("percent_done", pct), ("rate", rate), ("eta", duration(p.eta_seconds)),
                  ("resets", resets)])
