"""Source import on PostgreSQL, where batches are committed in groups (spec §1.7.5): a failure
inside a group still leaves every earlier 1,000-job batch committed and names its batch."""

from __future__ import annotations

import asyncio
import io

import asyncpg
import pytest
import zstandard

from hq_adapters.postgres import connect
from hq_adapters.postgres.enqueue import PostgresEnqueue
from hq_adapters.sourcefile import encode_job_line
from hq_apps.services.source_import import GROUP_BATCHES, SourceImportFailed, import_source
from hq_domain.clock import SystemClock
from hq_domain.errors import IdentityConflict, InvalidJob
from hq_domain.ids import default_job_id
from hq_domain.jobs import JobSpec
from hq_domain.projects import ProjectPut

pytestmark = pytest.mark.postgres

BIG = {"max_jobs": 10_000_000, "max_uncompressed": 1 << 40}


def specs(n: int, start: int = 0) -> list[JobSpec]:
    out = []
    for i in range(start, start + n):
        value = f"https://example.org/{i}"
        out.append(JobSpec(value=value, id=default_job_id("seed", value)))
    return out


def source(jobs: list[JobSpec], tail: bytes = b"") -> io.BytesIO:
    text = b"".join(encode_job_line(s) for s in jobs) + tail
    return io.BytesIO(zstandard.ZstdCompressor().compress(text))


@pytest.fixture
async def store(pg_dsn):
    store = await connect(pg_dsn, SystemClock(), min_size=1, max_size=2)
    await store.put_project("p", ProjectPut(status="active", identity_mode="external_id"))
    yield store
    await store.close()


async def todo(store) -> int:
    return (await store.get_project("p")).job_counts.todo


@pytest.mark.parametrize("connections", [1, 2])
async def test_conflict_in_the_middle_of_a_group_keeps_the_batches_before_it(
    store, connections
) -> None:
    """With two connections the group after the clashing one was in flight too: it rolls
    back, and the outcome is the same as with one."""
    assert GROUP_BATCHES > 2  # else this test would not cross a group boundary inside a group
    jobs = specs(2 * GROUP_BATCHES * 1000 + 500)
    clash = jobs[(GROUP_BATCHES + 2) * 1000 + 345]
    await store.enqueue("p", [JobSpec(value="other", id=clash.id)])
    with pytest.raises(SourceImportFailed) as info:
        await import_source(store, "p", source(jobs), **BIG, connections=connections)
    err = info.value
    first = (GROUP_BATCHES + 2) * 1000 + 1
    assert isinstance(err.error, IdentityConflict)
    assert (err.imported_jobs, err.inserted, err.batch_lines) == (first - 1, first - 1, (first, first + 999))
    assert await todo(store) == first  # the batches before it plus the clashing row


@pytest.mark.parametrize("connections", [1, 2])
async def test_format_error_commits_the_full_batches_decoded_before_it(store, connections) -> None:
    jobs = specs(GROUP_BATCHES * 1000 + 3500)
    with pytest.raises(SourceImportFailed) as info:
        await import_source(
            store, "p", source(jobs, b'{"value":"x","bogus":1}\n'), **BIG, connections=connections
        )
    err = info.value
    assert isinstance(err.error, InvalidJob)
    assert err.error.message == f'source format: line {len(jobs) + 1}: unknown field "bogus"'
    assert (err.imported_jobs, err.batch_lines) == (len(jobs) - 500, None)
    assert await todo(store) == len(jobs) - 500


@pytest.mark.parametrize("connections", [1, 2])
async def test_rerun_compares_every_stored_row(pg_dsn, store, connections) -> None:
    jobs = specs(4500)
    first = await import_source(store, "p", source(jobs), **BIG, connections=connections)
    assert (first.jobs, first.inserted) == (4500, 4500)
    again = await import_source(
        store, "p", source(jobs + specs(700, start=4500)), **BIG, connections=connections
    )
    assert (again.jobs, again.inserted) == (5200, 700)
    # The 700 new jobs came through the checking statement, in file order either way.
    everything = [j.value for j in jobs + specs(700, start=4500)]
    assert await _values_by_job_id(pg_dsn, "p") == everything
    # The same ids with a changed spec (via) in the fourth batch: a conflict found in SQL.
    changed = list(jobs)
    changed[3210] = JobSpec(value=jobs[3210].value, id=jobs[3210].id, via="https://from/")
    with pytest.raises(SourceImportFailed) as info:
        await import_source(store, "p", source(changed), **BIG, connections=connections)
    assert isinstance(info.value.error, IdentityConflict)
    assert info.value.batch_lines == (3001, 4000)
    assert await todo(store) == 5200


