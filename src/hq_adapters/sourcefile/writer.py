"""Writer of ``jobs-jsonl-zstd-v1`` files (spec §3.1).

The file is created exclusively with mode 0644, written through a streaming zstd compressor,
fsynced on commit and removed if anything fails before the commit.
"""

from __future__ import annotations

import contextlib
import os
from types import TracebackType

import zstandard

from hq_adapters.sourcefile.lines import encode_job_line
from hq_domain.jobs import JobSpec

# zstd's default level: a few per cent larger files than the reference's level 6 for a third
# of the CPU (0.36 vs 1.15 s for 500,000 packed URLs here); any compliant encoder is allowed
# (spec §3.1). One zstd worker thread compresses while Python encodes the next lines.
COMPRESSION_LEVEL = 3
COMPRESSION_THREADS = 1


def create_exclusive(path: str, mode: int = 0o644) -> int:
    """Open a new file for writing; FileExistsError if the name exists."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        os.fchmod(fd, mode)  # the umask must not narrow the documented mode
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    return fd


class SourceWriter:
    """``with SourceWriter(path) as w: w.write(spec)`` — committed on a clean exit only."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.jobs = 0
        self._file = os.fdopen(create_exclusive(path), "wb")
        self._zstd = zstandard.ZstdCompressor(
            level=COMPRESSION_LEVEL, threads=COMPRESSION_THREADS
        ).stream_writer(self._file, closefd=False)
        self._open = True

    def write(self, spec: JobSpec) -> None:
        self._zstd.write(encode_job_line(spec))
        self.jobs += 1

    def write_lines(self, data: bytes, jobs: int) -> None:
        """Append ``jobs`` lines already in writer form (``\n``-terminated)."""
        self._zstd.write(data)
        self.jobs += jobs

    def commit(self) -> None:
        try:
            self._zstd.flush(zstandard.FLUSH_FRAME)
            self._zstd.close()
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._open = False
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Close and remove the file (idempotent; a committed file is left alone)."""
        if not self._open:
            return
        self._open = False
        with contextlib.suppress(Exception):
            self._zstd.close()
        with contextlib.suppress(Exception):
            self._file.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)

    def __enter__(self) -> SourceWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()
