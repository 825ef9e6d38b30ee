"""Pure arithmetic over the recorded runs: medians per (scenario, case, mode, implementation)
and the ours/reference ratios the report prints. No I/O, unit-tested."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

HIGHER_IS_BETTER = {"jobs_per_s"}
"""For every other metric (seconds, milliseconds, CPU) lower is better."""


def key_of(run: dict[str, Any]) -> tuple[str, str, str, str]:
    return (run["scenario"], run["case"], run["mode"], run["impl"])


def median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.median(present) if present else None


def nested(run: dict[str, Any], path: str) -> float | None:
    """``"latency_ms.claim.p99"`` → ``run["latency_ms"]["claim"]["p99"]`` (None if absent)."""
    value: Any = run
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value if isinstance(value, (int, float)) else None


def aggregate(runs: list[dict[str, Any]], metrics: list[str]) -> dict[tuple[str, ...], dict]:
    """Per key: the median of every metric over the repeats, the repeat count, summed errors."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        groups[key_of(run)].append(run)
    out: dict[tuple[str, ...], dict] = {}
    for key, members in groups.items():
        row: dict[str, Any] = {m: median(nested(r, m) for r in members) for m in metrics}
        row["n"] = len(members)
        row["http_errors"] = sum(int(r.get("http_errors") or 0) for r in members)
        row["failed"] = sum(1 for r in members if r.get("error"))
        row["runs_jobs_per_s"] = [r.get("jobs_per_s") for r in members]
        out[key] = row
    return out


def ratio(ours: float | None, ref: float | None, metric: str) -> float | None:
    """How many times better ours is: ours/ref for throughput, ref/ours for costs and times.

    Either way a ratio above 1.0 means ours is better, so one table reads the same for every
    metric. None when a side is missing or the denominator is zero."""
    if ours is None or ref is None:
        return None
    num, den = (ours, ref) if metric in HIGHER_IS_BETTER else (ref, ours)
    if den == 0:
        return None
    return num / den


def fmt_ratio(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


def fmt_num(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def paired_ratios(
    runs: list[dict[str, Any]], scenario: str, case: str, mode: str, metric: str
) -> list[float]:
    """The ratio of each interleaved pair (ours' run k against the reference's run k): how far
    the single pairs stray from the ratio of the medians. Failed runs pair with nothing."""
    by_rep: dict[str, dict[int, float]] = defaultdict(dict)
    for r in runs:
        if (r["scenario"], r["case"], r["mode"]) != (scenario, case, mode) or r.get("error"):
            continue
        value = nested(r, metric)
        if value is not None:
            by_rep[r["impl"]][int(r.get("rep", 0))] = value
    ours, ref = by_rep.get("ours", {}), by_rep.get("ref", {})
    out = [ratio(ours[k], ref[k], metric) for k in sorted(ours.keys() & ref.keys())]
    return [x for x in out if x is not None]


def fmt_range(values: Iterable[float | None], digits: int = 1, unit: str = "") -> str:
    """``lo–hi`` of the values present (one value alone, ``–`` for none)."""
    present = [v for v in values if v is not None]
    if not present:
        return "–"
    lo, hi = min(present), max(present)
    if f"{lo:.{digits}f}" == f"{hi:.{digits}f}":
        return f"{lo:.{digits}f}{unit}"
    return f"{lo:.{digits}f}–{hi:.{digits}f}{unit}"