_RACE_INSERT = (
    "INSERT INTO tracker_jobs (project_id, external_id, unique_value_digest, value, random_key,"
    " spec, status, created_at, updated_at) VALUES ($1, $2, $3, $4, 0, $5, 'todo', 1, 1)"
)


async def _race(pg_dsn, store, project: str, jobs: list[JobSpec], row: tuple, same: bool,
                checked: bool) -> None:
    """Another transaction holds an uncommitted ``row`` (project, external_id, digest, value,
    spec) with one of the batch's identities while the batch is enqueued; it commits, then
    the enqueue must count it as present (``same``) or raise the identity conflict."""
    other = await asyncpg.connect(pg_dsn)
    try:
        tx = other.transaction()
        await tx.start()
        await other.execute(_RACE_INSERT, *row)
        hints = {project} if checked else ()
        enqueue = PostgresEnqueue(store.database, existing_identity_hints=hints)
        task = asyncio.ensure_future(enqueue.enqueue(project, jobs))
        await asyncio.sleep(0.3)
        assert not task.done()  # waiting on the uncommitted index entry
        await tx.commit()
        if same:
            assert await task == len(jobs) - 1
        else:
            with pytest.raises(IdentityConflict):
                await task
    finally:
        await other.close()
    want = len(jobs) if same else 1
    assert (await store.get_project(project)).job_counts.todo == want


@pytest.mark.parametrize("checked", [False, True])
@pytest.mark.parametrize("same", [True, False])
async def test_identity_committed_during_the_insert(pg_dsn, store, same, checked) -> None:
    """The plain insert waits for the uncommitted row, meets the unique index once it commits,
    and the batch is redone with the checking statement, which compares the now visible row.
    Run directly in the checking form (what a project with existing identities gets), the row
    is skipped by ON CONFLICT while invisible to the statement and the re-check compares it."""
    jobs = specs(300)
    value = jobs[150].value if same else "different"
    await _race(pg_dsn, store, "p", jobs, ("p", jobs[150].id, None, value, "{}"), same, checked)


async def test_existing_identity_hint_is_set_and_cleared(store) -> None:
    """A re-run pays the failed plain insert once, then goes straight to the checking
    statement until a batch finds nothing existing."""
    jobs = specs(10)
    assert await store.enqueue("p", jobs) == 10
    assert "p" not in store.enqueuing.existing_identity_hints
    assert await store.enqueue("p", jobs[:3] + specs(2, start=10)) == 2
    assert "p" in store.enqueuing.existing_identity_hints
    assert await store.enqueue("p", jobs) == 0
    assert await store.enqueue("p", specs(5, start=20)) == 5
    assert "p" not in store.enqueuing.existing_identity_hints


@pytest.mark.parametrize("checked", [False, True])
async def test_a_batch_all_there_already_inserts_nothing_and_keeps_the_hint(store, checked) -> None:
    """A re-submitted batch, with its jobs in another order: every identity is present and
    equal, so nothing is inserted, whether the plain insert meets them first or the checking
    probe answers alone; the project keeps its hint for the next batch."""
    jobs = specs(1000)
    assert await store.enqueue("p", jobs) == 1000
    enqueue = PostgresEnqueue(store.database, existing_identity_hints={"p"} if checked else ())
    assert await enqueue.enqueue("p", jobs[::-1]) == 0
    assert "p" in enqueue.existing_identity_hints
    assert await todo(store) == 1000
    # One new job among them is inserted, after the probe found the rest.
    assert await enqueue.enqueue("p", specs(1, start=1000) + jobs[:500]) == 1
    assert await todo(store) == 1001


