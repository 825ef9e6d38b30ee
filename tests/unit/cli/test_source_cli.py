"""``source pack`` / ``source merge`` (spec §3.4, §3.5, §4.3)."""

from __future__ import annotations

import io
import os
import sys

import pytest
import zstandard

from hq_adapters.sourcefile import SourceDecoder, SourceLimits, SourceWriter, iter_batches
from hq_apps.cli.source import run
from hq_domain.ids import default_job_id
from hq_domain.jobs import JobSpec

LIMITS = SourceLimits(10_000_000, 1 << 40)


def read_source(path) -> list[JobSpec]:
    with open(path, "rb") as f:
        return [s for b in iter_batches(f, SourceDecoder(LIMITS)) for s in b]


def raw_text(path) -> bytes:
    with open(path, "rb") as f:
        return zstandard.ZstdDecompressor().decompressobj().decompress(f.read())


def write_source(path, specs) -> str:
    with SourceWriter(str(path)) as w:
        for s in specs:
            w.write(s)
    return str(path)


def test_usage(capsys) -> None:
    assert run([]) == 1
    assert capsys.readouterr().err == (
        "usage: source {pack|merge} [flags]\n"
        "Run 'source --help' for a description of every command and flag.\n"
    )
    assert run(["frob"]) == 1


def test_pack_external_id(tmp_path, capsys) -> None:
    src = tmp_path / "v.txt"
    src.write_bytes(b"https://example.org/\r\n\n  \nhttps://b/ \nhttps://example.org/")
    out = tmp_path / "o.zst"
    assert run(["pack", "-input", str(src), "--output=" + str(out)]) == 0
    assert os.stat(out).st_mode & 0o777 == 0o644
    jobs = read_source(out)
    assert [j.value for j in jobs] == [
        "https://example.org/",
        "  ",
        "https://b/ ",
        "https://example.org/",
    ]
    assert jobs[0].id == "j1_92f50438a02ab171b6735678275a2f9db233d4c88e301a0243886c2679ce7070"
    assert raw_text(out).split(b"\n")[0] == (
        b'{"id":"j1_92f50438a02ab171b6735678275a2f9db233d4c88e301a0243886c2679ce7070",'
        b'"value":"https://example.org/"}'
    )
    captured = capsys.readouterr()
    assert captured.out == ""  # stdout stays empty (spec §3.4); the summary is on stderr
    assert captured.err == (
        f"packed 4 jobs (external_id) into {out}; import it with: "
        f"hqctl enqueue-source --project-id PROJECT --input {out}\n"
    )


@pytest.mark.parametrize("mode", ["unique_value", "none"])
def test_pack_without_ids(tmp_path, mode) -> None:
    src = tmp_path / "v.txt"
    src.write_text("a\nb\n")
    out = tmp_path / "o.zst"
    assert run(["pack", "--input", str(src), "--output", str(out), "--identity-mode", mode]) == 0
    assert raw_text(out) == b'{"value":"a"}\n{"value":"b"}\n'


