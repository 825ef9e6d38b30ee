"""Every queue operation, written once as a generator of effects (sans-I/O).

A flow yields ``Call`` (send a request, receive the decoded JSON object or an exception thrown
back in) and ``Sleep``; ``run_sync`` and ``run_async`` perform them. So policy refresh, pacing,
retries, response checks and lease bookkeeping are identical in both queues.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from hq_adapters.client.core import QueueCore
from hq_adapters.client.errors import APIError, ProtocolError, TransportError
from hq_adapters.client.jobs import JobBase
from hq_adapters.client.policy import Policy, parse_policy
from hq_adapters.client.retry import Backoff, rate_limit_delay
from hq_adapters.client.wire import chunks, encode, is_int, item_results

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Call:
    method: str
    path: str
    body: bytes | None = None
    timeout: float | None = None  # None: the config's request_timeout


@dataclass(frozen=True, slots=True)
class Sleep:
    seconds: float


Flow = Generator[Call | Sleep, Any, T]


def run_sync(flow: Flow[T], call: Callable[[Call], dict], sleep: Callable[[float], None]) -> T:
    send: Any = None
    error: Exception | None = None
    while True:
        try:
            effect = flow.send(send) if error is None else flow.throw(error)
        except StopIteration as stop:
            return stop.value
        send, error = None, None
        try:
            if isinstance(effect, Sleep):
                sleep(effect.seconds)
            else:
                send = call(effect)
        except Exception as exc:
            error = exc


async def run_async(
    flow: Flow[T],
    call: Callable[[Call], Awaitable[dict]],
    sleep: Callable[[float], Awaitable[None]],
) -> T:
    send: Any = None
    error: Exception | None = None
    while True:
        try:
            effect = flow.send(send) if error is None else flow.throw(error)
        except StopIteration as stop:
            return stop.value
        send, error = None, None
        try:
            if isinstance(effect, Sleep):
                await sleep(effect.seconds)
            else:
                send = await call(effect)
        except Exception as exc:
            error = exc


# -- policy and claims -------------------------------------------------------------------------
def policy(core: QueueCore, backoff: Backoff | None = None) -> Flow[Policy]:
    """The cached policy, refetched after ``refresh_after_ms`` or a version change."""
    cached = core.policies.current(core.clock())
    if cached is not None:
        return cached
    while True:
        try:
            raw = yield Call("GET", core.policy_path)
        except (APIError, TransportError) as error:
            delay = backoff.delay(error, core.rng()) if backoff is not None else None
            if delay is None:
                raise
            yield Sleep(delay)
            core.check_open()
            continue
        fetched = parse_policy(raw, core.project_id)
        if core.policies.store(fetched, core.clock()):
            core.pacer.reset()
        return fetched


def _pace(core: QueueCore, fetched: Policy) -> Flow[None]:
    wait = core.pacer.reserve(fetched.worker_claim_qps, core.clock(), core.rng())
    if wait > 0:
        yield Sleep(wait)


def _check_claim(core: QueueCore, response: dict[str, Any]) -> None:
    if response.get("project_id") != core.project_id or not isinstance(response.get("jobs"), list):
        raise ProtocolError("tracker returned a mismatched claim response")
    core.policies.observe_version(response.get("policy_version"))


def claim(
    core: QueueCore, max_jobs: int, lease_seconds: int | None, accept_types: Sequence[str] | None
) -> Flow[dict[str, Any]]:
    """The reference SDK's ``claim``: only 429s are retried; returns the response object."""
    if max_jobs < 1:
        raise ValueError("max_jobs must be positive")
    core.check_open()
    while True:
        current = yield from policy(core)
        lease = current.recommended_lease_seconds if lease_seconds is None else lease_seconds
        yield from _pace(core, current)
        body = {
            "worker_id": core.worker_id,
            "max_jobs": min(max_jobs, current.max_jobs_per_claim),
            "lease_seconds": lease,
            "accept_types": [] if accept_types is None else list(accept_types),
            "policy_version": current.policy_version,
        }
        try:
            response = yield Call("POST", core.paths["claim"], encode(body))
        except APIError as error:
            delay = rate_limit_delay(error, core.rng())
            if delay is None:
                raise
            yield Sleep(delay)
            core.check_open()
            continue
        _check_claim(core, response)
        return response


@dataclass(frozen=True, slots=True)
class ClaimedBatch:
    response: dict[str, Any]
    started: float  # clock() just before the claim request: the jobs' lease starts here
    lease_seconds: int


def _check_claimed_job(job: object) -> None:
    if not (
        isinstance(job, dict)
        and is_int(job.get("job_id"))
        and isinstance(job.get("attempt_id"), str)
        and is_int(job.get("lease_expires_at"))
        and isinstance(job.get("value"), str)
    ):
        raise ProtocolError("tracker returned an invalid claimed job")


