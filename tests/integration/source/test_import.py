"""Source import into a store, batch by batch (spec §1.7.5, §2.6), on the memory adapter."""

from __future__ import annotations

import asyncio
import io

import pytest
import zstandard

from hq_adapters.memory import MemoryStore
from hq_adapters.sourcefile import SourceWriter
from hq_apps.services.source_import import SourceImportFailed, import_source
from hq_domain.clock import ManualClock
from hq_domain.errors import IdentityConflict, InvalidJob, NotFound, ProjectNotActive
from hq_domain.ids import default_job_id
from hq_domain.jobs import JobSpec
from hq_domain.projects import ProjectPut

BIG = {"max_jobs": 10_000_000, "max_uncompressed": 1 << 40}


def source_bytes(specs) -> bytes:
    from hq_adapters.sourcefile import encode_job_line

    return zstandard.ZstdCompressor().compress(b"".join(encode_job_line(s) for s in specs))


async def store_with(mode: str, status: str = "active") -> MemoryStore:
    store = MemoryStore(ManualClock(1_700_000_000))
    await store.put_project("p", ProjectPut(status=status, identity_mode=mode))
    return store


def specs_for(mode: str, n: int, start: int = 0) -> list[JobSpec]:
    out = []
    for i in range(start, start + n):
        value = f"https://example.org/{i}"
        out.append(
            JobSpec(
                value=value, id=default_job_id("seed", value) if mode == "external_id" else None
            )
        )
    return out


async def count(store: MemoryStore) -> int:
    return (await store.get_project("p")).job_counts.todo


@pytest.mark.parametrize("connections", [1, 2])
@pytest.mark.parametrize("mode", ["external_id", "unique_value", "none"])
async def test_import_and_reimport(mode, tmp_path, connections) -> None:
    store = await store_with(mode)
    path = tmp_path / "s.zst"
    with SourceWriter(str(path)) as w:
        for s in specs_for(mode, 2500):
            w.write(s)
    first = await import_source(store, "p", str(path), **BIG, connections=connections)
    assert (first.jobs, first.inserted) == (2500, 2500)
    assert first.uncompressed_bytes > 2500 * 20
    again = await import_source(store, "p", str(path), **BIG, connections=connections)
    expected = 2500 if mode == "none" else 0
    assert (again.jobs, again.inserted) == (2500, expected)
    assert await count(store) == 2500 + expected
    page = await store.list_jobs("p", None, 0, 5)
    keys = {j.random_key for j in page.jobs}
    assert len(keys) > 1  # keys are generated per job


async def test_async_chunks_and_binary_reader() -> None:
    store = await store_with("unique_value")
    data = source_bytes(specs_for("unique_value", 1200))

    async def chunks():
        for i in range(0, len(data), 100):
            yield data[i : i + 100]

    got = await import_source(store, "p", chunks(), **BIG)
    assert (got.jobs, got.inserted) == (1200, 1200)
    got = await import_source(store, "p", io.BytesIO(data), **BIG)
    assert (got.jobs, got.inserted) == (1200, 0)


@pytest.mark.parametrize("connections", [1, 2, 3])
async def test_conflict_midway_keeps_earlier_batches(connections) -> None:
    store = await store_with("external_id")
    await store.enqueue("p", [JobSpec(value="other", id="clash")])
    specs = specs_for("external_id", 2500)
    specs[2100] = JobSpec(value="different", id="clash")
    with pytest.raises(SourceImportFailed) as info:
        await import_source(
            store, "p", io.BytesIO(source_bytes(specs)), **BIG, connections=connections
        )
    err = info.value
    assert isinstance(err.error, IdentityConflict)
    assert (err.imported_jobs, err.inserted, err.batch_lines) == (2000, 2000, (2001, 2500))
    assert "imported_jobs=2000" in str(err) and "lines 2001-2500" in str(err)
    assert await count(store) == 2001


