"""``tracker serve --processes N``: N server processes behind one listening socket.

The parent binds the socket once, then starts N children (``spawn``: fresh interpreters, no
inherited event loop or pool), each with its own uvicorn, app and asyncpg pool. Only the parent
accepts: it hands every new connection to the child with the fewest open connections
(:mod:`hq_apps.handoff`), so a fleet's long-lived connections are split evenly; requests go
straight to the child. Connections wait in the listen queue until the children are up.

Lifecycle:

* **Start-up**: every child must report "listening". A child that exits before that (bad
  settings, database unreachable) stops the whole unit with exit status 1, like a single
  process that cannot start.
* **A child dies later** (crash, OOM kill): it is restarted with a fresh channel, and logged;
  its connections die with it (workers reconnect) and new ones go to the other children until
  it is up. More than ``MAX_RESTARTS`` restarts within ``RESTART_WINDOW_S`` stop the unit with
  status 1, so a crash loop surfaces to the orchestrator instead of spinning.
* **SIGINT/SIGTERM** to the parent: it stops accepting, then sends SIGTERM to every child;
  each drains its in-flight requests for up to ``SHUTDOWN_DRAIN_S`` (the same 10 s as one
  process), stragglers are killed ``KILL_GRACE_S`` later; exit status 0.

Background loops (the D2 lease sweep) run in every child, exactly as in several replicas: the
sweep takes rows with ``FOR UPDATE SKIP LOCKED`` in one statement, so no row is reset twice.

Metrics: with ``metrics=True`` and N > 1, ``PROMETHEUS_MULTIPROC_DIR`` is set to a fresh private
(0700) directory before the children start (they inherit it) and removed on exit.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from typing import Any

from hq_apps.handoff import Dispatcher, OpenConnections, channel_pair
from hq_apps.settings import Settings

log = logging.getLogger("hq.tracker")

MAX_PROCESSES = 64
MAX_RESTARTS = 5
RESTART_WINDOW_S = 60.0
KILL_GRACE_S = 5.0
START_TIMEOUT_S = 60.0
POLL_S = 0.1
METRICS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket (IPv6 when ``host`` is an IPv6 literal) for the parent alone:
    children are handed connections, never this socket (not inheritable)."""
    from hq_apps.wiring import check_listen

    check_listen(host, port)  # one clear line instead of a traceback
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def _child_main(settings: Settings, host: str, port: int, channel: socket.socket, closed: Any,
                index: int, ready: Any) -> None:  # fmt: skip
    """Entry point of one child (runs in a fresh interpreter). ``closed`` is
    :attr:`~hq_apps.handoff.OpenConnections.closed`, ``ready`` its shared started flag
    (:func:`_mark_ready`)."""
    from hq_apps import logging as hq_logging
    from hq_apps import wiring

    hq_logging.configure()
    try:
        wiring.run(wiring.serve(settings, host, port, handoff=(channel, closed),
                                on_started=lambda: _mark_ready(ready),
                                process_index=index))  # fmt: skip
    except KeyboardInterrupt:
        pass
    except Exception as exc:
        print(hq_logging.error_line(f"{type(exc).__name__}: {exc}"), file=sys.stderr, flush=True)
        sys.exit(1)


def _mark_ready(flag: Any) -> None:
    """Set a child's started flag: a shared byte with no lock, which the child alone writes
    once. A ``multiprocessing.Event`` takes a lock shared with the parent, and a child killed
    inside ``set()`` would leave it held for every later ``is_set()`` (as the open-connection
    counts could, :class:`~hq_apps.handoff.OpenConnections`)."""
    flag.value = 1


@dataclass
class _Child:
    index: int
    process: BaseProcess
    ready: Any

    @property
    def started(self) -> bool:
        """Whether the child has set its flag (:func:`_mark_ready`)."""
        return bool(self.ready.value == 1)


