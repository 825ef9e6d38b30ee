"""The prose of docs/performance.md: method, notes computed from the results, the profile, and
the static notes in ``benchmarks/notes/`` (figures measured outside ``benchmarks.internals``, kept
verbatim so a regeneration does not lose them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

NOTES = Path(__file__).parent / "notes"

NOT_SQL = ("BEGIN;", "COMMIT;", "pool reset")


def method_section() -> list[str]:
    return [
        "## Method",
        "",
        "* **HTTP** — `benchmarks/loadgen/`: asyncio, one minimal keep-alive HTTP/1.1 client per "
        "worker on asyncio streams, msgspec for JSON (httpx costs 1.5–2.5 ms of client CPU per "
        "request here). A scenario PUTs a fresh project (identity mode `none`) through the admin "
        "API, enqueues N jobs in batches of 5,000, then W workers loop claim(B) → complete(all) "
        "until every job is done, and finally checks through the admin API that `job_counts` "
        "is exactly `done = N` and that the client saw exactly one applied completion per job "
        "(no attempt applied twice). Client CPU is `time.process_time()`; server CPU is the "
        "`tracker serve` process's utime+stime from `/proc`.",
        "* **SQL ceiling** — `benchmarks/ceiling.py`: exactly the statements the PostgreSQL "
        "adapter runs per worker request, read from `src/hq_adapters/postgres/sql/*.sql` at run "
        "time: the gate read `worker_gate` then `claim_op_fifo` for a claim, `worker_gate` then "
        "`complete_op` for a complete, each autocommit, bound with the adapter's parameters "
        "(`hq_adapters/postgres/worker.py`), on connections with the pool's "
        "`plan_cache_mode = force_custom_plan`. W connections, the same B, the same database. "
        "HTTP adds routing, JSON, Python and the pool but no statement, so HTTP / ceiling is "
        "the share of the database's pace the server keeps. "
        "pgbench cannot express the cycle: `\\gset` takes one row, and a claim is a "
        "data-modifying `WITH` that PostgreSQL does not allow inside a subquery, so its B rows "
        "cannot be folded into one to feed the complete statement.",
        "* **store** — the PostgreSQL adapter in-process (`PostgresStore.worker_gate` then "
        "`claim`/`complete`): the same statements through its pool and row mapping, no HTTP or "
        'JSON. It splits the HTTP gap into "adapter" and "server" parts.',
        "* Client, server and PostgreSQL share the same cores, and other work on the machine "
        "adds noise: treat differences under ~15 % between runs as noise. HTTP and ceiling runs "
        "of one (B, W) point run back to back so they see similar load.",
        "",
    ]


STATEMENTS_PER_CYCLE = 4
"""gate + claim_op_fifo, gate + complete_op: what HTTP, the store and the ceiling all run."""


def cycle_ms(r: dict[str, Any] | None) -> float | None:
    lat = (r or {}).get("latency_ms", {})
    if "claim" not in lat or "complete" not in lat:
        return None
    return lat["claim"]["p50"] + lat["complete"]["p50"]


def cycle_points(results: dict[str, Any]) -> list[tuple[int, float, float, float]]:
    """W=1 points: (B, HTTP cycle ms, store cycle ms, SQL cycle ms), p50s."""
    from benchmarks.internals_report import rows_by_level

    out = []
    for (b, w), lv in sorted(rows_by_level(results).items()):
        h, st, q = (cycle_ms(lv.get(k)) for k in ("http", "store", "sql"))
        if w == 1 and h and st and q:
            out.append((b, h, st, q))
    return out


def throughput_notes(results: dict[str, Any]) -> list[str]:
    from benchmarks.internals_report import rows_by_level, target_for

    lines = []
    met, total = 0, 0
    for (b, w), lv in sorted(rows_by_level(results).items()):
        h, q = lv.get("http"), lv.get("sql")
        tgt = target_for(b, w)
        if h and q and tgt is not None:
            total += 1
            ratio = h["jobs_per_s"] / q["jobs_per_s"]
            met += ratio >= tgt
            lines.append(
                f"* B={b}, W={w}: HTTP reaches {ratio:.0%} of the SQL ceiling (target ≥ {tgt:.0%})."
            )
    for (b, w), lv in sorted(rows_by_level(results).items()):
        h = lv.get("http")
        if h and h.get("server_cpu_s") and w == max(ww for _, ww in rows_by_level(results)):
            us = 1e6 * h["server_cpu_s"] / h["jobs"]
            busy = h["server_cpu_s"] / h["wall_s"]
            lines.append(
                f"* B={b}, W={w}: `tracker serve` used {us:,.0f} µs of CPU per job and was "
                f"{busy:.0%} busy; one process (one core) would saturate near "
                f"{1e6 / us:,.0f} jobs/s at this batch size."
            )
    for b, h, st, q in cycle_points(results):
        lines.append(
            f"* B={b}, W=1: one claim+complete cycle (p50s) takes {h:.1f} ms over HTTP, "
            f"{st:.1f} ms through the adapter in-process and {q:.1f} ms for the same "
            f"{STATEMENTS_PER_CYCLE} statements bare: the server adds {h - q:.1f} ms per cycle."
        )
    bad = [r["name"] for r in results.get("throughput", []) if not r.get("ok")]
    lines.append(
        f"* Targets met: {met} of {total}. Every run verified: "
        f"{'yes' if not bad else 'NO — ' + ', '.join(bad)}."
    )
    return [*lines, ""]


def _stmt_table(p: dict[str, Any]) -> list[str]:
    requests = max(1, p["claims"] + p["completes"])
    out = ["| statement | count | per request |", "|:---|---:|---:|"]
    for name, n in sorted(p["statements"].items(), key=lambda kv: -kv[1]):
        out.append(f"| `{name}` | {n:,} | {n / requests:.2f} |")
    total = sum(p["statements"].values())
    out.append(f"| **all round trips** | {total:,} | **{total / requests:.2f}** |")
    return out


def plans_finding(plans: dict[str, Any] | None) -> list[str]:
    lat = (plans or {}).get("latency_ms", {})
    stale, fresh = lat.get("claim_op_fifo", {}), lat.get("claim_op_fifo after ANALYZE", {})
    if not stale or not fresh:
        return []
    done_stale = lat.get("complete_op", {}).get("p50", 0.0)
    done_fresh = lat.get("complete_op after ANALYZE", {}).get("p50", 0.0)
    return [
        f"* **Stale statistics** (table under Scale): `claim_op_fifo` {stale['p50']:.1f} ms "
        f"p50 before ANALYZE, {fresh['p50']:.1f} ms after; `complete_op` {done_stale:.1f} / "
        f"{done_fresh:.1f} ms. Before the perf task's row 0 the bare claim took 79–176 ms "
        "in this state (a walk of every project's rows per claim).",
    ]


def profile_section(
    p: dict[str, Any] | None,
    plans: dict[str, Any] | None = None,
    results: dict[str, Any] | None = None,
) -> list[str]:
    if not p:
        return ["## Profile", "", "Not run (`--skip-profile`).", "", *plans_finding(plans), ""]
    s = p["scenario"]
    requests = max(1, p["claims"] + p["completes"])
    st = p["statements"]
    total_stmts = sum(st.values())
    per_request = total_stmts / requests
    resets = st.get("pool reset", 0) / requests
    txn = (st.get("BEGIN;", 0) + st.get("COMMIT;", 0)) / requests
    cats = p["categories"]
    driver_share = cats.get("asyncpg (driver)", 0.0) / max(1e-9, p["total_s"])
    json_share = cats.get("stdlib json", 0.0) / max(1e-9, p["total_s"])
    lines = [
        "## Profile of the hot path",
        "",
        f"`tracker serve`'s wiring in-process under cProfile (`benchmarks/profile_server.py`) "
        f"while W={s['workers']} workers drained {s['jobs']:,} jobs with B={s['batch']} "
        f"({s['jobs_per_s']:,.0f} jobs/s under the profiler; {p['claims']} claims, "
        f"{p['completes']} completes). Only the drain is profiled. Statements are counted by "
        "wrapping asyncpg's `Connection` query methods in that process.",
        "",
        "### Round trips per request",
        "",
        *_stmt_table(p),
        "",
        "### Server Python time by package (cProfile tottime)",
        "",
        "| package | seconds | share |",
        "|:---|---:|---:|",
        *[f"| {k} | {v:.3f} | {v / max(1e-9, p['total_s']):.0%} |" for k, v in cats.items()],
        "",
        "Time inside asyncpg's Cython protocol (encoding, socket writes) is charged to the "
        "asyncpg frame that called it, so the driver row is the cost of *issuing* statements.",
        "",
        "### Top functions (tottime)",
        "",
        "| function | calls | tottime s | cumtime s |",
        "|:---|---:|---:|---:|",
        *[
            f"| `{r['function']}` | {r['calls']:,} | {r['tottime_s']:.3f} | {r['cumtime_s']:.3f} |"
            for r in p["top"]
            if "benchmarks/" not in r["function"]
        ][:15],
        "",
    ]
    lines += _experiment_table(p.get("experiments"))
    lines += [
        "### Where the time goes now",
        "",
        f"* A request costs {per_request:.2f} round trips to PostgreSQL (the gate read and one "
        f"statement; pool resets {resets:.2f}, BEGIN/COMMIT {txn:.2f} per request). The "
        f"driver is {driver_share:.0%} and stdlib json {json_share:.0%} of the server's "
        "Python time.",
        *plans_finding(plans),
        *_counts_finding(results),
        "",
    ]
    return lines


def _counts_finding(results: dict[str, Any] | None) -> list[str]:
    rows = [r for r in (results or {}).get("scale") or [] if "admin_get_project" in r["latency_ms"]]
    if len(rows) < 2:
        return []
    big = max(rows, key=lambda r: r["finished_rows"])
    small = min(rows, key=lambda r: r["finished_rows"])
    ms = lambda r: r["latency_ms"]["admin_get_project"]["p50"]  # noqa: E731
    if ms(big) > 5 * max(ms(small), 1.0):
        return [
            f"* **Admin project summaries grow with the project** ({ms(small):,.0f} ms at "
            f"{small['finished_rows']:,} finished rows, {ms(big):,.0f} ms at "
            f"{big['finished_rows']:,}; the claim path does not): the counter table of migration "
            "0004 (docs/metrics.md) should make them O(1); check that its triggers exist.",
        ]
    return [
        f"* **Admin project summaries do not grow with the project** ({ms(small):,.1f} ms at "
        f"{small['finished_rows']:,} finished rows, {ms(big):,.1f} ms at "
        f"{big['finished_rows']:,}): the counts come from the counter table of migration 0004 "
        "(docs/metrics.md has its cost on the claim path).",
    ]


def _experiment_table(exps: list[dict[str, Any]] | None) -> list[str]:
    if not exps:
        return []
    out = [
        "### Experiment: pool releases without asyncpg's reset query",
        "",
        "Same drain against `tracker serve` and against the same wiring with "
        "`--no-pool-reset` (`benchmarks/profile_server.py`), alternating. The store itself no "
        "longer resets on release (`store.py:keep_session`), so both sides now run the same "
        "code and the differences are noise.",
        "",
        "| B | W | jobs | tracker serve jobs/s | without pool reset jobs/s | gain |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for e in exps:
        gain = e["no_reset_jobs_per_s"] / e["baseline_jobs_per_s"] - 1
        out.append(
            f"| {e['batch']} | {e['workers']} | {e['jobs']:,} "
            f"| {e['baseline_jobs_per_s']:,.0f} | {e['no_reset_jobs_per_s']:,.0f} "
            f"| {gain:+.0%} |"
        )
    return [*out, ""]


def usage_section() -> list[str]:
    return [
        "## Running it",
        "",
        "* `uv run python -m benchmarks.internals --quick` — B ∈ {16, 64, 256} × W ∈ {1, 4}, "
        "0 and 1M finished rows (a few minutes).",
        "* `uv run python -m benchmarks.internals` — B ∈ {1, 16, 64, 256} × W ∈ {1, 4, 16}, "
        "0, 1M and 10M finished rows (10M takes several minutes to load).",
        "* `--rows 0,1e6,1e7` overrides the finished-row counts; `--skip-scale`, "
        "`--skip-profile`, `--no-store` drop parts; `--admin-dsn` picks the PostgreSQL server "
        "(default `postgresql://postgres@127.0.0.1:5432/test`; a `bench_*` database is created "
        "and dropped); `--from-json benchmarks/results/last.json` re-renders this file without "
        "measuring.",
    ]


def notes(name: str) -> list[str]:
    """A static fragment from ``benchmarks/notes/`` (empty if it is missing)."""
    path = NOTES / f"{name}.md"
    return [*path.read_text().rstrip().splitlines(), ""] if path.exists() else []


def asgi_pointer() -> list[str]:
    return [
        "The uvicorn vs granian comparison (`benchmarks/asgi_servers.py`) is in "
        "[asgi-server.md](asgi-server.md).",
    ]
