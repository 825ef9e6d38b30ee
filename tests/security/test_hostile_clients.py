"""Hostile clients against a real ``tracker serve`` with the dashboard enabled (issue 13).

For each hostile request: the growth of the server's peak RSS (``VmHWM``, reset before each case
through ``/proc/PID/clear_refs``) and the worst latency a probe loop of ``GET /healthz`` on its
own kept-alive connection sees meanwhile. Bounds: a few MiB each, and no stall of others beyond
100 ms over the worst probe latency of a quiet baseline (this machine is shared and loaded; the
baseline absorbs scheduler noise, the findings were stalls of seconds and gigabytes).
Each case prints its figures (``-s``) for the record.
"""

from __future__ import annotations

import base64
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.faults.harness import ADMIN_TOKEN, VERSION, WORKER_TOKEN, Tracker, seed

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(600)]

MIB = 1 << 20
MEMORY_BOUND = 8 * MIB
STALL_BOUND_S = 0.100


def _secret_file(path: Path, text: str) -> str:
    path.write_text(text + "\n")
    path.chmod(0o600)
    return str(path)


@pytest.fixture(scope="module")
def tracker(pg_databases, tmp_path_factory) -> Iterator[Tracker]:  # type: ignore[no-untyped-def]
    import asyncio

    tmp = tmp_path_factory.mktemp("hostile")
    dsn = asyncio.run(pg_databases.create("hostile"))
    asyncio.run(seed(dsn, "hp", 10))
    web_env = {
        "HQ_PUBLIC_URL": "http://127.0.0.1",
        "HQ_GITHUB_CLIENT_ID": "hostile-client",
        "HQ_GITHUB_CLIENT_SECRET_FILE": _secret_file(tmp / "gh.secret", "gh-secret"),
        "HQ_WEB_SESSION_SECRET_FILE": _secret_file(
            tmp / "web.secret", base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=").decode()
        ),
        "HQ_OAUTH_ADMIN_ORG": "o",
        "HQ_OAUTH_ADMIN_TEAM": "t",
    }
    t = Tracker(dsn, tmp).start(extra_env=web_env)
    try:
        yield t
    finally:
        t.stop()
        asyncio.run(pg_databases.drop(dsn))


def _status_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


PROBE = r"""
import socket, sys, time
port = int(sys.argv[1])
req = b"GET /healthz HTTP/1.1\r\nHost: p\r\n\r\n"
s = socket.create_connection(("127.0.0.1", port), timeout=30)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
worst, count = 0.0, 0
print("ready", flush=True)
sys.stdin.readline()  # "go": start measuring
import selectors
sel = selectors.DefaultSelector()
sel.register(sys.stdin, selectors.EVENT_READ)
while not sel.select(0):
    t0 = time.perf_counter()
    s.sendall(req)
    got = b""
    while True:
        got += s.recv(65536)
        head, sep, body = got.partition(b"\r\n\r\n")
        if sep:
            n = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0].split(b":")[1])
            if len(body) >= n:
                break
    assert got.startswith(b"HTTP/1.1 200"), got[:100]
    worst = max(worst, time.perf_counter() - t0)
    count += 1
    time.sleep(0.005)
print(worst, count, flush=True)
"""


