"""``source {pack|merge}``: build and merge ``jobs-jsonl-zstd-v1`` files (spec §3.4, §3.5, §4.3)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from typing import BinaryIO

from hq_adapters.sourcefile.merge import MergeError, merge_sources
from hq_adapters.sourcefile.pack import PackError, pack_values
from hq_apps.cli.cliutil import CliError, run_commands
from hq_domain.projects import IdentityMode

MAX_MERGE_INPUTS = 100_000
MAX_MERGE_JOBS = 100_000_000
MAX_MERGE_BYTES = 1 << 40
PACK_USAGE = (
    "usage: source pack --input PATH|- --output FILE "
    "[--identity-mode external_id|unique_value|none]"
)
MERGE_USAGE = (
    "usage: source merge --input FILE [--input FILE ...] --output-prefix PREFIX "
    "[--jobs-per-file N] [--max-jobs N] [--max-uncompressed-bytes N]"
)


def _open_input(path: str) -> BinaryIO:
    if path == "-":
        return contextlib.nullcontext(sys.stdin.buffer)  # type: ignore[return-value]
    return open(path, "rb")


DESCRIPTION = """Build and merge jobs-jsonl-zstd-v1 source files for 'hqctl enqueue-source' and
'tracker enqueue-source'."""


def pack(*, input: str = "", output: str = "", identity_mode: str = "external_id") -> None:
    """Pack a text file of values (one URL per line) into a new source file.

    Prints a summary and the next step on stderr; stdout stays empty.

    Parameters
    ----------
    input
        Text file with one value per line, or - for stdin (empty lines are skipped).
    output
        New .jobs.jsonl.zst file to create (must not exist).
    identity_mode
        external_id (default: each job gets the stable j1_ ID of its value) or
        unique_value / none (no IDs) - match the target project's identity mode.
    """
    modes = {m.value for m in IdentityMode}
    if not input or not output or output == "-" or identity_mode not in modes:
        raise CliError("source pack: --input and a file --output are required")
    try:
        with _open_input(input) as reader:
            jobs = pack_values(reader, output, IdentityMode(identity_mode))
    except PackError as exc:
        raise CliError(f"source pack: {exc}") from None
    except FileExistsError:
        raise CliError(f"source pack: create {output}: file exists") from None
    except OSError as exc:
        raise CliError(f"source pack: {exc.filename or ''}: {exc.strerror or exc}") from None
    sys.stderr.write(
        f"packed {jobs} jobs ({identity_mode}) into {output}; import it with: "
        f"hqctl enqueue-source --project-id PROJECT --input {output}\n"
    )


def merge(
    *,
    input: list[str] | None = None,
    output_prefix: str = "",
    jobs_per_file: int = 100_000,
    max_jobs: int = 10_000_000,
    max_uncompressed_bytes: int = 16 << 30,
) -> None:
    """Merge source files into numbered files without duplicate job IDs.

    Keeps the first job of each ID; prints one summary line on stdout.

    Parameters
    ----------
    input
        Source file to read (repeat the flag; - for stdin at most once). Every job needs an id.
    output_prefix
        Outputs are PREFIX-000001.jobs.jsonl.zst, PREFIX-000002... (created, never overwritten).
    jobs_per_file
        Most jobs in one output file.
    max_jobs
        Refuse more input jobs than this, duplicates included (at most 100,000,000).
    max_uncompressed_bytes
        Refuse more uncompressed input than this, all inputs together (at most 1 TiB).
    """
    inputs = list(input or [])
    if not inputs:
        raise CliError("source merge: at least one --input is required")
    if len(inputs) > MAX_MERGE_INPUTS:
        raise CliError(f"source merge: at most {MAX_MERGE_INPUTS} inputs are allowed")
    if inputs.count("-") > 1:
        raise CliError("source merge: stdin can be used only once")
    if not output_prefix or output_prefix == "-":
        raise CliError("source merge: a non-empty file --output-prefix is required")
    if not 1 <= max_jobs <= MAX_MERGE_JOBS:
        raise CliError(f"source merge: --max-jobs must be between 1 and {MAX_MERGE_JOBS}")
    if not 1 <= jobs_per_file <= max_jobs:
        raise CliError("source merge: --jobs-per-file must be between 1 and --max-jobs")
    if not 1 <= max_uncompressed_bytes <= MAX_MERGE_BYTES:
        raise CliError(
            f"source merge: --max-uncompressed-bytes must be between 1 and {MAX_MERGE_BYTES}"
        )
    try:
        result = merge_sources(
            inputs,
            _open_input,
            output_prefix,
            jobs_per_file=jobs_per_file,
            max_jobs=max_jobs,
            max_uncompressed=max_uncompressed_bytes,
        )
    except MergeError as exc:
        raise CliError(f"source merge: {exc}") from None
    except FileExistsError as exc:
        raise CliError(f"source merge: create {exc.filename}: file exists") from None
    except OSError as exc:
        raise CliError(f"source merge: {exc.filename or ''}: {exc.strerror or exc}") from None
    print(result.summary())


COMMANDS = {"pack": (pack, PACK_USAGE), "merge": (merge, MERGE_USAGE)}


def run(argv: Sequence[str]) -> int:
    return run_commands("source", COMMANDS, argv, description=DESCRIPTION)


def main() -> None:
    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