@pytest.mark.parametrize("checked", [False, True])
async def test_the_first_conflict_by_position_is_reported(pg_dsn, store, checked) -> None:
    """Two stored rows differ from a batch: the error is the first one's by position in the
    batch, in either order. In a unique_value project a stored row with the digest of a
    different value is a digest collision; one with the same value and another spec is a
    different spec."""
    from hq_domain.identity import DIFFERENT_SPEC, DIGEST_COLLISION
    from hq_domain.ids import unique_value_digest

    await store.put_project("u", ProjectPut(status="active", identity_mode="unique_value"))
    values = [f"https://example.org/c/{i}" for i in range(40)]
    collides, other_spec = values[7], values[30]
    conn = await asyncpg.connect(pg_dsn)
    try:
        await conn.execute(
            _RACE_INSERT, "u", None, unique_value_digest(collides), "collides", "{}"
        )
        await conn.execute(
            _RACE_INSERT, "u", None, unique_value_digest(other_spec), other_spec,
            '{"via": "https://x/"}',
        )  # fmt: skip
    finally:
        await conn.close()
    rest = [v for v in values if v not in (collides, other_spec)]
    enqueue = PostgresEnqueue(store.database, existing_identity_hints={"u"} if checked else ())
    for first, second, error in (
        (other_spec, collides, DIFFERENT_SPEC),
        (collides, other_spec, DIGEST_COLLISION),
    ):
        batch = [JobSpec(value=v) for v in [rest[0], first, rest[1], second, *rest[2:]]]
        with pytest.raises(IdentityConflict) as info:
            await enqueue.enqueue("u", batch)
        assert info.value.message == error
    assert (await store.get_project("u")).job_counts.todo == 2


@pytest.mark.parametrize("checked", [False, True])
@pytest.mark.parametrize("same", [True, False])
async def test_value_committed_during_the_insert(pg_dsn, store, same, checked) -> None:
    """The same race in a unique_value project: the identity is the value's digest (sent to
    the checking statements in hex) and a differing stored spec is a conflict."""
    from hq_domain.ids import unique_value_digest

    await store.put_project("u", ProjectPut(status="active", identity_mode="unique_value"))
    jobs = [JobSpec(value=f"https://example.org/u/{i}") for i in range(300)]
    spec = "{}" if same else '{"via": "https://elsewhere/"}'
    digest = unique_value_digest(jobs[150].value)
    await _race(pg_dsn, store, "u", jobs, ("u", None, digest, jobs[150].value, spec), same, checked)
    if same:  # present already: a re-submission inserts nothing and compares every row
        assert await PostgresEnqueue(store.database).enqueue("u", jobs) == 0


# --- several connections (tracker enqueue-source --connections) -----------------------------


async def _values_by_job_id(pg_dsn: str, project: str) -> list[str]:
    conn = await asyncpg.connect(pg_dsn)
    try:
        rows = await conn.fetch(
            "SELECT value FROM tracker_jobs WHERE project_id = $1 ORDER BY job_id", project
        )
    finally:
        await conn.close()
    return [r["value"] for r in rows]


class _Spy:
    """The store, recording how each enqueue_batches call came (with a turn or without)."""

    def __init__(self, store) -> None:
        self.store, self.calls = store, []

    async def enqueue(self, project_id, jobs):
        self.calls.append("enqueue")
        return await self.store.enqueue(project_id, jobs)

    async def enqueue_batches(self, project_id, batches, turn=None):
        self.calls.append("line" if turn is not None else "alone")
        return await self.store.enqueue_batches(project_id, batches, turn)


