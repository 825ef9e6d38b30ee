"""Latency and CPU bookkeeping shared by the HTTP scenarios and the raw-SQL ceiling."""

from __future__ import annotations

import math
import os
import time
from collections import defaultdict
from dataclasses import dataclass, field


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of an already sorted list; NaN when empty."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q / 100.0 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


@dataclass
class Latencies:
    """Per request type: every latency in seconds."""

    samples: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def add(self, kind: str, seconds: float) -> None:
        self.samples[kind].append(seconds)

    @property
    def requests(self) -> int:
        return sum(len(v) for v in self.samples.values())

    def summary_ms(self) -> dict[str, dict[str, float]]:
        """``{kind: {"n", "p50", "p99"}}`` with latencies in milliseconds."""
        out: dict[str, dict[str, float]] = {}
        for kind, values in sorted(self.samples.items()):
            ordered = sorted(values)
            out[kind] = {
                "n": len(ordered),
                "p50": percentile(ordered, 50) * 1000,
                "p99": percentile(ordered, 99) * 1000,
            }
        return out


def process_cpu_seconds(pid: int) -> float | None:
    """utime+stime of another process from /proc (None if it is gone or /proc is absent)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuWatch:
    """Wall time, this process's CPU time and (optionally) a server process's CPU time."""

    def __init__(self, server_pid: int | None = None) -> None:
        self.server_pid = server_pid
        self.wall0 = time.perf_counter()
        self.cpu0 = time.process_time()
        self.srv0 = process_cpu_seconds(server_pid) if server_pid else None

    def stop(self) -> dict[str, float | None]:
        wall = time.perf_counter() - self.wall0
        cpu = time.process_time() - self.cpu0
        srv = None
        if self.server_pid and self.srv0 is not None:
            now = process_cpu_seconds(self.server_pid)
            srv = None if now is None else now - self.srv0
        return {"wall_s": wall, "client_cpu_s": cpu, "server_cpu_s": srv}
