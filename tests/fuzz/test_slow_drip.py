"""Slow-drip uploads against a real ``tracker serve`` (spec §1.1: the whole request body must
arrive within the 15 s ReadTimeout). A client trickling a byte every half second must be cut
off — an answer or a closed connection — instead of holding a connection (and, for the source
route, an import transaction) open indefinitely."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
import zstandard

from tests.faults.harness import ADMIN_TOKEN, Tracker, seed

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(120)]

READ_TIMEOUT_S = 15.0
SLACK_S = 5.0


def _drip(port: int, path: str, content_type: str, payload: bytes) -> tuple[float, bytes]:
    """Seconds until the server answers or closes while we send one byte per 0.5 s, and the
    first bytes of its answer."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(
            (f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {ADMIN_TOKEN}\r\n"
             f"Content-Type: {content_type}\r\nContent-Length: {len(payload)}\r\n\r\n").encode()
        )  # fmt: skip
        s.settimeout(0.5)
        t0 = time.monotonic()
        sent = 0
        while time.monotonic() - t0 < READ_TIMEOUT_S + SLACK_S + 5:
            try:
                head = s.recv(4096)  # a response, or b"" when the server closed: either ends it
                return time.monotonic() - t0, head
            except TimeoutError:
                pass
            try:
                s.sendall(payload[sent : sent + 1])
                sent += 1
            except OSError:
                return time.monotonic() - t0, b""
        return float("inf"), b""


def _payload(content_type: str) -> bytes:
    """A body that stays valid however little of it has arrived."""
    if content_type == "application/json":
        return b" " * 100_000 + b'{"jobs":[{"value":"v"}]}'
    lines = b"".join(b'{"value":"https://drip/%d"}\n' % i for i in range(20_000))
    return zstandard.ZstdCompressor(level=1).compress(lines)


@pytest.mark.parametrize(
    ("path", "ctype"),
    [("/api/v1/admin/projects/drip/jobs", "application/json"),
     ("/api/v1/admin/projects/drip/source", "application/zstd")],
)  # fmt: skip
async def test_slow_drip_upload_is_cut_off(
    pg_dsn: str, tmp_path: Path, path: str, ctype: str
) -> None:
    await seed(pg_dsn, "drip", 0, identity_mode="none")
    tracker = Tracker(pg_dsn, tmp_path).start()
    try:
        took, head = _drip(tracker.port, path, ctype, _payload(ctype))
    finally:
        tracker.stop()
    if head.startswith(b"HTTP/1.1 404"):
        pytest.skip(f"{path} is not mounted in tracker serve yet")
    print(f"drip {path}: cut off after {took:.1f}s")
    assert took <= READ_TIMEOUT_S + SLACK_S, f"connection still open after {took:.1f}s"
