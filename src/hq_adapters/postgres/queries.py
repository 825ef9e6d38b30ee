"""Named SQL blocks, loaded once from ``sql/*.sql``.

A block starts with ``-- name: <name>`` and runs until the next such line. The line after the
name is a comment saying what the block does and why its locking is right. Blocks are static
text with bound parameters only.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_NAME_RE = re.compile(r"^-- name: ([a-z0-9_]+)\s*$", re.MULTILINE)


def parse(text: str) -> dict[str, str]:
    """Split one file into its named blocks; a repeated name is an error."""
    out: dict[str, str] = {}
    parts = _NAME_RE.split(text)
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in out:
            raise ValueError(f"duplicate SQL block {name!r}")
        out[name] = body.strip()
    return out


@cache
def queries() -> dict[str, str]:
    """Every named block of every file under ``sql/``."""
    out: dict[str, str] = {}
    for entry in sorted(resources.files("hq_adapters.postgres.sql").iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".sql"):
            for name, body in parse(entry.read_text()).items():
                if name in out:
                    raise ValueError(f"duplicate SQL block {name!r}")
                out[name] = body
    return out


def q(name: str) -> str:
    """The SQL text of one named block (KeyError for an unknown name)."""
    return queries()[name]
