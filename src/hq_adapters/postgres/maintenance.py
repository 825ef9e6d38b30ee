"""MaintenancePort over PostgreSQL: the background expiry sweep (D2) and the operators'
claim-bucket prune (``tracker prune-claim-buckets``)."""

from __future__ import annotations

from hq_adapters.postgres.database import Database, row_count
from hq_adapters.postgres.queries import q

PRUNE_STATEMENT_TIMEOUT_MS = 300_000


class PostgresMaintenance:
    def __init__(
        self, db: Database, *, prune_statement_timeout_ms: int = PRUNE_STATEMENT_TIMEOUT_MS
    ) -> None:
        self._db = db
        self._prune_timeout_ms = prune_statement_timeout_ms

    async def sweep_expired(self, limit: int) -> int:
        return row_count(await self._db.execute("sweep_expired", self._db.now_s(), limit))

    async def prune_claim_buckets(self, before_ms: int) -> int:
        """One transaction per project, each under its own ``SET LOCAL`` statement timeout
        (a transaction setting, so this also runs through a transaction-mode pooler)."""
        deleted = 0
        for r in await self._db.fetch("prune_project_ids"):
            async with self._db.transaction() as conn:
                await conn.execute(q("prune_statement_timeout"), str(self._prune_timeout_ms))
                deleted += row_count(
                    await conn.execute(q("prune_project_buckets"), r["id"], before_ms)
                )
        return deleted
