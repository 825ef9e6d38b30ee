"""jobs-jsonl-zstd-v1 writer and decoder (spec §3.1–§3.3)."""

from __future__ import annotations

import io
import os
import resource

import pytest
import zstandard

from hq_adapters.sourcefile import (
    SourceDecoder,
    SourceLimits,
    SourceWriter,
    encode_job_line,
    iter_batches,
)
from hq_domain.errors import InvalidJob, SourceFormatError
from hq_domain.ids import default_job_id
from hq_domain.jobs import JobSpec

BIG = SourceLimits(max_jobs=10_000_000, max_uncompressed=1 << 40)


def zst(text: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=3).compress(text)


def decode(data: bytes, limits: SourceLimits = BIG) -> tuple[list[list[JobSpec]], SourceDecoder]:
    dec = SourceDecoder(limits)
    return list(iter_batches(io.BytesIO(data), dec)), dec


def decode_error(data: bytes, limits: SourceLimits = BIG) -> str:
    with pytest.raises(InvalidJob) as info:
        decode(data, limits)
    return info.value.message


def test_format_errors_are_source_format_errors() -> None:
    """Typed, so the dashboard needs no message prefix to tell a bad file from a refusal."""
    with pytest.raises(SourceFormatError) as info:
        decode(zst(b'{"value":"a","bogus":1}\n'))
    assert info.value.code == "invalid_job" and isinstance(info.value, InvalidJob)
    assert info.value.message == 'source format: line 1: unknown field "bogus"'


def test_stable_job_id_vectors() -> None:
    assert default_job_id("seed", "https://example.org/") == (
        "j1_92f50438a02ab171b6735678275a2f9db233d4c88e301a0243886c2679ce7070"
    )
    assert default_job_id("asset", "https://example.org/a.png") == (
        "j1_3415498e0d810218fb682c5192529b4ec15d74dfbaedf293c3b13d5d5c652998"
    )
    assert default_job_id("seed", "https://例子.测试/路径") == (
        "j1_6f244c2352df6cd3f399df55501a1b77c57f98b85a94a2193849f5532e766528"
    )
    assert default_job_id("", "v") == default_job_id("seed", "v") == default_job_id(None, "v")


def test_encode_key_order_omits_empties_and_no_html_escape() -> None:
    spec = JobSpec(value="a<b>&c", id="x", type="asset", via="", hops=2, attr={"z": 1, "a": "<"})
    assert encode_job_line(spec) == (
        b'{"id":"x","value":"a<b>&c","type":"asset","via":"","hops":2,"attr":{"z":1,"a":"<"}}\n'
    )
    assert encode_job_line(JobSpec(value="v", random_key=5)) == b'{"value":"v"}\n'


def test_round_trip_batches(tmp_path) -> None:
    path = str(tmp_path / "a.zst")
    specs = [
        JobSpec(
            value=f"https://e/{i}",
            id=f"id{i}",
            type="asset" if i % 3 else None,
            via="" if i % 5 == 0 else None,
            hops=i % 4,
            attr={"n": i} if i % 2 else None,
        )
        for i in range(2345)
    ]
    with SourceWriter(path) as w:
        for s in specs:
            w.write(s)
    assert os.stat(path).st_mode & 0o777 == 0o644
    with open(path, "rb") as f:
        data = f.read()
    batches, dec = decode(data)
    assert [len(b) for b in batches] == [1000, 1000, 345]
    assert [s for b in batches for s in b] == specs
    assert dec.jobs == 2345
    assert dec.uncompressed_bytes == len(
        zstandard.ZstdDecompressor().decompressobj().decompress(data)
    )


def test_writer_is_exclusive_and_removed_on_failure(tmp_path) -> None:
    path = tmp_path / "out.zst"
    path.write_bytes(b"keep")
    with pytest.raises(FileExistsError):
        SourceWriter(str(path))
    assert path.read_bytes() == b"keep"
    other = tmp_path / "b.zst"
    with pytest.raises(RuntimeError), SourceWriter(str(other)) as w:
        w.write(JobSpec(value="x"))
        raise RuntimeError("boom")
    assert not other.exists()


def test_empty_writer_produces_valid_empty_source(tmp_path) -> None:
    path = tmp_path / "e.zst"
    with SourceWriter(str(path)):
        pass
    batches, dec = decode(path.read_bytes())
    assert batches == [] and dec.jobs == 0
    assert decode(b"")[0] == []


