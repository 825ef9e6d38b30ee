"""Render a ``benchmarks.run`` results JSON as ``docs/performance.md``.

    uv run python -m benchmarks.report [benchmarks/results/compare.json] [--doc docs/performance.md]

A separate step so the document can be regenerated from saved results without measuring again.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.compare.summary import (
    aggregate,
    fmt_num,
    fmt_range,
    fmt_ratio,
    paired_ratios,
    ratio,
)

ROOT = Path(__file__).resolve().parent.parent
OURS, REF = "ours", "ref"
DIRECT, POOLED = "direct", "pgbouncer"

METRICS = [
    "jobs_per_s",
    "wall_s",
    "latency_ms.claim.p50",
    "latency_ms.claim.p99",
    "latency_ms.complete.p50",
    "latency_ms.complete.p99",
    "latency_ms.enqueue.p50",
    "latency_ms.enqueue.p99",
    "tracker_cpu_ms_per_request",
    "pg_cpu_ms_per_request",
    "pooler_cpu_ms_per_request",
    "cli_cpu_s",
    "pg_cpu_s",
    "tracker_cpu_s",
    "peak_rss_mib",
    "empty_claims",
]

REFERENCE_TEXT = (
    "The reference is the Go implementation of SavewebHQ whose wire protocol this project "
    "speaks (`github.com/saveweb/hq`: `tracker`, `source` and `hqctl`). It was built on this "
    "machine from its public source and the public sources of the module versions its `go.mod` "
    "requires, with a stock Go toolchain, outside this repository, and its binaries were handed "
    "to the harness through `HQ_REF_BIN_DIR`. None of its code, binaries or build recipe is "
    "part of this repository. It runs with its defaults (pgx pool: max(4, cores) connections, "
    "cached prepared statements); the same migrations-then-bootstrap steps as ours prepare its "
    "database."
)


def table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


class View:
    """Medians per (scenario, case, mode, impl) and helpers to read them."""

    def __init__(self, results: dict[str, Any]) -> None:
        self.results = results
        self.runs: list[dict[str, Any]] = results.get("runs", [])
        self.agg = aggregate([r for r in self.runs if not r.get("error")], METRICS)
        self.failed = [r for r in self.runs if r.get("error")]
        self.probed = any(r.get("speed_probe_ms") for r in self.runs)
        """Whether the runs carry the machine speed probe (results from before it do not)."""

    def get(self, scenario: str, case: str, impl: str, metric: str, mode: str = DIRECT) -> Any:
        row = self.agg.get((scenario, case, mode, impl))
        return None if row is None else row.get(metric)

    def errors(self, scenario: str, case: str, impl: str, mode: str = DIRECT) -> int | None:
        row = self.agg.get((scenario, case, mode, impl))
        failed = sum(
            1
            for r in self.failed
            if (r["scenario"], r["case"], r["mode"], r["impl"]) == (scenario, case, mode, impl)
        )
        if row is None:
            return None if not failed else -failed
        return row["http_errors"]

    def ratio(self, scenario: str, case: str, metric: str, mode: str = DIRECT) -> float | None:
        """The speed ratio of ``metric`` (above 1 when ours is better), None without both."""
        return ratio(
            self.get(scenario, case, OURS, metric, mode),
            self.get(scenario, case, REF, metric, mode),
            metric,
        )

    def pair(self, scenario: str, case: str, metric: str, mode: str = DIRECT, digits: int = 0):
        ours = self.get(scenario, case, OURS, metric, mode)
        ref = self.get(scenario, case, REF, metric, mode)
        return fmt_num(ours, digits), fmt_num(ref, digits), fmt_ratio(ratio(ours, ref, metric))

    def cells(self, mode: str = DIRECT) -> list[tuple[int, int]]:
        found = {
            (r["batch"], r["workers"])
            for r in self.runs
            if r["scenario"] == "claim" and r["mode"] == mode and "batch" in r
        }
        found |= {
            _parse_case(r["case"])
            for r in self.failed
            if r["scenario"] == "claim" and r["mode"] == mode
        }
        return sorted(found)

    def has_ref(self) -> bool:
        return REF in self.results.get("implementations", [])

    def loads(self, scenario: str, case: str | None = None) -> str:
        values = [
            float(r[k].split()[0])
            for r in self.runs
            if r["scenario"] == scenario and (case is None or r["case"] == case)
            for k in ("load_before", "load_after")
            if r.get(k) and r[k] != "unknown"
        ]
        return f"{min(values):.1f}–{max(values):.1f}" if values else "–"

    def probes(self, scenario: str, case: str) -> str:
        """The speed probe's range over the case's runs (ms; higher is a slower machine)."""
        return fmt_range(
            (r.get("speed_probe_ms") for r in self.runs
             if r["scenario"] == scenario and r["case"] == case), 2
        )  # fmt: skip

    def pair_spread(self, scenario: str, case: str, metric: str, mode: str = DIRECT) -> str:
        """`` (lo–hi)``: the single interleaved pairs' ratios, when there are two or more."""
        pairs = paired_ratios(self.runs, scenario, case, mode, metric)
        return f" ({fmt_range(pairs, 2)})" if len(pairs) > 1 else ""


