"""Issue 14: the job-count triggers' share of all CPU during claim→complete drains, from perf.

``benchmarks.counts_http`` compares throughput with the triggers on and off, but on a shared
2-core VM consecutive runs of the same configuration differ by ±20–40 % (the tracker's own CPU
per job moves as much as PostgreSQL's, although the triggers never run in the tracker), so a
few percent cannot be read off it. This asks a question that noise does not move: of every CPU
sample taken machine-wide during a drain (``perf record -a``: tracker, PostgreSQL, load
generator), how many are the triggers' work? That is PostgreSQL's statement-level AFTER trigger
execution (``AfterTriggerEndQuery``: the plpgsql functions and their delta inserts) plus the
capture of transition rows while the statement runs (``ExecAR*Triggers``). A drain that is
CPU-bound (it is here: the machine is idle ~12 % of the time) loses at most about that share
of its throughput. The same symbols are summed with the triggers disabled, as the floor that
PostgreSQL's trigger machinery costs anyway. Since migration 0013 the worker statements append
their own deltas inside the statement, which these symbols do not cover: this measures what the
triggers still cost (the transition-row capture and the other writers), not all counting.

Needs ``perf`` and permission to sample every CPU (root here), a PostgreSQL on this machine,
and a PostgreSQL built with symbols for those functions (Debian's is).

    uv run python -m benchmarks.counts_profile [--cells 1x4 1x16 16x16] [--repeat 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks import env
from benchmarks.counts import alternating, drain_problems, served, set_triggers
from benchmarks.loadgen import scenario

JOBS = {1: 4000, 4: 8000, 16: 20000}
# Entry points of trigger work in PostgreSQL: disjoint subtrees (one runs after the
# statement, the others while it writes each row).
SYMBOLS = ("AfterTriggerEndQuery", "ExecARInsertTriggers", "ExecARUpdateTriggers",
           "ExecARDeleteTriggers")  # fmt: skip
_LINE = re.compile(r"^\s*([\d.]+)%\s+[\d.]+%\s+\[\.\]\s+(\S+)")


def trigger_share(data: Path) -> tuple[float, float]:
    """(share of all samples under the trigger entry points, share of PostgreSQL's), in %."""
    report = subprocess.run(
        ["perf", "report", "-i", str(data), "--children", "--sort", "symbol", "-g", "none",
         "--stdio"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    children = {}
    for line in report.splitlines():
        m = _LINE.match(line)
        if m and m.group(2) not in children:
            children[m.group(2)] = float(m.group(1))
    by_comm = subprocess.run(
        ["perf", "report", "-i", str(data), "--sort", "comm", "-g", "none", "--stdio"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    pg = sum(float(line.split("%")[0]) for line in by_comm.splitlines()
             if line.strip().endswith("postgres") and "%" in line)  # fmt: skip
    share = sum(children.get(s, 0.0) for s in SYMBOLS)
    return share, 100 * share / pg if pg else 0.0


async def main() -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.counts_profile", description=__doc__)
    p.add_argument("--cells", nargs="+", default=["1x4", "1x16", "16x16"])
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--admin-dsn", default=env.ADMIN_DSN)
    args = p.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as perf_dir:
        async with served(args.admin_dsn) as (target, conn):
            print("cell        triggers  jobs/s  trigger share of all CPU  of PostgreSQL's")
            for cell in args.cells:
                b, w = (int(x) for x in cell.split("x"))
                spec = scenario.Spec(b, w, JOBS.get(b, 20000))
                res: dict[bool, list[tuple[float, float, float]]] = {True: [], False: []}
                for r, on in enumerate(alternating(args.repeat)):
                    await set_triggers(conn, on)
                    data = Path(perf_dir) / f"{cell}-{on}-{r}.data"
                    rec: list[subprocess.Popen[bytes]] = []

                    async def around(start: bool, data: Path = data,
                                     rec: list[subprocess.Popen[bytes]] = rec) -> None:
                        if start:
                            rec.append(subprocess.Popen(
                                ["perf", "record", "-e", "cpu-clock", "-a", "-g",
                                 "-o", str(data)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
                            time.sleep(0.2)  # perf is sampling before the drain
                        else:
                            rec[0].send_signal(signal.SIGINT)
                            rec[0].wait()

                    out = await scenario.run(target, spec, around_drain=around)
                    problems = drain_problems(out, on)
                    assert not problems, problems
                    share, of_pg = trigger_share(data)
                    res[on].append((out["jobs_per_s"], share, of_pg))
                    data.unlink()
                for on in (True, False):
                    jobs, share, of_pg = (statistics.median(x[i] for x in res[on])
                                          for i in range(3))
                    print(f"B={b:<3} W={w:<3} {'on ' if on else 'off'}   {jobs:8.0f}"
                          f"  {share:20.2f} %  {of_pg:13.2f} %", flush=True)
                net = (statistics.median(x[1] for x in res[True])
                       - statistics.median(x[1] for x in res[False]))
                print(f"           → the triggers' own work: {net:.2f} % of all CPU",
                      flush=True)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    asyncio.run(main())
