"""The ``--processes`` supervisor's plumbing that needs no database: the parent's listening
socket, the private metrics directory handed to the children, and start-up failure."""

from __future__ import annotations

import os
import socket
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from hq_apps import processes
from hq_apps.settings import Settings


def report_env(out: str, *_args: Any) -> None:
    """A child that records what it inherited, then exits before reporting "listening"."""
    path = os.environ.get(processes.METRICS_DIR_ENV, "")
    mode = stat.S_IMODE(os.stat(path).st_mode) if path else 0
    Path(out).write_text(f"{path}\n{mode:o}\n")
    sys.exit(3)


class RecordingSupervisor(processes.Supervisor):
    out = ""

    def _start(self, index: int) -> Any:
        ready = self._ctx.RawValue("b", 0)  # never set: the child exits first
        proc = self._ctx.Process(target=report_env, args=(f"{self.out}.{index}",))
        proc.start()
        return processes._Child(index, proc, ready)

    def _wait_started(self) -> int:
        for child in self.children:  # let every child report before the unit gives up
            child.process.join(30)
        return super()._wait_started()


def test_metrics_dir_is_private_inherited_and_removed(tmp_path: Path) -> None:
    sup = RecordingSupervisor(Settings(processes=2), "127.0.0.1", 0, metrics=True)
    sup.out = str(tmp_path / "child")
    assert processes.METRICS_DIR_ENV not in os.environ
    assert sup.run() == 1  # the children exit before they are up: the unit fails
    seen = [Path(f"{sup.out}.{i}").read_text().split() for i in range(2)]
    assert seen[0] == seen[1] and seen[0][1] == "700", seen
    assert seen[0][0].startswith("/") and not os.path.exists(seen[0][0])
    assert processes.METRICS_DIR_ENV not in os.environ


def test_no_metrics_dir_without_metrics(tmp_path: Path) -> None:
    sup = RecordingSupervisor(Settings(processes=2), "127.0.0.1", 0, metrics=False)
    sup.out = str(tmp_path / "child")
    assert sup.run() == 1
    assert Path(f"{sup.out}.0").read_text().split() == ["0"]


def test_bind_socket_listens_and_is_the_parents_alone() -> None:
    sock = processes.bind_socket("127.0.0.1", 0)
    try:
        assert not sock.get_inheritable()
        with socket.create_connection(sock.getsockname(), timeout=2):
            pass
    finally:
        sock.close()


def test_processes_out_of_range_are_refused() -> None:
    with pytest.raises(ValueError):
        processes.serve_processes(Settings(processes=0), "127.0.0.1", 0)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--processes", "0"], "--processes must be between 1 and 64"),
        (["--processes", "65"], "--processes must be between 1 and 64"),
        (["--pooler", "session"], "unknown database pooler"),
        (["--pool-max", "0"], "--pool-max must be between 1 and 1000"),
        (["--worker-lanes", "-1"], "--worker-lanes must be between 0 and 1000"),
    ],
)
def test_serve_refuses_bad_process_and_pooler_settings(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from hq_apps.cli.tracker import run

    assert run(["serve", "--database-url", "postgresql://x@127.0.0.1:1/x", *flags]) == 1
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("processes", "cpus", "lanes"), [(1, 2, 2), (2, 2, 1), (4, 2, 1), (3, 16, 5), (1, None, 1)]
)
def test_worker_lanes_default_to_the_cores_shared_among_the_processes(
    processes: int, cpus: int | None, lanes: int
) -> None:
    from hq_apps.settings import auto_lanes

    assert auto_lanes(processes, cpus) == lanes