def interpreter_lines(machine: dict[str, Any]) -> list[str]:
    """Which CPython ran our commands (``HQ_OURS_PYTHON``) and its plain-Python probe; runs
    recorded before the probe existed say nothing."""
    ours = machine.get("ours_python")
    if not ours:
        return []
    return [
        f"* Our tracker, `source` and `hqctl` ran on `{ours.get('executable', '?')}` (CPython "
        f"{ours.get('version', '?')}; plain-Python probe {ours.get('probe_ms', '?')} ms, lower "
        "is faster). The container image runs the official `python:3.11-slim-bookworm`, a "
        "CPython built with profile-guided and link-time optimisation; a build without them "
        "(pyenv's default) costs our tracker more CPU per request (measured in "
        "benchmarks/notes/optimisations.md, row 47). The reference's figures do not depend on it."
    ]


def machine_speed_lines(v: View) -> list[str]:
    """The machine's own speed over the run (benchmarks/compare/machine_speed.py); nothing
    for results recorded before the harness took these readings."""
    probes = sorted(r["speed_probe_ms"] for r in v.runs if r.get("speed_probe_ms"))
    steals = [r["steal_pct"] for r in v.runs if r.get("steal_pct") is not None]
    if not probes:
        return []
    median = statistics.median(probes)
    line = (
        f"* Machine speed: a fixed single-threaded workload (SHA-256 of 4 MiB, best of 3) "
        f"timed before every run took {median:.2f} ms at the median, {probes[0]:.2f}–"
        f"{probes[-1]:.2f} ms over the {len(probes)} runs (the slowest "
        f"{probes[-1] / probes[0]:.2f}× the fastest; higher is a slower machine)"
    )
    if steals:
        line += (
            f"; steal (CPU time the hypervisor gave elsewhere) {fmt_range(steals, 1, ' %')} "
            "of the machine's CPU time per run"
        )
    return [line + "."]


def _parse_case(case: str) -> tuple[int, int]:
    b, w = case.replace("B=", "").replace("W=", "").split()
    return int(b), int(w)


def case_of(batch: int, workers: int) -> str:
    return f"B={batch} W={workers}"


def ratio_grid(v: View, mode: str = DIRECT) -> list[str]:
    """B rows × W columns: ``ours / ref (ratio×)`` jobs/s."""
    cells = v.cells(mode)
    batches = sorted({b for b, _ in cells})
    workers = sorted({w for _, w in cells})
    rows = []
    for b in batches:
        row = [f"**{b}**"]
        for w in workers:
            if (b, w) not in cells:
                row.append("")
                continue
            ours, ref, r = v.pair("claim", case_of(b, w), "jobs_per_s", mode)
            row.append(f"{ours} / {ref} (**{r}**)" if v.has_ref() else ours)
        rows.append(row)
    return table(["B \\ W", *(str(w) for w in workers)], rows)


