"""Structured logging: one JSON object per line on stderr.

Entry points call :func:`configure` once; library code uses ``logging.getLogger(__name__)``
and passes structured fields via ``extra={"fields": {...}}``. Tokens are never logged.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

import msgspec

_encoder = msgspec.json.Encoder()


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record.created)),
            "level": record.levelname,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if fields:
            doc.update(fields)
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return _encoder.encode(doc).decode()


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


def error_line(error: object) -> str:
    """The ``tracker stopped`` line printed by CLIs on failure (spec §4.1)."""
    return _encoder.encode(
        {"level": "ERROR", "msg": "tracker stopped", "error": str(error)}
    ).decode()
