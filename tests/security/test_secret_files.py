"""Secret and token files (issue 13 #5): opened once without following symlinks, checked on the
descriptor (regular file, owner, mode), read with a bound; an exposed dev token is replaced."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest

from hq_apps import wiring
from hq_apps.cli import common
from hq_apps.cli.secret_file import MAX_SECRET_FILE_BYTES


def _file(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    os.chmod(path, mode)
    return path


def test_symlink_is_refused(tmp_path: Path) -> None:
    target = _file(tmp_path / "real", "secret")
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(common.CliError, match=f"secret file {link} is a symlink"):
        common.read_secret_file(str(link))


def test_mode_message_names_the_file_and_the_fix(tmp_path: Path) -> None:
    path = _file(tmp_path / "s", "secret", 0o644)
    with pytest.raises(common.CliError) as err:
        common.read_secret_file(str(path))
    assert str(err.value) == (
        f"secret file {path} has permissions 0644: permissions must not allow group or other "
        f"access; run: chmod 600 {path}"
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the file away")
def test_file_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    path = _file(tmp_path / "s", "secret")
    os.chown(path, 65534, 65534)
    try:
        with pytest.raises(common.CliError, match="owned by uid 65534"):
            common.read_secret_file(str(path))
    finally:
        os.chown(path, 0, 0)


def test_non_regular_files_are_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(common.CliError, match="not a regular file"):
        common.read_secret_file(str(fifo))  # would block forever if opened for a plain read


def test_read_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "big"
    with open(path, "wb") as f:
        f.truncate(64 << 20)  # sparse: costs no disk
    os.chmod(path, 0o600)
    tracemalloc.start()
    try:
        with pytest.raises(common.CliError, match=f"larger than {MAX_SECRET_FILE_BYTES} bytes"):
            common.read_secret_file(str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_exposed_dev_token_is_replaced(tmp_path: Path) -> None:
    path = _file(tmp_path / "admin.token", "hq_exposed-old-token", 0o644)
    token = wiring._dev_token(str(path))
    assert token != "hq_exposed-old-token" and token.startswith("hq_")
    assert path.read_text().strip() == token and (path.stat().st_mode & 0o777) == 0o600
    assert wiring._dev_token(str(path)) == token  # a private file is reused


def test_dev_token_symlink_is_replaced_and_its_target_untouched(tmp_path: Path) -> None:
    target = _file(tmp_path / "elsewhere", "hq_someone-elses")
    path = tmp_path / "admin.token"
    path.symlink_to(target)
    token = wiring._dev_token(str(path))
    assert token != "hq_someone-elses" and not path.is_symlink()
    assert target.read_text() == "hq_someone-elses"


def test_dev_token_is_created_private_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        token = wiring._dev_token(str(tmp_path / "admin.token"))
    finally:
        os.umask(old)
    assert (tmp_path / "admin.token").stat().st_mode & 0o777 == 0o600 and token