def detail_rows(v: View, mode: str = DIRECT) -> list[str]:
    rows = []
    for b, w in v.cells(mode):
        case = case_of(b, w)

        def both(metric: str, digits: int = 1, case: str = case) -> str:
            o = v.get("claim", case, OURS, metric, mode)
            r = v.get("claim", case, REF, metric, mode)
            return (
                f"{fmt_num(o, digits)} / {fmt_num(r, digits)}"
                if v.has_ref()
                else fmt_num(o, digits)
            )

        errs = [v.errors("claim", case, i, mode) for i in ((OURS, REF) if v.has_ref() else (OURS,))]
        rows.append(
            [
                case,
                both("jobs_per_s", 0),
                fmt_ratio(v.ratio("claim", case, "jobs_per_s", mode))
                + v.pair_spread("claim", case, "jobs_per_s", mode),
                both("latency_ms.claim.p50"),
                both("latency_ms.claim.p99"),
                both("latency_ms.complete.p50"),
                both("latency_ms.complete.p99"),
                both("tracker_cpu_ms_per_request", 2),
                both("pg_cpu_ms_per_request", 2),
                " / ".join(_err(e) for e in errs),
                both("empty_claims", 0),
                v.loads("claim", case),
                *([v.probes("claim", case)] if v.probed else []),
            ]
        )
    header = [
        "cell",
        "jobs/s",
        "ratio",
        "claim p50 ms",
        "claim p99 ms",
        "complete p50 ms",
        "complete p99 ms",
        "tracker CPU ms/req",
        "PG CPU ms/req",
        "HTTP errors",
        "empty claims",
        "load",
        *(["speed probe ms"] if v.probed else []),
    ]
    return table(header, rows)


def _err(e: int | None) -> str:
    if e is None:
        return "–"
    return f"run failed ×{-e}" if e < 0 else str(e)


def bulk_rows(v: View) -> list[str]:
    specs = [
        ("enqueue", "1000/request", "admin enqueue route, 1,000 jobs/request, one sender"),
        ("pack", None, "`source pack`"),
        ("import", "fresh", "`tracker enqueue-source`, external_id project, fresh"),
        ("import", "re-run", "`tracker enqueue-source` again (every job present)"),
        ("hqctl", "enqueue-source", "`hqctl enqueue-source` over HTTP"),
    ]
    rows = []
    for scenario, case, label in specs:
        cases = sorted({r["case"] for r in v.runs if r["scenario"] == scenario})
        if case is not None:
            cases = [c for c in cases if c == case]
        for c in cases:
            jobs, wall = v.pair(scenario, c, "jobs_per_s"), v.pair(scenario, c, "wall_s", digits=2)
            extra = []
            for metric, digits in (
                ("cli_cpu_s", 2),
                ("tracker_cpu_ms_per_request", 2),
                ("pg_cpu_ms_per_request", 2),
                ("pg_cpu_s", 2),
                ("peak_rss_mib", 0),
                ("latency_ms.enqueue.p50", 1),
                ("latency_ms.enqueue.p99", 1),
            ):
                o = v.get(scenario, c, OURS, metric)
                r = v.get(scenario, c, REF, metric)
                if o is not None or r is not None:
                    extra.append(
                        f"{metric.replace('_', ' ')} {fmt_num(o, digits)} / {fmt_num(r, digits)}"
                    )
            name = label if scenario != "pack" else f"{label} of {c}"
            rows.append(
                [name, f"{jobs[0]} / {jobs[1]}", f"{wall[0]} / {wall[1]}", f"**{jobs[2]}**",
                 "; ".join(extra)]
            )  # fmt: skip
    return table(
        ["scenario", "jobs/s ours / ref", "seconds ours / ref", "ratio", "costs ours / ref"], rows
    )


