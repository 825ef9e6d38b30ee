"""Enqueue: gates, identity modes, in-batch collapse, conflicts, random keys (spec §1.7.4,
§2.6, §2.7)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from hq_domain.errors import IdentityConflict, InvalidJob, NotFound, ProjectNotActive
from hq_domain.identity import CONFLICTING_KEYS, DIFFERENT_SPEC
from hq_domain.jobs import JobStatus
from hq_domain.projects import IdentityMode
from hq_domain.validation import validate_jobs
from tests.contract.helpers import (
    all_jobs,
    claim,
    counts,
    fail,
    fail_item,
    job,
    now_s,
    put,
    worker_user,
)

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


async def _total(store, project="p1") -> int:
    return sum((await counts(store, project)).values())


class EnqueueContract:
    async def test_gates(self, store, clock):
        with pytest.raises(NotFound, match=r"^project not found$"):
            await store.enqueue("nope", [job("a", id="a")])
        await put(store, status="archived")
        with pytest.raises(ProjectNotActive, match=r"^archived project cannot accept jobs$"):
            await store.enqueue("p1", [job("a", id="a")])
        await put(store, status="draining")
        assert await store.enqueue("p1", [job("a", id="a")]) == 1

    @pytest.mark.parametrize(
        ("mode", "good", "bad", "message"),
        [
            ("external_id", job("v", id="x"), job("v2"), "id is required for external_id projects"),
            ("none", job("v"), job("v2", id="x"), "id is allowed only for external_id projects"),
            ("unique_value", job("v"), job("v2", id="x"), "id is allowed only for external_id projects"),
        ],
    )
    async def test_identity_id_rules_abort_batch(self, store, clock, mode, good, bad, message):
        await put(store, identity_mode=mode)
        with pytest.raises(InvalidJob, match=rf"^{message}$"):
            await store.enqueue("p1", [good, bad])
        assert await _total(store) == 0

    async def test_none_mode_inserts_everything(self, store, clock):
        await put(store, identity_mode="none")
        assert await store.enqueue("p1", [job("a"), job("a"), job("b")]) == 3
        assert await store.enqueue("p1", [job("a")]) == 1
        assert [j.value for j in await all_jobs(store)] == ["a", "a", "b", "a"]
        assert all(j.external_id is None for j in await all_jobs(store))

    async def test_external_id_dedup(self, store, clock):
        await put(store)
        assert await store.enqueue("p1", [job("v1", id="a"), job("v2", id="b"), job("v1", id="a")]) == 2
        assert await store.enqueue("p1", [job("v1", id="a"), job("v3", id="c")]) == 1
        jobs = await all_jobs(store)
        assert [(j.external_id, j.value) for j in jobs] == [("a", "v1"), ("b", "v2"), ("c", "v3")]
        assert jobs[0].job_id < jobs[1].job_id < jobs[2].job_id

    async def test_unique_value_dedup(self, store, clock):
        await put(store, identity_mode="unique_value")
        assert await store.enqueue("p1", [job("x"), job("y"), job("x")]) == 2
        assert await store.enqueue("p1", [job("y"), job("z")]) == 1
        assert [j.value for j in await all_jobs(store)] == ["x", "y", "z"]

    @pytest.mark.parametrize(
        ("first", "second"),
        [
            (job("v", id="a"), job("w", id="a")),  # different value
            (job("v", id="a"), job("v", id="a", type="seed")),  # type stored as sent
            (job("v", id="a", type="seed"), job("v", id="a", type="asset")),
            (job("v", id="a"), job("v", id="a", via="")),  # empty via is kept
            (job("v", id="a", via="x"), job("v", id="a", via="y")),
            (job("v", id="a"), job("v", id="a", hops=1)),
            (job("v", id="a", attr={"k": 1}), job("v", id="a", attr={"k": 2})),
        ],
    )
    async def test_external_id_conflicts(self, store, clock, first, second):
        await put(store)
        with pytest.raises(IdentityConflict, match=rf"^{DIFFERENT_SPEC}$"):
            await store.enqueue("p1", [job("new", id="n"), first, second])
        assert await _total(store) == 0
        assert await store.enqueue("p1", [first]) == 1
        with pytest.raises(IdentityConflict, match=rf"^{DIFFERENT_SPEC}$"):
            await store.enqueue("p1", [job("new", id="n"), second])
        assert await _total(store) == 1

    async def test_unique_value_spec_conflicts(self, store, clock):
        await put(store, identity_mode="unique_value")
        with pytest.raises(IdentityConflict, match=rf"^{DIFFERENT_SPEC}$"):
            await store.enqueue("p1", [job("v", type="asset"), job("v")])
        await store.enqueue("p1", [job("v", attr={"a": 1})])
        with pytest.raises(IdentityConflict, match=rf"^{DIFFERENT_SPEC}$"):
            await store.enqueue("p1", [job("v", attr={"a": 1}, hops=3)])

    async def test_stored_spec_compared_as_json_values(self, store, clock):
        await put(store)
        await store.enqueue("p1", [job("v", id="a", attr={"b": [1, {"c": "d"}], "a": True})])
        assert await store.enqueue("p1", [job("v", id="a", attr={"a": True, "b": [1, {"c": "d"}]})]) == 0

    async def test_stored_spec_shape(self, store, clock):
        await put(store)
        await store.enqueue(
            "p1",
            [
                job("v1", id="a"),
                job("v2", id="b", type="seed", via="", hops=0, attr=None),
                job("v3", id="c", type="asset", via="https://from/", hops=4, attr={"z": [1, 2]}),
            ],
        )
        specs = [j.spec for j in await all_jobs(store)]
        assert specs == [{}, {"type": "seed", "via": ""}, {"type": "asset", "via": "https://from/", "hops": 4, "attr": {"z": [1, 2]}}]

    async def test_random_keys(self, store, clock):
        await put(store)
        await store.enqueue(
            "p1",
            [job("a", id="a", random_key=INT32_MIN), job("b", id="b", random_key=INT32_MAX)]
            + [job(f"r{i}", id=f"r{i}") for i in range(32)],
        )
        jobs = await all_jobs(store)
        assert jobs[0].random_key == INT32_MIN and jobs[1].random_key == INT32_MAX
        generated = [j.random_key for j in jobs[2:]]
        assert all(INT32_MIN <= k <= INT32_MAX for k in generated)
        assert len(set(generated)) > 1
        assert any(k < 0 for k in generated) and any(k >= 0 for k in generated)

    async def test_in_batch_random_key_rules(self, store, clock):
        await put(store)
        with pytest.raises(IdentityConflict, match=rf"^{CONFLICTING_KEYS}$"):
            await store.enqueue("p1", [job("v", id="a", random_key=1), job("v", id="a", random_key=2)])
        assert await store.enqueue("p1", [job("v", id="a", random_key=7), job("v", id="a", random_key=7)]) == 1
        assert await store.enqueue("p1", [job("w", id="b"), job("x", id="c"), job("w", id="b", random_key=9)]) == 2
        jobs = await all_jobs(store)
        assert [(j.external_id, j.random_key) for j in jobs[:2]] == [("a", 7), ("b", 9)]
        assert jobs[1].job_id < jobs[2].job_id  # the collapsed job keeps its first position
        assert await store.enqueue("p1", [job("v", id="a", random_key=1)]) == 0  # key ignored
        assert (await store.get_job("p1", jobs[0].job_id)).random_key == 7

    async def test_random_key_never_changes(self, store, clock):
        await worker_user(store)
        await put(store, claim_order="random", max_resets=5)
        await store.enqueue("p1", [job("v", id="a", random_key=42)])
        [a] = (await claim(store, lease=5)).jobs
        await fail(store, "p1", fail_item(a.job_id, a.attempt_id, retryable=True))
        [a] = (await claim(store, lease=5)).jobs
        clock.advance(5)
        await claim(store, types=("asset",))  # expiry reset
        [a] = (await claim(store, lease=5)).jobs
        await fail(store, "p1", fail_item(a.job_id, a.attempt_id, retryable=False))
        await store.requeue_job("p1", a.job_id)
        assert (await store.get_job("p1", a.job_id)).random_key == 42

    async def test_new_job_fields(self, store, clock):
        await put(store)
        clock.advance(3)
        await store.enqueue("p1", [job("v", id="a")])
        [j] = await all_jobs(store)
        assert j.project_id == "p1" and j.status is JobStatus.TODO
        assert (j.attempt_id, j.worker_id, j.lease_expires_at) == (None, None, None)
        assert j.reset_count == 0 and j.outcome is None and j.execution_error is None
        assert j.artifact_receipts == [] and j.completed_at is None
        assert j.created_at == j.updated_at == now_s(clock)

    async def test_job_ids_increase_across_projects(self, store, clock):
        await put(store, "p1")
        await put(store, "p2", identity_mode="none")
        await store.enqueue("p1", [job("a", id="a")])
        await store.enqueue("p2", [job("b"), job("c")])
        await store.enqueue("p1", [job("d", id="d")])
        ids = [j.job_id for j in await all_jobs(store, "p1")] + [j.job_id for j in await all_jobs(store, "p2")]
        assert ids[0] < ids[2] < ids[3] < ids[1]
        assert len(set(ids)) == 4

    async def test_identity_is_per_project(self, store, clock):
        await put(store, "p1")
        await put(store, "p2")
        assert await store.enqueue("p1", [job("v", id="a")]) == 1
        assert await store.enqueue("p2", [job("other", id="a")]) == 1

    async def test_deleted_identity_can_be_reinserted(self, store, clock):
        await put(store)
        await store.enqueue("p1", [job("v", id="a")])
        [j] = await all_jobs(store)
        await store.delete_job("p1", j.job_id)
        assert await store.enqueue("p1", [job("w", id="a")]) == 1

    async def test_stored_numbers_and_booleans_compared_as_json_values(self, store, clock):
        await put(store)
        await store.enqueue("p1", [job("v", id="a", attr={"n": 1, "f": 2.5}), job("w", id="b", attr={"t": True})])
        assert await store.enqueue("p1", [job("v", id="a", attr={"f": 2.5, "n": 1.0})]) == 0
        with pytest.raises(IdentityConflict, match=rf"^{DIFFERENT_SPEC}$"):
            await store.enqueue("p1", [job("w", id="b", attr={"t": 1})])

    async def test_conflict_after_many_present_rolls_back_the_new_ones(self, store, clock):
        await put(store)
        present = [job(f"v{i}", id=f"a{i}") for i in range(50)]
        assert await store.enqueue("p1", present) == 50
        mixed = [job(f"n{i}", id=f"n{i}") for i in range(20)] + present[:40] + [job("other", id="a45")]
        with pytest.raises(IdentityConflict, match=rf"^{DIFFERENT_SPEC}$"):
            await store.enqueue("p1", mixed)
        assert await _total(store) == 50
        assert await store.enqueue("p1", mixed[:-1]) == 20

    @pytest.mark.parametrize("mode", ["external_id", "unique_value", "none"])
    async def test_enqueue_batches_counts_each_batch(self, store, clock, mode):
        await put(store, identity_mode=mode)

        def j(v: str):
            return job(v, id=v if mode == "external_id" else None)

        counts = await store.enqueue_batches("p1", [[j("a"), j("b")], [], [j("b"), j("c"), j("c")]])
        if mode == "none":
            assert counts == [2, 0, 3]
        else:
            assert counts == [2, 0, 1]
            assert [x.value for x in await all_jobs(store)] == ["a", "b", "c"]

    async def test_enqueue_batches_is_all_or_nothing(self, store, clock):
        await put(store)
        with pytest.raises(IdentityConflict, match=rf"^{DIFFERENT_SPEC}$"):
            # the second batch meets the first batch's identity with another value
            await store.enqueue_batches("p1", [[job("v", id="a"), job("w", id="b")], [job("x", id="a")]])
        assert await _total(store) == 0
        with pytest.raises(InvalidJob, match=r"^id is required for external_id projects$"):
            await store.enqueue_batches("p1", [[job("v", id="a")], [job("w")]])
        assert await _total(store) == 0
        with pytest.raises(NotFound, match=r"^project not found$"):
            await store.enqueue_batches("nope", [[job("v", id="a")]])
        await put(store, status="archived")
        with pytest.raises(ProjectNotActive):
            await store.enqueue_batches("p1", [[job("v", id="a")]])


@dataclass(frozen=True)
class Fields:
    """A job as the enqueue route decodes it (hq_domain.validation.JobFields)."""

    value: object
    id: object = None
    type: object = None
    via: object = None
    hops: object = 0
    attr: object = None
    random_key: object = None


# Long enough for a store to validate it in pieces (PostgreSQL: 200 jobs at a time).
FIELDS_BATCH = 450
# An invalid value, an invalid hops, and an id a `none` project does not allow.
BAD_FIELDS = [Fields(""), Fields("v", hops=-1), Fields("v", id="x")]


def _fields_batch(bad_at: int | None = None, bad: Fields | None = None) -> list[Fields]:
    items = [Fields(f"https://e/{n}", via="https://e/", hops=n % 3) for n in range(FIELDS_BATCH)]
    if bad_at is not None and bad is not None:
        items[bad_at] = bad
    return items


async def _every_job(store, project="p1"):
    out, after = [], 0
    while True:
        page = await store.list_jobs(project, None, after, 200)
        out += page.jobs
        if len(page.jobs) < 200:
            return out
        after = page.jobs[-1].job_id


class EnqueueFieldsContract:
    """``enqueue_fields`` is ``enqueue(validate_jobs(items, mode))``: the same rows and the
    same first error, wherever in the batch the invalid job is; any error inserts nothing."""

    @pytest.mark.parametrize("mode", ["none", "external_id", "unique_value"])
    async def test_valid_batch_stored_as_enqueue_stores_it(self, store, clock, mode):
        await put(store, "p1", identity_mode=mode)
        await put(store, "p2", identity_mode=mode)
        items = _fields_batch()
        if mode == "external_id":
            items = [replace(f, id=f"j{n}") for n, f in enumerate(items)]
        mode_enum = IdentityMode(mode)
        assert await store.enqueue_fields("p1", items, mode_enum) == FIELDS_BATCH
        assert await store.enqueue("p2", validate_jobs(items, mode_enum)) == FIELDS_BATCH
        got, want = await _every_job(store, "p1"), await _every_job(store, "p2")
        assert [(j.value, j.external_id, j.spec) for j in got] == [
            (j.value, j.external_id, j.spec) for j in want
        ]
        assert await counts(store, "p1") == await counts(store, "p2")

    @pytest.mark.parametrize("bad_at", [0, 199, 200, 201, FIELDS_BATCH - 1])
    @pytest.mark.parametrize("bad", BAD_FIELDS)
    async def test_invalid_job_raises_its_error_and_inserts_nothing(
        self, store, clock, bad_at, bad
    ):
        await put(store, identity_mode="none")
        items = _fields_batch(bad_at, bad)
        with pytest.raises(InvalidJob) as expected:
            validate_jobs(items, IdentityMode.NONE)
        with pytest.raises(InvalidJob) as raised:
            await store.enqueue_fields("p1", items, IdentityMode.NONE)
        assert str(raised.value) == str(expected.value)
        assert await _total(store) == 0
        # and the store goes on as before
        assert await store.enqueue_fields("p1", _fields_batch(), IdentityMode.NONE) == FIELDS_BATCH
        assert await _total(store) == FIELDS_BATCH

    async def test_a_jobs_error_comes_before_the_projects(self, store, clock):
        items = _fields_batch(300, Fields(""))
        with pytest.raises(InvalidJob, match=r"^value must be valid"):
            await store.enqueue_fields("nope", items, IdentityMode.NONE)
        with pytest.raises(NotFound, match=r"^project not found$"):
            await store.enqueue_fields("nope", _fields_batch(), IdentityMode.NONE)
        await put(store, status="archived", identity_mode="none")
        with pytest.raises(InvalidJob, match=r"^value must be valid"):
            await store.enqueue_fields("p1", items, IdentityMode.NONE)
        with pytest.raises(ProjectNotActive):
            await store.enqueue_fields("p1", _fields_batch(), IdentityMode.NONE)

    async def test_a_project_made_again_in_another_mode(self, store, clock):
        """The caller read ``none``; the project is external_id now: as enqueue would."""
        await put(store, identity_mode="external_id")
        with pytest.raises(InvalidJob, match=r"^id is required for external_id projects$"):
            await store.enqueue_fields("p1", _fields_batch(), IdentityMode.NONE)
        with_ids = [replace(f, id=f"j{n}") for n, f in enumerate(_fields_batch())]
        with pytest.raises(InvalidJob, match=r"^id is allowed only for external_id projects$"):
            await store.enqueue_fields("p1", with_ids, IdentityMode.NONE)
        assert await _total(store) == 0
