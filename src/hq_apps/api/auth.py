"""Machine-token authentication and the two gates (spec §1.5, §1.6).

Check orders are wire-visible: admin = 401 → 403; worker = 401 → 400 (project ID) → 404 →
403 → 426. Both record the caller in the request log context.
"""

from __future__ import annotations

from hq_apps.api.http import Incoming, header
from hq_apps.api.requestlog import context
from hq_domain.errors import (
    ClientUpgradeRequired,
    InvalidMachineToken,
    InvalidRequest,
    NotFound,
)
from hq_domain.ids import MAX_MACHINE_TOKEN_CHARS, is_id
from hq_domain.ports import AuthPort, WorkerPort
from hq_domain.projects import Project
from hq_domain.users import Principal, require_admin, require_worker

CLIENT_VERSION_HEADER = b"x-savewebhq-client-version"
_TOKEN_FORBIDDEN = frozenset(" \t\r\n")


def bearer_token(authorization: str | None) -> str:
    """The token of an ``Authorization: Bearer <token>`` header, else 401."""
    text = (authorization or "").strip()
    scheme, _, token = text.partition(" ")
    if scheme.lower() != "bearer" or not token or not _TOKEN_FORBIDDEN.isdisjoint(token):
        raise InvalidMachineToken("machine token required")
    return token


def _request_token(request: Incoming) -> str:
    token = bearer_token(header(request, b"authorization"))
    if len(token) > MAX_MACHINE_TOKEN_CHARS:
        raise InvalidMachineToken("invalid machine token")
    return token


def _known(request: Incoming, principal: Principal | None) -> Principal:
    """401 for an unknown token; else record the caller in the request log context."""
    if principal is None:
        raise InvalidMachineToken("invalid machine token")
    ctx = context(request.scope)
    if ctx is not None:
        ctx.user = principal.user_id
    return principal


async def authenticate(request: Incoming, store: AuthPort) -> Principal:
    return _known(request, await store.principal_for_token(_request_token(request)))


async def admin_principal(request: Incoming, store: AuthPort) -> Principal:
    """Route auth for ``/api/v1/admin/**``: valid token, then active admin (403)."""
    principal = await authenticate(request, store)
    require_admin(principal)
    return principal


def request_token(request: Incoming) -> str:
    """The bearer token, or 401 for a missing, malformed or over-long one (no store read)."""
    return _request_token(request)


def client_version(request: Incoming) -> str:
    """``X-SavewebHQ-Client-Version`` as received; missing reads as "" (never allowed)."""
    return header(request, CLIENT_VERSION_HEADER) or ""


def check_worker_gate(
    request: Incoming,
    found: Principal | None,
    project: Project | None,
    project_id: str,
) -> tuple[Principal, Project]:
    """Spec §1.6 steps 1–5 on what the gate read found, in the wire order 401 → 400 → 404 →
    403 → 426. Raises exactly when :func:`hq_domain.worker.gate_passes` is false."""
    principal = _known(request, found)
    if not is_id(project_id) or not is_id(principal.user_id):
        raise InvalidRequest("invalid project ID")
    if project is None:
        raise NotFound("user or project not found")
    require_worker(principal.status, principal.roles)
    version = client_version(request)
    if version not in project.client_versions:
        raise ClientUpgradeRequired(version, list(project.client_versions))
    return principal, project


def gated_principal(
    request: Incoming, found: Principal | None, project: Project | None, project_id: str,
    ran: bool,
) -> Principal:
    """The caller of a ``WorkerPort.gated_*`` call. When its operation ran, the gate passed and
    there is nothing to raise (the store returns no project then: :data:`~hq_domain.ports.Gated`);
    otherwise :func:`check_worker_gate` raises the gate's error in the wire order, or returns
    the caller when the gate passes now (a user or project changed between the reads; the
    route then runs the operation on its own)."""
    if ran:
        return _known(request, found)
    return check_worker_gate(request, found, project, project_id)[0]


async def worker_gate(
    request: Incoming, store: WorkerPort, project_id: str
) -> tuple[Principal, Project]:
    """The client-version gate of every worker route, in the exact order of spec §1.6.

    Token owner and project come from one read (``WorkerPort.worker_gate``); the checks then
    run on them in the wire order (:func:`check_worker_gate`). The claim/complete/fail/extend
    routes usually fold this read into their operation (``WorkerPort.gated_*``).
    """
    found, project = await store.worker_gate(_request_token(request), project_id)
    return check_worker_gate(request, found, project, project_id)
