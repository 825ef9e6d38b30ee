"""SavewebHQ worker SDK (sync and asyncio), compatible with the reference ``saveweb_hq``.

``from hq_adapters.client import open_project_queue, Config`` gives the reference API; job
handles with background lease renewal come from ``ProjectQueue.claim_jobs``. See docs/sdk.md.
"""

from hq_adapters.client.aio import (
    AsyncJob,
    AsyncProjectQueue,
    async_whoami,
    open_async_project_queue,
)
from hq_adapters.client.config import Config
from hq_adapters.client.errors import (
    APIError,
    ClientUpgradeRequired,
    Conflict,
    InvalidMachineToken,
    JobError,
    JobFinished,
    LeaseLost,
    NetworkError,
    NotFound,
    PermissionDenied,
    ProjectNotActive,
    ProtocolError,
    QueueClosed,
    RateLimited,
    SavewebHQError,
    ServerError,
    TransportError,
)
from hq_adapters.client.jobs import ClaimBatch, JobState
from hq_adapters.client.queue import Job, ProjectQueue, open_project_queue, whoami
from hq_domain.ids import default_job_id

__all__ = [
    "APIError",
    "AsyncJob",
    "AsyncProjectQueue",
    "ClaimBatch",
    "ClientUpgradeRequired",
    "Config",
    "Conflict",
    "InvalidMachineToken",
    "Job",
    "JobError",
    "JobFinished",
    "JobState",
    "LeaseLost",
    "NetworkError",
    "NotFound",
    "PermissionDenied",
    "ProjectNotActive",
    "ProjectQueue",
    "ProtocolError",
    "QueueClosed",
    "RateLimited",
    "SavewebHQError",
    "ServerError",
    "TransportError",
    "async_whoami",
    "default_job_id",
    "open_async_project_queue",
    "open_project_queue",
    "whoami",
]