def pooled_rows(v: View) -> list[str]:
    rows = []
    impls = (OURS, REF) if v.has_ref() else (OURS,)
    cases = [("claim", case_of(b, w)) for b, w in v.cells(POOLED)]
    if any(r["scenario"] == "enqueue" and r["mode"] == POOLED for r in v.runs):
        cases.append(("enqueue", "1000/request"))
    for scenario, case in cases:
        for impl in impls:
            d = v.get(scenario, case, impl, "jobs_per_s", DIRECT)
            p = v.get(scenario, case, impl, "jobs_per_s", POOLED)
            rows.append(
                [
                    f"{scenario} {case}",
                    impl,
                    fmt_num(d),
                    fmt_num(p),
                    fmt_ratio(None if d in (None, 0) or p is None else p / d),
                    _err(v.errors(scenario, case, impl, DIRECT)),
                    _err(v.errors(scenario, case, impl, POOLED)),
                    fmt_num(v.get(scenario, case, impl, "pg_cpu_ms_per_request", POOLED), 2),
                    fmt_num(v.get(scenario, case, impl, "pooler_cpu_ms_per_request", POOLED), 2),
                ]
            )
    header = [
        "scenario",
        "impl",
        "jobs/s direct",
        "jobs/s pooled",
        "pooled/direct",
        "HTTP errors direct",
        "HTTP errors pooled",
        "PG CPU ms/req pooled",
        "PgBouncer CPU ms/req",
    ]
    return table(header, rows)


Check = tuple[str, float, int, list[str]]
"""One target of issue 12 in one run: (label, floor, cells measured, the cells below it)."""


def target_checks(v: View) -> list[Check]:
    """The targets of issue 12, checked against this run's medians."""
    if not v.has_ref():
        return []
    found: list[Check] = []

    def check(label: str, values: list[tuple[str, float | None]], floor: float) -> None:
        present = [(c, x) for c, x in values if x is not None]
        if present:
            misses = [f"{c} {x:.2f}×" for c, x in present if x < floor]
            found.append((label, floor, len(present), misses))

    cells = v.cells()

    def claims(metric: str, keep: Callable[[int, int], bool]) -> list[tuple[str, float | None]]:
        return [(case_of(b, w), v.ratio("claim", case_of(b, w), metric))
                for b, w in cells if keep(b, w)]  # fmt: skip

    check("claim→complete at B=1", claims("jobs_per_s", lambda b, w: b == 1), 1.0)
    check("claim→complete at B≥4", claims("jobs_per_s", lambda b, w: b >= 4), 1.5)
    check("claim→complete at B≥64", claims("jobs_per_s", lambda b, w: b >= 64), 2.0)
    check(
        "claim p99 ≤ reference's at W≥64",
        claims("latency_ms.claim.p99", lambda b, w: w >= 64),
        1.0,
    )
    check(
        "PostgreSQL CPU per request at B=1 ≤ reference's",
        claims("pg_cpu_ms_per_request", lambda b, w: b == 1),
        1.0,
    )
    for scenario, case, label, floor in (
        ("enqueue", "1000/request", "enqueue route", 1.5),
        ("import", "fresh", "`tracker enqueue-source` fresh", 3.0),
        ("import", "re-run", "`tracker enqueue-source` re-run", 3.0),
    ):
        check(label, [(case, v.ratio(scenario, case, "jobs_per_s"))], floor)
    pack_cases = sorted({r["case"] for r in v.runs if r["scenario"] == "pack"})
    check("`source pack`", [(c, v.ratio("pack", c, "jobs_per_s")) for c in pack_cases], 1.5)
    return found


def targets(v: View) -> list[str]:
    """The targets of issue 12 in this run, one line each."""
    return [
        f"* {label} (≥ {floor:g}×, {n} cells): "
        + ("met" if not misses else "not met: " + ", ".join(misses))
        for label, floor, n, misses in target_checks(v)
    ]


def _row_ratios(v: View, batch: int) -> str:
    """One B row of the ratio grid, W ascending: ``1.43 · 1.05 · …`` (– for a missing side)."""
    figures = []
    for b, w in v.cells():
        if b == batch:
            x = v.ratio("claim", case_of(b, w), "jobs_per_s")
            figures.append("–" if x is None else f"{x:.2f}")
    return " · ".join(figures) or "–"


