"""Shared command-line plumbing for ``hqctl`` and ``source`` (spec §4 conventions).

It lives outside the ``hqctl`` package so ``source`` does not import the HTTP client stack.

Go's ``flag`` package accepts ``-name value``, ``--name value`` and ``--name=value``; cyclopts
only knows the double-dash forms, so single-dash spellings of known flags are rewritten first.
Commands raise :class:`CliError` with the exact text to print on stderr.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
from collections.abc import Callable, Sequence

import cyclopts
from cyclopts.exceptions import CycloptsError

from hq_apps.cli.common import CliError, read_secret_file

__all__ = [
    "CliError",
    "CommandFailed",
    "confirm",
    "go_style",
    "parse_go_duration",
    "read_secret_file",
    "run_commands",
]


class CommandFailed(CliError):
    """A failure the server explained: its error code and HTTP status ride along so
    ``--json`` can print them."""

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None):
        super().__init__(message)
        self.code = code
        self.status = status


def confirm(name: str, prompt: str, expected: str) -> None:
    """Ask on the terminal to type ``expected``; CliError when stdin is no terminal or the
    answer differs (nothing is changed then)."""
    if not sys.stdin.isatty():
        raise CliError(f"{name}: stdin is not a terminal; pass --yes to confirm")
    sys.stderr.write(prompt)
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline().strip()
    except KeyboardInterrupt:
        answer = ""
    if answer != expected:
        raise CliError(f"{name}: not confirmed; nothing was deleted")


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


def help_app(
    prog: str,
    description: str,
    commands: dict[str, tuple[Callable[..., object], str]],
    groups: dict[str, str] | None = None,
) -> cyclopts.App:
    """A cyclopts App used only to render help (spec D9): one command per entry, two-word
    names nested under a group whose one-line description comes from ``groups``; each
    command's description is its docstring and its flags' help the docstring's Parameters
    section (or ``Parameter(help=...)`` on the shared connection flags)."""
    app = cyclopts.App(
        name=prog, help=description, help_flags=[], version_flags=[],
        default_parameter=cyclopts.Parameter(negative=""),
    )  # fmt: skip
    subs: dict[str, cyclopts.App] = {}
    for name, (func, usage) in commands.items():
        target = app
        if " " in name:
            group, name = name.split(" ", 1)
            if group not in subs:
                subs[group] = cyclopts.App(
                    name=group, help=(groups or {}).get(group, ""), help_flags=[],
                    version_flags=[],
                )  # fmt: skip
                app.command(subs[group])
            target = subs[group]
        target.command(func, name=name, usage=usage.removeprefix("usage: ") + "\n")
    return app


def print_help(app: cyclopts.App, tokens: Sequence[str]) -> None:
    """Help on stdout (it was asked for), as wide as the terminal or 100 columns."""
    from rich.console import Console

    width = None if sys.stdout.isatty() else 100
    app.help_print(list(tokens), console=Console(file=sys.stdout, width=width, highlight=False))


def run_commands(
    prog: str,
    commands: dict[str, tuple[Callable[..., object], str]],
    argv: Sequence[str],
    *,
    usage: str | None = None,
    description: str = "",
    groups: dict[str, str] | None = None,
) -> int:
    """Dispatch ``argv`` to one of ``commands`` (name → (function, usage line)); a name may be
    two words (``projects list``). Functions take keyword-only flags and raise CliError.

    ``-h``/``--help`` anywhere prints the help of the command (or group, or program) named
    before it and exits 0; no command or an unknown one prints the usage and exits 1 (§4)."""
    usage = usage or f"usage: {prog} {{{'|'.join(commands)}}} [flags]"
    hint = f"Run '{prog} --help' for a description of every command and flag."
    name = next((n for n in (" ".join(argv[:2]), " ".join(argv[:1])) if n in commands), None)
    if name is None:
        known_group = bool(argv) and any(n.startswith(argv[0] + " ") for n in commands)
        if argv and (
            argv[0] in HELP_FLAGS or (known_group and argv[1:2] and argv[1] in HELP_FLAGS)
        ):
            print_help(
                help_app(prog, description, commands, groups), argv[:1] if known_group else []
            )
            return 0
        print(f"{usage}\n{hint}", file=sys.stderr)
        return 1
    rest = list(argv[len(name.split()) :])
    func, cmd_usage = commands[name]
    if any(tok in HELP_FLAGS for tok in rest):
        print_help(help_app(prog, description, commands, groups), name.split())
        return 0
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
        if bound.kwargs.get("json_output"):
            # --json asked for machine output: the error is one JSON object on stderr.
            doc = {"error": {"message": str(exc), "code": getattr(exc, "code", None),
                             "status": getattr(exc, "status", None)}}  # fmt: skip
            print(json.dumps(doc), file=sys.stderr)
        else:
            print(str(exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog} {name}: interrupted", file=sys.stderr)
        return 130
    return 0


def _flag_names(func: Callable[..., object]) -> list[str]:
    return [name.replace("_", "-") for name in inspect.signature(func).parameters]
