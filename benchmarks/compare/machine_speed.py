"""How fast the machine itself was around each run, so a reader can tell a slower run from a
slower machine.

A shared VM's speed drifts: in the fifteenth session the same cell on the same code ranged
from 1,145 to 3,140 jobs/s within ten minutes, and CPU per request rose with it, since a vCPU
whose sibling or host is busy does the same work in more CPU time. Load averages do not show
that (they count only this machine's runnable processes). Two readings do:

* the **speed probe**: the best of three timings of a fixed single-threaded workload (SHA-256
  of 4 MiB, a few milliseconds) taken just before a run. It rises when the vCPU is slower;
* **steal**: the share of the machine's CPU time the hypervisor gave to someone else while the
  run lasted (``/proc/stat``), zero on a machine that has its cores to itself.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from pathlib import Path

_PROBE = bytes(range(256)) * (4 * 1024 * 1024 // 256)
_STEAL = 7  # the eighth number after "cpu": user nice system idle iowait irq softirq steal


def speed_probe_ms(rounds: int = 3) -> float:
    """The best of ``rounds`` timings of one SHA-256 over 4 MiB, in milliseconds."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        hashlib.sha256(_PROBE).digest()
        best = min(best, time.perf_counter() - started)
    return best * 1000


def parse_cpu_line(text: str) -> tuple[int, int] | None:
    """(all ticks, steal ticks) from ``/proc/stat``'s first ``cpu`` line; guest time is
    already inside user time, so it is not added again."""
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            ticks = [int(x) for x in fields[1:9]]
            if len(ticks) <= _STEAL:
                return None
            return sum(ticks), ticks[_STEAL]
    return None


def cpu_ticks(proc: Path = Path("/proc")) -> tuple[int, int] | None:
    try:
        return parse_cpu_line((proc / "stat").read_text())
    except OSError:
        return None


def steal_pct(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """Steal as a percentage of all CPU time between two readings (None if either is
    missing or no time passed)."""
    if before is None or after is None:
        return None
    total, steal = after[0] - before[0], after[1] - before[1]
    if total <= 0:
        return None
    return 100 * steal / total


_INTERPRETER_PROBE = r"""
import json, platform, sys, time
def work():
    seen = {}
    for i in range(200_000):
        key = str(i)
        seen[key] = (i, key)
        if len(key) > 3:
            seen.pop(key)
    return len(seen)
best = float("inf")
for _ in range(3):
    started = time.perf_counter()
    work()
    best = min(best, time.perf_counter() - started)
print(json.dumps({
    "executable": sys.executable,
    "version": platform.python_version(),
    "probe_ms": round(best * 1000, 1),
}))
"""


def interpreter_facts(python: str) -> dict[str, object]:
    """Which CPython runs our commands and how fast it runs plain Python: the best of three
    timings of a fixed dict-and-string loop (milliseconds; lower is faster). Builds differ by
    ~20 % on it (profile-guided and link-time optimisation, or neither); the interpreter-bound
    part of our tracker's CPU follows, the reference's does not."""
    done = subprocess.run(
        [python, "-c", _INTERPRETER_PROBE], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)