def _interpreter_note(results: dict[str, Any]) -> str:
    """`` on CPython 3.11.2 (probe 25.1 ms)`` for a run that recorded our interpreter; earlier
    runs ran ours on pyenv's CPython 3.11.7 without saying so."""
    ours = results.get("machine", {}).get("ours_python")
    if not ours:
        return ""
    return f" on CPython {ours.get('version', '?')} (probe {ours.get('probe_ms', '?')} ms)"


def other_runs(this: dict[str, Any], others: Sequence[tuple[str, dict[str, Any]]]) -> list[str]:
    """A row per side-by-side run kept on file next to this one: one run's ratios move with the
    machine it ran on (and with that machine's minute), so the same cells from every kept run
    are shown next to each other, with the targets each run missed."""
    runs = [("this run", this), *((name, r) for name, r in others)]
    rows = []
    for name, results in runs:
        v = View(results)
        if not v.has_ref():
            continue
        probe = [r["speed_probe_ms"] for r in v.runs if r.get("speed_probe_ms") is not None]
        steal = [r["steal_pct"] for r in v.runs if r.get("steal_pct") is not None]
        missed = [
            f"{label}: {', '.join(misses)}" for label, _, _, misses in target_checks(v) if misses
        ]
        rows.append([
            f"`{name}`" if name != "this run" else name,
            str(results.get("started", "?"))[:16],
            f"`{results.get('ours_commit', '?')}`" + _interpreter_note(results),
            f"{results.get('machine', {}).get('cpu', '?')}"
            + (f", {statistics.median(probe):.2f} ms" if probe else "")
            + (f", steal ≤ {max(steal):.1f} %" if steal else ""),
            _row_ratios(v, 1),
            _row_ratios(v, 4),
            "; ".join(missed) or "none",
        ])  # fmt: skip
    if len(rows) < 2:
        return []
    return [
        "The other side-by-side runs kept in `benchmarks/results/` (`compare-*.json`), newest "
        "first, under this one. The B rows are claim→complete jobs/s ratios for each W the run "
        "measured, ascending (1, 4, 16, 64, 256 in a full run); the machine column gives the CPU "
        "model, the median speed probe (lower is a "
        "faster machine) and the most steal any one run saw (CPU time the hypervisor gave "
        "elsewhere: a run with much of it measured its host more than either tracker). Older "
        "runs may be of older code: the commit column says which.",
        "",
        *table(
            ["run", "started (UTC)", "ours", "machine", "B=1 row", "B=4 row", "targets not met"],
            rows,
        ),
    ]


