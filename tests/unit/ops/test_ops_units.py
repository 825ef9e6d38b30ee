"""Pure parts of ``tracker monitor`` / ``prune-claim-buckets``: durations, the database URL,
per-worker flags and the text rendering."""

from __future__ import annotations

import pytest

from hq_apps.cli import ops
from hq_apps.cli.ops_render import age, render_text
from hq_domain.monitoring import WorkerClaimRate


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30d", 2_592_000), ("12h", 43_200), ("90m", 5_400), ("45s", 45), ("2w", 1_209_600),
     ("1h30m", 5_400), (" 7D ", 604_800)],
)  # fmt: skip
def test_parse_duration(text: str, seconds: int) -> None:
    assert ops.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "30", "d", "-1d", "0h", "1.5h", "1y", "3 d", "1h-"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        ops.parse_duration(text)


def test_database_url_comes_from_the_flag_or_environment(monkeypatch, capsys) -> None:
    from hq_apps.cli import tracker

    monkeypatch.delenv("HQ_DATABASE_URL", raising=False)
    for command in (["monitor"], ["prune-claim-buckets", "--older-than", "30d"]):
        assert tracker.run(command) == 1
        assert "database URL is required (--database-url or HQ_DATABASE_URL)" in capsys.readouterr().err
    # Nothing listens on port 1: the command got past the URL check and tried to connect.
    monkeypatch.setenv("HQ_DATABASE_URL", "postgresql://hq@127.0.0.1:1/hq")
    assert tracker.run(["monitor"]) == 1
    assert "database URL is required" not in capsys.readouterr().err


def bucket_row(**overrides) -> WorkerClaimRate:
    row = {"project_id": "p", "worker_id": "w", "policy_version": 2, "current_policy_version": 2,
           "worker_claim_qps": 0.2, "buckets": 3, "claim_requests": 30, "jobs_dispatched": 90,
           "peak_claim_requests": 12, "last_bucket_started_at_ms": 120_000}  # fmt: skip
    return WorkerClaimRate(**{**row, **overrides})


def test_worker_rates_and_flags() -> None:
    w = ops.worker_row(bucket_row())
    assert (w["mean_claim_rps"], w["peak_claim_rps"]) == (round(30 / 180, 4), 0.2)
    assert (w["stale_policy"], w["over_limit"]) == (False, False)
    assert w["last_bucket_started_at_ms"] == 120_000
    # 0.2 QPS is 12 requests a minute; 110 % plus one request of slack allows 14.2.
    assert ops.worker_row(bucket_row(peak_claim_requests=14))["over_limit"] is False
    assert ops.worker_row(bucket_row(peak_claim_requests=15))["over_limit"] is True
    assert ops.worker_row(bucket_row(policy_version=1))["stale_policy"] is True
    # A project whose limit was removed since: nothing to compare against.
    assert (
        ops.worker_row(bucket_row(worker_claim_qps=None, peak_claim_requests=999))["over_limit"]
        is False
    )


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(None, "-"), (0, "0s"), (59, "59s"), (61, "1m01s"), (3600, "1h00m"), (90061, "1d01h")],
)
def test_age_format(seconds, text) -> None:
    assert age(seconds) == text


def sample_report(requests=None):
    return {
        "generated_at": 1_800_000_000,
        "window_seconds": 3600,
        "bucket_window_seconds": 900,
        "projects": [
            {"project_id": "sinavideo", "status": "active", "policy_version": 3,
             "dispatch_qps": None, "worker_claim_qps": 0.2,
             "job_counts": {"todo": 5, "wip": 2, "done": 7, "failed": 1, "reset_exhausted": 2},
             "oldest_todo_age_seconds": 7260, "expired_wip": 1,
             "percent_done": 41.667, "rate_per_minute": 2.5, "eta_seconds": 168,
             "finished": {"done": 7, "failed": 1, "reset_exhausted": 2,
                          "permanent_failure_rate": 0.1, "reset_exhausted_rate": 0.2,
                          "done_with_receipts": 6, "receipt_bearing_rate": 0.8571}},
        ],
        "workers": [ops.worker_row(bucket_row(policy_version=1, peak_claim_requests=20))],
        "requests": requests,
    }  # fmt: skip


def test_text_rendering_shows_every_figure() -> None:
    text = render_text(sample_report())
    row = next(line for line in text.splitlines() if line.startswith("sinavideo"))
    assert row.split() == ["sinavideo", "active", "5", "2", "7", "1", "2", "2h01m", "1",
                           "41.7", "2.5", "2m48s", "10",
                           "10.0%", "20.0%", "85.7%"]  # fmt: skip
    worker = next(line for line in text.splitlines() if line.startswith("p "))
    assert worker.split()[-1] == "stale_policy,over_limit"
    assert "no --log-file given" in text


def test_text_rendering_with_log_figures_and_empty_sections() -> None:
    from hq_apps.cli.ops_logs import log_stats

    requests = log_stats(
        [
            '{"route":"/x/jobs/claim","status":429,"project":"p9","retry_after_ms":250,"latency_ms":3}'
        ]
    )
    report = sample_report(requests) | {"workers": []}
    text = render_text(report)
    assert "(none)" in text  # the empty worker section
    p9 = next(line for line in text.splitlines() if line.startswith("p9"))
    assert p9.split() == ["p9", "1", "1", "100.0%", "250", "250", "250", "250"]
    claim = next(line for line in text.splitlines() if line.startswith("claim"))
    assert claim.split() == ["claim", "1", "3", "3", "3", "3"]