@dataclass
class Supervisor:
    settings: Settings
    host: str
    port: int
    metrics: bool = False
    stop_requested: bool = False
    children: list[_Child] = field(default_factory=list)
    restarts: deque[float] = field(default_factory=deque)

    def __post_init__(self) -> None:
        self._ctx = multiprocessing.get_context("spawn")
        self._counts = OpenConnections(self.settings.processes, self._ctx)
        self._dispatcher: Dispatcher | None = None

    def _start(self, index: int) -> _Child:
        ready = self._ctx.RawValue("b", 0)
        parent_end, child_end = channel_pair()
        if self._dispatcher is not None:
            self._dispatcher.replace_channel(index, parent_end)
        process = self._ctx.Process(
            target=_child_main,
            args=(self.settings, self.host, self.port, child_end, self._counts.closed, index,
                  ready),
            name=f"hq-tracker-{index}",
            daemon=False,
        )
        process.start()
        child_end.close()  # the child has its own copy now
        return _Child(index, process, ready)

    def _ready(self, index: int) -> bool:
        if index >= len(self.children):
            return False
        child = self.children[index]
        return child.started and child.process.is_alive()

    def _on_signal(self, signum: int, frame: object) -> None:
        self.stop_requested = True

    def run(self) -> int:
        """Serve until a signal (0) or an unrecoverable child failure (1)."""
        n = self.settings.processes
        sock = bind_socket(self.host, self.port)
        metrics_dir = _metrics_dir() if self.metrics and n > 1 else None
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        self._dispatcher = Dispatcher(sock, self._counts, self._ready)
        try:
            self.children = [self._start(i) for i in range(n)]
            status = self._wait_started()
            if status == 0:
                self._dispatcher.start()
                log.info(
                    "tracker processes started",
                    extra={"fields": {"listen": f"{self.host}:{self.port}", "processes": n,
                                      "pids": [c.process.pid for c in self.children]}},
                )  # fmt: skip
                status = self._supervise()
            return status
        finally:
            self._dispatcher.stop()  # no new connections while the children drain
            self._stop_all()
            sock.close()
            for s, handler in previous.items():
                signal.signal(s, handler)
            if metrics_dir is not None:
                shutil.rmtree(metrics_dir, ignore_errors=True)
                os.environ.pop(METRICS_DIR_ENV, None)

    def _wait_started(self) -> int:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not all(c.started for c in self.children):
            if self.stop_requested:
                return 0
            for c in self.children:
                if not c.started and not c.process.is_alive():
                    log.error(
                        "tracker process failed to start",
                        extra={"fields": {"process": c.index, "exitcode": c.process.exitcode}},
                    )
                    return 1
            if time.monotonic() > deadline:
                log.error("tracker processes did not start in time")
                return 1
            time.sleep(POLL_S)
        return 0

    def _supervise(self) -> int:
        while not self.stop_requested:
            for i, c in enumerate(self.children):
                if c.process.is_alive():
                    continue
                now = time.monotonic()
                while self.restarts and now - self.restarts[0] > RESTART_WINDOW_S:
                    self.restarts.popleft()
                fields = {"process": c.index, "pid": c.process.pid, "exitcode": c.process.exitcode}
                if len(self.restarts) >= MAX_RESTARTS:
                    log.error("tracker process exited; too many restarts, stopping",
                              extra={"fields": fields})  # fmt: skip
                    return 1
                self.restarts.append(now)
                log.error("tracker process exited; restarting", extra={"fields": fields})
                self.children[i] = self._start(c.index)
            time.sleep(POLL_S)
        return 0

    def _stop_all(self) -> None:
        """SIGTERM every live child (each drains like one process), then kill stragglers."""
        from hq_apps.wiring import SHUTDOWN_DRAIN_S

        for c in self.children:
            if c.process.is_alive() and c.process.pid is not None:
                os.kill(c.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + SHUTDOWN_DRAIN_S + KILL_GRACE_S
        for c in self.children:
            c.process.join(max(0.0, deadline - time.monotonic()))
            if c.process.is_alive():
                log.error("tracker process did not stop; killing",
                          extra={"fields": {"process": c.index, "pid": c.process.pid}})  # fmt: skip
                c.process.kill()
                c.process.join(5)


def _metrics_dir() -> str:
    """A fresh private directory for prometheus_client's multiprocess files, exported to the
    children through the environment (``mkdtemp`` creates it 0700)."""
    path = tempfile.mkdtemp(prefix="hq-metrics-")
    os.chmod(path, 0o700)
    os.environ[METRICS_DIR_ENV] = path
    return path


def serve_processes(settings: Settings, host: str, port: int, *, metrics: bool = False) -> int:
    """Run ``settings.processes`` server processes on one socket; returns the exit status."""
    if not 1 <= settings.processes <= MAX_PROCESSES:
        raise ValueError(f"processes must be between 1 and {MAX_PROCESSES}")
    return Supervisor(settings, host, port, metrics=metrics).run()
