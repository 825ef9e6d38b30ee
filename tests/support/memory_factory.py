"""The memory adapter's StoreFactory, plus the test-only inspection hook the contract uses."""

from __future__ import annotations

from hq_adapters.memory import MemoryStore
from hq_domain.clock import Clock
from hq_domain.ports import Store

ClaimBucket = tuple[str, int, int, int, int]
"""(worker_id, bucket_started_at_ms, claim_requests, jobs_dispatched, policy_version)"""


class MemoryStoreFactory:
    name = "memory"

    async def create(self, clock: Clock) -> Store:
        return MemoryStore(clock)

    async def dispose(self, store: Store) -> None:
        await store.close()

    async def claim_buckets(self, store: Store, project_id: str) -> list[ClaimBucket]:
        """The project's worker claim-bucket rows (spec §2.9), sorted; not part of Store."""
        assert isinstance(store, MemoryStore)
        rows = store.state.claim_buckets
        return sorted(
            (w, b, r.claim_requests, r.jobs_dispatched, r.policy_version)
            for (p, w, b), r in rows.items()
            if p == project_id
        )
