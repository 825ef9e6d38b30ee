"""Log lines written in batches while a server runs (hq_apps.logging.LineBatchHandler)."""

from __future__ import annotations

import io
import json
import logging
import re
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


def _without_time(stream: _Stream) -> list[dict[str, object]]:
    docs = [json.loads(line) for line in stream.getvalue().splitlines()]
    for doc in docs:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", doc.pop("time"))
    return docs


FIELDS = {"request_id": "r1", "status": 200, "latency_ms": 1.25, "user": None, "w": "é"}


def test_info_line_writes_what_logger_info_writes(
    root_json: _Stream, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = logging.getLogger("hq.test.direct")
    records: list[str] = []
    make_record = log.makeRecord

    def counted(*args: object, **kwargs: object) -> logging.LogRecord:
        records.append("made")
        return make_record(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(log, "makeRecord", counted)
    root = logging.getLogger()
    with hq_logging.batched(interval_s=3600):
        # as when serving: the batch handler alone (pytest's capture handlers stepped aside)
        serving = list(root.handlers)
        root.handlers[:] = [h for h in serving if type(h) is hq_logging.LineBatchHandler]
        try:
            hq_logging.info_line(log, "request", FIELDS)
        finally:
            root.handlers[:] = serving
        assert records == []  # straight into the batch, no LogRecord
        log.info("request", extra={"fields": FIELDS})
        assert root_json.writes == []  # held like any other line
    direct, ordinary = root_json.getvalue().splitlines()
    assert list(json.loads(direct)) == ["time", "level", "msg", *FIELDS]
    assert _without_time(root_json) == [{"level": "INFO", "msg": "request", **FIELDS}] * 2
    assert direct.split(",", 1)[1] == ordinary.split(",", 1)[1]


def test_info_line_goes_through_logging_where_something_else_would_see_it(
    root_json: _Stream,
) -> None:
    log = logging.getLogger("hq.test.filtered")
    seen: list[str] = []

    def remember(record: logging.LogRecord) -> bool:
        seen.append(record.getMessage())
        return True

    other = logging.StreamHandler(io.StringIO())
    with hq_logging.batched(interval_s=3600):
        log.addFilter(remember)
        try:
            hq_logging.info_line(log, "filtered", {})
        finally:
            log.removeFilter(remember)
        logging.getLogger().addHandler(other)
        try:
            hq_logging.info_line(log, "captured", {})
        finally:
            logging.getLogger().removeHandler(other)
        log.setLevel(logging.WARNING)
        try:
            hq_logging.info_line(log, "below the level", {})
        finally:
            log.setLevel(logging.NOTSET)
    assert seen == ["filtered"]
    assert "captured" in other.stream.getvalue()
    assert _msgs(root_json) == ["filtered", "captured"]


def test_the_time_follows_the_clock_across_seconds() -> None:
    assert hq_logging.render(0.9, "INFO", "m", None, None).startswith(
        '{"time":"1970-01-01T00:00:00Z"'
    )
    assert '"time":"1970-01-01T00:00:01Z"' in hq_logging.render(1.0, "INFO", "m", None, None)
    assert '"time":"1970-01-01T00:00:00Z"' in hq_logging.render(0.2, "INFO", "m", None, None)
