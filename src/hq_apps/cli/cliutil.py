"""Shared command-line plumbing for ``hqctl`` and ``source`` (spec §4 conventions).

It lives outside the ``hqctl`` package so ``source`` does not import the HTTP client stack.

Go's ``flag`` package accepts ``-name value``, ``--name value`` and ``--name=value``; cyclopts
only knows the double-dash forms, so single-dash spellings of known flags are rewritten first.
Commands raise :class:`CliError` with the exact text to print on stderr.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable, Sequence

import cyclopts
from cyclopts.exceptions import CycloptsError

from hq_apps.cli.common import CliError, read_secret_file

__all__ = ["CliError", "go_style", "parse_go_duration", "read_secret_file", "run_commands"]

HELP_FLAGS = ("-h", "-help", "--help")
_DURATION_RE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_style(
    argv: Sequence[str], flags: set[str], bool_flags: frozenset[str] = frozenset()
) -> list[str]:
    """Rewrite ``-name`` to ``--name`` and glue dash-leading values (``-``, ``-1``) to their
    flag as ``--name=value`` so the parser does not mistake them for options."""
    out: list[str] = []
    for tok in argv:
        name = tok.lstrip("-").split("=", 1)[0]
        is_flag = tok.startswith("-") and name in flags
        if is_flag and not tok.startswith("--"):
            tok = "-" + tok
        prev = out[-1] if out else ""
        prev_name = prev[2:]
        if (
            not is_flag
            and tok.startswith("-")
            and prev.startswith("--")
            and "=" not in prev
            and prev_name in flags
            and prev_name not in bool_flags
        ):
            out[-1] = f"{prev}={tok}"
            continue
        out.append(tok)
    return out


def parse_go_duration(text: str) -> float:
    """Seconds of a Go duration such as ``10m``, ``1h30m``, ``1.5s``; ValueError otherwise."""
    s = text.strip()
    sign = 1.0
    if s[:1] in "+-" and s:
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    pos, total = 0, 0.0
    while pos < len(s):
        m = _DURATION_RE.match(s, pos)
        if m is None:
            raise ValueError(f'time: invalid duration "{text}"')
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    if not s:
        raise ValueError(f'time: invalid duration "{text}"')
    return sign * total


def run_commands(
    prog: str,
    commands: dict[str, tuple[Callable[..., object], str]],
    argv: Sequence[str],
    *,
    usage: str | None = None,
    help_exit: int = 0,
) -> int:
    """Dispatch ``argv`` to one of ``commands`` (name → (function, usage line)); a name may be
    two words (``projects list``). Functions take keyword-only flags and raise CliError."""
    usage = usage or f"usage: {prog} {{{'|'.join(commands)}}} [flags]"
    name = next((n for n in (" ".join(argv[:2]), " ".join(argv[:1])) if n in commands), None)
    if name is None:
        print(usage, file=sys.stderr)
        return help_exit if argv and argv[0] in HELP_FLAGS else 1
    rest = list(argv[len(name.split()) :])
    func, cmd_usage = commands[name]
    if any(tok in HELP_FLAGS for tok in rest):
        print(cmd_usage, file=sys.stderr)
        return help_exit
    app = cyclopts.App(name=prog, help_flags=[], version_flags=[])
    app.command(func, name="run")
    params = inspect.signature(func).parameters.values()
    flags = set(_flag_names(func))
    bools = frozenset(p.name.replace("_", "-") for p in params if isinstance(p.default, bool))
    if "json-output" in flags:
        flags.add("json")
    try:
        command, bound, _ = app.parse_args(
            ["run", *go_style(rest, flags, bools | {"json"})],
            exit_on_error=False,
            print_error=False,
            help_on_error=False,
        )
    except CycloptsError as exc:
        text = str(exc).strip()
        msg = text.splitlines()[-1] if text else "invalid flags"
        msg = msg.replace('Command "run" parameter ', "")
        print(f"{prog} {name}: {msg}\n{cmd_usage}", file=sys.stderr)
        return 1
    try:
        command(*bound.args, **bound.kwargs)
    except CliError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    return 0


def _flag_names(func: Callable[..., object]) -> list[str]:
    return [name.replace("_", "-") for name in inspect.signature(func).parameters]
