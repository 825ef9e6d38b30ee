"""The pure parts of the side-by-side benchmark: /proc parsing and CPU accounting, medians and
ratios, the chunked HTTP reader, cell-list parsing and the rendered ratio table."""

from __future__ import annotations

import asyncio
import json
import platform
import sys
from pathlib import Path

import pytest
from benchmarks import report
from benchmarks.compare import impls, machine_speed, procstat, summary
from benchmarks.compare.cells import Window
from benchmarks.compare.cells import summarize as summarize_cell
from benchmarks.loadgen.http import Connection
from benchmarks.run import PG_CPU, PG_PIDS, parse_cells

# utime=1000 stime=200 cutime=30 cstime=7; the command holds spaces and a ')'
STAT = "4242 (tracker (w) x) S 17 4242 4242 0 -1 4194560 1 0 0 0 1000 200 30 7 20 0 3 0 1 2 3"


def test_parse_stat_counts_fields_after_the_last_parenthesis() -> None:
    s = procstat.parse_stat(STAT)
    assert (s.pid, s.ppid, s.utime, s.stime, s.cutime, s.cstime) == (4242, 17, 1000, 200, 30, 7)
    assert s.own_ticks == 1200 and s.children_ticks == 37


def _stat(pid: int, ppid: int, utime: int, cutime: int = 0) -> procstat.Stat:
    return procstat.Stat(pid, ppid, utime, 0, cutime, 0)


def test_tree_ticks_sums_live_descendants_and_reaped_children_only_under_the_root() -> None:
    stats = {
        10: _stat(10, 1, 100, cutime=5),  # root; 5 ticks of reaped children
        11: _stat(11, 10, 40),  # worker process
        12: _stat(12, 11, 2),  # grandchild
        20: _stat(20, 1, 999),  # unrelated
    }
    assert procstat.tree_ticks(10, stats) == 100 + 5 + 40 + 2
    assert procstat.tree_ticks(11, stats) == 42
    assert procstat.tree_ticks(99, stats) is None


def test_tree_cpu_seconds_reads_a_fake_proc(tmp_path: Path) -> None:
    for pid, ppid, utime in ((5, 1, 200), (6, 5, 100)):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(
            f"{pid} (p) S {ppid} 0 0 0 -1 0 0 0 0 0 {utime} 0 0 0 20 0 1 0"
        )
    (tmp_path / "self").mkdir()
    assert procstat.tree_cpu_seconds(5, tmp_path) == pytest.approx(300 / procstat.TICK)


def test_backend_cpu_counts_new_backends_from_zero_and_keeps_ended_ones() -> None:
    cpu = procstat.BackendCpu()
    cpu.record(1, 1000)  # before the window
    cpu.started = True
    cpu.record(1, 1100)
    cpu.record(2, 50)  # born inside the window: all of its 50 ticks count
    cpu.record(1, 1300)  # backend 2 ended after its last sample: its 50 ticks stay
    assert cpu.seconds == pytest.approx((300 + 50) / procstat.TICK)


def test_median_ignores_missing_values() -> None:
    assert summary.median([3.0, None, 1.0, 2.0]) == 2.0
    assert summary.median([1.0, 2.0]) == 1.5
    assert summary.median([None, float("nan")]) is None


def test_ratio_is_above_one_when_ours_is_better_for_every_metric() -> None:
    assert summary.ratio(200.0, 100.0, "jobs_per_s") == 2.0
    assert summary.ratio(1.0, 2.0, "wall_s") == 2.0  # ours took half the time
    assert summary.ratio(0.5, 0.25, "pg_cpu_ms_per_request") == 0.5
    assert summary.ratio(None, 1.0, "jobs_per_s") is None
    assert summary.ratio(1.0, 0.0, "jobs_per_s") is None
    assert summary.fmt_ratio(1.234) == "1.23×" and summary.fmt_ratio(None) == "–"


