"""Render the results of ``benchmarks.internals`` as docs/performance-internals.md (+ .png)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks import findings, plot
from hq_domain.worker import CLAIM_SWEEP_LIMIT

TARGETS = {(64, 4): 0.50}  # plus: every B=256 row ≥ 60 %
TARGET_B256 = 0.60


def target_for(batch: int, workers: int) -> float | None:
    if batch == 256:
        return TARGET_B256
    return TARGETS.get((batch, workers))


def _f(v: Any, digits: int = 0) -> str:
    if v is None:
        return "–"
    return f"{v:,.{digits}f}"


def _tput(r: dict[str, Any] | None) -> str:
    """Median jobs/s, with the range when there were several runs."""
    if not r:
        return "–"
    runs = r.get("runs_jobs_per_s") or []
    spread = f" ({min(runs):,.0f}–{max(runs):,.0f})" if len(runs) > 1 else ""
    return f"{r['jobs_per_s']:,.0f}{spread}"


def _lat(r: dict[str, Any], kind: str) -> str:
    x = r.get("latency_ms", {}).get(kind)
    return "–" if not x else f"{x['p50']:.1f} / {x['p99']:.1f}"


def rows_by_level(results: dict[str, Any]) -> dict[tuple[int, int], dict[str, dict[str, Any]]]:
    grid: dict[tuple[int, int], dict[str, dict[str, Any]]] = {}
    for r in results.get("throughput", []):
        grid.setdefault((r["batch"], r["workers"]), {})[r["level"]] = r
    return grid


def throughput_table(results: dict[str, Any]) -> list[str]:
    out = [
        "| B | W | jobs | HTTP jobs/s | HTTP req/s | claim p50/p99 ms | complete p50/p99 ms "
        "| client CPU µs/req | server CPU µs/job | store jobs/s | SQL ceiling jobs/s "
        "| HTTP / ceiling | target |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---|",
    ]
    for (b, w), lv in sorted(rows_by_level(results).items()):
        h, s, q = lv.get("http"), lv.get("store"), lv.get("sql")
        ratio = h["jobs_per_s"] / q["jobs_per_s"] if h and q else None
        tgt = target_for(b, w)
        verdict = (
            "–"
            if tgt is None or ratio is None
            else (f"≥ {tgt:.0%}: {'met' if ratio >= tgt else 'NOT met'}")
        )
        srv = (1e6 * h["server_cpu_s"] / h["jobs"]) if h and h.get("server_cpu_s") else None
        out.append(
            f"| {b} | {w} | {_f(h and h['jobs'])} | {_tput(h)} "
            f"| {_f(h and h['requests_per_s'])} | {_lat(h or {}, 'claim')} "
            f"| {_lat(h or {}, 'complete')} | {_f(h and h['client_cpu_us_per_request'])} "
            f"| {_f(srv)} | {_tput(s)} | {_tput(q)} "
            f"| {'–' if ratio is None else f'{ratio:.1%}'} | {verdict} |"
        )
    return out


def variants_table(results: dict[str, Any]) -> list[str]:
    out = [
        "| scenario | dispatch_qps | jobs | jobs/s | req/s | claim p50/p99 ms | complete p50/p99 ms "
        "| fail p50/p99 ms | extend p50/p99 ms | 429s | applied fails | applied extends "
        "| verified |",
        "|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---|",
    ]
    for r in results.get("variants", []):
        out.append(
            f"| {r['name']} | {_f(r['dispatch_qps'])} | {_f(r['jobs'])} | {_f(r['jobs_per_s'])} | {_f(r['requests_per_s'])} "
            f"| {_lat(r, 'claim')} | {_lat(r, 'complete')} | {_lat(r, 'fail')} "
            f"| {_lat(r, 'extend')} | {r['rate_limited']} | {r['failed_applied']} "
            f"| {r['extended_applied']} | {'yes' if r['ok'] else 'NO: ' + '; '.join(r['problems'])} |"
        )
    return out


def scale_tables(results: dict[str, Any]) -> list[str]:
    out: list[str] = []
    if results.get("scale"):
        out += [
            "| finished rows in the project | bulk load s | claim p50/p99 ms "
            "| complete p50/p99 ms | admin GET project ms | enqueue jobs/s |",
            "|---:|---:|---:|---:|---:|---:|",
        ]
        for r in results["scale"]:
            get = r["latency_ms"].get("admin_get_project", {}).get("p50")
            out.append(
                f"| {r['finished_rows']:,} | {_f(r['load_s'], 1)} | {_lat(r, 'claim')} "
                f"| {_lat(r, 'complete')} | {_f(get, 1)} | {_f(r['enqueue_jobs_per_s'])} |"
            )
        out.append("")
    e = results.get("expired")
    if e:
        out += [
            f"With **{e['expired']:,} expired leases** pending (bulk-loaded as `wip` rows whose "
            f"lease ended a second ago) and {e['batch'] * e['cycles']:,} fresh jobs, one worker "
            f"ran {e['cycles']} claim(B={e['batch']}) → complete cycles:",
            "",
            "| claims | count | claim p50/p99 ms |",
            "|:---|---:|---:|",
            f"| 1–{e['sweeping_claims']} "
            f"| {e['latency_ms'].get('claim_while_sweeping', {}).get('n', 0)} "
            f"| {_lat(e, 'claim_while_sweeping')} |",
            f"| {e['sweeping_claims'] + 1}–{e['cycles']} "
            f"| {e['latency_ms'].get('claim', {}).get('n', 0)} "
            f"| {_lat(e, 'claim')} |",
            "",
            f"Each claim resets at most {CLAIM_SWEEP_LIMIT:,} expired rows of its project "
            "before claiming (`hq_domain.worker.CLAIM_SWEEP_LIMIT`), and the background sweeper "
            "resets full batches of 1,000 every 5 s until none are left; compare with the 0-row "
            "scale row above for a claim without a sweep.",
            "",
            f"Expired rows still pending at the end: {e['expired_left']:,}.",
            "",
        ]
    out += plans_table(results.get("plans"))
    if results.get("enqueue"):
        out += [
            "| identity mode | jobs | batch | enqueue jobs/s | identical re-submission jobs/s |",
            "|:---|---:|---:|---:|---:|",
        ]
        for r in results["enqueue"]:
            out.append(
                f"| {r['identity_mode']} | {r['jobs']:,} | {r['batch']:,} "
                f"| {_f(r['jobs_per_s'])} | {_f(r['resubmit_jobs_per_s'])} |"
            )
    return out


def plans_table(p: dict[str, Any] | None) -> list[str]:
    if not p:
        return []
    out = [
        f"**Stale planner statistics** (`benchmarks/plans.py`): {p['deleted']:,} rows of another "
        "project deleted and the table ANALYZEd before autovacuum ran, then a new project "
        f"filled; {p['claims']} direct `claim_op_fifo` (B={p['batch']}) → `complete_op` cycles "
        "with the adapter's parameters and plan setting, then the same after a fresh ANALYZE:",
        "",
        "| statement | p50 / p99 ms |",
        "|:---|---:|",
    ]
    for kind in p["latency_ms"]:
        out.append(f"| {kind} | {_lat(p, kind)} |")
    return [*out, ""]


def write_plot(results: dict[str, Any], path: Path) -> None:
    grid = rows_by_level(results)
    workers = sorted({w for _, w in grid})
    series = []
    for n, w in enumerate(workers):
        color = plot.PALETTE[n % len(plot.PALETTE)]
        for level, label, dashed in (("http", "HTTP", False), ("sql", "SQL CEILING", True)):
            pts = [
                (b, lv[level]["jobs_per_s"])
                for (b, ww), lv in grid.items()
                if ww == w and level in lv
            ]
            if pts:
                series.append(plot.Series(f"{label} W={w}", pts, color, dashed))
    path.write_bytes(plot.chart(series, "JOBS/S VS BATCH SIZE"))


def write(results: dict[str, Any], doc: Path) -> None:
    png = doc.with_suffix(".png")
    write_plot(results, png)
    m = results.get("machine", {})
    lines = [
        "# Performance",
        "",
        "Measured by the on-demand benchmark suite in `benchmarks/` (never part of `pytest`).",
        "This file is generated; rerun the command below to refresh it.",
        "",
        "```",
        results.get("command", "uv run python -m benchmarks.internals --quick"),
        "```",
        "",
        f"Run {results.get('started', '?')} – {results.get('finished', '?')}.",
        "",
        "| machine | |",
        "|:---|:---|",
        f"| CPUs (`nproc`) | {m.get('nproc', '?')} |",
        f"| CPU model | {m.get('cpu', '?')} |",
        f"| PostgreSQL | {m.get('postgresql', '?')} ({m.get('pg_settings', '')}) |",
        f"| Python | {m.get('python', '?')}, kernel {m.get('kernel', '?')} |",
        f"| load average (1/5/15 min) at start | {m.get('load_at_start', '?')} |",
        f"| load average at end | {m.get('load_at_end', 'not recorded')} |",
        "",
        *[f"**Failed step `{k}`**: {v}\n" for k, v in results.get("errors", {}).items()],
        *findings.method_section(),
        "## Throughput: claim(B) → complete, W workers",
        "",
        *throughput_table(results),
        "",
        f"![throughput vs batch size]({png.name})",
        "",
        *findings.throughput_notes(results),
        "## dispatch_qps and the mixed workload",
        "",
        *variants_table(results),
        "",
        "## Scale",
        "",
        *scale_tables(results),
        "",
        *findings.profile_section(results.get("profile"), results.get("plans"), results),
        *findings.notes("optimisations"),
        *findings.notes("source_import"),
        *findings.usage_section(),
        "",
        *findings.asgi_pointer(),
    ]
    doc.write_text("\n".join(lines).rstrip() + "\n")
