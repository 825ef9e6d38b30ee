"""Progress output on stderr: a live bar only when stderr is a terminal, plain lines always."""

from __future__ import annotations

import sys
import time

_WIDTH = 30


class Progress:
    def __init__(self, total: int) -> None:
        self.total = max(total, 1)
        self.live = sys.stderr.isatty()
        self._shown = False
        self._last = 0.0

    def update(self, submitted: int, inserted: int) -> None:
        now = time.monotonic()
        if not self.live or (now - self._last < 0.1 and submitted < self.total):
            return
        self._last = now
        done = int(_WIDTH * submitted / self.total)
        bar = "#" * done + "-" * (_WIDTH - done)
        sys.stderr.write(f"\r[{bar}] {submitted}/{self.total} jobs, {inserted} inserted")
        sys.stderr.flush()
        self._shown = True

    def line(self, text: str) -> None:
        if self._shown:
            sys.stderr.write("\r\x1b[K")
            self._shown = False
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self._shown:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self._shown = False