def _run(impl: str, jobs: float, rep: int, **extra: object) -> dict:
    return {
        "scenario": "claim",
        "case": "B=1 W=4",
        "mode": "direct",
        "impl": impl,
        "rep": rep,
        "batch": 1,
        "workers": 4,
        "jobs_per_s": jobs,
        "latency_ms": {"claim": {"p99": jobs / 10}},
        "http_errors": 1,
        **extra,
    }


def test_aggregate_takes_medians_per_key_and_sums_errors() -> None:
    runs = [_run("ours", 100, 0), _run("ours", 300, 1), _run("ours", 200, 2), _run("ref", 50, 0)]
    agg = summary.aggregate(runs, ["jobs_per_s", "latency_ms.claim.p99", "absent"])
    ours = agg[("claim", "B=1 W=4", "direct", "ours")]
    assert ours["jobs_per_s"] == 200 and ours["latency_ms.claim.p99"] == 20
    assert ours["absent"] is None and ours["n"] == 3 and ours["http_errors"] == 3
    assert ours["runs_jobs_per_s"] == [100, 300, 200]


def test_report_renders_the_ratio_grid_targets_and_failures() -> None:
    results = {
        "implementations": ["ours", "ref"],
        "plan": {"repeat": 2, "pgbouncer": True, "pgbouncer_pool_size": 20},
        "machine": {"cpu": "Test CPU", "nproc": "2", "postgresql": "15.9"},
        "runs": [
            _run("ours", 300, 0, load_before="1.00 0 0", load_after="3.50 0 0"),
            _run("ours", 500, 1, speed_probe_ms=2.5, steal_pct=0.0),
            _run("ref", 200, 0, speed_probe_ms=2.0, steal_pct=4.25),
            _run("ref", 200, 1, speed_probe_ms=3.0),
            {**_run("ours", 0, 0), "mode": "pgbouncer", "error": "RuntimeError: boom\nx `y`"},
            {**_run("ref", 150, 0), "mode": "pgbouncer"},
        ],
    }
    doc = report.render(results)
    assert "| **1** | 400 / 200 (**2.00×**) |" in doc
    assert "Test CPU, 2 cores" in doc and "PostgreSQL 15.9" in doc
    assert "| B=1 W=4 | 400 / 200 | 2.00× (1.50–2.50) |" in doc  # the pairs: 300/200, 500/200
    assert "| 1.0–3.5 | 2.00–3.00 |" in doc  # the cell's load and speed probe ranges
    assert "took 2.50 ms at the median, 2.00–3.00 ms over the 3 runs" in doc
    assert "the slowest 1.50× the fastest" in doc and "steal (CPU time" in doc
    assert "0.0–4.2 % of the machine's CPU time per run" in doc
    assert "1.0–3.5" in doc  # the cell's load range
    assert "claim→complete at B=1 (≥ 1×, 1 cells): met" in doc
    assert "claim B=1 W=4 ours/pgbouncer: `RuntimeError: boom x 'y'`" in doc
    assert "| claim B=1 W=4 | ref | 200 | 150 | 0.75× | 2 | 1 |" in doc
    assert "| claim B=1 W=4 | ours | 400 | – | – | 2 | run failed ×1 |" in doc


def test_report_without_reference_shows_ours_only() -> None:
    doc = report.render({"implementations": ["ours"], "runs": [_run("ours", 123, 0)]})
    assert "| **1** | 123 |" in doc and "Targets of issue 12" not in doc
    assert "Machine speed:" not in doc  # results from before the harness took the probe
    assert "speed probe ms" not in doc and "Speed probe:" not in doc


def _side_by_side(ours: float, ref: float, started: str, commit: str) -> dict:
    return {
        "implementations": ["ours", "ref"],
        "started": started,
        "ours_commit": commit,
        "machine": {"cpu": "Test CPU"},
        "runs": [
            _run("ours", ours, 0, speed_probe_ms=2.0, steal_pct=0.5),
            _run("ref", ref, 0, speed_probe_ms=2.4, steal_pct=12.25),
        ],
    }


