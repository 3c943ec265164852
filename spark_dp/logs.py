"""Progress logging: one line per stage or round, with counts and seconds.

Log lines carry only public or operator-facing numbers (row counts of the operator's own data,
round numbers, seconds); never weights, per-item counts, ids or curve values.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from spark_dp.tracking import spark_stage

__all__ = ["StageTimer", "configure_logging", "get_logger"]

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging(level: str = "INFO") -> None:
    """Log spark_dp messages to stderr at ``level`` (idempotent)."""
    root = logging.getLogger("spark_dp")
    root.setLevel(level.upper())
    if not any(getattr(h, "_spark_dp", False) for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(_FORMAT, "%H:%M:%S"))
        handler._spark_dp = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    root.propagate = False


def get_logger(name: str) -> logging.Logger:
    """A logger under the ``spark_dp`` namespace."""
    return logging.getLogger(name if name.startswith("spark_dp") else f"spark_dp.{name}")


class StageTimer:
    """Times named stages and keeps their seconds for the report.

    Example::

        timer = StageTimer(log)
        with timer.stage("weights") as info:
            ...
            info["items"] = n
    """

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger
        self.seconds: dict[str, float] = {}
        self._start = time.perf_counter()

    @contextmanager
    def stage(self, name: str, **fields: Any) -> Iterator[dict[str, Any]]:
        """Log ``name`` with the fields set inside the block and its wall seconds."""
        info: dict[str, Any] = dict(fields)
        t0 = time.perf_counter()
        self.logger.info("stage %s: started", name)
        with spark_stage(name):  # the Spark UI names the stage (spark_dp.tracking)
            yield info
        dt = time.perf_counter() - t0
        self.seconds[name] = round(self.seconds.get(name, 0.0) + dt, 3)
        extra = " ".join(f"{k}={v}" for k, v in info.items())
        self.logger.info("stage %s: done %s seconds=%.2f", name, extra, dt)

    def total(self) -> float:
        """Seconds since the timer was created."""
        return round(time.perf_counter() - self._start, 3)
