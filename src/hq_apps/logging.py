"""Structured logging: one JSON object per line on stderr.

Entry points call :func:`configure` once; library code uses ``logging.getLogger(__name__)``
and passes structured fields via ``extra={"fields": {...}}``. Tokens are never logged. While a
server runs, :func:`batched` writes the lines in batches (see :class:`LineBatchHandler`).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

import msgspec

_encoder = msgspec.json.Encoder()


_last_second: tuple[int, str] = (-1, "")  # the last whole second formatted, and its text


def _timestamp(created: float) -> str:
    global _last_second
    second, text = _last_second  # one read: the pair is replaced whole, never edited
    if second != int(created):
        second, text = int(created), time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(created))
        _last_second = (second, text)
    return text


def render(
    created: float, level: str, msg: str, fields: dict[str, Any] | None, exception: str | None
) -> str:
    """One log line (no newline): time, level, msg, then the fields in their order."""
    doc: dict[str, Any] = {"time": _timestamp(created), "level": level, "msg": msg}
    if fields:
        doc.update(fields)
    if exception:
        doc["exception"] = exception
    return _encoder.encode(doc).decode()


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        exception = self.formatException(record.exc_info) if record.exc_info else None
        fields = getattr(record, "fields", None)
        return render(record.created, record.levelname, record.getMessage(), fields, exception)


def configure(level: int = logging.INFO) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # uvicorn's own access log would duplicate the request log; keep its errors only.
    logging.getLogger("uvicorn.access").disabled = True
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True


# Lines a batch write may hold: a pipe write of at most PIPE_BUF (4096 on Linux) bytes is never
# interleaved with another process's, so the children of `tracker serve --processes N` sharing
# one stderr still never split each other's lines.
BATCH_BYTES = 4096
FLUSH_INTERVAL_S = 0.2


class LineBatchHandler(logging.Handler):
    """Writes formatted lines to ``stream`` in batches of up to :data:`BATCH_BYTES`.

    Each request line cost a write system call of its own; with the one write per response of
    ``hq_apps.api.one_write`` a request's writes went from 4.1 to 2.1 (strace of a B=1 drain,
    benchmarks/notes/optimisations.md). Lines are held at most
    :data:`FLUSH_INTERVAL_S` (a background thread writes them), and a WARNING or worse is
    written at once together with everything before it, so no line changes order and an error
    is never held. Lines still held when the process is killed outright are lost.
    """

    def __init__(self, stream: TextIO, interval_s: float = FLUSH_INTERVAL_S) -> None:
        super().__init__()
        self.stream = stream
        self._lines: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._flush_every, args=(interval_s,), name="hq-log-lines", daemon=True
        )
        self._thread.start()

    def emit(self, record: logging.LogRecord) -> None:  # called under self.lock
        try:
            self._lines.append(self.format(record) + "\n")
        except Exception:
            self.handleError(record)
            return
        if record.levelno >= logging.WARNING:
            self.flush()

    def add(self, line: str) -> None:
        """A line rendered elsewhere (:func:`info_line`), held like :meth:`emit`'s."""
        with self.lock:  # type: ignore[union-attr]
            self._lines.append(line)

    def flush(self) -> None:
        # Under the handler's (reentrant) lock, as emit is: batches reach the stream in order.
        with self.lock:  # type: ignore[union-attr]
            lines, self._lines = self._lines, []
            batch: list[str] = []
            size = 0
            for line in lines:
                n = len(line) if line.isascii() else len(line.encode())
                if batch and size + n > BATCH_BYTES:
                    self._write("".join(batch))
                    batch, size = [], 0
                batch.append(line)
                size += n
            if batch:
                self._write("".join(batch))

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed: nowhere to report it either
            pass

    def _flush_every(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            self.flush()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join()
        self.flush()
        super().close()


@contextmanager
def batched(interval_s: float = FLUSH_INTERVAL_S) -> Iterator[None]:
    """Within the block, the root logger's JSON line handlers (:func:`configure`'s) batch.

    Used around a running server, where request lines are frequent; at the block's end every
    held line is written and the original handlers are back. Handlers of another kind (pytest's
    capture, say) are left as they are."""
    root = logging.getLogger()
    originals = list(root.handlers)
    swapped: list[LineBatchHandler] = []
    handlers: list[logging.Handler] = []
    for handler in originals:
        if type(handler) is logging.StreamHandler and isinstance(handler.formatter, JsonFormatter):
            batch = LineBatchHandler(handler.stream, interval_s)
            batch.setFormatter(handler.formatter)
            batch.setLevel(handler.level)
            swapped.append(batch)
            handler = batch
        handlers.append(handler)
    root.handlers[:] = handlers
    try:
        yield
    finally:
        root.handlers[:] = originals
        for batch in swapped:
            batch.close()


def _batch_sinks(logger: logging.Logger) -> list[LineBatchHandler] | None:
    """The handlers an INFO record of ``logger`` would reach, when every one is a
    :class:`LineBatchHandler` with the :class:`JsonFormatter` and nothing on the way filters or
    could change the line (``logging.Logger.callHandlers``' walk); ``None`` otherwise."""
    current: logging.Logger | None = logger
    while current is not None:
        if current.filters:
            return None
        if current.handlers:
            if current.parent is not None:  # a handler below the root: leave it to logging
                return None
            sinks = current.handlers
            for h in sinks:
                if (
                    type(h) is not LineBatchHandler
                    or h.filters
                    or h.level > logging.INFO
                    or type(h.formatter) is not JsonFormatter
                ):
                    return None
            return sinks  # type: ignore[return-value]
        if not current.propagate:
            return None
        current = current.parent
    return None


def info_line(logger: logging.Logger, msg: str, fields: dict[str, Any]) -> None:
    """``logger.info(msg, extra={"fields": fields})``, the same line (:func:`render`).

    While :func:`batched` holds the lines, the line goes straight into the batch: a
    ``LogRecord`` and the handler calls cost about a tenth of the tracker's CPU per worker
    request (benchmarks/notes/optimisations.md, row 27). Anywhere else (a filter, another
    handler, pytest's capture) it is an ordinary ``logger.info``."""
    if logger.disabled or not logger.isEnabledFor(logging.INFO):
        return
    sinks = _batch_sinks(logger)
    if sinks is None:
        logger.info(msg, extra={"fields": fields})
        return
    line = render(time.time(), "INFO", msg, fields, None) + "\n"
    for sink in sinks:
        sink.add(line)


def error_line(error: object) -> str:
    """The ``tracker stopped`` line printed by CLIs on failure (spec §4.1)."""
    return _encoder.encode(
        {"level": "ERROR", "msg": "tracker stopped", "error": str(error)}
    ).decode()
