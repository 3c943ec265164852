"""The WARNING lines spark_dp logs inside a block, whatever the logging configuration (a job run
earlier in the session stops ``spark_dp`` records at its own handler)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


class _Lines(logging.Handler):
    def __init__(self, lines: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def warnings_logged() -> Iterator[list[str]]:
    """The messages of the WARNING (and higher) records of ``spark_dp`` loggers in the block."""
    lines: list[str] = []
    handler = _Lines(lines)
    root = logging.getLogger("spark_dp")
    level = root.level
    root.addHandler(handler)
    root.setLevel(min(level or logging.WARNING, logging.WARNING))
    try:
        yield lines
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