def render(
    results: dict[str, Any], others: Sequence[tuple[str, dict[str, Any]]] = ()
) -> str:
    """The document; ``others`` are earlier runs kept on file, (file name, results)."""
    v = View(results)
    m = results.get("machine", {})
    plan = results.get("plan", {})
    ref = results.get("reference") or {}
    out = [
        "# Performance",
        "",
        "<!-- generated by `uv run python -m benchmarks.report` from "
        "benchmarks/results/compare.json; do not edit by hand -->",
        "",
        "This tracker side by side with the reference Go tracker: the same load generator, the "
        "same PostgreSQL, the runs interleaved. Ratios are *speed* ratios: **above 1.0× means "
        "ours is better** (ours/ref for jobs/s; ref/ours for seconds, latencies and CPU).",
        "",
        f"* Run: `{results.get('command', '?')}` — {results.get('started', '?')} to "
        f"{results.get('finished', '?')} ({(results.get('duration_s') or 0) / 60:.0f} min), "
        f"ours at commit `{results.get('ours_commit', '?')}`"
        + (
            f", tracker serve --processes {plan['processes']}"
            if plan.get("processes", 1) > 1
            else ""
        )
        + ".",
    ]
    if results.get("note"):
        out.append(f"* Note: {results['note']}")
    out += [
        f"* Machine: {m.get('cpu', '?')}, {m.get('nproc', '?')} cores, kernel {m.get('kernel', '?')}, "
        f"harness on Python {m.get('python', '?')}; PostgreSQL {m.get('postgresql', '?')} "
        f"({m.get('pg_settings', '')}). Load average (1/5/15 min) {m.get('load_at_start', '?')} at "
        f"the start, {m.get('load_at_end', '?')} at the end; per-cell 1-minute load before/after "
        "each run is in the tables and the JSON.",
        *interpreter_lines(m),
        *machine_speed_lines(v),
        "",
        "## What the reference is",
        "",
        REFERENCE_TEXT + (f" This run: {ref['note']}." if ref.get("note") else ""),
        "",
        "## Method",
        "",
        f"* **Interleaved**: for every cell the runs alternate ours, reference, ours, reference … "
        f"({plan.get('repeat', '?')} each); the figure is the median of the runs.",
        "* **Fresh database per run, same server**: each implementation migrates a template "
        "database once (its own migrations, a bootstrapped admin+worker user and, for the worker "
        f"cells, one project with {fmt_num(plan.get('queue_jobs'))} jobs enqueued through its own "
        "admin route, then `VACUUM ANALYZE`); every run gets `CREATE DATABASE bench_… TEMPLATE …` "
        "on the same PostgreSQL, its own `tracker serve` on a free loopback port, and the "
        "database is dropped afterwards.",
        f"* **Worker cells**: W keep-alive workers (a minimal asyncio HTTP/1.1 client, one "
        f"connection each) loop claim(B) → complete(all). After at least {plan.get('warmup_s', '?')} s "
        "of warm-up (longer until every worker has completed one cycle, at most 20 s) a window of "
        f"at least {plan.get('measure_s', '?')} s (longer until it holds one completion per "
        "worker, at most 20 s) is measured: jobs whose completion ended in the window, claim and "
        "complete latency percentiles (nearest rank), HTTP errors.",
        "* **CPU per request**: the tracker's process tree (`/proc/PID/stat` utime+stime of the "
        "server and its live descendants, plus reaped children) and PostgreSQL (the sum over the "
        "backends `pg_stat_activity` lists for the run's database"
        + (", and the WAL writer, which works for one run at a time and flushes what "
           "asynchronous commits leave to it"
           if plan.get("pg_cpu") == "backends+walwriter" else "")
        + ", read from `/proc` at the "
        "window's edges and every 0.5 s) divided by the requests in the window. CPU is "
        "less sensitive than jobs/s to the other work on a shared machine, but not immune: a "
        "vCPU its host slows down spends more CPU time on the same work.",
        "* **Bulk scenarios**: `source pack` of the same generated URLs; `tracker enqueue-source` "
        "of one file (packed by ours) into an `external_id` project, then the same file again "
        "(every job already present); `hqctl enqueue-source` of that file to a live tracker. The "
        "CLI's own CPU comes from `wait4`, its peak RSS from polling `VmHWM` in `/proc/PID/status`.",
    ]
    if plan.get("pgbouncer"):
        out.append(
            "* **Pooler path**: Debian's PgBouncer in `pool_mode = transaction`, "
            f"`default_pool_size = {plan.get('pgbouncer_pool_size')}`, on a free loopback port, "
            "trust auth with an `auth_file`, `ignore_startup_parameters = extra_float_digits`. "
            "The same cells run direct and through it; ours runs with "
            "`HQ_DATABASE_POOLER=transaction` (migrations always use the direct URL)."
        )
    out += ["", "## claim → complete: jobs/s, ours / reference (ratio)", ""]
    out += ratio_grid(v)
    out += ["", "### Every cell", ""]
    out += [
        "Each figure is `ours / reference`; CPU is milliseconds per HTTP request (claim or "
        "complete); empty claims mean the queue ran dry (the cell was starved, its figure is a "
        "lower bound); load is the 1-minute load average range over the cell's runs. In "
        "parentheses after a ratio: the range of the single interleaved pairs' ratios (ours' "
        "run k against the reference's run k)."
        + (" Speed probe: its range over the cell's runs (see *Machine speed* above)."
           if v.probed else ""),
        "",
    ]
    out += detail_rows(v)
    out += ["", "## Enqueue and imports", ""]
    out += bulk_rows(v)
    if plan.get("pgbouncer"):
        out += ["", "## Direct vs PgBouncer (transaction mode)", ""]
        out += pooled_rows(v)
    goal = targets(v)
    if goal:
        out += ["", "## Targets of issue 12 in this run", "", *goal]
    history = other_runs(results, others)
    if history:
        out += ["", "## Other runs on file", "", *history]
    if v.failed:
        out += ["", "## Failed runs", ""]
        seen = set()
        for r in v.failed:
            key = (r["scenario"], r["case"], r["impl"], r["mode"], r["error"][:200])
            if key in seen:
                continue
            seen.add(key)
            text = " ".join(r["error"].split())[:300].replace("`", "'")
            out.append(f"* {r['scenario']} {r['case']} {r['impl']}/{r['mode']}: `{text}`")
    out += [
        "",
        "## Reproduce",
        "",
        "Build the reference's `tracker`, `source` and `hqctl` from its public source anywhere "
        "outside this repository, then:",
        "",
        "```",
        "HQ_REF_BIN_DIR=/path/to/reference/bin uv run python -m benchmarks.run --pgbouncer "
        "--pgbouncer-cells 1x4,1x64,16x16,64x64,256x4 --note '…'",
        "uv run python -m benchmarks.report benchmarks/results/compare.json   # re-render only",
        "```",
        "",
        "`HQ_OURS_PYTHON=/path/to/venv/bin/python` runs our commands on that interpreter (a "
        "virtualenv with this project installed, e.g. `UV_PROJECT_ENVIRONMENT=/path/to/venv uv "
        "sync --frozen --python /usr/bin/python3.11`) instead of the benchmark's own: use one "
        "built as the image's is. Without `HQ_REF_BIN_DIR` only ours runs. `--quick` (B, W ∈ {1, 16, 256}, 2 s windows, "
        "100k URLs), `--smoke` (tiny), `--scenarios claim,enqueue,pack,import,hqctl`, "
        "`--cells 1x4,16x64`, `--repeat N`, `--measure S`, `--processes N` (ours: "
        "`tracker serve --processes N`).",
        "",
        "Our own raw-SQL ceiling, finished-row scale runs and profile (no reference) are "
        "`uv run python -m benchmarks.internals`; their notes are in `benchmarks/notes/`.",
        "",
        "## What each change bought",
        "",
        "Before/after figures per change (interleaved A/B runs, CPU per request or per job) are "
        "kept next to the code that made them: `benchmarks/notes/optimisations.md` (worker hot "
        "path: generic-plan functions for small batches, the gate folded into the operation, "
        "lock scans), `benchmarks/notes/source_import.md` (enqueue route, `source pack`, "
        "`tracker enqueue-source` fresh and re-run), `benchmarks/notes/pooler.md` (processes, "
        "PgBouncer) and `docs/metrics.md` (the cost of the job-count triggers).",
        "",
    ]
    return "\n".join(out)


def kept_runs(results_path: Path) -> list[tuple[str, dict[str, Any]]]:
    """The other side-by-side runs kept next to ``results_path`` (``compare-*.json``), newest
    first by their start time."""
    found = []
    for path in results_path.parent.glob("compare-*.json"):
        if path.resolve() != results_path.resolve():
            found.append((path.name, json.loads(path.read_text())))
    return sorted(found, key=lambda item: str(item[1].get("started", "")), reverse=True)


def write(
    results: dict[str, Any], doc: Path, others: Sequence[tuple[str, dict[str, Any]]] = ()
) -> None:
    doc.write_text(render(results, others))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.report", description=__doc__)
    p.add_argument(
        "results", nargs="?", type=Path, default=ROOT / "benchmarks" / "results" / "compare.json"
    )
    p.add_argument("--doc", type=Path, default=ROOT / "docs" / "performance.md")
    args = p.parse_args(argv)
    write(json.loads(args.results.read_text()), args.doc, kept_runs(args.results))
    print(f"wrote {args.doc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
