"""Log lines written in batches while a server runs (hq_apps.logging.LineBatchHandler)."""

from __future__ import annotations

import io
import json
import logging
import time
from collections.abc import Iterator

import pytest

from hq_apps import logging as hq_logging


class _Stream(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)


@pytest.fixture
def root_json() -> Iterator[_Stream]:
    """The root logger as configure() leaves it, on a recording stream; restored afterwards."""
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    stream = _Stream()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(hq_logging.JsonFormatter())
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    yield stream
    root.handlers[:] = saved
    root.setLevel(level)


def _msgs(stream: _Stream) -> list[str]:
    return [json.loads(line)["msg"] for line in stream.getvalue().splitlines()]


def test_lines_are_held_then_written_together_in_order(root_json: _Stream) -> None:
    log = logging.getLogger("hq.test")
    with hq_logging.batched(interval_s=3600):
        for i in range(5):
            log.info(f"line {i}")
        assert root_json.writes == []
    assert _msgs(root_json) == [f"line {i}" for i in range(5)]
    assert len(root_json.writes) == 1
    log.info("after")  # the original handler is back: written at once
    assert _msgs(root_json)[-1] == "after" and len(root_json.writes) == 2


def test_a_warning_is_written_at_once_with_what_came_before(root_json: _Stream) -> None:
    log = logging.getLogger("hq.test")
    with hq_logging.batched(interval_s=3600):
        log.info("before")
        log.warning("trouble")
        assert _msgs(root_json) == ["before", "trouble"]
        log.info("held")
        assert _msgs(root_json) == ["before", "trouble"]
    assert _msgs(root_json) == ["before", "trouble", "held"]


def test_held_lines_go_out_within_the_interval(root_json: _Stream) -> None:
    log = logging.getLogger("hq.test")
    with hq_logging.batched(interval_s=0.05):
        log.info("soon")
        deadline = time.monotonic() + 5
        while not root_json.writes and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _msgs(root_json) == ["soon"]


def test_one_write_never_exceeds_an_atomic_pipe_write(root_json: _Stream) -> None:
    log = logging.getLogger("hq.test")
    with hq_logging.batched(interval_s=3600):
        for i in range(200):
            log.info("é" * 100, extra={"fields": {"i": i}})
    assert [json.loads(line)["i"] for line in root_json.getvalue().splitlines()] == list(range(200))
    assert len(root_json.writes) > 1
    assert all(len(w.encode()) <= hq_logging.BATCH_BYTES for w in root_json.writes)
    assert all(w.endswith("\n") for w in root_json.writes)  # whole lines only


def test_other_handlers_are_left_alone(root_json: _Stream) -> None:
    other = logging.StreamHandler(io.StringIO())  # not a JSON line handler
    logging.getLogger().addHandler(other)
    with hq_logging.batched(interval_s=3600):
        handlers = logging.getLogger().handlers
        assert other in handlers  # pytest's capture handlers are there as well, untouched
        assert [type(h) for h in handlers].count(hq_logging.LineBatchHandler) == 1
        assert not any(type(h) is logging.StreamHandler and h is not other for h in handlers)
        logging.getLogger("hq.test").info("x")
        assert other.stream.getvalue().count("x") == 1
