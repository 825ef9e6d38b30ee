"""The tracker server in-process under cProfile, for ``benchmarks.profile``.

Same wiring as ``tracker serve`` (``hq_apps.wiring.serve``), plus benchmark-only probes and
experiments (monkeypatches in this process only; the adapters and the app are not edited):
SIGUSR1 starts cProfile and SIGUSR2 stops it and writes ``--out`` (stats) and ``--out.sql.json``
(how many times each named SQL statement ran, counted by wrapping asyncpg's public
``Connection`` query methods). ``--no-pool-reset`` gives the pool a reset that skips asyncpg's
per-release reset query, to measure what that round trip costs.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import signal
from collections import Counter
from functools import wraps

import asyncpg

from hq_adapters.postgres.queries import queries
from hq_apps import logging as hq_logging
from hq_apps import wiring
from hq_apps.cli.common import parse_listen
from hq_apps.settings import Settings

STATEMENTS: Counter[str] = Counter()
_COUNTING = False
_NAMES = {text: name for name, text in queries().items()}


def _label(query: str) -> str:
    name = _NAMES.get(query.strip())
    if name:
        return name
    first = query.strip().split(None, 1)[0].upper() if query.strip() else "?"
    return "pool reset" if "pg_advisory_unlock_all" in query or "RESET ALL" in query else first


def _count_calls() -> None:
    for method in ("fetch", "fetchrow", "fetchval", "execute", "executemany"):
        original = getattr(asyncpg.connection.Connection, method)

        @wraps(original)
        async def counted(self, query, *args, _orig=original, **kwargs):
            if _COUNTING:
                STATEMENTS[_label(query)] += 1
            return await _orig(self, query, *args, **kwargs)

        setattr(asyncpg.connection.Connection, method, counted)


async def idle_only_reset(conn: asyncpg.Connection) -> None:
    """Experiment: replace asyncpg's per-release ``RESET ALL; CLOSE ALL; UNLISTEN *; …`` round
    trip; roll back only a connection that comes back inside a transaction."""
    if conn.is_in_transaction():
        await conn.execute("ROLLBACK")


def _patch_pool_reset() -> None:
    original = asyncpg.create_pool

    def create_pool(*args, **kwargs):
        kwargs.setdefault("reset", idle_only_reset)
        return original(*args, **kwargs)

    asyncpg.create_pool = create_pool


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument(
        "--no-pool-reset",
        action="store_true",
        help="experiment: pool releases skip asyncpg's reset query",
    )
    parser.add_argument(
        "--count-sql", action="store_true", help="count statements by name while profiling"
    )
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--listen", required=True)
    args = parser.parse_args()
    hq_logging.configure()
    if args.no_pool_reset:
        _patch_pool_reset()
    if args.count_sql:
        _count_calls()
    profiler = cProfile.Profile()

    def start(*_: object) -> None:
        global _COUNTING
        STATEMENTS.clear()
        _COUNTING = True
        profiler.enable()

    def stop(*_: object) -> None:
        global _COUNTING
        profiler.disable()
        _COUNTING = False
        profiler.dump_stats(args.out)
        with open(args.out + ".sql.json", "w") as f:
            json.dump(dict(STATEMENTS), f)

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    host, port = parse_listen(args.listen)
    wiring.run(
        wiring.serve(Settings(listen=args.listen, database_url=args.database_url), host, port)
    )


if __name__ == "__main__":
    main()
