"""SIGINT and SIGTERM end a job run cleanly: the staged files removed (a commit in progress
rolled back, or completed past its commit point), one line on stderr and nothing from the
driver JVM after it (:func:`spark_dp.driver_jvm.mute`), exit code 130 after SIGINT
(Ctrl-C, the shell's convention) and 143 after SIGTERM (what schedulers and Airflow send to stop
a task). See :mod:`spark_dp.jobs.runner`.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from spark_dp import driver_jvm

__all__ = [
    "Interrupted",
    "cancel_after_interrupt",
    "ignored_signals",
    "own_sigint",
    "raise_pending",
    "signals_raise",
    "stop_after_interrupt",
]

_SIGNAL_NAMES: dict[int, str] = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}


class Interrupted(BaseException):
    """The run received SIGTERM (or SIGINT): it ends with exit code 128 + the signal number."""

    def __init__(self, signum: int) -> None:
        super().__init__(_SIGNAL_NAMES.get(signum, f"signal {signum}"))
        self.signum = signum
        self.exit_code = 128 + signum


_pending: list[int] = []
"""The signals of the run under way, in order: Python swallows an exception raised where it
cannot propagate (a signal that lands in an at-fork hook while Spark starts its JVM, or in a
finalizer, prints "Exception ignored in ..."), so :func:`raise_pending` raises it again at the
run's next checkpoint."""


def _raise(signum: int, _frame: Any) -> None:
    _pending.append(signum)
    driver_jvm.mute()  # the run's one line is all it says: no JVM line about cancelled tasks
    _fresh_py4j_connection()
    raise Interrupted(signum)


def raise_pending() -> None:
    """Raise :class:`Interrupted` for a signal this run received whose exception was swallowed
    (see :data:`_pending`); a checkpoint before each phase that reads, charges or commits."""
    if _pending:
        raise Interrupted(_pending[-1])


def _fresh_py4j_connection() -> None:
    """The py4j calls this thread makes from now on go through a new connection: the signal
    may have cut a call short in the middle of its answer, and a clean-up on the way out (the
    job's labels, released caches) would read the rest of that answer as its own. The session
    stays the thread's active one (a JVM thread's own setting), so that a notebook or a test
    that called the job keeps its session."""
    try:
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        client: Any = SparkContext._gateway._gateway_client  # type: ignore[union-attr]
    except Exception:  # no gateway yet: nothing to protect
        return
    if not hasattr(client, "thread_connection"):  # not pinned-thread mode (ClientServer)
        return
    client.thread_connection = threading.local()
    session: Any = SparkSession._instantiatedSession
    try:
        if session is not None and getattr(session, "_jsparkSession", None) is not None:
            session._jvm.SparkSession.setActiveSession(session._jsparkSession)
    except Exception:  # a JVM that is gone (a signal to the whole process group)
        pass


@contextmanager
def signals_raise() -> Iterator[None]:
    """SIGTERM and SIGINT raise :class:`Interrupted` in the main thread while the block runs, so
    the run removes its staged files and ends with 143 or 130.

    pyspark installs a SIGINT handler of its own when a SparkContext starts, which cancels the
    jobs through the very py4j connection the interrupted call is still waiting on (a re-entrant
    call: a trace, and a connection out of step); :func:`own_sigint` takes SIGINT back. The
    handler here leaves that connection to the interrupted call and gives the thread a new one,
    and the run cancels its jobs and waits for their tasks to end before it removes its staged
    files (:func:`cancel_after_interrupt`).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _pending.clear()
    previous = {s: signal.signal(s, _raise) for s in _SIGNAL_NAMES}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _pending.clear()
        if _session_alive():  # a notebook's or a test's, after an interrupted run: heard again
            driver_jvm.unmute()


def _session_alive() -> bool:
    """A SparkContext runs in this process (pyspark is not imported for the answer)."""
    context = sys.modules.get("pyspark") and sys.modules["pyspark"].SparkContext
    return bool(context and context._active_spark_context is not None)


def own_sigint() -> None:
    """Inside :func:`signals_raise`, after a SparkContext started: SIGINT raises again (and a
    signal that arrived while Spark started, its exception swallowed, is raised now)."""
    main = threading.current_thread() is threading.main_thread()
    if main and signal.getsignal(signal.SIGTERM) is _raise:
        signal.signal(signal.SIGINT, _raise)
        raise_pending()


def cancel_after_interrupt(spark: Any, *, timeout: float = 30.0) -> None:
    """Cancel the session's jobs and wait until none runs and no task of theirs is still
    running (at most ``timeout`` seconds), so that the staged files can be removed for good: a
    write the interrupt abandoned goes on in the JVM, and a task that ends after its staged
    directory was removed recreates it (its attempt's ``_temporary`` tree) when it aborts.
    From a thread of its own: the interrupted call left this thread's py4j connection waiting
    for an answer."""

    def cancel() -> None:
        try:
            sc = spark.sparkContext
            sc.cancelAllJobs()
            deadline = time.monotonic() + timeout
            while _busy(sc) and time.monotonic() < deadline:
                time.sleep(0.05)
        except Exception:  # a JVM that is gone already (a signal to the process group)
            pass

    _in_own_thread(cancel, timeout + 5)


def _busy(sc: Any) -> bool:
    """A job of the context is active, or a task still runs on one of its executors."""
    if sc.statusTracker().getActiveJobsIds():
        return True
    return any(e.numRunningTasks() > 0 for e in sc._jsc.sc().statusTracker().getExecutorInfos())


def stop_after_interrupt(spark: Any) -> None:
    """Stop the session (after :func:`cancel_after_interrupt`), from a thread of its own."""

    def stop() -> None:
        try:
            spark.stop()
        except Exception:  # a JVM that is gone already (a signal to the process group)
            pass

    _in_own_thread(stop, 30)


def _in_own_thread(work: Callable[[], None], timeout: float) -> None:
    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(timeout)


@contextmanager
def ignored_signals() -> Iterator[None]:
    """SIGINT and SIGTERM are ignored while the block runs (the clean-up after a failure must
    not be cut short by a second signal)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in _SIGNAL_NAMES}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