@pytest.mark.parametrize("connections", [1, 2])
async def test_format_error_discards_partial_batch(connections) -> None:
    store = await store_with("none")
    text = b'{"value":"a"}\n' * 1500 + b'{"value":"b","random_key":3}\n'
    with pytest.raises(SourceImportFailed) as info:
        await import_source(
            store, "p", io.BytesIO(zstandard.ZstdCompressor().compress(text)), **BIG,
            connections=connections,
        )  # fmt: skip
    assert isinstance(info.value.error, InvalidJob)
    assert info.value.error.message == 'source format: line 1501: unknown field "random_key"'
    assert info.value.imported_jobs == 1000
    assert await count(store) == 1000


async def test_id_rules_and_project_errors() -> None:
    store = await store_with("unique_value")
    with pytest.raises(SourceImportFailed) as info:
        await import_source(
            store, "p", io.BytesIO(source_bytes(specs_for("external_id", 3))), **BIG
        )
    assert info.value.error.message == "id is allowed only for external_id projects"
    with pytest.raises(SourceImportFailed) as info:
        await import_source(store, "nope", io.BytesIO(source_bytes(specs_for("none", 3))), **BIG)
    assert isinstance(info.value.error, NotFound)
    archived = await store_with("none", status="archived")
    with pytest.raises(SourceImportFailed) as info:
        await import_source(archived, "p", io.BytesIO(source_bytes(specs_for("none", 3))), **BIG)
    assert isinstance(info.value.error, ProjectNotActive)


async def test_zero_job_source_never_touches_store() -> None:
    class Untouchable:
        async def enqueue(self, project_id, jobs):  # pragma: no cover - must not run
            raise AssertionError("store touched")

    data = zstandard.ZstdCompressor().compress(b"\n \n\r\n")
    got = await import_source(Untouchable(), "missing", io.BytesIO(data), **BIG)  # type: ignore[arg-type]
    assert (got.jobs, got.inserted, got.uncompressed_bytes) == (0, 0, 5)


async def test_limits() -> None:
    store = await store_with("none")
    data = source_bytes(specs_for("none", 10))
    with pytest.raises(SourceImportFailed, match="source exceeds job limit"):
        await import_source(store, "p", io.BytesIO(data), max_jobs=9, max_uncompressed=1 << 30)
    assert await count(store) == 0


class _Recording(MemoryStore):
    """A memory store that records the groups it is given and is slow to store them, so the
    decoder gets as far ahead as the import lets it."""

    def __init__(self, clock) -> None:
        super().__init__(clock)
        self.groups: list[int] = []

    async def enqueue(self, project_id, jobs):
        self.groups.append(1)
        await asyncio.sleep(0.05)
        return await super().enqueue(project_id, jobs)

    async def enqueue_batches(self, project_id, batches, turn=None):
        self.groups.append(len(batches))
        await asyncio.sleep(0.05)
        return await super().enqueue_batches(project_id, batches, turn)


@pytest.mark.parametrize("budget", [1, 16 << 20])
async def test_decoded_but_unstored_jobs_are_bounded(monkeypatch, budget) -> None:
    """With no byte budget every batch is stored alone (the decoder waits); with the default
    one the decoder runs ahead and batches are stored in groups of at most GROUP_BATCHES."""
    from hq_apps.services import source_import

    monkeypatch.setattr(source_import, "BUFFER_BYTES", budget)
    store = _Recording(ManualClock(1_700_000_000))
    await store.put_project("p", ProjectPut(status="active", identity_mode="none"))
    got = await import_source(store, "p", io.BytesIO(source_bytes(specs_for("none", 25_000))), **BIG)
    assert (got.jobs, got.inserted) == (25_000, 25_000)
    assert sum(store.groups) == 25
    if budget == 1:
        assert max(store.groups) == 1
    else:
        assert 1 < max(store.groups) <= source_import.GROUP_BATCHES


