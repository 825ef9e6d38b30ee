"""Plain-text tables for ``tracker monitor`` (the ``--json`` output is the report dict)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hq_apps.durations import two_units

JOB_STATUSES = ("todo", "wip", "done", "failed", "reset_exhausted")

Column = tuple[str, Callable[[dict[str, Any]], str]]


def age(seconds: int | None) -> str:
    """``3d04h``, ``2h05m``, ``7m09s`` or ``42s``: two units are enough to read a queue."""
    if seconds is None:
        return "-"
    (first, unit), *rest = two_units(seconds)
    return f"{first}{unit}" + "".join(f"{n:02d}{u}" for n, u in rest)


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def num(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def table(columns: list[Column], rows: list[dict[str, Any]]) -> str:
    headers = [name for name, _ in columns]
    cells = [[get(row) for _, get in columns] for row in rows]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(headers)]

    def line(values: list[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    return "\n".join(
        [line(headers), *(line(c) for c in cells)] if cells else [line(headers), "(none)"]
    )


def _finished(p: dict[str, Any]) -> int:
    f = p["finished"]
    return f["done"] + f["failed"] + f["reset_exhausted"]


PROJECT_COLUMNS: list[Column] = [
    ("project", lambda p: p["project_id"]),
    ("status", lambda p: p["status"]),
    *((s, lambda p, s=s: str(p["job_counts"][s])) for s in JOB_STATUSES),
    ("oldest_todo", lambda p: age(p["oldest_todo_age_seconds"])),
    ("expired_wip", lambda p: str(p["expired_wip"])),
    ("done%", lambda p: "-" if p["percent_done"] is None else f"{p['percent_done']:.1f}"),
    ("rate/min", lambda p: "-" if p["rate_per_minute"] is None else f"{p['rate_per_minute']:.1f}"),
    ("eta", lambda p: "-" if p["eta_seconds"] is None else age(p["eta_seconds"])),
    ("finished", lambda p: str(_finished(p))),
    ("perm_fail", lambda p: pct(p["finished"]["permanent_failure_rate"])),
    ("reset_exh", lambda p: pct(p["finished"]["reset_exhausted_rate"])),
    ("receipts", lambda p: pct(p["finished"]["receipt_bearing_rate"])),
]

WORKER_COLUMNS: list[Column] = [
    ("project", lambda w: w["project_id"]),
    ("worker", lambda w: w["worker_id"]),
    ("policy", lambda w: str(w["policy_version"])),
    ("current", lambda w: str(w["current_policy_version"])),
    ("qps_limit", lambda w: num(w["worker_claim_qps"])),
    ("minutes", lambda w: str(w["buckets"])),
    ("claims", lambda w: str(w["claim_requests"])),
    ("jobs", lambda w: str(w["jobs_dispatched"])),
    ("mean/s", lambda w: f"{w['mean_claim_rps']:.3f}"),
    ("peak/s", lambda w: f"{w['peak_claim_rps']:.3f}"),
    ("flags", lambda w: ",".join(f for f in ("stale_policy", "over_limit") if w[f]) or "-"),
]

RATE_LIMIT_COLUMNS: list[Column] = [
    ("project", lambda p: p["project_id"]),
    ("claims", lambda p: str(p["claims"])),
    ("429", lambda p: str(p["rate_limited"])),
    ("429_rate", lambda p: pct(p["rate_limited_ratio"])),
    *(
        (f"retry_after_ms {k}", lambda p, k=k: num(p["retry_after_ms"][k]))
        for k in ("p50", "p90", "p99", "max")
    ),
]

LATENCY_COLUMNS: list[Column] = [
    ("route", lambda r: r["route"]),
    ("requests", lambda r: str(r["count"])),
    *((f"latency_ms {k}", lambda r, k=k: num(r[k])) for k in ("p50", "p90", "p99", "max")),
]


def render_text(report: dict[str, Any]) -> str:
    window = age(report["window_seconds"])
    out = [
        f"PROJECTS (rates over rows that finished in the last {window})",
        table(PROJECT_COLUMNS, report["projects"]),
        "",
        f"WORKER CLAIM RATE (claim buckets of the last {age(report['bucket_window_seconds'])})",
        table(WORKER_COLUMNS, report["workers"]),
        "",
    ]
    requests = report.get("requests")
    if requests is None:
        out.append(
            "REQUESTS: no --log-file given (the 429 rate, retry_after_ms and latency need it)"
        )
    else:
        latency = [{"route": kind, **s} for kind, s in requests["latency_ms"].items()]
        out += [
            f"REQUESTS ({requests['lines']} request log lines in the last {window})",
            table(RATE_LIMIT_COLUMNS, requests["projects"]),
            "",
            table(LATENCY_COLUMNS, latency),
        ]
    return "\n".join(out) + "\n"
