"""The ``jobs-jsonl-zstd-v1`` source format (spec §3): streaming writer and decoder."""

from hq_adapters.sourcefile.decoder import (
    BATCH_SIZE,
    MAX_LINE_BYTES,
    SourceDecoder,
    SourceLimits,
    iter_batches,
)
from hq_adapters.sourcefile.lines import encode_job_line, parse_job_line
from hq_adapters.sourcefile.writer import SourceWriter, create_exclusive

__all__ = [
    "BATCH_SIZE",
    "MAX_LINE_BYTES",
    "SourceDecoder",
    "SourceLimits",
    "SourceWriter",
    "create_exclusive",
    "encode_job_line",
    "iter_batches",
    "parse_job_line",
]