def test_report_shows_the_kept_runs_next_to_this_one_with_the_targets_each_missed() -> None:
    this = _side_by_side(300, 200, "2026-12-04 14:21 UTC", "new1234")
    this["machine"]["ours_python"] = {"version": "3.11.2", "probe_ms": 25.1}
    older = _side_by_side(180, 200, "2026-12-04 13:12 UTC", "old5678")
    doc = report.render(this, [("compare-old.json", older)])
    assert "## Other runs on file" in doc
    assert "| this run | 2026-12-04 14:21 | `new1234` on CPython 3.11.2 (probe 25.1 ms) | Test CPU, 2.20 ms, steal ≤ 12.2 % | 1.50 | – | none |" in doc
    assert (
        "| `compare-old.json` | 2026-12-04 13:12 | `old5678` | Test CPU, 2.20 ms, steal ≤ 12.2 % | 0.90 | – | "
        "claim→complete at B=1: B=1 W=4 0.90× |" in doc
    )
    # one run alone has nothing to compare with, and a run without the reference is skipped
    assert "Other runs on file" not in report.render(this)
    ours_only = {"implementations": ["ours"], "runs": [_run("ours", 123, 0)]}
    assert "Other runs on file" not in report.render(this, [("compare-x.json", ours_only)])


def test_kept_runs_are_the_other_compare_files_newest_first(tmp_path: Path) -> None:
    for name, started in (("compare.json", "c"), ("compare-a.json", "a"), ("compare-b.json", "b")):
        (tmp_path / name).write_text(json.dumps({"started": started}))
    (tmp_path / "internals.json").write_text("{}")
    kept = report.kept_runs(tmp_path / "compare.json")
    assert [name for name, _ in kept] == ["compare-b.json", "compare-a.json"]


def test_paired_ratios_pair_run_k_with_run_k_and_skip_failed_runs() -> None:
    runs = [
        _run("ours", 300, 0), _run("ref", 100, 0),
        _run("ours", 200, 1), _run("ref", 400, 1),
        {**_run("ours", 999, 2), "error": "boom"}, _run("ref", 100, 2),
        _run("ours", 50, 3),  # no partner
        {**_run("ref", 1, 0), "case": "B=4 W=4"},  # another cell
    ]
    assert summary.paired_ratios(runs, "claim", "B=1 W=4", "direct", "jobs_per_s") == [3.0, 0.5]
    # a cost: reference over ours
    cost = [_run("ours", 1, 0, cpu=2.0), _run("ref", 1, 0, cpu=3.0)]
    assert summary.paired_ratios(cost, "claim", "B=1 W=4", "direct", "cpu") == [1.5]


def test_fmt_range() -> None:
    assert summary.fmt_range([3.0, None, 1.25], 2) == "1.25–3.00"
    assert summary.fmt_range([2.0, 2.001], 1, " %") == "2.0 %"
    assert summary.fmt_range([None]) == "–"


PROC_STAT = "cpu  100 5 50 800 10 1 4 30 7 0\ncpu0 50 2 25 400 5 0 2 15 3 0\nintr 1 2\n"


def test_steal_comes_from_the_first_cpu_line() -> None:
    assert machine_speed.parse_cpu_line(PROC_STAT) == (1000, 30)  # guest (7) is inside user
    assert machine_speed.parse_cpu_line("intr 1\n") is None
    assert machine_speed.steal_pct((1000, 30), (1400, 50)) == pytest.approx(5.0)
    assert machine_speed.steal_pct((1000, 30), (1000, 30)) is None
    assert machine_speed.steal_pct(None, (1000, 30)) is None


def test_cpu_ticks_reads_a_fake_proc(tmp_path: Path) -> None:
    (tmp_path / "stat").write_text(PROC_STAT)
    assert machine_speed.cpu_ticks(tmp_path) == (1000, 30)
    assert machine_speed.cpu_ticks(tmp_path / "absent") is None