@pytest.mark.parametrize("mode", ["external_id", "unique_value", "none"])
async def test_two_connections_keep_file_order_in_job_ids(pg_dsn, store, mode) -> None:
    """Groups stored at once on two connections still number their jobs in file order (FIFO
    claims order by job_id), on the plain path and, for new jobs among existing ones, on the
    checking path."""
    await store.put_project("q", ProjectPut(status="active", identity_mode=mode))
    n = 4 * GROUP_BATCHES * 1000 + 700
    every = specs(n)
    if mode != "external_id":
        every = [JobSpec(value=j.value) for j in every]
    spy = _Spy(store)
    # Every third job first, then the whole file: the re-run inserts the other two thirds
    # through the checking statement, group by group.
    first = await import_source(spy, "q", source(every[::3]), **BIG, connections=2)
    assert first.inserted == len(every[::3])
    again = await import_source(spy, "q", source(every), **BIG, connections=2)
    expected_new = n - len(every[::3]) if mode != "none" else n
    assert (again.jobs, again.inserted) == (n, expected_new)
    assert "alone" not in spy.calls  # no group needed the redo outside the line
    stored = await _values_by_job_id(pg_dsn, "q")
    firsts = [j.value for j in every[::3]]
    assert stored[: len(firsts)] == firsts
    rest = [j.value for j in every] if mode == "none" else [
        j.value for k, j in enumerate(every) if k % 3
    ]  # fmt: skip
    assert stored[len(firsts) :] == rest


async def test_identities_repeated_across_groups_on_two_connections(pg_dsn, store) -> None:
    """A job repeated by a later batch is stored once, in its first place, without the
    lock-timeout redo (the rule that keeps such groups apart is tested on the memory store,
    where the groups in flight are observable: test_import.py)."""
    n = 3 * GROUP_BATCHES * 1000
    jobs = specs(n)
    jobs[GROUP_BATCHES * 1000] = jobs[GROUP_BATCHES * 1000 - 1]  # first of group 2 = last of 1
    spy = _Spy(store)
    got = await import_source(spy, "p", source(jobs), **BIG, connections=2)
    assert (got.jobs, got.inserted) == (n, n - 1)
    assert "alone" not in spy.calls  # it did not take the lock-timeout redo
    assert await _values_by_job_id(pg_dsn, "p") == [
        j.value for k, j in enumerate(jobs) if k != GROUP_BATCHES * 1000
    ]


class _Line:
    """A hand-driven commit line of two places for the adapter-level test."""

    def __init__(self) -> None:
        self.first_ids, self.first_done = asyncio.Event(), asyncio.get_running_loop().create_future()

    def first(self):
        line = self

        class First:
            async def ids_turn(self):
                return None

            def ids_taken(self):
                line.first_ids.set()

            async def commit_turn(self):
                await line.release  # the test decides when the first may commit

        return First()

    def second(self):
        line = self

        class Second:
            async def ids_turn(self):
                await line.first_ids.wait()

            def ids_taken(self):
                return None

            async def commit_turn(self):
                if not await line.first_done:
                    from hq_domain.ports import EarlierCommitFailed

                    raise EarlierCommitFailed

        return Second()


@pytest.mark.parametrize("first_commits", [True, False])
async def test_a_call_in_a_line_commits_after_the_one_before_it(pg_dsn, store, first_commits) -> None:
    """Adapter level: the second call takes its ids after the first and waits in its
    transaction, invisible to others, until the first has committed; if the first does not
    commit, neither does the second."""
    line = _Line()
    line.release = asyncio.get_running_loop().create_future()
    first = asyncio.ensure_future(store.enqueue_batches("p", [specs(300)], line.first()))
    second = asyncio.ensure_future(store.enqueue_batches("p", [specs(200, 300)], line.second()))
    await asyncio.sleep(0.3)
    assert not first.done() and not second.done()
    assert await _values_by_job_id(pg_dsn, "p") == []  # neither has committed
    if first_commits:
        line.release.set_result(None)
        assert await first == [300]
        line.first_done.set_result(True)
        assert await second == [200]
        assert await _values_by_job_id(pg_dsn, "p") == [j.value for j in specs(500)]
    else:
        line.release.set_exception(RuntimeError("the first call fails"))
        with pytest.raises(RuntimeError):
            await first
        line.first_done.set_result(False)
        from hq_domain.ports import EarlierCommitFailed

        with pytest.raises(EarlierCommitFailed):
            await second
        assert await _values_by_job_id(pg_dsn, "p") == []