class Probe:
    """GET /healthz in a loop on one kept-alive connection, in its own process (so the
    attacking threads here cannot slow it down); records the worst latency."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.worst = 0.0
        self.count = 0

    def __enter__(self) -> Probe:
        self._proc = subprocess.Popen(
            [sys.executable, "-c", PROBE, str(self.port)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self._proc.stdout is not None and self._proc.stdin is not None
        assert self._proc.stdout.readline().strip() == "ready"
        self._proc.stdin.write("go\n")
        self._proc.stdin.flush()
        time.sleep(0.1)
        return self

    def __exit__(self, *exc: object) -> None:
        out, _ = self._proc.communicate("stop\n", timeout=60)
        worst, count = out.split()
        self.worst, self.count = float(worst), int(count)


@pytest.fixture(scope="module")
def baseline(tracker: Tracker) -> float:
    with Probe(tracker.port) as p:
        time.sleep(2.0)
    print(f"\nbaseline: worst probe latency {p.worst * 1000:.1f} ms over {p.count} probes")
    return p.worst


def measure(tracker: Tracker, baseline: float, name: str, attack: Callable[[int], object]) -> object:
    assert tracker.proc is not None
    pid = tracker.proc.pid
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    rss0 = _status_kib(pid, "VmRSS")
    t0 = time.monotonic()
    with Probe(tracker.port) as probe:
        result = attack(tracker.port)
        time.sleep(0.3)
    took = time.monotonic() - t0
    growth = (_status_kib(pid, "VmHWM") - rss0) * 1024
    with Probe(tracker.port) as control:  # same length, no attack: this moment's noise
        time.sleep(took)
    quiet = max(baseline, control.worst)
    print(f"{name}: peak RSS +{growth / MIB:.2f} MiB, worst probe {probe.worst * 1000:.1f} ms "
          f"({probe.count} probes; quiet {quiet * 1000:.1f} ms), answer {result!r}")  # fmt: skip
    assert probe.count > 0
    assert growth <= MEMORY_BOUND, f"{name}: peak RSS grew {growth / MIB:.1f} MiB"
    assert probe.worst <= quiet + STALL_BOUND_S, f"{name}: others stalled {probe.worst:.3f} s"
    return result


def _send(port: int, head: bytes, body_chunks: Iterator[bytes]) -> bytes:
    """Send a request (head then body chunks), tolerating the server closing early; returns the
    status line."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            s.sendall(head)
            for chunk in body_chunks:
                s.sendall(chunk)
        got = b""
        with contextlib.suppress(ConnectionResetError):
            while b"\r\n" not in got:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
    return got.split(b"\r\n", 1)[0]


