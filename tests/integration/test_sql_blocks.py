"""The named SQL blocks: every name the adapter uses exists, and blocks follow the house rules."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

import hq_adapters.postgres as pg
from hq_adapters.postgres.queries import parse, queries

_SRC = Path(pg.__file__).parent
_NAME_USE = re.compile(r"""q\(\s*["']([a-z0-9_]+)["']""")
_NAME_ARG = re.compile(r"""\b(?:fetch|fetchrow|fetchval|execute)\(\s*["']([a-z0-9_]+)["']""")


def used_names() -> set[str]:
    names: set[str] = set()
    for path in _SRC.glob("*.py"):
        text = path.read_text()
        names |= set(_NAME_USE.findall(text)) | set(_NAME_ARG.findall(text))
    # names chosen through a mapping (claim order → block), and the worker's joined calls
    worker = (_SRC / "worker.py").read_text() + (_SRC / "worker_statements.py").read_text()
    names |= set(re.findall(r'"(claim_[a-z]+)"', worker))
    names |= set(re.findall(r'"([a-z_]+_(?:op|generic|custom|fifo|random)|gated_[a-z]+(?:_joined)?)"',
                            worker))
    names |= set(re.findall(r'"(github_[a-z_]+)"', (_SRC / "web.py").read_text()))
    # blocks a migration's function runs verbatim (test_generic_plans checks the copies)
    for path in (_SRC / "migrations").glob("*.sql"):
        names |= set(re.findall(r"-- sql/\w+\.sql block (\w+), verbatim", path.read_text()))
    return names


def test_every_used_name_exists() -> None:
    used = used_names()
    assert len(used) > 30
    missing = used - set(queries())
    assert not missing


def test_every_block_is_used() -> None:
    unused = set(queries()) - used_names()
    assert not unused


def test_every_block_starts_with_a_comment_and_binds_no_time_from_sql() -> None:
    for name, body in queries().items():
        assert body.startswith("-- "), f"{name}: first line must say what it does"
        code = "\n".join(line for line in body.splitlines() if not line.lstrip().startswith("--"))
        assert not re.search(r"\bnow\(\)|current_timestamp|clock_timestamp", code, re.I), name


def test_adapter_builds_no_sql_text() -> None:
    """Static SQL only: no f-strings or % formatting near execute calls in the adapter."""
    for path in _SRC.glob("*.py"):
        if path.name == "migrate.py":
            continue
        text = path.read_text()
        assert not re.search(r"""f["'](?:SELECT|INSERT|UPDATE|DELETE|WITH)""", text, re.I), path


def test_parse_rejects_duplicates() -> None:
    with pytest.raises(ValueError):
        parse("-- name: a\n-- x\nSELECT 1\n-- name: a\n-- y\nSELECT 2\n")


def test_sql_files_are_packaged() -> None:
    files = [e.name for e in resources.files("hq_adapters.postgres.sql").iterdir()]
    assert {"worker.sql", "users.sql"} <= set(files)


def _statement(name: str) -> str:
    return "\n".join(
        line for line in queries()[name].splitlines() if not line.strip().startswith("--")
    ).strip()


@pytest.mark.parametrize(("fifo", "random"), [("claim_fifo", "claim_random"),
                                              ("claim_op_fifo", "claim_op_random"),
                                              ("claim_lean_fifo", "claim_lean_random")])  # fmt: skip
def test_random_claim_blocks_differ_from_fifo_only_in_their_order(fifo: str, random: str) -> None:
    """The claim statements are written out twice (not parameterised) so each ORDER BY matches
    its partial index; this keeps the two copies from drifting apart. The random copy also
    reads only rows in the random queue (``random_queue``, the random index's predicate)."""
    assert _statement(random).count("status = 'todo' AND random_queue\n") == 1
    as_fifo = (
        _statement(random)
        .replace(" AND random_queue\n", "\n")
        .replace("random_key", "created_at")
        .replace("'random'", "'fifo'")
    )
    assert as_fifo == _statement(fifo)


def test_the_random_lean_claim_is_ready_when_the_fifo_one_would_be_for_a_random_project() -> None:
    random = _statement("claim_lean_ready_random")
    assert random.count("'random'") == 1
    assert random.replace("'random'", "'fifo'") == _statement("claim_lean_ready_fifo")