def claim_jobs(
    core: QueueCore, max_jobs: int, lease_seconds: int | None, accept_types: Sequence[str] | None
) -> Flow[ClaimedBatch]:
    """The Go SDK's claim: network errors, 5xx and retryable 429s are retried with backoff.

    A retried claim whose first attempt reached the tracker may have leased jobs we never saw;
    those simply expire and return to ``todo`` (at the cost of one reset each).
    """
    if not is_int(max_jobs) or max_jobs < 1:
        raise ValueError("max_jobs must be positive")
    if lease_seconds is not None and (not is_int(lease_seconds) or not 1 <= lease_seconds <= 3600):
        raise ValueError("lease_seconds must be a whole number of seconds between 1 and 3600")
    backoff = Backoff()
    while True:
        core.check_open()
        current = yield from policy(core, backoff)
        lease = current.recommended_lease_seconds if lease_seconds is None else lease_seconds
        yield from _pace(core, current)
        core.check_open()
        body = {
            "worker_id": core.worker_id,
            "max_jobs": min(max_jobs, current.max_jobs_per_claim),
            "lease_seconds": lease,
            "accept_types": None if accept_types is None else list(accept_types),
            "policy_version": current.policy_version,
        }
        started = core.clock()
        try:
            response = yield Call("POST", core.paths["claim"], encode(body))
        except (APIError, TransportError) as error:
            delay = backoff.delay(error, core.rng())
            if delay is None:
                raise
            yield Sleep(delay)
            continue
        _check_claim(core, response)
        for job in response["jobs"]:
            _check_claimed_job(job)
        return ClaimedBatch(response, started, lease)


# -- mutations ------------------------------------------------------------------------------
def mutate(core: QueueCore, operation: str, body: dict[str, Any]) -> Flow[dict[str, Any]]:
    """One pass-through request (reference ``complete``/``fail``/``extend_lease``).

    The response is returned as is; handles this queue holds for completed or failed items
    are settled too, so the renewer does not keep extending finished attempts.
    """
    core.check_open()
    response = yield Call("POST", core.paths[operation], encode(body))
    items = body["items"]
    if operation != "extend-lease" and isinstance(items, list):
        try:
            results = item_results(response, len(items))
        except ProtocolError:
            return response
        for item, result in zip(items, results, strict=True):
            if isinstance(item, Mapping):
                job = core.find(item.get("job_id"), item.get("attempt_id"))
                _settle(core, job, result, operation)
    return response


def _settle(core: QueueCore, job: JobBase | None, result: dict[str, Any], what: str) -> None:
    if job is None:
        return
    if result["status"] == "applied":
        core.finish(job)
    else:
        core.lose(job, f"{what} rejected")


def finish_job(core: QueueCore, job: JobBase, operation: str, item: dict) -> Flow[dict]:
    """``job.complete``/``job.fail``: one item; refused locally when the job is not held."""
    if job.held and core.clock() >= job.deadline:
        core.lose(job, "lease deadline passed")
    job.raise_unless_held()
    core.check_open()
    body = {"worker_id": core.worker_id, "items": [item]}
    response = yield Call("POST", core.paths[operation], encode(body))
    result = item_results(response, 1)[0]
    _settle(core, job, result, operation)
    job.raise_if_lost()
    return result


def finish_many(
    core: QueueCore, operation: str, items: Sequence[Mapping[str, Any]]
) -> Flow[list[dict[str, Any]]]:
    """Send items in ≤ 256-item requests, in order; held handles are settled per result.

    If a request fails, earlier requests stay applied and the error propagates.
    """
    core.check_open()
    results: list[dict[str, Any]] = []
    for part in chunks(list(items)):
        body = {"worker_id": core.worker_id, "items": [dict(item) for item in part]}
        response = yield Call("POST", core.paths[operation], encode(body))
        for item, result in zip(part, item_results(response, len(part)), strict=True):
            _settle(core, core.find(item.get("job_id"), item.get("attempt_id")), result, operation)
            results.append(result)
    return results


def renew_due(core: QueueCore) -> Flow[None]:
    """One renewer pass: expire overdue jobs, then extend every due batch."""
    for batch in core.expire_and_collect_due():
        started = core.clock()
        timeout = max(0.001, min(batch.earliest_deadline - started, core.config.request_timeout))
        body = {
            "worker_id": core.worker_id,
            "extend_seconds": batch.lease_seconds,
            "items": [job.ref for job in batch.jobs],
        }
        results: list[dict[str, Any]] | None
        try:
            response = yield Call("POST", core.paths["extend-lease"], encode(body), timeout)
            results = item_results(response, len(batch.jobs))
        except (APIError, TransportError, ProtocolError):
            results = None
        core.settle_renewal(batch, started, results)
