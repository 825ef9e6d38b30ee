"""``uv run python -m benchmarks.header_limit``: what the 64 KiB header-block bound costs.

Two uvicorn servers run the real tracker app on the memory store, one with uvicorn's
``httptools`` protocol and one with :class:`hq_apps.api.header_limit.BoundedHttpToolsProtocol`.
A client sends ``GET /healthz`` with worker-like headers (~350 bytes) on 8 kept-alive
connections; the servers are measured interleaved (A, B, B, A, …) and the figure is server
CPU microseconds per request (``/proc/PID/stat`` utime+stime), far less sensitive to the
machine's other load than throughput. Prints medians and the per-run figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

SERVER = r"""
import sys, uvicorn
from hq_adapters.memory import MemoryStore
from hq_apps.api.app import create_app
from hq_apps.api.header_limit import BoundedHttpToolsProtocol
from hq_apps.settings import Settings
from hq_domain.clock import SystemClock
app = create_app(Settings(sweep_interval_s=0, openapi=False), MemoryStore(SystemClock()))
http = BoundedHttpToolsProtocol if sys.argv[2] == "bounded" else "httptools"
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), http=http, log_level="error",
            access_log=False, lifespan="on")
"""
REQUEST = (
    b"GET /healthz HTTP/1.1\r\nHost: hq.example.org\r\nUser-Agent: saveweb-worker/1.4 python\r\n"
    b"Accept: application/json\r\nAuthorization: Bearer hq_" + b"x" * 43 + b"\r\n"
    b"Cache-Control: no-store, no-cache, max-age=0\r\nX-SavewebHQ-Client-Version: worker/1.4\r\n"
    b"Accept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\n\r\n"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _client(port: int, n: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(n):
            s.sendall(REQUEST)
            got = b""
            while True:
                got += s.recv(65536)
                head, sep, body = got.partition(b"\r\n\r\n")
                if sep and len(body) >= int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0]):
                    break


def _point(pid: int, port: int, requests: int, connections: int) -> float:
    cpu0 = _cpu_seconds(pid)
    threads = [threading.Thread(target=_client, args=(port, requests // connections))
               for _ in range(connections)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return (_cpu_seconds(pid) - cpu0) / requests * 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=8000)
    p.add_argument("--connections", type=int, default=8)
    p.add_argument("--repeat", type=int, default=6)
    args = p.parse_args()
    servers = {}
    for kind in ("httptools", "bounded"):
        port = _free_port()
        proc = subprocess.Popen([sys.executable, "-c", SERVER, str(port), kind])
        servers[kind] = (proc, port)
    try:
        for _kind, (_proc, port) in servers.items():
            for _ in range(200):
                try:
                    _client(port, 50)  # warm-up
                    break
                except OSError:
                    time.sleep(0.05)
        runs: dict[str, list[float]] = {k: [] for k in servers}
        order = list(servers)
        for i in range(args.repeat):
            for kind in order if i % 2 == 0 else reversed(order):
                proc, port = servers[kind]
                runs[kind].append(_point(proc.pid, port, args.requests, args.connections))
        print(json.dumps({
            "cpu_us_per_request_median": {k: round(statistics.median(v), 1) for k, v in runs.items()},
            "runs": {k: [round(x, 1) for x in v] for k, v in runs.items()},
            "loadavg": os.getloadavg(),
            "requests_per_point": args.requests,
        }, indent=1))  # fmt: skip
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(10)


if __name__ == "__main__":
    main()
