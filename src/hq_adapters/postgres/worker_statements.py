"""Which named statement (``sql/*.sql``) each worker operation runs, and the bounds that choose.

Pure data for :mod:`hq_adapters.postgres.worker`: the operations' statement names by claim
order, batch size and gate, and the project statuses each operation's statements check.
"""

from __future__ import annotations

from hq_domain.projects import MAX_CLAIM_JOBS, ClaimOrder, ProjectStatus, WorkerOp, op_allowed
from hq_domain.worker import MAX_BATCH_ITEMS

ALLOWED_STATUSES = {op: [s.value for s in ProjectStatus if op_allowed(s, op)] for op in WorkerOp}
"""Per worker operation, the project statuses that allow it (bound to the statements' checks)."""
CLAIM_SQL = {ClaimOrder.FIFO: "claim_fifo", ClaimOrder.RANDOM: "claim_random"}


# Batches up to this size run the one-statement forms through their migration-0006 functions,
# whose plans are cached generic: planning was most of PostgreSQL's work per small request
# (~0.35 ms for a claim, ~0.3 ms for a complete against ~0.2 / ~0.15 ms of execution), and at 64
# items it still cost a third of a request's PostgreSQL CPU (benchmarks/notes/optimisations.md,
# twentieth session). A generic plan never sees the batch: it estimates unnest($n) at ten rows,
# and a join over the items could run as items × items. tests/integration/test_generic_plans.py
# builds every generic plan at this size under misleading statistics and on a young table, and
# fails on any scan beyond the batch and the sweep bound and on any join filter that grows
# faster than the batch. This is the largest claim and batch the API accepts (spec §2.4), so
# every worker request takes this path; the per-execution forms (the pool's force_custom_plan)
# remain for a PostgresWorker built with a smaller limit.
GENERIC_PLAN_MAX_ITEMS = max(MAX_CLAIM_JOBS, MAX_BATCH_ITEMS)

# (order, generic plan?) → the one-statement claim, through its function either way: both
# kinds plan the queue's read in index order whatever the statistics say (migration 0015)
CLAIM_OP_SQL = {
    (ClaimOrder.FIFO, False): "claim_op_fifo_custom",
    (ClaimOrder.FIFO, True): "claim_op_fifo_generic",
    (ClaimOrder.RANDOM, False): "claim_op_random_custom",
    (ClaimOrder.RANDOM, True): "claim_op_random_generic",
}


# complete/fail/extend with the gate read, in one round trip (small batches)
GATED_SQL = {
    WorkerOp.COMPLETE: "gated_complete",
    WorkerOp.FAIL: "gated_fail",
    WorkerOp.EXTEND: "gated_extend",
}

# the block that runs several waiting gated calls at once (hq_adapters/postgres/joined.py):
# completes come with every claim; fails and extensions are rarer and run alone
JOINED_SQL = {WorkerOp.COMPLETE: "gated_complete_joined"}

# complete/fail/extend: (one-statement form, its generic-plan call, the one-item form's call)
MUTATION_SQL = {
    WorkerOp.COMPLETE: ("complete_op", "complete_op_generic", "complete_one_generic"),
    WorkerOp.FAIL: ("fail_op", "fail_op_generic", "fail_one_generic"),
    WorkerOp.EXTEND: ("extend_op", "extend_op_generic", "extend_one_generic"),
}
