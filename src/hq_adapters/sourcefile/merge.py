"""``source merge``: dedupe source files by job id and split them into new files (spec §3.5).

Memory stays proportional to the number of unique ids, not to the jobs: for each id only a
128-bit digest of the id and a 128-bit digest of ``[type, value, canonical attr]`` are kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import BinaryIO

from hq_adapters.sourcefile.decoder import SourceDecoder, SourceLimits, iter_batches
from hq_adapters.sourcefile.writer import SourceWriter
from hq_domain import canonical
from hq_domain.errors import HqError
from hq_domain.jobs import JobSpec


class MergeError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class MergeResult:
    inputs: int
    jobs: int
    unique: int
    duplicates: int
    outputs: list[str]

    def summary(self) -> str:
        return (
            f"inputs={self.inputs} jobs={self.jobs} unique={self.unique} "
            f"duplicates={self.duplicates} outputs={len(self.outputs)}"
        )


def _digest128(data: bytes) -> int:
    return int.from_bytes(hashlib.sha256(data).digest()[:16], "big")


def identity_digest(spec: JobSpec) -> int:
    """Digest of ``[type-as-written, value, canonical attr]``: via and hops do not count."""
    attr = canonical.dumps(spec.attr) if spec.attr else ""
    doc = json.dumps([spec.type or "", spec.value, attr], ensure_ascii=False)
    return _digest128(doc.encode("utf-8", "surrogatepass"))


def output_name(prefix: str, index: int) -> str:
    return f"{prefix}-{index:06d}.jobs.jsonl.zst"


def merge_sources(
    inputs: Sequence[str],
    open_input: Callable[[str], BinaryIO],
    prefix: str,
    *,
    jobs_per_file: int,
    max_jobs: int,
    max_uncompressed: int,
) -> MergeResult:
    seen: dict[int, int] = {}
    outputs: list[str] = []
    writer: SourceWriter | None = None
    total_jobs = 0
    total_bytes = 0
    duplicates = 0
    try:
        for name in inputs:
            limits = SourceLimits(max_jobs - total_jobs, max_uncompressed - total_bytes)
            decoder = SourceDecoder(limits)
            index = 0
            with open_input(name) as reader:
                try:
                    for batch in iter_batches(reader, decoder):
                        for spec in batch:
                            index += 1
                            if not spec.id:
                                raise MergeError(
                                    f"{name}: line {index}: source merge requires job IDs"
                                )
                            key = _digest128(spec.id.encode("ascii"))
                            digest = identity_digest(spec)
                            known = seen.get(key)
                            if known is not None:
                                if known != digest:
                                    raise MergeError(
                                        f"{name}: line {index}: identity_conflict: job id "
                                        f'"{spec.id}" already exists with a different spec'
                                    )
                                duplicates += 1
                                continue
                            seen[key] = digest
                            if writer is None or writer.jobs >= jobs_per_file:
                                if writer is not None:
                                    writer.commit()
                                writer = SourceWriter(output_name(prefix, len(outputs) + 1))
                                outputs.append(writer.path)
                            writer.write(spec)
                except HqError as exc:
                    raise MergeError(f"{name}: {exc.message}") from None
            total_jobs += decoder.jobs
            total_bytes += decoder.uncompressed_bytes
        if writer is None:
            raise MergeError("inputs contain no jobs")
        writer.commit()
    except BaseException:
        if writer is not None:
            writer.abort()
        for path in outputs:
            with contextlib.suppress(OSError):
                os.unlink(path)
        raise
    return MergeResult(len(inputs), total_jobs, len(seen), duplicates, outputs)
