"""Request-log figures for ``tracker monitor --log-file``."""

from __future__ import annotations

import io
import json

from hq_apps.cli import ops_logs
from hq_apps.cli.ops_logs import log_stats, percentile, route_kind

CLAIM = "/api/v1/projects/{project_id}/jobs/claim"


def line(route: str = CLAIM, status: int = 200, project: str | None = "p1", **extra) -> str:
    doc = {"time": "2026-11-29T12:00:00Z", "level": "INFO", "msg": "request", "method": "POST",
           "route": route, "status": status, "latency_ms": 1.5, "project": project,
           "worker_id": "w1", **extra}  # fmt: skip
    return json.dumps(doc)


def test_route_kinds_from_templates_and_paths() -> None:
    assert route_kind(CLAIM) == "claim"
    assert route_kind("/api/v1/projects/sina/jobs/extend-lease") == "extend-lease"
    assert route_kind("/api/v1/projects/{project_id:str}/jobs/complete") == "complete"
    assert route_kind("/api/v1/admin/projects/{project_id}/jobs") is None
    assert route_kind("/healthz") is None


def test_nearest_rank_percentiles() -> None:
    values = [float(v) for v in range(1, 101)]
    assert [percentile(values, p) for p in (50, 90, 99, 100)] == [50, 90, 99, 100]
    assert percentile([7.0], 99) == 7.0
    assert percentile([], 50) is None


def test_429_rate_and_retry_distribution_per_project() -> None:
    lines = [line() for _ in range(6)]
    lines += [line(status=429, retry_after_ms=ms) for ms in (400, 100, 300, 200)]
    lines += [line(project="p2"), line(project="p2", status=429)]  # 429 without retry_after_ms
    stats = log_stats(lines)
    p1, p2 = stats["projects"]
    assert (p1["project_id"], p1["claims"], p1["rate_limited"], p1["rate_limited_ratio"]) == (
        "p1", 10, 4, 0.4,
    )  # fmt: skip
    assert p1["retry_after_ms"] == {
        "count": 4,
        "min": 100,
        "p50": 200,
        "p90": 400,
        "p99": 400,
        "max": 400,
    }
    assert (p2["claims"], p2["rate_limited"], p2["retry_after_ms"]["count"]) == (2, 1, 0)
    assert p2["retry_after_ms"]["p50"] is None


def test_latency_by_worker_route_and_other_routes_counted_as_lines_only() -> None:
    lines = [
        line(latency_ms=10),
        line(latency_ms=30),
        line(route="/api/v1/projects/{project_id}/jobs/complete", latency_ms=5),
        line(route="/api/v1/projects/{project_id}/jobs/fail", latency_ms=7),
        line(route="/api/v1/admin/projects", project=None, latency_ms=99),
    ]
    stats = log_stats(lines)
    assert stats["lines"] == 5
    lat = stats["latency_ms"]
    assert (lat["claim"]["count"], lat["claim"]["p50"], lat["claim"]["max"]) == (2, 10, 30)
    assert (lat["complete"]["count"], lat["fail"]["count"], lat["extend-lease"]["count"]) == (
        1,
        1,
        0,
    )
    assert [p["project_id"] for p in stats["projects"]] == ["p1"]


def test_non_request_lines_are_skipped() -> None:
    lines = [
        "plain text from somewhere",
        "{not json",
        json.dumps({"level": "INFO", "msg": "listening"}),
        json.dumps([1, 2]),
        json.dumps({"route": CLAIM, "status": "200"}),  # status must be a number
        "",
        line(),
    ]
    assert log_stats(lines)["lines"] == 1


def test_window_uses_the_time_field_when_present() -> None:
    since = 1_800_000_000
    lines = [
        line(time="2027-01-15T08:00:00Z"),  # 1_800_000_000 exactly: inside
        line(time="2027-01-15T07:59:59Z"),  # one second before: outside
        line(time=since - 1),  # UNIX seconds, outside
        line(time=(since + 5) * 1000),  # UNIX milliseconds, inside
        line(time="not a time"),  # unparseable: counted
        json.dumps({"route": CLAIM, "status": 200, "project": "p1"}),  # no time: counted
    ]
    assert log_stats(lines, since_s=since)["projects"][0]["claims"] == 4
    assert log_stats(lines)["projects"][0]["claims"] == 6


def test_read_from_file_and_stdin(tmp_path, monkeypatch) -> None:
    path = tmp_path / "tracker.log"
    path.write_text("\n".join([line(), line(status=429, retry_after_ms=250)]) + "\n")
    assert ops_logs.read_log_stats(path)["projects"][0]["rate_limited"] == 1
    monkeypatch.setattr("sys.stdin", io.StringIO(line() + "\n"))
    assert ops_logs.read_log_stats(type(path)("-"))["projects"][0]["claims"] == 1
