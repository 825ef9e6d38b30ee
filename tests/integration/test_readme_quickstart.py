"""The README's quick start, run as written against a real ``tracker dev`` (issue 15).

The ``sh`` blocks of the README's "Quick start" section are extracted and run by bash with
``set -e`` in a fresh directory: the first block starts the tracker, the second is the
operator's terminal. Two things differ from a reader's machine, neither in the commands: the
port (a free one instead of 8080: the test rewrites ``127.0.0.1:8080`` and sets
``HQ_LISTEN``) and ``uv run X`` (a shim on PATH runs X from this checkout's environment, since
the temporary directory is not a uv project; ``examples/`` is symlinked into it).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.dev_database import remove_root_dev_database
from tests.unit.api.live import free_port

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]
UV_SHIM = '#!/bin/sh\n[ "$1" = run ] && shift\nexec "$@"\n'


def quick_start_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, flags=re.DOTALL)


def _env(tmp_path: Path, port: int) -> dict[str, str]:
    shim_dir = tmp_path / "shim"
    shim_dir.mkdir()
    (shim_dir / "uv").write_text(UV_SHIM)
    (shim_dir / "uv").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HQ_")}
    env["PATH"] = f"{shim_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["HQ_LISTEN"] = f"127.0.0.1:{port}"
    env["PYTHONPATH"] = str(ROOT / "src")
    return env


def _wait_for_banner(proc: subprocess.Popen[bytes], out: Path) -> str:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        text = out.read_text(errors="replace")
        if "API schema" in text:
            return text
        time.sleep(0.2)
    return out.read_text(errors="replace")


def test_readme_quick_start_runs_as_written(tmp_path: Path) -> None:
    server_block, client_block = quick_start_blocks()
    assert server_block.strip().startswith("uv run tracker dev")
    port = free_port()
    work = tmp_path / "work"
    work.mkdir()
    (work / "examples").symlink_to(ROOT / "examples")
    env = _env(tmp_path, port)
    # Files, not pipes: the request log would fill an unread pipe and stall the server.
    out, err = tmp_path / "server.out", tmp_path / "server.err"
    with out.open("wb") as out_f, err.open("wb") as err_f:
        server = subprocess.Popen(
            ["bash", "-c", "exec " + server_block.strip()], cwd=work, env=env,
            stdout=out_f, stderr=err_f, start_new_session=True,
        )  # fmt: skip
    try:
        banner = _wait_for_banner(server, out)
        url = f"http://127.0.0.1:{port}"
        assert url in banner and "export HQ_DATABASE_URL=" in banner, banner
        script = client_block.replace("127.0.0.1:8080", f"127.0.0.1:{port}")
        assert script != client_block  # the README still names the default port
        client = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", script], cwd=work, env=env, text=True,
            capture_output=True, timeout=900,
        )  # fmt: skip
        assert client.returncode == 0, f"{client.stdout}\n{client.stderr}"
        assert "Traceback" not in client.stderr, client.stderr
        # source pack's summary, enqueue-source's JSON, the worker's progress, the counts
        assert "packed 1000 jobs" in client.stderr
        assert '"jobs":1000' in client.stdout
        assert "imported 1000 jobs into demo: 1000 new" in client.stderr
        assert "queue drained: completed" in client.stderr
        assert "todo=0 wip=0 done=1000 failed=0" in client.stdout, client.stdout
        _dashboard_shows_demo(url)
        # The database URL tracker dev prints is the one tracker monitor needs.
        dsn = re.search(r"export HQ_DATABASE_URL=(\S+)", banner)
        assert dsn is not None
        monitor = subprocess.run(
            ["tracker", "monitor", "--json"], cwd=work, text=True, capture_output=True,
            env={**env, "HQ_DATABASE_URL": shlex.split(dsn.group(1))[0]}, timeout=120,
        )  # fmt: skip
        assert monitor.returncode == 0, monitor.stderr
        assert '"done": 1000' in monitor.stdout, monitor.stdout[:2000]
    finally:
        os.killpg(server.pid, signal.SIGINT)
        server.wait(timeout=60)
        remove_root_dev_database(work)
    log = err.read_text(errors="replace")
    assert server.returncode == 0, log
    assert "Warning" not in log, log  # no RuntimeDirWarning / DeprecationWarning at start


def _dashboard_shows_demo(url: str) -> None:
    """What the README says to click: Continue with GitHub, then the demo project."""
    with httpx.Client(base_url=url, follow_redirects=True, timeout=30) as browser:
        landing = browser.get("/auth/github/start")
        assert landing.status_code == 200 and landing.url.path == "/admin", landing.url
        page = browser.get("/admin/projects/demo")
        assert page.status_code == 200 and "demo" in page.text
        assert browser.get("/worker").status_code == 200  # gh_1 is a worker too (dev)
