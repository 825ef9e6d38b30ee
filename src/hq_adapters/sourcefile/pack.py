"""``source pack``: plain values, one per line, into a source file (spec §3.4).

Lines are encoded straight to their writer form, a 64 KiB input chunk at a time, without
building a JobSpec per value: a line that decodes as UTF-8, holds no NUL byte and fits the
8,192-byte line limit already passes every JobSpec check except the 32 KiB normalized-size rule,
which only a value of more than ``_SURELY_SMALL`` bytes can fail; those few go through full
validation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import BinaryIO

import msgspec

from hq_adapters.sourcefile.writer import SourceWriter
from hq_domain.errors import HqError
from hq_domain.projects import IdentityMode
from hq_domain.storable import NUL
from hq_domain.validation import MAX_NORMALIZED_SPEC_BYTES, validate_job_spec

MAX_VALUE_LINE = 8192  # a line with its terminator must fit in 8193 bytes
_READ_SIZE = 1 << 16
# A value this long escapes (6 bytes per character at most) with a j1_ id and the keys to
# well under 32 KiB, so the normalized-size rule cannot fail for it.
_SURELY_SMALL = (MAX_NORMALIZED_SPEC_BYTES - 256) // 6
_SEED = hashlib.sha256(b"seed\x00")  # DefaultJobID("seed", v) = sha256("seed" NUL v), §3.3
_json = msgspec.json.Encoder()


class PackError(Exception):
    pass


def iter_value_lines(reader: BinaryIO, max_line: int) -> Iterator[tuple[int, list[bytes]]]:
    """Yield ``(number of the first line, raw lines without \\n)`` per input chunk. The
    caller checks each line's length in order; an unterminated tail too long to ever fit
    raises PackError once the lines before it were handed over."""
    tail = b""
    number = 1
    while True:
        chunk = reader.read(_READ_SIZE)
        if not chunk:
            break
        parts = (tail + chunk).split(b"\n")
        tail = parts.pop()
        yield number, parts
        number += len(parts)
        if len(tail) > max_line:
            raise PackError(f"line {number}: token too long")
    if tail:
        yield number, [tail]


def _value(number: int, raw: bytes, job_id: str | None) -> str:
    try:
        value = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise PackError(
            f"line {number}: value must be valid UTF-8 and at most 8192 bytes"
        ) from None
    if NUL in value:  # JobSpec validation's rule, which the short lines below skip
        raise PackError(f"line {number}: value must not contain U+0000")
    if len(raw) > _SURELY_SMALL:
        try:
            validate_job_spec(value=value, id=job_id)
        except HqError as exc:
            raise PackError(f"line {number}: {exc.message}") from None
    return value


def pack_values(reader: BinaryIO, output: str, mode: IdentityMode) -> int:
    """Write every non-empty line as a job; returns the job count. The output is removed on
    any failure (including invalid values)."""
    with_id = mode is IdentityMode.EXTERNAL_ID
    with SourceWriter(output) as writer:
        for first, lines in iter_value_lines(reader, MAX_VALUE_LINE):
            out: list[bytes] = []
            for number, raw in enumerate(lines, first):
                if len(raw) > MAX_VALUE_LINE:
                    raise PackError(f"line {number}: token too long")
                if raw.endswith(b"\r"):
                    raw = raw[:-1]
                if not raw:
                    continue
                if with_id:
                    digest = _SEED.copy()
                    digest.update(raw)
                    job_id = "j1_" + digest.hexdigest()
                    value = _value(number, raw, job_id)
                    out.append(b'{"id":"%s","value":%s}\n' % (job_id.encode(), _json.encode(value)))
                else:
                    value = _value(number, raw, None)
                    out.append(b'{"value":%s}\n' % _json.encode(value))
            writer.write_lines(b"".join(out), len(out))
        return writer.jobs


__all__ = ["MAX_VALUE_LINE", "PackError", "iter_value_lines", "pack_values"]
