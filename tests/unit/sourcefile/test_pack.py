"""``source pack``'s direct line encoding agrees with validating and writing a JobSpec per
value (spec §3.4): same bytes, same errors, same line numbers."""

from __future__ import annotations

import io

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from hq_adapters.sourcefile import encode_job_line
from hq_adapters.sourcefile.pack import MAX_VALUE_LINE, PackError, pack_values
from hq_domain.errors import HqError
from hq_domain.ids import default_job_id
from hq_domain.projects import IdentityMode
from hq_domain.validation import validate_job_spec


def reference(data: bytes, mode: IdentityMode) -> bytes | str:
    """Pack one line at a time through JobSpec validation and the writer's encoder."""
    out = b""
    for number, raw in enumerate(data.split(b"\n"), 1):
        if len(raw) > MAX_VALUE_LINE:
            return f"line {number}: token too long"
        raw = raw.removesuffix(b"\r")
        if not raw:
            continue
        try:
            value = raw.decode("utf-8")
        except UnicodeDecodeError:
            return f"line {number}: value must be valid UTF-8 and at most 8192 bytes"
        job_id = default_job_id("seed", value) if mode is IdentityMode.EXTERNAL_ID else None
        try:
            out += encode_job_line(validate_job_spec(value=value, id=job_id))
        except HqError as exc:
            return f"line {number}: {exc.message}"
    return out


def packed(data: bytes, mode: IdentityMode, tmp_path, name: str) -> bytes | str:
    path = tmp_path / name
    try:
        n = pack_values(io.BytesIO(data), str(path), mode)
    except PackError as exc:
        assert not path.exists()
        return str(exc)
    text = zstandard.ZstdDecompressor().decompressobj().decompress(path.read_bytes())
    assert n == text.count(b"\n")
    return text


_chars = st.sampled_from(
    ["a", "/", '"', "\\", "\x01", "\x7f", "é", "例", "\U0001f600", " ", "\r", "<"]
)
_line = st.one_of(
    st.lists(_chars, max_size=30).map("".join).map(lambda s: s.encode()),
    st.binary(max_size=8),
    st.integers(5000, 8200).map(lambda n: b"\x01" * n),  # escapes past 32 KiB from ~5,440
    st.integers(8100, 8200).map(lambda n: b"a" * n),
)


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(_line, max_size=12), mode=st.sampled_from(list(IdentityMode)))
def test_pack_matches_validating_each_job(tmp_path_factory, lines, mode) -> None:
    tmp = tmp_path_factory.mktemp("pack")
    data = b"\n".join(lines)
    assert packed(data, mode, tmp, "o.zst") == reference(data, mode)


@pytest.mark.parametrize("mode", list(IdentityMode))
def test_pack_across_read_chunks(tmp_path, mode) -> None:
    # Lines straddle the 64 KiB reads; numbering continues across chunks.
    lines = [f"https://example.org/{i}/{'x' * (i % 97)}".encode() for i in range(3000)]
    data = b"\r\n".join(lines) + b"\n\n" + b"\x01" * 6000 + b"\n"
    assert packed(data, mode, tmp_path, "o.zst") == reference(data, mode)
    assert "normalized JobSpec exceeds 32 KiB" in str(reference(data, mode))
    good = b"\n".join(lines)
    assert packed(good, mode, tmp_path, "g.zst") == reference(good, mode)
