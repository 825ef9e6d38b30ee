"""The decoder's batches and errors do not depend on how its input arrives: any split of the
compressed bytes, any batch size, the same jobs in the same batches or the same first error,
as a plain line-by-line reading of the text gives them (spec §3.2)."""

from __future__ import annotations

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from hq_adapters.sourcefile import SourceDecoder, SourceLimits, decoder
from hq_adapters.sourcefile.lines import parse_job_line
from hq_domain.errors import HqError, SourceFormatError

_LINES = st.sampled_from([
    b'{"value":"a"}', b'{"value":"b","id":"x1"}', b'{"value":"c"}\r', b"", b"  \t", b"\r",
    b'{"value":"d","hops":2}', b'{"nope":1}', b'{"value":"e"', b"x" * 70_000,
])  # fmt: skip


def _model(text: bytes, batch_size: int, max_jobs: int) -> list[list[str]] | str:
    """Line by line: blank lines skipped, a line numbered by the jobs before it."""
    batches: list[list[str]] = [[]]
    jobs = 0
    for raw in text.split(b"\n"):
        if len(raw) > decoder.MAX_LINE_BYTES:
            return f"line {jobs + 1}: token too long"
        raw = raw.removesuffix(b"\r")
        if not raw or raw.isspace():
            continue
        jobs += 1
        if jobs > max_jobs:
            return "source exceeds job limit"
        try:
            value = parse_job_line(raw).value
        except HqError as exc:
            return f"line {jobs}: {exc.message}"
        if len(batches[-1]) == batch_size:
            batches.append([])
        batches[-1].append(value)
    return [b for b in batches if b]


def _decode(data: bytes, cuts: list[int], max_jobs: int) -> list[list[str]] | str:
    dec = SourceDecoder(SourceLimits(max_jobs=max_jobs, max_uncompressed=1 << 30))
    out: list[list[str]] = []
    at = 0
    try:
        for cut in [*sorted(cuts), len(data)]:
            dec.push(data[at:cut])
            at = max(at, cut)
            while (batch := dec.next_batch()) is not None:
                out.append([j.value for j in batch])
        dec.end()
        while (batch := dec.next_batch()) is not None:
            out.append([j.value for j in batch])
    except SourceFormatError as exc:
        return exc.message.removeprefix("source format: ")
    return out


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(_LINES, max_size=40),
    newline_at_end=st.booleans(),
    batch_size=st.integers(1, 5),
    max_jobs=st.integers(1, 50),
    cut_fractions=st.lists(st.floats(0, 1), max_size=6),
)
def test_any_split_gives_the_line_by_line_result(
    lines, newline_at_end, batch_size, max_jobs, cut_fractions
) -> None:
    text = b"\n".join(lines) + (b"\n" if newline_at_end and lines else b"")
    data = zstandard.ZstdCompressor(level=1).compress(text)
    cuts = [int(f * len(data)) for f in cut_fractions]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(decoder, "BATCH_SIZE", batch_size)
        assert _decode(data, cuts, max_jobs) == _model(text, batch_size, max_jobs)