async def test_failures_are_classified_by_type() -> None:
    """A source that does not decode is SourceFileInvalid; a batch the store refuses is
    SourceImportRejected, whatever its message says."""
    from hq_apps.services.source_import import SourceFileInvalid, SourceImportRejected
    from hq_domain.errors import SourceFormatError

    store = await store_with("none")
    with pytest.raises(SourceFileInvalid) as invalid:
        await import_source(store, "p", io.BytesIO(b"not zstd at all"), **BIG)
    assert isinstance(invalid.value.error, SourceFormatError)
    with pytest.raises(SourceImportRejected) as rejected:
        await import_source(store, "nope", io.BytesIO(source_bytes(specs_for("none", 3))), **BIG)
    assert isinstance(rejected.value.error, NotFound)

    class Refusing:
        async def enqueue(self, project_id, jobs):
            raise InvalidJob("source format: a store message that only looks like a format error")

        enqueue_batches = enqueue

    with pytest.raises(SourceImportRejected):
        await import_source(Refusing(), "p", io.BytesIO(source_bytes(specs_for("none", 3))), **BIG)  # type: ignore[arg-type]


class _Line(MemoryStore):
    """A slow memory store that watches the commit line: the identities of every call in
    flight, how many were in flight at once, and calls made outside the line."""

    def __init__(self, clock, fail_once_at: int | None = None) -> None:
        super().__init__(clock)
        self.flying: dict[int, set[str]] = {}
        self.most_at_once = 0
        self.calls: list[str] = []
        self.fail_once_at = fail_once_at

    async def enqueue(self, project_id, jobs):
        self.calls.append("alone")
        return await super().enqueue(project_id, jobs)

    async def enqueue_batches(self, project_id, batches, turn=None):
        self.calls.append("line" if turn is not None else "alone")
        mine = {j.id or j.value for b in batches for j in b}
        for other in self.flying.values():
            assert mine.isdisjoint(other), "groups sharing an identity were in flight together"
        key = len(self.calls)
        self.flying[key] = mine
        self.most_at_once = max(self.most_at_once, len(self.flying))
        try:
            await asyncio.sleep(0.05)
            if turn is not None and key == self.fail_once_at:
                raise TimeoutError("canceling statement due to lock timeout")  # a driver error
            return await super().enqueue_batches(project_id, batches, turn)
        finally:
            del self.flying[key]


async def _line_store(mode: str, **kw) -> _Line:
    store = _Line(ManualClock(1_700_000_000), **kw)
    await store.put_project("p", ProjectPut(status="active", identity_mode=mode))
    return store


async def _values_in_id_order(store: MemoryStore) -> list[str]:
    page = await store.list_jobs("p", None, 0, 1 << 30)  # one page: no limit on this adapter
    return [j.value for j in page.jobs]


@pytest.mark.parametrize("mode", ["external_id", "unique_value"])
async def test_groups_sharing_an_identity_are_never_in_flight_together(mode) -> None:
    """Jobs repeated one and ten batches later: whatever the grouping (a group is what has
    been decoded, up to GROUP_BATCHES batches), two groups holding the same identity are never
    stored at once (on PostgreSQL they would wait on each other's rows while the later one
    waits for the earlier one's commit). Groups still overlap."""
    n = 40_000
    specs = specs_for(mode, n)
    for k in range(0, 14_000, 700):
        specs[k + 1_200] = specs[k]
    for k in range(300, 14_000, 2_900):
        specs[k + 10_400] = specs[k]
    # The last 15,000 lines repeat nothing: groups there are free to overlap.
    store = await _line_store(mode)
    got = await import_source(store, "p", io.BytesIO(source_bytes(specs)), **BIG, connections=2)
    firsts = list(dict.fromkeys(s.value for s in specs))
    assert (got.jobs, got.inserted) == (n, len(firsts))
    assert store.most_at_once == 2 and "alone" not in store.calls
    assert await _values_in_id_order(store) == firsts


@pytest.mark.parametrize("connections", [2, 3])
async def test_a_group_failing_in_the_line_is_redone_alone(connections) -> None:
    """A driver error in the line (say a lock timeout) rolls that group and the ones after it
    back; they are redone one at a time outside the line, and nothing is lost or reordered."""
    specs = specs_for("external_id", 30_000)
    store = await _line_store("external_id", fail_once_at=2)
    got = await import_source(
        store, "p", io.BytesIO(source_bytes(specs)), **BIG, connections=connections
    )
    assert (got.jobs, got.inserted) == (30_000, 30_000)
    assert "alone" in store.calls and store.most_at_once == connections
    assert await _values_in_id_order(store) == [s.value for s in specs]
