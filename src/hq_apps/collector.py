"""How a bulk import uses Python's cyclic garbage collector.

An import holds batches of thousands of decoded jobs while they are inserted. Each batch's
objects outlive a few young-generation collections, so the collector kept scanning them as
they aged: 700 young collections, 64 middle ones and 5 full ones per 500,000 jobs, about a
sixth of ``tracker enqueue-source``'s CPU on a re-run (benchmarks/notes/optimisations.md,
row 36). Almost nothing an import allocates is part of a cycle (refcounting frees it), so it
runs with the heap built before it frozen (:func:`gc.freeze`) and a young generation of
:data:`BULK_YOUNG_THRESHOLD` objects instead of 700: cycles are still collected (51 young,
5 middle and no full collections per 500,000 jobs), and the garbage they can hold meanwhile is
a few MiB at most.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

BULK_YOUNG_THRESHOLD = 50_000


@contextmanager
def bulk_collection() -> Iterator[None]:
    """The collector as a bulk import wants it, restored afterwards (a process-wide setting:
    for a process that runs one import at a time, such as the CLI)."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(BULK_YOUNG_THRESHOLD, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
