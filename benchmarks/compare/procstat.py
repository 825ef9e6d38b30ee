"""CPU accounting from ``/proc``: a process tree (the tracker and its worker processes) and the
PostgreSQL backends serving one database.

CPU seconds are far less sensitive to a loaded, shared machine than throughput, so every cell
reports CPU per request next to jobs/s. ``/proc/PID/stat`` fields 14–17 (utime, stime, cutime,
cstime) are in clock ticks; ``cutime``/``cstime`` hold children that exited and were waited for.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True, slots=True)
class Stat:
    pid: int
    ppid: int
    utime: int
    stime: int
    cutime: int
    cstime: int

    @property
    def own_ticks(self) -> int:
        return self.utime + self.stime

    @property
    def children_ticks(self) -> int:
        return self.cutime + self.cstime


def parse_stat(text: str) -> Stat:
    """One ``/proc/PID/stat`` line. The command name (field 2) may hold spaces and parentheses,
    so the fields are counted from the last ``)``."""
    head, _, tail = text.rpartition(")")
    pid = int(head.split("(", 1)[0])
    fields = tail.split()  # fields[0] is the state (field 3)
    return Stat(
        pid=pid,
        ppid=int(fields[1]),
        utime=int(fields[11]),
        stime=int(fields[12]),
        cutime=int(fields[13]),
        cstime=int(fields[14]),
    )


def read_stat(pid: int, proc: Path = Path("/proc")) -> Stat | None:
    try:
        return parse_stat((proc / str(pid) / "stat").read_text(encoding="ascii", errors="replace"))
    except (OSError, ValueError, IndexError):
        return None


def all_stats(proc: Path = Path("/proc")) -> dict[int, Stat]:
    out: dict[int, Stat] = {}
    for entry in proc.iterdir():
        if entry.name.isdigit():
            stat = read_stat(int(entry.name), proc)
            if stat is not None:
                out[stat.pid] = stat
    return out


def tree_ticks(root: int, stats: dict[int, Stat]) -> int | None:
    """CPU ticks of ``root`` and every live descendant, plus the children each of them reaped."""
    if root not in stats:
        return None
    children: dict[int, list[int]] = {}
    for s in stats.values():
        children.setdefault(s.ppid, []).append(s.pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        s = stats[pid]
        total += s.own_ticks + s.children_ticks
        todo += children.get(pid, [])
    return total


def tree_cpu_seconds(root: int, proc: Path = Path("/proc")) -> float | None:
    ticks = tree_ticks(root, all_stats(proc))
    return None if ticks is None else ticks / TICK


class BackendCpu:
    """CPU of the backends connected to one database, summed over a measurement window.

    ``observe(pids)`` is called at the window's start, periodically and at its end with the pids
    that ``pg_stat_activity`` lists for the database. A backend first seen after the start counts
    from zero (it was born inside the window); one that exited keeps its last observed value, so
    short-lived backends are counted up to the last sample before they ended.
    """

    def __init__(self, proc: Path = Path("/proc")) -> None:
        self.proc = proc
        self.first: dict[int, int] = {}
        self.last: dict[int, int] = {}
        self.started = False

    def observe(self, pids: list[int]) -> None:
        for pid in pids:
            stat = read_stat(pid, self.proc)
            if stat is None:
                continue
            self.record(pid, stat.own_ticks)
        self.started = True

    def record(self, pid: int, ticks: int) -> None:
        if pid not in self.first:
            self.first[pid] = ticks if not self.started else 0
        self.last[pid] = ticks

    @property
    def seconds(self) -> float:
        return sum(self.last[p] - self.first[p] for p in self.last) / TICK
