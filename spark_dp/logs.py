"""Progress logging that carries nothing private: stage names, parameters and seconds.

At INFO (and every other level) spark_dp logs stage names, parameters, public constants, wall
seconds and the sizes of *released* outputs; which stages a run logs depends on its parameters
only (a stage that runs only for some data is logged through the gate below:
:meth:`StageTimer.stage` with ``data_dependent``). It never logs counts or sizes of input,
intermediate or unreleased data (rows read, null or duplicate rows, distinct pairs, records
left after a round, component counts, ...): |D| has unbounded sensitivity, and driver logs end
up in Airflow task logs, YARN and Spark history servers that many more people read than a
release's audience.

Private counts still help an operator debug a run on data they own. They go through **one
gate**, :func:`log_private` (and the private fields of a :class:`StageTimer` stage, and
:func:`private` for exception messages), which emits them only when unsafe debug logging was
switched on explicitly: ``configure_logging(unsafe_debug=True)``, i.e. a job's
``--unsafe-debug-logs`` flag, which the job writes into its report. Such lines are prefixed
``[UNSAFE-DEBUG]`` so they are easy to find and scrub.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from spark_dp.tracking import spark_stage

__all__ = [
    "UNSAFE_PREFIX",
    "StageInfo",
    "StageTimer",
    "configure_logging",
    "get_logger",
    "log_private",
    "private",
    "unsafe_debug",
    "unsafe_debug_enabled",
]

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

UNSAFE_PREFIX = "[UNSAFE-DEBUG] "
"""Prefix of every line that carries private values (only with unsafe debug logging on)."""

REDACTED = "<private>"
"""What :func:`private` shows instead of a value when unsafe debug logging is off."""

_unsafe_debug = False


class _StderrHandler(logging.StreamHandler):
    """A stream handler on ``sys.stderr`` as it is when a record is emitted, not as it was when
    logging was configured: a notebook kernel or a test harness that replaces (and closes) the
    stream it had does not leave spark_dp writing to a closed file."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass  # always the current sys.stderr


def configure_logging(level: str = "INFO", *, unsafe_debug: bool = False) -> None:
    """Log spark_dp messages to stderr at ``level`` (idempotent).

    Args:
        level: ``DEBUG``, ``INFO``, ``WARNING``, ... Private counts are not logged at any level
            unless ``unsafe_debug`` is set.
        unsafe_debug: also log private counts (rows read, intermediate sizes, ...) through the
            gate of this module. NOT for production: those lines leak private information to
            whoever reads the logs. The job runner records this switch in the report.
    """
    global _unsafe_debug
    root = logging.getLogger("spark_dp")
    root.setLevel(level.upper())
    if not any(isinstance(h, _StderrHandler) for h in root.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter(_FORMAT, "%H:%M:%S"))
        root.addHandler(handler)
    root.propagate = False
    _unsafe_debug = bool(unsafe_debug)
    if _unsafe_debug:
        root.warning(
            "%sunsafe debug logging is ON: private counts of the input and of intermediate "
            "data will be logged; do not use on production data",
            UNSAFE_PREFIX,
        )


def unsafe_debug_enabled() -> bool:
    """Whether private counts may be logged (set by :func:`configure_logging`)."""
    return _unsafe_debug


@contextmanager
def unsafe_debug(enabled: bool = True) -> Iterator[None]:
    """Switch unsafe debug logging on (or off) inside a block, restoring it afterwards.

    For notebooks and tests; jobs use ``configure_logging(unsafe_debug=...)``.
    """
    global _unsafe_debug
    before = _unsafe_debug
    _unsafe_debug = bool(enabled)
    try:
        yield
    finally:
        _unsafe_debug = before


def log_private(logger: logging.Logger, msg: str, *args: Any, level: int = logging.INFO) -> None:
    """Log ``msg % args`` only when unsafe debug logging is on, prefixed ``[UNSAFE-DEBUG]``.

    The one gate for private values in logs: counts or sizes of the input, of intermediate
    tables and of anything not released.
    """
    if _unsafe_debug:
        logger.log(level, UNSAFE_PREFIX + msg, *args)


def private(value: Any) -> Any:
    """``value`` when unsafe debug logging is on, else the placeholder ``<private>``.

    For messages that are shown whatever happens, such as exceptions: ``f"... {private(n)}
    incidences ..."`` names the quantity without revealing it.
    """
    return value if _unsafe_debug else REDACTED


def get_logger(name: str) -> logging.Logger:
    """A logger under the ``spark_dp`` namespace."""
    return logging.getLogger(name if name.startswith("spark_dp") else f"spark_dp.{name}")


class StageInfo(dict[str, Any]):
    """The fields of one stage, as :meth:`StageTimer.stage` yields them.

    Private by default: whatever is set with ``info[key] = value`` or ``info.update(...)``
    (counts of input or intermediate data) is logged only through the unsafe-debug gate.
    Public values (parameters, sizes of released outputs) are set with :meth:`public`.
    """

    def __init__(self, public: dict[str, Any]) -> None:
        super().__init__()
        self.public_fields: dict[str, Any] = dict(public)

    def public(self, **fields: Any) -> None:
        """Record fields that may be logged at INFO: parameters and released sizes only."""
        self.public_fields.update(fields)


def _fields(fields: dict[str, Any]) -> str:
    return "".join(f" {k}={v}" for k, v in fields.items())


class StageTimer:
    """Times named stages and logs their names, public fields and seconds.

    Example::

        timer = StageTimer(log)
        with timer.stage("round 1", max_contributions=k) as info:   # k: a parameter
            ...
            info.public(output_items=n_released)  # the size of a released output
            info["candidates"] = n                # private: logged only with unsafe debug

    ``seconds`` keeps the seconds per stage for benchmarks; they depend on the data, so they
    do not belong in a public report.
    """

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger
        self.seconds: dict[str, float] = {}
        self._start = time.perf_counter()

    @contextmanager
    def stage(
        self, name: str, *, data_dependent: bool = False, **public: Any
    ) -> Iterator[StageInfo]:
        """Log ``name``, the public fields (keyword arguments and ``info.public(...)``) and its
        wall seconds; the fields set as ``info[key]`` go through the unsafe-debug gate.

        ``data_dependent``: whether this stage runs at all, or how often, depends on the data
        (a round of an iteration that stops when the data says so, a step taken only for large
        inputs). Then the whole stage, its name included, is logged only through the
        unsafe-debug gate: the stages a run logs above DEBUG are a function of its parameters
        (docs/privacy/boundary.md#logs). Open a public stage around such an iteration.
        """
        info = StageInfo(public)
        t0 = time.perf_counter()
        say = self._private if data_dependent else self.logger.info
        say("stage %s: started", name)
        with spark_stage(name):  # the Spark UI names the stage (spark_dp.tracking)
            yield info
        dt = time.perf_counter() - t0
        self.seconds[name] = round(self.seconds.get(name, 0.0) + dt, 3)
        say("stage %s: done%s seconds=%.2f", name, _fields(info.public_fields), dt)
        if info:
            log_private(self.logger, "stage %s:%s", name, _fields(dict(info)))

    def _private(self, msg: str, *args: Any) -> None:
        log_private(self.logger, msg, *args)

    def total(self) -> float:
        """Seconds since the timer was created."""
        return round(time.perf_counter() - self._start, 3)
