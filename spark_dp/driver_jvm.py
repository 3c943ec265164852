"""The driver JVM of a plain ``python jobs/...`` or ``spark-dp`` run, launched with its stderr
read by this process.

pyspark starts the driver JVM (through Spark's ``spark-submit`` script) with the stderr of the
Python process, so what the launcher prints when it refuses a setting (``Invalid maximum heap
size: -Xmxlots``, ``Master must either be yarn or start with spark, k8s, or local``) and the
JVM's start-up notice ``WARNING: Using incubator modules`` would land in the user's terminal
beside the job's own one-line error. :func:`launch` gives the JVM a pipe as its stderr, read by
a thread of this process:

* log lines (Spark's, one line per warning through ``spark_dp/log4j2.properties``) are passed on
  to this process's stderr as they come;
* other lines are held until the session has started (:meth:`DriverOutput.started` passes them
  on), or, if the JVM exits before it serves, kept in :class:`DriverStartError` for the job's
  one-line message (:mod:`spark_dp.jobs.failures`);
* the incubator notice, printed at every start, is dropped;
* after an interrupt (:func:`mute`, called by the job's signal handler) every line is dropped
  until :func:`unmute`: the job has said its one line, and the JVM's reports of the tasks the
  interrupt cancelled (aborted writes, killed tasks and Python workers) would follow it.

Under ``spark-submit`` the driver JVM is already running and nothing here applies.
"""

from __future__ import annotations

import os
import re
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark import SparkConf

__all__ = ["DriverOutput", "DriverStartError", "launch", "log_line", "mute", "unmute"]

_LOG_LINE = re.compile(
    r"^(?:\d\d/\d\d/\d\d )?\d\d:\d\d:\d\d\S* (?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL) "
)
_DROPPED = ("WARNING: Using incubator modules",)
_READ_TIMEOUT = 10.0  # seconds to wait for the last lines of a JVM that exited


def log_line(line: str) -> bool:
    """True for a line in the format of a log record (spark_dp's, or Spark's log4j)."""
    return bool(_LOG_LINE.match(line))


class DriverStartError(RuntimeError):
    """The driver JVM exited before serving: :attr:`output` holds what it printed (no log
    lines, which were passed on)."""

    def __init__(self, output: list[str]) -> None:
        super().__init__("the Spark driver JVM exited before it started")
        self.output = output


class DriverOutput:
    """The stderr of the driver JVM, read line by line by a daemon thread."""

    def __init__(self, fd: int) -> None:
        self.held: list[str] = []
        self.muted = False
        self._started = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._pump, args=(fd,), daemon=True)
        self._thread.start()

    def _pump(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as pipe:
            for raw in pipe:
                line = raw.decode("utf-8", errors="replace")
                if self.muted or line.startswith(_DROPPED):
                    continue
                with self._lock:
                    if self._started or log_line(line):
                        _write(line)
                    else:
                        self.held.append(line.rstrip("\n"))

    def started(self) -> None:
        """The session is up: pass on the lines held so far, and every later line."""
        with self._lock:
            for line in self.held:
                _write(line + "\n")
            self.held.clear()
            self._started = True

    def finished(self) -> list[str]:
        """The lines held, once the JVM has exited (its pipe closed)."""
        self._thread.join(_READ_TIMEOUT)
        with self._lock:
            return list(self.held)


_current: list[DriverOutput] = []
"""The output of the JVM this process launched (at most one: the gateway is launched once)."""


def mute() -> None:
    """Drop the launched JVM's lines from now on (a flag: safe in a signal handler, which must
    not wait for the reader's lock)."""
    for out in _current:
        out.muted = True


def unmute() -> None:
    """Pass the launched JVM's lines on again (a session that outlives the interrupted run)."""
    for out in _current:
        out.muted = False


def _write(line: str) -> None:
    try:
        os.write(2, line.encode("utf-8", errors="replace"))
    except OSError:  # stderr closed: nothing to show the lines on
        pass


def launch(conf: SparkConf) -> DriverOutput | None:
    """Launch the gateway JVM for ``conf`` with its stderr read here, and make it the gateway
    of the next SparkContext; ``None`` when a gateway exists already (nothing launched).

    Raises:
        DriverStartError: the JVM exited before serving (a setting the launcher refused, or no
            usable Java); its output is in the error.
    """
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return None
    read, write = os.pipe()
    out = DriverOutput(read)
    kwargs: dict[str, Any] = {"stderr": write}
    try:
        gateway = launch_gateway(conf, popen_kwargs=kwargs)
    except Exception:
        os.close(write)
        raise DriverStartError(out.finished()) from None
    os.close(write)  # the JVM holds its own copy
    SparkContext._ensure_initialized(gateway=gateway, conf=conf)
    _current[:] = [out]
    return out
