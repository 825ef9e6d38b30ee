"""Reading secret and token files (machine tokens, the GitHub client secret, the web-session
secret, ``tracker dev``'s admin token) in one place (issue 13 #5).

The file is opened once, never through a symlink (``O_NOFOLLOW``), and every check runs on the
open descriptor, so nothing can be swapped between the check and the read: it must be a regular
file, owned by the user running the command (or root), with no group or other permission bits.
At most :data:`MAX_SECRET_FILE_BYTES` are read. Each refusal names the file and what to do.
"""

from __future__ import annotations

import errno
import os
import stat

MAX_SECRET_CHARS = 1024
MAX_SECRET_FILE_BYTES = 4 * MAX_SECRET_CHARS + 64  # UTF-8 and surrounding whitespace


class SecretFileError(Exception):
    """A secret file that cannot be used; the message names it and the fix."""


class ExposedSecretFile(SecretFileError):
    """The file exists but others could have read or replaced it (mode, owner or symlink)."""


def _open(path: str) -> int:
    try:
        return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ExposedSecretFile(
                f"secret file {path} is a symlink; point the setting at the file itself"
            ) from None
        if exc.errno == errno.ENOENT:
            raise FileNotFoundError(exc.errno, f"secret file {path} does not exist", path) from None
        raise SecretFileError(f"read secret file {path}: {exc.strerror}") from None


def _check(fd: int, path: str) -> None:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise SecretFileError(f"secret file {path} is not a regular file")
    if info.st_uid not in (os.geteuid(), 0):
        raise ExposedSecretFile(
            f"secret file {path} is owned by uid {info.st_uid}, not by the user running this "
            f"(uid {os.geteuid()}); run: chown {os.geteuid()} {path}"
        )
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        raise ExposedSecretFile(
            f"secret file {path} has permissions {mode:04o}: permissions must not allow group "
            f"or other access; run: chmod 600 {path}"
        )


def read_private_file(path: str) -> str:
    """The file's text, stripped, after the checks above; raises :class:`SecretFileError`
    (:class:`ExposedSecretFile` for mode/owner/symlink) or ``FileNotFoundError``."""
    fd = _open(path)
    try:
        _check(fd, path)
        data = os.read(fd, MAX_SECRET_FILE_BYTES + 1)
        while len(data) <= MAX_SECRET_FILE_BYTES and (more := os.read(fd, MAX_SECRET_FILE_BYTES + 1 - len(data))):
            data += more
    finally:
        os.close(fd)
    if len(data) > MAX_SECRET_FILE_BYTES:
        raise SecretFileError(
            f"secret file {path} is larger than {MAX_SECRET_FILE_BYTES} bytes; it must hold "
            "only the secret"
        )
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise SecretFileError(f"secret file {path} is not UTF-8 text") from None


def read_secret(path: str) -> str:
    """A secret of 1–1,024 characters from ``path``."""
    try:
        text = read_private_file(path)
    except FileNotFoundError as exc:
        raise SecretFileError(exc.strerror) from None
    if not 1 <= len(text) <= MAX_SECRET_CHARS:
        raise SecretFileError(
            f"invalid secret in {path}: expected 1-{MAX_SECRET_CHARS} characters, got {len(text)}"
        )
    return text
