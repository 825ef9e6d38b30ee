"""The plain enqueue's rows in PostgreSQL's binary COPY format, encoded here and sent in pieces.

asyncpg's ``copy_records_to_table`` encodes every row before it sends any (it buffers up to
512 KiB: a whole 1,000-job request), so PostgreSQL sat idle while the tracker encoded, and the
tracker while PostgreSQL inserted. :meth:`CopyRows.take` hands over what has been encoded so
far, and the store sends it as a piece of an async source (``copy_to_table``): PostgreSQL parses
and inserts the first rows while the next are being encoded. Of the ten columns, six hold one
value for the whole statement (project, status, both times, ``random_queue``) or for nearly
every job (an empty spec), and the identity column the project's mode does not use is NULL
throughout: those fields are encoded once per statement.

Binary COPY format (PostgreSQL's "COPY — Binary Format"): a signature, flags and header
extension length; per row a 16-bit field count, then per field a 32-bit length (-1 for NULL)
and the type's binary form (text: UTF-8 bytes; int4/int8: big-endian; bool: one byte; jsonb:
version byte 1 then the JSON text; bytea: the bytes); a 16-bit -1 ends the data.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

from hq_domain.identity import assign_random_keys
from hq_domain.ids import unique_value_digest
from hq_domain.jobs import JobSpec
from hq_domain.projects import IdentityMode

SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"
TRAILER = b"\xff\xff"
_NULL = b"\xff\xff\xff\xff"
_I16 = struct.Struct(">h").pack
_I32 = struct.Struct(">i").pack
_INT4_FIELD = struct.Struct(">ii").pack  # length 4, value
_INT8_FIELD = struct.Struct(">iq").pack  # length 8, value
_JSONB_VERSION = b"\x01"

# Constant fields first, then the ones that vary per row (reset_count takes its default, 0).
COLUMNS = (
    "project_id", "status", "created_at", "updated_at", "random_queue",
    "spec", "external_id", "unique_value_digest", "value", "random_key",
)  # fmt: skip
COLUMNS_WITH_IDS = (*COLUMNS, "job_id")


def _text(data: bytes) -> bytes:
    return _I32(len(data)) + data


def spec_field(spec_json: str) -> bytes:
    """A jsonb field holding ``spec_json``."""
    return _text(_JSONB_VERSION + spec_json.encode())


class CopyRows:
    """One COPY statement's data: :meth:`add` rows, :meth:`take` what is encoded so far (the
    signature first), :meth:`finish` the rest and the trailer."""

    def __init__(
        self,
        project_id: str,
        now: int,
        random_queue: bool,
        *,
        with_ids: bool,
        spec_json: Callable[[JobSpec], str],
        empty_spec: str,
    ) -> None:
        """``spec_json``: a job's stored spec text; ``empty_spec``: the text most jobs have."""
        self.columns = COLUMNS_WITH_IDS if with_ids else COLUMNS
        self._with_ids = with_ids
        self._prefix = (
            _I16(len(self.columns))
            + _text(project_id.encode())
            + _text(b"todo")
            + _INT8_FIELD(8, now)
            + _INT8_FIELD(8, now)
            + _text(b"\x01" if random_queue else b"\x00")
        )
        self._spec_json = spec_json
        self._empty_text = empty_spec
        self._empty_spec = spec_field(empty_spec)
        self._parts: list[bytes] = [SIGNATURE]
        self.rows = 0

    def add(
        self, batch: Sequence[JobSpec], mode: IdentityMode, ids: Sequence[int] | None = None
    ) -> None:
        """Rows for the collapsed ``batch`` in order; ``ids``: its reserved job ids (exactly
        when the statement was built ``with_ids``)."""
        if (ids is not None) != self._with_ids:
            raise ValueError("job ids must be given exactly when the columns include job_id")
        keys = assign_random_keys(batch)
        append = self._parts.append
        prefix, empty, null = self._prefix, self._empty_spec, _NULL
        spec_json, empty_text = self._spec_json, self._empty_text
        external = mode is IdentityMode.EXTERNAL_ID
        unique = mode is IdentityMode.UNIQUE_VALUE
        for n, job in enumerate(batch):
            spec = spec_json(job)
            append(prefix)
            append(empty if spec == empty_text else spec_field(spec))
            if external:
                append(_text(job.id.encode()))  # type: ignore[union-attr]
                append(null)
            elif unique:
                append(null)
                append(_text(unique_value_digest(job.value)))
            else:
                append(null)
                append(null)
            value = job.value.encode()
            append(_I32(len(value)))
            append(value)
            append(_INT4_FIELD(4, keys[n]))
            if ids is not None:
                append(_INT8_FIELD(8, ids[n]))
        self.rows += len(batch)

    def take(self) -> bytes:
        """The data added since the last take (the signature first), to send as it is built."""
        data = b"".join(self._parts)
        self._parts.clear()
        return data

    def finish(self) -> bytes:
        """The rest of the data and the trailer."""
        self._parts.append(TRAILER)
        return self.take()
