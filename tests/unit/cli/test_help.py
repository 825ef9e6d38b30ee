"""D9: ``--help``/``-h`` on every command and subcommand of tracker, hqctl and source prints a
description of every subcommand and flag and exits 0; no/unknown subcommands keep exit 1.

The command lists come from the CLIs' own dispatch tables, so a command added without a
description or with an undocumented flag fails here.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from hq_apps.cli import hqctl, source, tracker

HELP = ("--help", "-h")


def _flags(func: Callable[..., object]) -> list[str]:
    names = []
    for p in inspect.signature(func).parameters.values():
        names.append("--json" if p.name == "json_output" else "--" + p.name.replace("_", "-"))
    return names


def _assert_flags_described(out: str, func: Callable[..., object]) -> None:
    for flag in _flags(func):
        line = next(
            (ln for ln in out.splitlines() if re.search(rf"│ (\*  |   )?{flag}\b", ln)), None
        )
        assert line is not None, f"{flag} missing from help:\n{out}"
        # After the flag and its type (STR, INT, PATH, STR...), the description must start
        # with words, not with a bare "[default: ...]" / "[env var: ...]".
        rest = re.sub(rf"^.*?{flag}(\s+[A-Z\[\]|.]+)?\s+", "", line.strip("│ "), count=1)
        assert rest and not rest.startswith("["), f"{flag} has no description: {line!r}"


def _first_doc_line(func: Callable[..., object]) -> str:
    doc = inspect.getdoc(func) or ""
    assert doc, f"{func.__name__} has no docstring"
    return doc.splitlines()[0]


def _tracker_commands() -> dict[str, Callable[..., object]]:
    return {name: tracker.app[name].default_command for name in sorted(tracker.COMMANDS)}


def _run(cli: Callable[[list[str]], int], argv: list[str], capsys) -> tuple[int, str, str]:
    code = cli(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("flag", HELP)
def test_tracker_help_lists_every_command(flag: str, capsys) -> None:
    code, out, _ = _run(tracker.run, [flag], capsys)
    assert code == 0
    for name, func in _tracker_commands().items():
        assert re.search(rf"│ {name}\s+\S", out), name
        assert _first_doc_line(func).split()[0] in out


@pytest.mark.parametrize("flag", HELP)
@pytest.mark.parametrize("name", sorted(tracker.COMMANDS))
def test_tracker_command_help(name: str, flag: str, capsys) -> None:
    code, out, err = _run(tracker.run, [name, flag], capsys)
    assert code == 0, err
    assert f"tracker {name}" in out
    func = _tracker_commands()[name]
    assert _first_doc_line(func)[:40] in " ".join(out.split())
    _assert_flags_described(out, func)


HQCTL_GROUPS = sorted({n.split()[0] for n in hqctl.COMMANDS if " " in n})


@pytest.mark.parametrize("flag", HELP)
def test_hqctl_help_lists_commands_and_groups(flag: str, capsys) -> None:
    code, out, _ = _run(hqctl.run, [flag], capsys)
    assert code == 0
    tops = {n.split()[0] for n in hqctl.COMMANDS}
    for name in tops:
        assert re.search(rf"│ {name}\s+[A-Z]", out), name


@pytest.mark.parametrize("flag", HELP)
@pytest.mark.parametrize("group", HQCTL_GROUPS)
def test_hqctl_group_help_lists_subcommands(group: str, flag: str, capsys) -> None:
    code, out, _ = _run(hqctl.run, [group, flag], capsys)
    assert code == 0
    for name, (func, _usage) in hqctl.COMMANDS.items():
        if name.startswith(group + " "):
            sub = name.split()[1]
            assert re.search(rf"│ {sub}\s+{re.escape(_first_doc_line(func)[:20])}", out), name


@pytest.mark.parametrize("flag", HELP)
@pytest.mark.parametrize("name", sorted(hqctl.COMMANDS))
def test_hqctl_command_help(name: str, flag: str, capsys) -> None:
    func, usage = hqctl.COMMANDS[name]
    code, out, err = _run(hqctl.run, [*name.split(), flag], capsys)
    assert code == 0, err
    assert usage.removeprefix("usage: ")[:30] in out
    assert _first_doc_line(func)[:40] in " ".join(out.split())
    _assert_flags_described(out, func)


@pytest.mark.parametrize("flag", HELP)
@pytest.mark.parametrize("name", sorted(source.COMMANDS))
def test_source_help(name: str, flag: str, capsys) -> None:
    code, out, _ = _run(source.run, [flag], capsys)
    assert code == 0 and re.search(rf"│ {name}\s+[A-Z]", out)
    func, _usage = source.COMMANDS[name]
    code, out, err = _run(source.run, [name, flag], capsys)
    assert code == 0, err
    _assert_flags_described(out, func)


@pytest.mark.parametrize(
    ("cli", "argv"),
    [
        (tracker.run, []),
        (tracker.run, ["nope"]),
        (hqctl.run, []),
        (hqctl.run, ["nope"]),
        (hqctl.run, ["projects"]),
        (hqctl.run, ["projects", "nope"]),
        (source.run, []),
        (source.run, ["nope"]),
    ],
)
def test_missing_or_unknown_command_keeps_exit_1(cli, argv, capsys) -> None:
    code, out, err = _run(cli, argv, capsys)
    assert code == 1
    assert err.startswith("usage: ") and "--help" in err
    assert out == ""


@pytest.mark.parametrize("prog", ["tracker", "hqctl", "source"])
def test_installed_entry_points_help(prog: str) -> None:
    """The real console scripts, as a terminal user runs them."""
    exe = Path(sys.executable).with_name(prog)
    if not exe.exists():
        pytest.skip(f"{prog} is not installed next to {sys.executable}")
    proc = subprocess.run(
        [str(exe), "--help"], capture_output=True, text=True, timeout=60,
        env={**os.environ, "COLUMNS": "100"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"Usage: {prog} COMMAND" in proc.stdout
    assert "Warning" not in proc.stderr