def _repeat(piece: bytes, total: int, chunk: int = 256 * 1024) -> Iterator[bytes]:
    block = piece * (chunk // len(piece))
    sent = 0
    while sent < total:
        yield block
        sent += len(block)


def _post(path: str, content_type: str, length: int | None, extra: str = "") -> bytes:
    size = f"Content-Length: {length}\r\n" if length is not None else "Transfer-Encoding: chunked\r\n"
    return (f"POST {path} HTTP/1.1\r\nHost: h\r\nContent-Type: {content_type}\r\n{size}{extra}"
            "Connection: close\r\n\r\n").encode()  # fmt: skip


def _chunked(chunks: Iterator[bytes]) -> Iterator[bytes]:
    for c in chunks:
        yield f"{len(c):x}\r\n".encode() + c + b"\r\n"
    yield b"0\r\n\r\n"


FORM = "application/x-www-form-urlencoded"


def test_oversized_urlencoded_form(tracker: Tracker, baseline: float) -> None:
    size = 32 * MIB
    status = measure(tracker, baseline, "32 MiB url-encoded form, declared length", lambda port: _send(
        port, _post("/admin/projects/x/source", FORM, size), _repeat(b"a&", size)))
    assert status.startswith(b"HTTP/1.1 400")
    status = measure(tracker, baseline, "32 MiB url-encoded form, chunked", lambda port: _send(
        port, _post("/admin/projects/x/source", FORM, None), _chunked(_repeat(b"a&", size))))
    assert status.startswith(b"HTTP/1.1 400")


def test_many_tiny_fields(tracker: Tracker, baseline: float) -> None:
    body = b"&".join([b"a"] * (512 * 1024 - 1))
    status = measure(tracker, baseline, "512k tiny fields in 1 MiB", lambda port: _send(
        port, _post("/admin/projects", FORM, len(body)), iter([body])))
    assert status.startswith(b"HTTP/1.1 400")


def _multipart(name: str, filename: str | None, size: int) -> tuple[bytes, Iterator[bytes], int]:
    boundary = "hostileboundary"
    disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
    head = f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    length = len(head) + size + len(tail)

    def body() -> Iterator[bytes]:
        yield head
        yield from _repeat(b"x", size)
        yield tail

    return f"multipart/form-data; boundary={boundary}".encode(), body(), length


def test_big_multipart_text_field(tracker: Tracker, baseline: float) -> None:
    ctype, body, length = _multipart("csrf", None, 200 * MIB)
    status = measure(tracker, baseline, "200 MiB multipart text field", lambda port: _send(
        port, _post("/admin/projects/x/source", ctype.decode(), length), body))
    assert status.startswith(b"HTTP/1.1 400")


def test_anonymous_multipart_file(tracker: Tracker, baseline: float) -> None:
    ctype, body, length = _multipart("source_file", "s.zst", 200 * MIB)
    status = measure(tracker, baseline, "200 MiB anonymous file upload", lambda port: _send(
        port, _post("/admin/projects/hp/source", ctype.decode(), length), body))
    assert status.startswith(b"HTTP/1.1 303")


def test_oversized_header_block(tracker: Tracker, baseline: float) -> None:
    head = b"GET /healthz HTTP/1.1\r\nHost: h\r\nX-Pad: "
    status = measure(tracker, baseline, "4 MiB header block", lambda port: _send(
        port, head, _repeat(b"a", 4 * MIB)))
    assert status.startswith(b"HTTP/1.1 431")


def _deep(depth: int) -> str:
    return '{"a":' * (depth - 1) + "{}" + "}" * (depth - 1)


@pytest.mark.parametrize("route", ["enqueue", "complete", "fail"])
def test_deep_json(tracker: Tracker, baseline: float, route: str) -> None:
    value = _deep(100_000)
    item = '{"job_id":1,"attempt_id":"at_x"'
    body, path, token = {
        "enqueue": ('{"jobs":[{"value":"v","attr":' + value + "}]}",
                    "/api/v1/admin/projects/hp/jobs", ADMIN_TOKEN),
        "complete": ('{"worker_id":"w","items":[' + item + ',"outcome":{"kind":"success","code":200,'
                     '"uri":"u","meta":' + value + "}}]}", "/api/v1/projects/hp/jobs/complete", WORKER_TOKEN),
        "fail": ('{"worker_id":"w","items":[' + item + ',"retryable":true,"error":{"code":"e",'
                 '"message":"m","details":' + value + "}}]}", "/api/v1/projects/hp/jobs/fail", WORKER_TOKEN),
    }[route]  # fmt: skip
    raw = body.encode()
    extra = f"Authorization: Bearer {token}\r\nX-SavewebHQ-Client-Version: {VERSION}\r\n"
    status = measure(tracker, baseline, f"JSON nested 100,000 deep on {route}", lambda port: _send(
        port, _post(path, "application/json", len(raw), extra), iter([raw])))
    assert status.startswith(b"HTTP/1.1 400")


# Connection churn (slow drips, a burst of 1,000 idle connections) is bounded like every other
# case. Measured on an idle 2-core host: worst probe 37-58 ms for the burst (3 runs); on a host
# oversubscribed 10x by other work the burst stalled others 130-400 ms (asyncio accepts a whole
# backlog per callback, and per-connection setup runs on the event loop), so run this suite on a
# quiet machine.


def test_slow_drips(tracker: Tracker, baseline: float) -> None:
    def attack(port: int) -> int:
        socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(50)]
        try:
            for s in socks:
                s.sendall(_post("/admin/projects", FORM, 1000))
            for _ in range(6):  # one byte per connection every 0.5 s for 3 s
                for s in socks:
                    with contextlib.suppress(OSError):
                        s.sendall(b"a")
                time.sleep(0.5)
        finally:
            for s in socks:
                s.close()
        return len(socks)

    measure(tracker, baseline, "50 slow-drip bodies for 3 s", attack)


def test_many_idle_connections(tracker: Tracker, baseline: float) -> None:
    def attack(port: int) -> int:
        socks = []
        try:
            for _ in range(1000):
                socks.append(socket.create_connection(("127.0.0.1", port)))
            time.sleep(2.0)
        finally:
            for s in socks:
                s.close()
        return len(socks)

    measure(tracker, baseline, "1,000 idle connections for 2 s", attack)


def test_server_still_serves(tracker: Tracker) -> None:
    status = _send(tracker.port, b"GET /healthz HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", iter(()))
    assert status.startswith(b"HTTP/1.1 200")
