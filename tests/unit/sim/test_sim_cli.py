"""The command line: options map onto SimConfig, bad input is refused, JSON is parseable."""

from __future__ import annotations

import json

import pytest

from hq_apps.sim.__main__ import main, parse_args
from hq_apps.sim.config import Duration, SimConfig


def test_duration_parsing_and_sampling() -> None:
    import random

    assert Duration.parse("const:2.5") == Duration("const", 2.5)
    assert Duration.parse("uniform:1,3") == Duration("uniform", 1.0, 3.0)
    rng = random.Random(1)
    draws = [Duration.parse("uniform:1,3").sampler(rng)() for _ in range(200)]
    assert all(1 <= d <= 3 for d in draws)
    mean = sum(Duration.parse("exp:4").sampler(rng)() for _ in range(4000)) / 4000
    assert 3.5 < mean < 4.5
    for bad in ("exp", "exp:1,2", "gauss:1", "uniform:3,1", "const:-1", "const:nan"):
        with pytest.raises(ValueError):
            Duration.parse(bad)


def test_config_validation() -> None:
    with pytest.raises(ValueError):
        SimConfig(fail_retryable=0.6, crash=0.5)
    with pytest.raises(ValueError):
        SimConfig(batch=257)
    with pytest.raises(ValueError):
        SimConfig(dispatch_qps=0.0)


def test_options_map_onto_the_config() -> None:
    cfg, as_json = parse_args(
        ["--jobs", "5", "--workers", "2", "--duration", "uniform:1,2", "--dispatch-qps", "10",
         "--worker-claim-qps", "none", "--restart", "-1", "--no-renew", "--json"]
    )
    assert as_json
    assert (cfg.jobs, cfg.workers, cfg.dispatch_qps, cfg.worker_claim_qps) == (5, 2, 10.0, None)
    assert cfg.duration == Duration("uniform", 1.0, 2.0)
    assert cfg.restart_s is None and cfg.renew is False


def test_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--jobs", "50", "--workers", "3", "--batch", "4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["finished"] is True
    assert data["done"] == 50 and data["dispatched"] == 50
    assert data["config"]["duration"] == "exp:10"


def test_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--jobs", "20", "--workers", "2"])
    out = capsys.readouterr().out
    assert "done / failed / exhausted  20 / 0 / 0" in out
    assert "events/s" in out
