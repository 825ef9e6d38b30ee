"""``source pack``: plain values, one per line, into a source file (spec §3.4)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from hq_adapters.sourcefile.writer import SourceWriter
from hq_domain.errors import HqError
from hq_domain.ids import default_job_id
from hq_domain.projects import IdentityMode
from hq_domain.validation import validate_job_spec

MAX_VALUE_LINE = 8192  # a line with its terminator must fit in 8193 bytes


class PackError(Exception):
    pass


def iter_value_lines(reader: BinaryIO, max_line: int) -> Iterator[tuple[int, bytes]]:
    """Yield ``(physical line number, raw line without \\n)``; PackError when too long."""
    tail = b""
    number = 0
    while True:
        chunk = reader.read(1 << 16)
        if not chunk:
            break
        parts = (tail + chunk).split(b"\n")
        tail = parts.pop()
        for raw in parts:
            number += 1
            if len(raw) > max_line:
                raise PackError(f"line {number}: token too long")
            yield number, raw
        if len(tail) > max_line:
            raise PackError(f"line {number + 1}: token too long")
    if tail:
        yield number + 1, tail


def pack_values(reader: BinaryIO, output: str, mode: IdentityMode) -> int:
    """Write every non-empty line as a job; returns the job count. The output is removed on
    any failure (including invalid values)."""
    with SourceWriter(output) as writer:
        for number, raw in iter_value_lines(reader, MAX_VALUE_LINE):
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            if not raw:
                continue
            try:
                value = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise PackError(
                    f"line {number}: value must be valid UTF-8 and at most 8192 bytes"
                ) from None
            job_id = default_job_id("seed", value) if mode is IdentityMode.EXTERNAL_ID else None
            try:
                spec = validate_job_spec(value=value, id=job_id)
            except HqError as exc:
                raise PackError(f"line {number}: {exc.message}") from None
            writer.write(spec)
        return writer.jobs
