"""Where a run's Spark session starts (once, lazily: :meth:`RunSession.get`) and stops, and the
run's staging, removed unless committed (:func:`open_staging`): the two clean-ups of a run's
line (:mod:`spark_dp.jobs.runner`; docs/design/job-line.md).

After an interrupt the session's jobs are cancelled first and their tasks waited for
(:func:`~spark_dp.jobs.signals.cancel_after_interrupt`): a write the interrupt abandoned goes
on in the JVM, and a task that ends after its staged directory was removed would recreate it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from spark_dp.io.fs import is_connect, is_local
from spark_dp.io.paths import PathPlan
from spark_dp.io.staging import Staging
from spark_dp.io.write import plain_paths_local, session_filesystems
from spark_dp.jobs.config_source import ConfigSource, read_deferred
from spark_dp.jobs.failures import existing_ancestor, fullest, no_space, session_failure
from spark_dp.jobs.signals import (
    Interrupted,
    cancel_after_interrupt,
    ignored_signals,
    own_sigint,
    stop_after_interrupt,
)
from spark_dp.jobs.spec import RunHooks

__all__ = ["RunSession", "interrupted", "open_staging"]


class RunSession:
    """Where a run's Spark session starts: once, lazily, in :meth:`get`. At the end of the
    ``with`` block a session the run started is stopped (after an interrupt, once the
    session's jobs are cancelled: :func:`~spark_dp.jobs.signals.cancel_after_interrupt`); a
    session the caller started (a notebook's) is kept."""

    def __init__(
        self,
        name: str,
        spark_conf: Mapping[str, str],
        *,
        given: frozenset[str] = frozenset(),
        master: str | None = None,
        startup_notices: bool = False,
        log: logging.Logger | None = None,
    ) -> None:
        self._name = name
        self._conf = dict(spark_conf)
        self._given = given
        self._master = master
        self._notices = startup_notices
        self._log = log or logging.getLogger(__name__)
        self.spark: Any = None
        self.created = False
        self._cancelled = False

    def get(self) -> Any:
        """The session, started with the run's settings if none is active (and the Spark
        settings it could not take, refused in one line)."""
        if self.spark is not None:
            return self.spark
        from pyspark.sql import SparkSession

        from spark_dp.session import get_session

        self.created = SparkSession.getActiveSession() is None
        try:
            spark = get_session(
                f"spark_dp.{self._name}",
                dict(self._conf),
                master=self._master,
                startup_notices=self._notices,
            )
            spark.conf.get("spark.sql.shuffle.partitions", None)  # its SQL settings, checked now
        except Exception as exc:
            raise session_failure(exc, self._master, self._conf, set(self._given)) from exc
        self.spark = spark
        own_sigint()  # pyspark's SIGINT handler would call Spark through a busy connection
        return spark

    def classic(self) -> Any:
        """The session if it started and is not Spark Connect (it lists Hadoop URIs), else
        ``None``."""
        return self.spark if self.spark is not None and not is_connect(self.spark) else None

    def read_deferred_config(self, config: ConfigSource) -> dict[str, Any]:
        """A config file only Spark can read (:func:`~.config_source.read_deferred`): its
        parameters; its ``spark`` section set on the running session (``--spark-conf`` wins;
        a setting that applies only at start-up is skipped with a warning)."""
        spark = self.get()
        file_conf = read_deferred(config, spark)
        section = file_conf.pop("spark", {}) or {}
        for key, value in dict(section).items():
            if str(key) in self._conf:
                continue  # --spark-conf wins
            try:
                spark.conf.set(str(key), str(value))
            except Exception:
                self._log.warning("config: Spark setting %s applies only at start-up", key)
        return file_conf

    def plain_paths_local(self) -> bool:
        """Whether plain paths are on the local disk; before Spark starts, judged from a local
        master and no Hadoop configuration (else they are resolved by Hadoop once the session
        exists)."""
        if self.spark is not None:
            return plain_paths_local(self.spark)
        conf, master = self._conf, self._master
        if os.environ.get("SPARK_REMOTE") or "spark.remote" in conf:
            remote = os.environ.get("SPARK_REMOTE") or conf["spark.remote"]
            return remote.startswith("local") or "://localhost" in remote or "127.0.0.1" in remote
        if os.environ.get("HADOOP_CONF_DIR") or os.environ.get("YARN_CONF_DIR"):
            return False
        master = master or conf.get("spark.master") or "local[*]"
        from spark_dp.session import launched_by_spark_submit

        if launched_by_spark_submit():
            try:
                from pyspark import SparkConf, SparkContext

                SparkContext._ensure_initialized()
                master = SparkConf().get("spark.master", "local[*]") or "local[*]"
            except Exception:
                return False
        return bool(master.startswith(("local", "spark://")))

    def cancel_jobs(self) -> None:
        """After an interrupt: cancel the session's jobs and wait for their tasks, once."""
        if self.spark is not None and not self._cancelled:
            self._cancelled = True
            cancel_after_interrupt(self.spark)

    def __enter__(self) -> RunSession:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with ignored_signals():
            if interrupted(exc):
                self.cancel_jobs()
                if self.created and self.spark is not None:
                    stop_after_interrupt(self.spark)
            elif self.created and self.spark is not None:
                try:
                    self.spark.stop()
                except Exception:  # a JVM that is gone already (a signal to the process group)
                    self._log.debug("stopping the Spark session failed", exc_info=True)


@contextmanager
def open_staging(
    session: RunSession,
    paths: PathPlan,
    *,
    overwrite: bool,
    spark_conf: Mapping[str, str],
    hooks: RunHooks,
) -> Iterator[Staging]:
    """The run's staging (:class:`~spark_dp.io.staging.Staging`), aborted at the end of the
    ``with`` block unless its commit completed: the staged files removed, or a commit stopped
    half-way rolled back (past its commit point: its clean-up finished). After an interrupt the
    session's jobs are cancelled first (a task that ends after the removal would recreate its
    ``_temporary`` tree); after a full disk the run's work directories on it go too."""
    spark = session.get()
    plain = plain_paths_local(spark)
    direct = is_connect(spark) and any(
        not is_local(s.path, plain_is_local=plain) for s in paths.committed
    )
    on_step = None if hooks.moments is None else (lambda k: hooks.moment(f"commit {k}"))
    staging = Staging(
        session_filesystems(spark), overwrite=overwrite, direct=direct, on_step=on_step
    )
    failed: BaseException | None = None
    try:
        yield staging
    except BaseException as exc:
        failed = exc
        raise
    finally:
        with ignored_signals():
            if interrupted(failed):  # the abandoned write first: its tasks would recreate it
                session.cancel_jobs()
            if failed is not None or not staging.committed:
                staging.abort()  # past the commit point: finishes the commit's clean-up
            if failed is not None and no_space(failed):
                _, path = fullest(paths, spark_conf)  # its work directories go too
                paths.remove_state(os.stat(existing_ancestor(path)).st_dev)


def interrupted(exc: BaseException | None) -> bool:
    """Whether ``exc`` is an interrupt (SIGINT or SIGTERM)."""
    return isinstance(exc, (Interrupted, KeyboardInterrupt))
