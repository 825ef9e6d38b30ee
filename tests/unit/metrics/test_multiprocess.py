"""With PROMETHEUS_MULTIPROC_DIR (serve --processes N), the process that binds the metrics
address serves every process's counters; the others only write theirs (issue 14)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

CHILD = textwrap.dedent("""
    import asyncio, socket, sys, httpx
    from hq_adapters.memory import MemoryStore
    from hq_apps.metrics.exporter import metrics_lifespan
    from hq_apps.api import observers
    from hq_domain.clock import ManualClock

    class App:
        class state: pass

    async def main(port, n, scrape):
        store = MemoryStore(ManualClock())
        async with metrics_lifespan(("127.0.0.1", port), store, ManualClock())(App):
            observers.current.claim("p", n)
            if scrape:
                r = await asyncio.to_thread(httpx.get, f"http://127.0.0.1:{port}/metrics")
                print(r.text)
            else:
                print("bound" if hasattr(App.state, "metrics_address") else "not bound")

    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "scrape"))
""")


def _run(env: dict[str, str], port: int, n: int, mode: str) -> str:
    out = subprocess.run([sys.executable, "-c", CHILD, str(port), str(n), mode], env=env,
                         capture_output=True, text=True, timeout=60, check=True)
    return out.stdout


def test_one_listener_serves_every_process(tmp_path: Path) -> None:
    import socket

    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    port = holder.getsockname()[1]
    holder.listen()
    try:  # the address is taken: this process only writes its counters
        assert _run(env, port, 5, "quiet").strip() == "not bound"
    finally:
        holder.close()
    text = _run(env, port, 2, "scrape")  # binds, and sums both processes' files
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(text) for s in f.samples}
    assert samples[("hq_jobs_claimed_total", (("project", "p"),))] == 7
    assert samples[("hq_claim_requests_total", (("project", "p"), ("result", "jobs")))] == 2
    assert samples[("hq_database_up", ())] == 1