def test_pack_stdin_and_empty_input(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\n\n")))
    out = tmp_path / "o.zst"
    assert run(["pack", "--input", "-", "--output", str(out)]) == 0
    assert read_source(out) == []


@pytest.mark.parametrize(
    "args",
    [
        ["--input", "x"],
        ["--output", "y"],
        ["--input", "x", "--output", "-"],
        ["--input", "x", "--output", "y", "--identity-mode", "bogus"],
    ],
)
def test_pack_flag_errors(tmp_path, capsys, args) -> None:
    assert run(["pack", *args]) == 1
    assert capsys.readouterr().err == "source pack: --input and a file --output are required\n"


def test_pack_refuses_existing_output(tmp_path, capsys) -> None:
    src = tmp_path / "v.txt"
    src.write_text("a\n")
    out = tmp_path / "o.zst"
    out.write_bytes(b"precious")
    assert run(["pack", "--input", str(src), "--output", str(out)]) == 1
    assert out.read_bytes() == b"precious"
    assert "file exists" in capsys.readouterr().err


def test_pack_line_limits_and_cleanup(tmp_path, capsys) -> None:
    out = tmp_path / "o.zst"
    src = tmp_path / "v.txt"
    src.write_bytes(b"a" * 8192 + b"\n" + b"b" * 8192)
    assert run(["pack", "--input", str(src), "--output", str(out)]) == 0
    assert [len(j.value) for j in read_source(out)] == [8192, 8192]
    out.unlink()
    capsys.readouterr()
    src.write_bytes(b"ok\n" + b"a" * 8192 + b"\r\n")
    assert run(["pack", "--input", str(src), "--output", str(out)]) == 1
    assert capsys.readouterr().err == "source pack: line 2: token too long\n"
    assert not out.exists()
    src.write_bytes(b"ok\n\xff\xfe\n")
    assert run(["pack", "--input", str(src), "--output", str(out)]) == 1
    assert "line 2: value must be valid UTF-8" in capsys.readouterr().err
    assert not out.exists()


def j(value, **kw) -> JobSpec:
    return JobSpec(value=value, id=kw.pop("id", default_job_id(kw.get("type"), value)), **kw)


def test_merge_dedup_split_and_summary(tmp_path, capsys) -> None:
    a = write_source(tmp_path / "a.zst", [j("1"), j("2", via="x", hops=1), j("3")])
    b = write_source(tmp_path / "b.zst", [j("2", hops=5), j("4"), j("1"), j("5", type="asset")])
    prefix = str(tmp_path / "out")
    assert (
        run(
            ["merge", "--input", a, "--input", b, "--output-prefix", prefix, "--jobs-per-file", "2"]
        )
        == 0
    )
    assert capsys.readouterr().out == "inputs=2 jobs=7 unique=5 duplicates=2 outputs=3\n"
    names = sorted(os.listdir(tmp_path))
    assert names == [
        "a.zst",
        "b.zst",
        "out-000001.jobs.jsonl.zst",
        "out-000002.jobs.jsonl.zst",
        "out-000003.jobs.jsonl.zst",
    ]
    merged = [s for n in names[2:] for s in read_source(tmp_path / n)]
    assert [s.value for s in merged] == ["1", "2", "3", "4", "5"]
    assert merged[1].via == "x" and merged[1].hops == 1  # first occurrence wins


@pytest.mark.parametrize(
    ("second", "needle"),
    [
        (JobSpec(value="other", id="same"), 'identity_conflict: job id "same"'),
        (JobSpec(value="v", id="same", type="seed"), 'identity_conflict: job id "same"'),
        (JobSpec(value="v", id="same", attr={"k": 1}), 'identity_conflict: job id "same"'),
        (JobSpec(value="v"), "line 2: source merge requires job IDs"),
    ],
)
def test_merge_conflicts_remove_outputs(tmp_path, capsys, second, needle) -> None:
    a = write_source(
        tmp_path / "a.zst", [JobSpec(value="v", id="same")] + [j(str(i)) for i in range(5)]
    )
    b = write_source(tmp_path / "b.zst", [j("x"), second])
    prefix = str(tmp_path / "out")
    assert (
        run(
            ["merge", "--input", a, "--input", b, "--output-prefix", prefix, "--jobs-per-file", "1"]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert err.startswith("source merge: ") and needle in err, err
    assert sorted(os.listdir(tmp_path)) == ["a.zst", "b.zst"]


def test_merge_existing_output_aborts_and_cleans(tmp_path, capsys) -> None:
    a = write_source(tmp_path / "a.zst", [j(str(i)) for i in range(5)])
    (tmp_path / "out-000002.jobs.jsonl.zst").write_bytes(b"keep")
    assert (
        run(
            [
                "merge",
                "--input",
                a,
                "--output-prefix",
                str(tmp_path / "out"),
                "--jobs-per-file",
                "2",
            ]
        )
        == 1
    )
    assert "file exists" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["a.zst", "out-000002.jobs.jsonl.zst"]
    assert (tmp_path / "out-000002.jobs.jsonl.zst").read_bytes() == b"keep"


def test_merge_limits(tmp_path, capsys) -> None:
    a = write_source(tmp_path / "a.zst", [j(str(i)) for i in range(3)])
    p = str(tmp_path / "o")
    assert (
        run(
            [
                "merge",
                "--input",
                a,
                "--input",
                a,
                "--output-prefix",
                p,
                "--max-jobs",
                "5",
                "--jobs-per-file",
                "5",
            ]
        )
        == 1
    )
    assert "source exceeds job limit" in capsys.readouterr().err
    size = len(raw_text(a))
    assert (
        run(
            [
                "merge",
                "--input",
                a,
                "--input",
                a,
                "--output-prefix",
                p,
                "--max-uncompressed-bytes",
                str(2 * size),
            ]
        )
        == 0
    )
    capsys.readouterr()
    for name in os.listdir(tmp_path):
        if name.startswith("o-"):
            os.unlink(tmp_path / name)
    assert (
        run(
            [
                "merge",
                "--input",
                a,
                "--input",
                a,
                "--output-prefix",
                p,
                "--max-uncompressed-bytes",
                str(2 * size - 1),
            ]
        )
        == 1
    )
    assert "source exceeds uncompressed size limit" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["a.zst"]


def test_merge_no_jobs_and_flag_rules(tmp_path, capsys) -> None:
    e = write_source(tmp_path / "e.zst", [])
    assert run(["merge", "--input", e, "--output-prefix", str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err == "source merge: inputs contain no jobs\n"
    assert run(["merge", "--input", "-", "--input", "-", "--output-prefix", "x"]) == 1
    assert capsys.readouterr().err == "source merge: stdin can be used only once\n"
    for bad in (
        ["--output-prefix", "-"],
        ["--output-prefix", ""],
        ["--output-prefix", "x", "--jobs-per-file", "0"],
        ["--output-prefix", "x", "--jobs-per-file", "11", "--max-jobs", "10"],
        ["--output-prefix", "x", "--max-jobs", "100000001"],
        ["--output-prefix", "x", "--max-uncompressed-bytes", str((1 << 40) + 1)],
    ):
        assert run(["merge", "--input", e, *bad]) == 1, bad
        assert capsys.readouterr().err.startswith("source merge: ")
    assert sorted(os.listdir(tmp_path)) == ["e.zst"]


def test_merge_reads_stdin(tmp_path, monkeypatch, capsys) -> None:
    a = write_source(tmp_path / "a.zst", [j("1"), j("2")])
    with open(a, "rb") as f:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(f.read())))
    assert run(["merge", "--input", "-", "--input", a, "--output-prefix", str(tmp_path / "o")]) == 0
    assert capsys.readouterr().out == "inputs=2 jobs=4 unique=2 duplicates=2 outputs=1\n"