def test_blank_lines_crlf_and_counting() -> None:
    text = b'\n  \t\r\n{"value":"a"}\r\n\n{"value":"b "}\n   \n{"value":"c"}'
    batches, dec = decode(zst(text))
    assert [s.value for s in batches[0]] == ["a", "b ", "c"]
    assert dec.jobs == 3 and dec.uncompressed_bytes == len(text)
    # The counted line number skips blank lines.
    assert decode_error(zst(b'\n\n{"value":"a"}\n\n{"id":"x"}\n')) == (
        'source format: line 2: required field "value" is missing'
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"value":"a","random_key":1}', 'unknown field "random_key"'),
        (b'{"value":"a","extra":1}', 'unknown field "extra"'),
        (b'{"random_key":1}', 'required field "value" is missing'),
        (b'{"value":"\xff"}', "line is not valid UTF-8"),
        (b'{"value":"a"} {"value":"b"}', "line must contain exactly one JSON value"),
        (b'["a"]', "line must be a JSON object"),
        (b'{"value":""}', "value must be valid UTF-8 and at most 8192 bytes"),
        (b'{"value":null}', "value must be valid UTF-8 and at most 8192 bytes"),
        (b'{"value":"a","hops":1.5}', "invalid job"),
        (b'{"value":"a","type":"page"}', "type must be seed or asset"),
        (b'{"value":"a","hops":-1}', "hops must be non-negative"),
        (b'{"value":"a","id":"bad id"}', "id must be 1-128 ASCII bytes matching [A-Za-z0-9._:-]+"),
        (b'{"value":"a"', "invalid JSON"),
    ],
)
def test_bad_lines(line: bytes, message: str) -> None:
    got = decode_error(zst(b'{"value":"ok"}\n' + line + b"\n"))
    assert got.startswith("source format: line 2: " + message), got


def test_line_length_limit() -> None:
    ok = b'{"value":"' + b"a" * 100 + b'"' + b" " * (65535 - 112) + b"}"
    assert len(ok) == 65535
    assert decode(zst(ok + b"\n"))[1].jobs == 1
    assert decode(zst(ok))[1].jobs == 1
    long = ok[:-1] + b" }"
    assert decode_error(zst(long + b"\n")) == "source format: line 1: token too long"
    assert decode_error(zst(b'{"value":"a"}\n' + long)) == "source format: line 2: token too long"


def test_truncated_and_garbage_zstd() -> None:
    data = zst(b'{"value":"a"}\n' * 5000)
    assert "unexpected EOF" in decode_error(data[:-7])
    assert decode_error(b"not zstd at all").startswith("source format: zstd:")
    assert decode_error(data + b"\x00\x01junk").startswith("source format: zstd:")
    batches, _ = decode(data + data)  # concatenated frames are one stream
    assert sum(map(len, batches)) == 10000


def test_window_limit() -> None:
    params = zstandard.ZstdCompressionParameters.from_level(
        3, window_log=27, write_content_size=False
    )
    cobj = zstandard.ZstdCompressor(compression_params=params).compressobj()
    big = cobj.compress(b'{"value":"a"}\n' * 10) + cobj.flush()
    assert zstandard.get_frame_parameters(big).window_size == 128 << 20
    assert decode_error(big).startswith("source format: zstd:")


def test_job_limit_counts_lines_not_blanks() -> None:
    data = zst(b'{"value":"a"}\n\n' * 5)
    assert decode(data, SourceLimits(5, 1 << 30))[1].jobs == 5
    assert decode_error(data, SourceLimits(4, 1 << 30)) == "source format: source exceeds job limit"


def test_uncompressed_limit() -> None:
    text = b'{"value":"a"}\n' * 10  # 140 bytes
    assert decode(zst(text), SourceLimits(100, 140))[1].uncompressed_bytes == 140
    assert decode_error(zst(text), SourceLimits(100, 139)) == (
        "source format: source exceeds uncompressed size limit"
    )
    # Cut mid-line: the truncated line's parse error surfaces first, as in the reference.
    assert decode_error(zst(text), SourceLimits(100, 135)).startswith("source format: line 10:")


def test_final_partial_batch_only_after_whole_stream() -> None:
    data = zst(b'{"value":"a"}\n' * 1500 + b'{"nope":1}\n')
    dec = SourceDecoder(BIG)
    got = []
    with pytest.raises(InvalidJob, match="line 1501"):
        for batch in iter_batches(io.BytesIO(data), dec):
            got.append(len(batch))
    assert got == [1000]


def test_zstd_bomb_stays_bounded() -> None:
    # 2 GiB of newlines compresses to a few KiB; decoding must neither hold it nor split it all.
    cctx = zstandard.ZstdCompressor(level=1)
    chunk = b"\n" * (1 << 20)
    out = io.BytesIO()
    with cctx.stream_writer(out, closefd=False) as w:
        for _ in range(2048):
            w.write(chunk)
    bomb = out.getvalue()
    assert len(bomb) < 1 << 20
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    limit = SourceLimits(10, 8 << 20)
    assert decode_error(bomb, limit) == "source format: source exceeds uncompressed size limit"
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 200 * 1024
