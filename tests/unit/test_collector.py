"""The collector settings a bulk import runs under, and that they are given back."""

from __future__ import annotations

import gc

import pytest

from hq_apps.collector import BULK_YOUNG_THRESHOLD, bulk_collection


def test_bulk_collection_freezes_the_heap_and_widens_the_young_generation() -> None:
    before = gc.get_threshold()
    with bulk_collection():
        assert gc.get_threshold() == (BULK_YOUNG_THRESHOLD, *before[1:])
        assert gc.get_freeze_count() > 1_000  # the modules loaded so far
        assert gc.isenabled()  # cycles are still collected
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_bulk_collection_gives_the_settings_back_when_the_import_fails() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), bulk_collection():
        raise RuntimeError("import failed")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
