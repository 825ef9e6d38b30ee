"""The one contract suite every Store adapter runs.

Each class's tests use the fixtures ``store`` (a fresh, empty Store) and ``clock`` (the
ManualClock that store reads). An adapter's test module subclasses every class in
:data:`ALL_CONTRACTS` and provides those two fixtures; ``ClaimAuditContract`` also uses
``claim_buckets`` (see :mod:`tests.contract.dispatch`) and skips without it.
"""

from tests.contract.admin import JobAdminContract, ProjectAdminContract
from tests.contract.claim import ClaimContract
from tests.contract.dispatch import ClaimAuditContract, DispatchContract
from tests.contract.enqueue import EnqueueContract, EnqueueFieldsContract
from tests.contract.expiry import ExpiryContract
from tests.contract.monitor import MonitorContract
from tests.contract.mutations import MutationContract
from tests.contract.observe import ObserveContract
from tests.contract.users import UsersContract
from tests.contract.web import WebStoreContract

ALL_CONTRACTS = (
    ClaimContract,
    MutationContract,
    ExpiryContract,
    DispatchContract,
    ClaimAuditContract,
    EnqueueContract,
    EnqueueFieldsContract,
    ProjectAdminContract,
    JobAdminContract,
    UsersContract,
    WebStoreContract,
    ObserveContract,
    MonitorContract,
)

__all__ = [c.__name__ for c in ALL_CONTRACTS] + ["ALL_CONTRACTS"]
