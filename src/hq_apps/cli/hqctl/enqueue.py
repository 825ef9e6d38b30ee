"""``hqctl enqueue`` and ``hqctl enqueue-source`` (spec §4.2).

``enqueue`` reads and validates the whole input before the first request (so a bad line never
leaves a partial import), spooling the encoded jobs to a temporary file to keep memory flat,
then sends sequential batches. Earlier batches stay committed when one fails.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from typing import IO, BinaryIO

import msgspec

from hq_adapters.admin_client import AdminClient, ClientError, job_body
from hq_adapters.sourcefile import parse_job_line
from hq_apps.cli.cliutil import CliError
from hq_apps.cli.hqctl.connect import (
    DEFAULT_TIMEOUT,
    AllowHttp,
    ProjectId,
    Timeout,
    TokenFile,
    Url,
    open_client,
)
from hq_apps.cli.hqctl.progress import Progress
from hq_domain.errors import HqError
from hq_domain.ids import default_job_id
from hq_domain.jobs import JobSpec
from hq_domain.projects import IdentityMode
from hq_domain.validation import validate_job_spec

MAX_LINE_BYTES = (64 << 10) - 1
_READ_SIZE = 1 << 20


def _open_input(path: str) -> contextlib.AbstractContextManager[BinaryIO]:
    if path == "-":
        return contextlib.nullcontext(sys.stdin.buffer)
    return open(path, "rb")


def iter_lines(reader: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """``(physical line number, line)`` without ``\\n`` and one trailing ``\\r``."""
    tail, number = b"", 0
    while chunk := reader.read(_READ_SIZE):
        parts = (tail + chunk).split(b"\n")
        tail = parts.pop()
        for raw in parts:
            number += 1
            if len(raw) > MAX_LINE_BYTES:
                raise CliError(f"enqueue: line {number}: token too long")
            yield number, raw[:-1] if raw.endswith(b"\r") else raw
        if len(tail) > MAX_LINE_BYTES:
            raise CliError(f"enqueue: line {number + 1}: token too long")
    if tail:
        yield number + 1, tail[:-1] if tail.endswith(b"\r") else tail


def _job_from_line(raw: bytes, fmt: str, job_type: str | None, mode: IdentityMode) -> JobSpec:
    if fmt == "values":
        try:
            value: object = raw.decode("utf-8")
        except UnicodeDecodeError:
            value = None  # fails validation with the spec's value message
        spec = validate_job_spec(value=value, type=job_type)
    else:
        spec = parse_job_line(raw, allow_random_key=True)
    if mode is IdentityMode.EXTERNAL_ID:
        if not spec.id:
            job_id = default_job_id(spec.type, spec.value)
            spec = validate_job_spec(
                value=spec.value, id=job_id, type=spec.type, via=spec.via,
                hops=spec.hops, attr=spec.attr, random_key=spec.random_key,
            )  # fmt: skip
    elif spec.id:
        raise HqError(f"project identity mode {mode.value} rejects job id")
    return spec


def spool_jobs(
    reader: BinaryIO,
    spool: IO[bytes],
    fmt: str,
    job_type: str | None,
    mode: IdentityMode,
    max_jobs: int,
) -> int:
    """Validate every line and write one encoded enqueue item per spool line."""
    count = 0
    encode = msgspec.json.Encoder().encode
    for number, raw in iter_lines(reader):
        if not raw.strip():
            continue
        try:
            spec = _job_from_line(raw, fmt, job_type, mode)
        except HqError as exc:
            raise CliError(f"enqueue: line {number}: {exc.message}") from None
        count += 1
        if count > max_jobs:
            raise CliError("enqueue: input exceeds max jobs")
        spool.write(encode(job_body(spec)) + b"\n")
    return count


def _batches(spool: IO[bytes], size: int) -> Iterator[list[bytes]]:
    spool.seek(0)
    batch: list[bytes] = []
    for line in spool:
        batch.append(line.rstrip(b"\n"))
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def send_batches(
    client: AdminClient,
    project_id: str,
    spool: IO[bytes],
    total: int,
    batch_size: int,
    progress_every: int,
) -> tuple[int, int, int]:
    submitted = inserted = batches = 0
    bar = Progress(total)
    try:
        for batch in _batches(spool, batch_size):
            try:
                result = client.enqueue_raw(project_id, batch)
            except ClientError as exc:
                raise CliError(
                    f"enqueue: batch {batches + 1} failed after {submitted} submitted jobs: {exc}"
                ) from None
            if (
                result.project_id != project_id
                or result.submitted != len(batch)
                or not 0 <= result.inserted <= result.submitted
            ):
                raise CliError(
                    f"enqueue: batch {batches + 1} failed after {submitted} submitted jobs: "
                    "unexpected enqueue response"
                )
            batches += 1
            submitted += result.submitted
            inserted += result.inserted
            bar.update(submitted, inserted)
            if progress_every > 0 and batches % progress_every == 0:
                bar.line(f"batches={batches} submitted={submitted} inserted={inserted}")
    finally:
        bar.close()
    return submitted, inserted, batches


def enqueue(
    *,
    url: Url = None,
    allow_http: AllowHttp = False,
    project_id: ProjectId = "",
    machine_token_file: TokenFile = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    input: str = "-",
    format: str = "values",
    batch_size: int = 1000,
    progress_every: int = 100,
    max_jobs: int = 10_000_000,
    type: str = "",
) -> None:
    """Send jobs from a text file in batches (JSON summary on stdout, progress on stderr).

    Parameters
    ----------
    input
        File to read, or - for stdin.
    format
        values: each non-blank line is a job value (a URL); jsonl: each line a job object.
    batch_size
        Jobs per request (server maximum 1000).
    progress_every
        Print a progress line on stderr every N batches; 0 turns it off.
    max_jobs
        Refuse inputs with more jobs than this.
    type
        Job type for values lines: seed or asset (default: none).
    """
    if not project_id:
        raise CliError("enqueue: --project-id is required")
    if format not in ("values", "jsonl"):
        raise CliError("enqueue: --format must be values or jsonl")
    if batch_size < 1:
        raise CliError("enqueue: --batch-size must be at least 1")
    if progress_every < 0:
        raise CliError("enqueue: --progress-every must not be negative")
    if max_jobs < 1:
        raise CliError("enqueue: --max-jobs must be at least 1")
    if type not in ("", "seed", "asset"):
        raise CliError("enqueue: --type must be seed or asset")
    if type and format != "values":
        raise CliError("enqueue: --type is allowed only with --format values")
    with open_client(
        "enqueue", url=url, allow_http=allow_http, machine_token_file=machine_token_file,
        timeout=timeout,
    ) as client:  # fmt: skip
        try:
            mode = IdentityMode(client.get_project(project_id).identity_mode)
        except (ClientError, ValueError) as exc:
            raise CliError(f"enqueue: get project: {exc}") from None
        with tempfile.TemporaryFile() as spool:
            try:
                with _open_input(input) as reader:
                    total = spool_jobs(reader, spool, format, type or None, mode, max_jobs)
            except OSError as exc:
                raise CliError(f"enqueue: read input: {exc.strerror or exc}") from None
            if total == 0:
                raise CliError("enqueue: input contains no jobs")
            submitted, inserted, batches = send_batches(
                client, project_id, spool, total, batch_size, progress_every
            )
    summary = {
        "project_id": project_id,
        "identity_mode": mode.value,
        "submitted": submitted,
        "inserted": inserted,
        "batches": batches,
    }
    # stderr carries exactly the spec's progress lines (§4.2 step 6); nothing is added here.
    sys.stdout.write(msgspec.json.encode(summary).decode() + "\n")


def _chunks(reader: BinaryIO) -> Iterator[bytes]:
    while chunk := reader.read(_READ_SIZE):
        yield chunk


def _regular_file_size(reader: BinaryIO) -> int | None:
    """Content-Length for a regular file; None (chunked upload) for pipes and the like."""
    try:
        info = os.fstat(reader.fileno())
    except (OSError, AttributeError):
        return None
    return info.st_size - reader.tell() if stat.S_ISREG(info.st_mode) else None


def enqueue_source(
    *,
    url: Url = None,
    allow_http: AllowHttp = False,
    project_id: ProjectId = "",
    machine_token_file: TokenFile = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    input: str = "",
) -> None:
    """Upload a jobs-jsonl-zstd-v1 file (from 'source pack') in one request.

    Prints the server's result as JSON on stdout and a one-line summary on stderr.

    Parameters
    ----------
    input
        The .jobs.jsonl.zst file, or - for stdin.
    """
    if not project_id:
        raise CliError("enqueue-source: --project-id is required")
    if not input:
        raise CliError("enqueue-source: --input is required")
    with open_client(
        "enqueue-source", url=url, allow_http=allow_http, machine_token_file=machine_token_file,
        timeout=timeout,
    ) as client:  # fmt: skip
        try:
            with _open_input(input) as reader:
                length = _regular_file_size(reader)
                result = client.enqueue_source(project_id, _chunks(reader), length)
        except OSError as exc:
            raise CliError(f"enqueue-source: read input: {exc.strerror or exc}") from None
        except ClientError as exc:
            raise CliError(f"enqueue-source: {exc}") from None
    if (
        result.project_id != project_id
        or min(result.jobs, result.inserted, result.uncompressed_bytes) < 0
        or result.inserted > result.jobs
    ):
        raise CliError("enqueue-source: unexpected source response")
    out = {
        "project_id": result.project_id,
        "jobs": result.jobs,
        "inserted": result.inserted,
        "uncompressed_bytes": result.uncompressed_bytes,
    }
    sys.stdout.write(msgspec.json.encode(out).decode() + "\n")
    _summary_line(project_id, result.jobs, result.inserted)


def _summary_line(project_id: str, jobs: int, inserted: int) -> None:
    """The human half of the result (stdout keeps the spec's JSON for scripts)."""
    sys.stderr.write(
        f"imported {jobs} jobs into {project_id}: {inserted} new, {jobs - inserted} already "
        f"present; see the counts with: hqctl projects get --project-id {project_id}\n"
    )