def test_the_speed_probe_times_real_work() -> None:
    probe = machine_speed.speed_probe_ms(rounds=1)
    assert 0 < probe < 10_000


def test_interpreter_facts_name_the_interpreter_and_time_real_work() -> None:
    facts = machine_speed.interpreter_facts(sys.executable)
    assert facts["executable"] == sys.executable
    assert facts["version"] == platform.python_version()
    assert 0 < facts["probe_ms"] < 60_000


def test_ours_runs_on_hq_ours_python_when_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(impls.OURS_PYTHON_ENV, raising=False)
    assert impls.ours_python() == sys.executable
    monkeypatch.setenv(impls.OURS_PYTHON_ENV, "/opt/other/bin/python")
    ours = impls.ours(2)
    assert ours.tracker == ("/opt/other/bin/python", "-m", "hq_apps.cli.tracker")
    assert ours.source == ("/opt/other/bin/python", "-m", "hq_apps.cli.source")
    assert ours.serve_extra == ("--processes", "2")


def test_report_names_the_interpreter_ours_ran_on() -> None:
    facts = {"executable": "/v/bin/python", "version": "3.11.2", "probe_ms": 25.1}
    results = {"implementations": ["ours"], "machine": {"ours_python": facts},
               "runs": [_run("ours", 123, 0)]}  # fmt: skip
    doc = report.render(results)
    assert "ran on `/v/bin/python` (CPython 3.11.2; plain-Python probe 25.1 ms" in doc
    assert "ran on `" not in report.render({"implementations": ["ours"], "runs": []})


def test_cell_summary_divides_cpu_by_requests_in_the_window() -> None:
    w = Window(jobs=40)
    for _ in range(10):
        w.lat.add("claim", 0.002)
        w.lat.add("complete", 0.001)
    w.errors["claim:500"] = 5
    out = summarize_cell(4, 8, w, 2.0, 1.0, 1.5, 0.25, 0.1)
    assert out["jobs_per_s"] == 20 and out["requests"] == 25 and out["http_errors"] == 5
    assert out["tracker_cpu_ms_per_request"] == pytest.approx(20.0)
    assert out["pg_cpu_ms_per_request"] == pytest.approx(10.0)
    assert out["latency_ms"]["claim"]["p50"] == pytest.approx(2.0)


def test_parse_cells() -> None:
    assert parse_cells("1x4, 16X64") == {(1, 4), (16, 64)}


def test_the_client_reads_chunked_bodies() -> None:
    async def go() -> tuple[int, bytes, bytes]:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Trailer: 1\r\n\r\n"
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
            )
            await writer.drain()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        conn = Connection("127.0.0.1", port)
        try:
            status, _, first = await conn.request("GET", "/")
            assert conn._reader is not None
            raw = await conn._read_response()  # the next response on the same connection
            return status, first, raw[2]
        finally:
            await conn.close()
            server.close()

    status, first, second = asyncio.run(go())
    assert (status, first, second) == (200, b"hello, world", b"ok")


def test_peak_rss_comes_from_vmhwm() -> None:
    from benchmarks.compare.impls import parse_vmhwm

    assert (
        parse_vmhwm("Name:\tsource\nVmPeak:\t  9000 kB\nVmHWM:\t  4321 kB\nVmRSS:\t 100 kB\n")
        == 4321
    )
    assert parse_vmhwm("Name:\tzombie\n") is None


def test_report_says_the_wal_writer_is_counted_only_for_runs_that_counted_it() -> None:
    base = {"implementations": ["ours"], "runs": [_run("ours", 123, 0)]}
    counted = {**base, "plan": {"pg_cpu": PG_CPU}}
    assert "the WAL writer" in report.render(counted)
    assert "the WAL writer" not in report.render(base)
    assert "backend_type = 'walwriter'" in PG_PIDS and "datname = $1" in PG_PIDS
